"""The compiled policy's JSON, typed: the document `runtime.policy.compile` writes, and the parameters of the gate
kinds the layers read from it through `runtime.policy.document.PolicyDocument.gate_params`.

TypedDicts, not records: the document is hashed over its JSON exactly as written, so what it holds stays plain
dicts and lists. The gate reads the same parameters as JSON and checks each one (`runtime.gate.kinds`): a hook
trusts nothing in a file; the other layers trust the document its content hash seals.

Import it under `TYPE_CHECKING` from the hook's path: it imports `typing`, which a cold hook never pays for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypeAlias, TypedDict

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict, JSONObject


class TaskJSON(TypedDict):
    """The task a policy was compiled for."""

    path: str
    sha256: str
    agent_id: str
    parent_agent: str | None


ReviewerJSON = TypedDict("ReviewerJSON", {"model": str, "api-base": str | None, "script": str | None})
"""`[session] reviewer` of the role: the model that may allow what a person's session would be asked."""


class ToolchainJSON(TypedDict):
    path: list[str]  # folders (relative) whose programs may be called by their path


class EntryJSON(TypedDict):
    """One atom's gate or verify kind with its parameter values, as that kind reads them."""

    atom: str
    kind: str
    params: JSONDict


class SandboxEntryJSON(TypedDict):
    atom: str
    kind: str


class EntryPart(TypedDict):
    """A gate or verify entry given to `runtime.policy.document.seal`, named after its kind without an atom."""

    kind: str
    params: JSONObject
    atom: NotRequired[str]


PolicyBody = TypedDict("PolicyBody", {
    "format": str,
    "version": int,
    "mode": str,
    "audience": str,
    "role": str,
    "escalation": str | None,
    "task": TaskJSON | None,
    "root": str,
    "tools": list[str],
    "gates": list[EntryJSON],
    "verify": list[EntryJSON],
    "sandbox": list[SandboxEntryJSON],
    "toolchain": ToolchainJSON,
    "package-scripts": dict[str, str],
    "subagents": dict[str, str],
    "reviewer": NotRequired[ReviewerJSON],
    "protected": list[str],
})
"""A compiled policy before its seal."""


class PolicyJSON(PolicyBody):
    """A compiled policy, as `runtime.policy.compile.compile_policy` writes it (version 2)."""

    hash: str  # the seal: the sha256 of the rest (`runtime.policy.document.content_hash`)


# -- the gate kinds' parameters the layers outside the gate read ---------------------------------------------------

OptionType: TypeAlias = "str | list[str] | dict[str, dict[str, str | list[str]]]"
"""A value type of a grammar (`runtime.lang.grammar`): a name, an enum, or `{ assignments = { KEY = TYPE } }`."""

TrailingJSON = TypedDict("TrailingJSON", {"option-style": str, "options": dict[str, OptionType],
                                          "positionals": list[str | list[str]]})

ShellRuleJSON = TypedDict("ShellRuleJSON", {
    "program": str,
    "subcommands": list[str],
    "option-style": str,
    "options": dict[str, OptionType],
    "positionals": list[str | list[str]],
    "trailing": TrailingJSON | None,
    "env": list[str],
    "xargs": bool,
    "cwd": str,
    "inline-code": bool,
    "arg-files": bool,
    "ask": bool,
    # Absent from policies compiled before each was added (the gate then takes the cautious value).
    "response-files": NotRequired[bool],
    "harmless-options": NotRequired[bool],
    "min-positionals": NotRequired[int],
    "glob-writes": NotRequired[bool],
    "stdin": NotRequired[str | None],
    "forbidden": NotRequired[dict[str, str]],
    "anchored": NotRequired[dict[str, list[str]]],
})
"""One rule of `tools::bash-allowlist`: a program, its subcommands and its grammar, compiled."""


class BashAllowlistParams(TypedDict):
    rules: list[ShellRuleJSON]


WriteWhitelistParams = TypedDict("WriteWhitelistParams", {"globs": list[str], "control-files": NotRequired[list[str]]})


class WriteDenylistParams(TypedDict):
    globs: list[str]


class CredentialJSON(TypedDict):
    """A credential the egress proxy adds (`runtime.manifests.params.CredentialRule`), as the policy holds it."""

    host: str
    env: str | None
    file: str | None
    command: list[str] | None
    send: str
    header: str | None
    username: str | None
    query: str | None


class EgressAllowlistParams(TypedDict):
    domains: list[str]
    addresses: list[str]
    ports: list[int]
    credentials: list[CredentialJSON]
