"""`runtime allow 'COMMAND' [--role R]`: a person's "yes, always", written as a rule into the repository's catalog.

The gate asks where no rule decides a call, and its reason names this command. It reads the command as
the gate does (strict mode, at the repository's root, as the role's policy), and for each simple command
no rule decides it writes the narrowest rule that allows it: exactly the words given (a grammar would
allow more than the person said yes to), restating the role's rules for that program where the role file has none yet (a role's rules
for a program replace its parent's). The rule goes into the project catalog's role file,
`.agent-runtime/roles/<role>.toml`: the project role, or, for a shipped role, a file of that name
that extends it (adding to it, never replacing it), made on first use.

Nothing is written unless the new catalog compiles and the gate then allows the command; a command a
rule forbids (push, a control file, the network where the role has none) or one no rule can allow (a
script, a one-liner, a construct the gate cannot read) is refused with the gate's reason. The change is
shown as a diff, to be reviewed and committed like code.
"""

from __future__ import annotations

import difflib
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import ManifestError
from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.kinds.mcp import PREFIX as MCP_PREFIX
from runtime.gate.kinds.mcp import split_name
from runtime.gate.policy import Policy
from runtime.gate.undecided import rule_refusal
from runtime.lang.shell_types import ShellDeny, ShellUnseen
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import PROJECT_FOLDER, shipped_catalog
from runtime.manifests.names import check_role_name
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from runtime.policy.document import STRICT
from runtime.tooling.project.rules import ATOM, inherited_rules, rule_toml, scratch_layer

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict, JSONObject


class AllowRefused(Exception):
    """Why no rule was written: one line for the person."""


@dataclass(frozen=True)
class Allowed:
    path: Path  # the role file of the project catalog
    before: str | None  # its text before (None: a new file)
    after: str  # its text with the new rules
    rules: tuple[JSONObject, ...]  # the rules added (restated ones aside), as the role file gets them
    reason: str  # the gate's answer to the command under the new rules

    @property
    def diff(self) -> str:
        name = str(self.path)
        old = (self.before or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(old, self.after.splitlines(keepends=True),
                                            "/dev/null" if self.before is None else name, name))


def _overlay_head(shipped: Path, name: str) -> str:
    """A project role file that adds to the shipped role of the same name: its identity copied, its rules to come."""
    data = tomllib.loads(shipped.read_text(encoding="utf-8"))["role"]
    lines = [
        f"# Role `{name}` of this repository: the shipped `{name}` (see `runtime roles`) and the rules below, which",
        "# `runtime allow` wrote. Remove this file to go back to the shipped role alone.",
        "",
        "[role]",
    ]
    for key in ("name", "display-name", "description", "use-cases", "spawnable", "for-sessions"):
        if key in data:
            lines.append(f"{key} = {_toml_value(data[key])}")
    lines += ["", "[capabilities]", f'extends = "{name}"', ""]
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _own_programs(text: str | None) -> set[str]:
    """The programs a role file's own shell rules name (its rules for them already replace the parent's)."""
    if not text:
        return set()
    params = tomllib.loads(text).get("params", {})
    rules = (params.get(ATOM) or {}).get("rules") or []
    return {r["program"] for r in rules if isinstance(r, dict) and isinstance(r.get("program"), str)}


class _Layer:
    """The project catalog as it is, or with one role file changed, in a scratch copy: compiled and judged."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo

    def policy(self, role: str, text: str | None = None) -> Policy:
        """``role``'s strict policy at the repository's root. A role whose write scope a task gives is judged
        with the whole repository as its scope: which files a task lets it write is the task's, not a rule's."""
        from runtime.manifests.task import load_task

        with scratch_layer(self.repo, {} if text is None else {f"roles/{role}.toml": text}) as layer:
            catalog = Catalog(layer)
            resolved = load_role(catalog, role)
            task = None
            if resolved.spawnable and "scope::files-whitelist" in resolved.atom_names() \
                    and not resolved.params.get("scope::files-whitelist", {}).get("globs"):
                manifest = layer.parent / "task.toml"
                manifest.write_text(f'[task]\nrole = "{role}"\ngoal = "Judge a rule."\n\n[scope]\n'
                                    'files-whitelist = ["**"]\n\n[verification]\ntest-command = "true"\n'
                                    'test-results = "exit-code"\ncheck-commands = []\n\n[body]\ntext = "x"\n',
                                    encoding="utf-8")
                task = load_task(catalog, manifest)
            return Policy(compile_policy(resolved, task, self.repo, catalog, mode=STRICT))

    def rules_of(self, role: str, text: str | None = None) -> list[JSONDict]:
        """The shell rules ``role`` holds, as its files write them."""
        with scratch_layer(self.repo, {} if text is None else {f"roles/{role}.toml": text}) as layer:
            return inherited_rules(Catalog(layer), role)


def plan_allow(repo: Path, command: str, role: str) -> Allowed | str:
    """The rules that allow ``command`` for ``role`` and the role file holding them; or, when the gate allows
    the command already, why nothing changes. Raises AllowRefused (nothing is written either way)."""
    from runtime.gate.shell import analyze
    from runtime.tooling.project.render import ROLE_HEAD

    try:
        check_role_name(role)
    except ValueError as exc:
        raise AllowRefused(str(exc)) from None
    layer = _Layer(repo)
    project = Catalog(repo / PROJECT_FOLDER) if (repo / PROJECT_FOLDER).is_dir() else None
    path = repo / PROJECT_FOLDER / "roles" / f"{role}.toml"
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    if before is None:
        known = project or Catalog(Path(shipped_catalog() or "."))
        base = Path(known.role_path(role))
        if role == "project":
            head = ROLE_HEAD
        elif base.is_file():
            head = _overlay_head(base, role)
        else:
            raise AllowRefused(f"unknown role `{role}` (roles: {', '.join(known.role_names())})")
    else:
        head = before
    new_project = head if before is None and role == "project" else None  # the project role, made now
    try:
        policy = layer.policy(role, new_project)
    except ManifestError as exc:
        raise AllowRefused(f"the role `{role}` does not compile as it is: {exc}") from None
    if command.startswith(MCP_PREFIX):  # an MCP tool's name, `mcp__SERVER__TOOL`
        return _plan_mcp(layer, repo, role, command, policy, path, before, head, new_project)
    root = str(repo)
    whole = decide(policy, "Bash", {"command": command}, root)
    if whole.verdict == ALLOW:
        return f"role `{role}` already allows it: {whole.reason}"
    if whole.verdict == DENY:
        raise AllowRefused(f"a rule forbids it, so no rule of `runtime allow`'s can allow it: {whole.reason}")
    if not whole.undecided:
        raise AllowRefused(f"a rule of role `{role}` says to ask each time: {whole.reason}")
    try:
        script = analyze(command, root)
    except ShellUnseen as exc:
        raise AllowRefused(f"no rule can allow it: the gate cannot read all of what it runs ({exc})") from None
    except ShellDeny as exc:
        raise AllowRefused(str(exc)) from None
    parent = layer.rules_of(role, new_project)
    mine = _own_programs(before)
    new: list[JSONDict] = []
    for cmd in script.commands:
        line = shlex.join([cmd.name, *cmd.args])
        d = decide(policy, "Bash", {"command": line}, root)
        if d.verdict == ALLOW:
            continue
        if not d.undecided:
            raise AllowRefused(f"`{line}`: {d.reason}")
        why = rule_refusal(cmd.name, cmd.args) if cmd.path is None else "it runs a program by its path"
        if why is not None:
            raise AllowRefused(f"no rule can allow `{line}`: {why}; approve it when asked")
        # Exactly the words given: the narrowest rule there is (a grammar would allow more than was asked).
        rule: JSONDict = {"program": cmd.name, **({"subcommands": [" ".join(cmd.args)]} if cmd.args else {}),
                          "positionals": []}
        if rule not in new:
            new.append(rule)
    if not new:
        raise AllowRefused(f"no one program of it is what the gate asks about: {whole.reason}")
    parts = []
    for program in dict.fromkeys(r["program"] for r in new):
        kept = [r for r in parent if r["program"] == program]
        if kept and program not in mine:
            parts.append(f"# The rules role `{role}` had for `{program}`, restated: a role's rules for a program replace "
                         "its parent's.\n" + "\n".join(rule_toml(r) for r in kept))
        for rule in (r for r in new if r["program"] == program):
            parts.append(rule_toml(rule, f"`runtime allow {shlex.quote(command)}`"))
    after = head.rstrip("\n") + "\n\n" + "\n".join(parts)
    try:
        judged = decide(layer.policy(role, after), "Bash", {"command": command}, root)
    except ManifestError as exc:
        raise AllowRefused(f"the rule would not compile: {exc}") from None
    if judged.verdict != ALLOW:
        raise AllowRefused(f"even with the rule, the gate would not allow it: {judged.reason}")
    return Allowed(path, before, after, tuple(new), judged.reason)


_MCP_ATOM = "tools::mcp-allowlist"


def _plan_mcp(layer: _Layer, repo: Path, role: str, tool: str, policy: Policy, path: Path, before: str | None,
              head: str, new_project: str | None) -> Allowed | str:
    """`runtime allow mcp__SERVER__TOOL` (or `mcp__SERVER__*`): a rule of `tools::mcp-allowlist` naming the server
    and the tool (its every tool), added to the role file; the role's servers restated where the file has none of
    its own (a role's list replaces its parent's)."""
    from runtime.manifests.params import MCP_NAME, McpRule, param_list

    named = split_name(tool)
    if named is None or not MCP_NAME.fullmatch(named[0]) or not _MCP_TOOL.fullmatch(named[1]):
        raise AllowRefused(f"`{tool}` is not an MCP tool's name (`mcp__SERVER__TOOL`, or `mcp__SERVER__*` for every "
                           "tool of a server)")
    server, name = named
    probe = "x" if name == "*" else name
    whole = decide(policy, f"mcp__{server}__{probe}", {}, str(repo))
    if whole.verdict == ALLOW and name != "*":
        return f"role `{role}` already allows it: {whole.reason}"
    if whole.verdict == ASK and not whole.undecided:
        raise AllowRefused(f"a rule of role `{role}` says to ask each time: {whole.reason}")
    own = ((tomllib.loads(before).get("params") or {}).get(_MCP_ATOM) or {}).get("servers") if before else None
    kept: list[JSONDict] = []
    if not own:
        with scratch_layer(repo, {} if new_project is None else {f"roles/{role}.toml": new_project}) as scratch:
            inherited = param_list(load_role(Catalog(scratch), role).params.get(_MCP_ATOM, {}).get("servers"), McpRule)
        kept = [{k: v for k, v in r.policy_json().items() if v not in ([], False)} for r in inherited]
    rule: JSONDict = {"server": server, "tools": [name]}
    parts = []
    if kept:
        parts.append(f"# The MCP rules role `{role}` had, restated: a role's list replaces its parent's.\n"
                     + "\n".join(_mcp_toml(r) for r in kept))
    parts.append(_mcp_toml(rule, f"`runtime allow {tool}`"))
    after = head.rstrip("\n") + "\n\n" + "\n".join(parts)
    try:
        judged = decide(layer.policy(role, after), "mcp__" + server + "__" + probe, {}, str(repo))
    except ManifestError as exc:
        raise AllowRefused(f"the rule would not compile: {exc}") from None
    if judged.verdict != ALLOW:
        raise AllowRefused(f"even with the rule, the gate would not allow it: {judged.reason}")
    return Allowed(path, before, after, (rule,), judged.reason)


_MCP_TOOL = re.compile(r"^(\*|[A-Za-z0-9_-]{1,128})$")


def _mcp_toml(rule: JSONObject, comment: str = "") -> str:
    lines = [f"# {comment}"] if comment else []
    lines.append(f'[[params."{_MCP_ATOM}".servers]]')
    lines += [f"{key} = {_toml_value(value)}" for key, value in rule.items()]
    return "\n".join(lines) + "\n"


def write(allowed: Allowed) -> None:
    allowed.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = allowed.path.with_name(allowed.path.name + ".tmp")
    tmp.write_text(allowed.after, encoding="utf-8")
    tmp.replace(allowed.path)
