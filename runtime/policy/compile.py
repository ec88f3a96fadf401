"""compile_policy: a role (and task) to the one JSON document the gate reads.

The document holds everything the gate needs: tools shown, gate kinds with
their parameter values (shell rules, write scopes, protected globs), the
worktree root every path is anchored at, and the runtime's own files that no
agent may write. Verify and sandbox entries ride along for the spawner. A
content hash seals it; the gate refuses a document whose hash does not match.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from runtime.errors import ManifestError
from runtime.lang.audience import AGENT, AUDIENCES
from runtime.lang.globs import globs_to_regex
from runtime.lang.jsontypes import JSONDict
from runtime.lang.shell_programs import FORBIDDEN_BUILTINS, OPAQUE_RUNNERS, SHELLS
from runtime.manifests.catalog import Catalog, display_path
from runtime.manifests.compose import param_values
from runtime.manifests.kinds import BUILTIN_SUBAGENTS, GATE_KINDS, NETWORK_TOOLS, SESSION_TOOLS, SUBAGENT_TOOLS, WRITE_TOOLS
from runtime.manifests.locate import CATALOG_PARTS, TOOLCHAIN_FILE
from runtime.manifests.params import ParamValue, ProgramRule, param_json, param_list
from runtime.manifests.role import ResolvedRole, load_role
from runtime.manifests.task import Task
from runtime.manifests.toolchain import Toolchain
from runtime.policy.compiled import EntryJSON, PolicyBody, PolicyJSON, ReviewerJSON, SandboxEntryJSON
from runtime.policy.document import FORMAT, MODES, STRICT, VERSION, PolicyDocument, content_hash
from runtime.policy.targets import make_rule, repository_rules
from runtime.verify.kinds.kind import PRIVATE_SET
from runtime.verify.kinds.registry import KINDS


def _role_error(role: ResolvedRole, loc: tuple[str, ...], message: str) -> ManifestError:
    return ManifestError(display_path(role.path), role.src.line_of(loc), message)


def check_role_coherent(role: ResolvedRole, values: dict[str, dict[str, ParamValue]]) -> None:
    """Every tool a role shows must be usable, and no rule may open a hole."""
    gates = {a.gate: a for a in role.atoms if a.gate}
    tools = set(role.tools)
    denied = set(param_list(values[gates["deny-tools"].name]["tools"], str)) if "deny-tools" in gates else set()
    both = sorted(tools & denied)
    if both:
        raise _role_error(role, ("tools", "shown"), f"the role shows {', '.join(both)} but `tools::deny-tools` denies it")
    if "Bash" in tools and "bash-allowlist" not in gates:
        raise _role_error(role, ("tools", "shown"), "the role shows Bash but has no shell rules (add `tools::bash-allowlist`)")
    writes = sorted(tools & WRITE_TOOLS)
    if writes and ("write-whitelist" not in gates or "read-only" in gates):
        raise _role_error(role, ("tools", "shown"), f"the role shows {', '.join(writes)} but has no write scope (add `scope::files-whitelist`)")
    if tools & NETWORK_TOOLS and "no-network" in gates:
        raise _role_error(role, ("tools", "shown"), "the role shows web tools but has `net::no-network`")
    if "bash-allowlist" in gates:
        for rule in param_list(values[gates["bash-allowlist"].name]["rules"], ProgramRule):
            prog = rule.program
            if prog in SHELLS or prog in OPAQUE_RUNNERS or prog in FORBIDDEN_BUILTINS or prog in ("env", "xargs", "cd"):
                raise _role_error(
                    role, ("params",),
                    f"shell rule for `{prog}`: shells, wrappers and runners are checked through what they run; a rule for them would allow anything",
                )


def gate_params(kind: str, values: Mapping[str, ParamValue], root: Path | str) -> JSONDict:
    """The parameters a gate of ``kind`` is compiled with, from its atom's values, with what they say to read
    from the worktree at ``root`` now: `tools::bash-allowlist`'s `repository-targets` adds the rules of the
    repository's own make targets and tox environments (`runtime.policy.targets`) beside the role's own (a
    program's rules are alternatives). (`tools::mcp-allowlist`'s `configured = "ask"` is read by the gate when an
    MCP call comes, where Claude Code reads the person's servers: `runtime.gate.claude_setup`.)"""
    params = {p: values[p] for p in GATE_KINDS[kind].params}
    if kind == "bash-allowlist":
        rules: list[JSONDict] = [rule.policy_json() for rule in param_list(params["rules"], ProgramRule)]
        if params.get("repository-targets"):
            rules += repository_rules(str(root))
        return {"rules": rules}
    return {p: param_json(value) for p, value in params.items()}


def _check_toolchain_scope(toolchain: Toolchain, values: Mapping[str, Mapping[str, ParamValue]],
                           role: ResolvedRole) -> None:
    """A toolchain folder the agent may write is no toolchain: whatever it put there would run by name."""
    globs = _globs(values, role, "write-whitelist")
    if not toolchain.folders or not globs:
        return
    scope = re.compile(globs_to_regex(globs) or "(?!)")
    denied = re.compile(globs_to_regex(_globs(values, role, "write-denylist")) or "(?!)")
    for folder in toolchain.folders:
        if scope.match(f"{folder}/x") and not denied.match(f"{folder}/x"):
            raise ManifestError(toolchain.source, 1, f"toolchain folder `{folder}` lies inside role `{role.name}`'s "
                                f"write scope: the agent could put any program there; narrow the scope or deny `{folder}/**`")


def _globs(values: Mapping[str, Mapping[str, ParamValue]], role: ResolvedRole, kind: str) -> list[str]:
    """The globs of the role's gates of ``kind``, in the role's order."""
    return [g for name, have in values.items() if _gate(role, name) == kind for g in param_list(have.get("globs"), str)]


def _keep_sessions_off_the_toolchain(toolchain: Toolchain, values: Mapping[str, dict[str, ParamValue]],
                                     role: ResolvedRole) -> None:
    """A person's session (`for-sessions`), whose scope is the whole repository, writes none of the toolchain's
    folders: they join its denylist. A task's role must leave them out of its scope itself (the check above
    refuses it); a session's has no task to narrow, and refusing it left every call of a session in a
    repository with a `.venv` denied (its policy could not compile)."""
    if not role.for_sessions or not toolchain.folders:
        return
    for name, have in values.items():
        if _gate(role, name) == "write-denylist":
            globs = param_list(have["globs"], str)
            have["globs"] = [*globs, *(f for f in toolchain.folders if f not in globs)]
            return


_MAX_PACKAGE_JSON = 1 << 20


def package_scripts(root: Path) -> dict[str, str]:
    """The `scripts` of the worktree's package.json, for `npm test -- ARGS` (runtime.gate.package_scripts):
    none when there is no such file, or it is not a JSON object with a table of strings (a package
    whose scripts the gate cannot read passes no arguments to them)."""
    import json

    path = root / "package.json"
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_PACKAGE_JSON:
            return {}
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    scripts = doc.get("scripts") if isinstance(doc, dict) else None
    if not isinstance(scripts, dict):
        return {}
    return {k: v for k, v in sorted(scripts.items()) if isinstance(k, str) and isinstance(v, str) and "\x00" not in v}


def _gate(role: ResolvedRole, atom_name: str) -> str | None:
    return next((a.gate for a in role.atoms if a.name == atom_name), None)


class _Reviewed(TypedDict, total=False):
    reviewer: ReviewerJSON  # a role for a person's session may name one


def compile_policy(role: ResolvedRole, task: Task | None, root: Path | str, catalog: Catalog, *,
                   submodules: Sequence[str] = (), mode: str = STRICT, audience: str = AGENT) -> PolicyJSON:
    """The compiled policy for ``role`` (and ``task``) anchored at worktree ``root``. ``submodules``: the
    base's gitlink folders (relative), which no agent writes: their files are another repository's.
    ``mode``: `strict` (typed shell rules), or `sandboxed` for an agent the runtime runs inside its OS
    sandbox (shell commands judged by their effects; the policy decides nothing outside that sandbox).
    ``audience``: who reads the reasons (`runtime.lang.audience`): a spawned `agent`, or a person's `session`."""
    if audience not in AUDIENCES:
        raise ValueError(f"unknown policy audience {audience!r}")
    if mode not in MODES:
        raise ValueError(f"unknown policy mode {mode!r}: a policy is {' or '.join(MODES)}")
    if not role.spawnable and not role.for_sessions:
        raise _role_error(role, ("role", "spawnable"), f"role `{role.name}` is not spawnable: no agent ever runs under it, so it has no policy")
    values = param_values(role, task)
    check_role_coherent(role, values)
    toolchain = catalog.toolchain
    _keep_sessions_off_the_toolchain(toolchain, values, role)
    _check_toolchain_scope(toolchain, values, role)
    gates: list[EntryJSON] = []
    verify: list[EntryJSON] = []
    sandbox: list[SandboxEntryJSON] = []
    for atom in role.atoms:
        have = values[atom.name]
        if atom.gate:
            gates.append({"atom": atom.name, "kind": atom.gate, "params": gate_params(atom.gate, have, root)})
        if atom.verify and all(p in have for p in KINDS[atom.verify].params):
            # Without a task, a verify kind may lack its task-given values;
            # such a policy gates calls but verifies nothing (nothing to verify).
            private = KINDS[atom.verify].private
            verify.append({"atom": atom.name, "kind": atom.verify, "params": {
                p: (PRIVATE_SET if have[p] else "") if p in private else param_json(have[p])
                for p in KINDS[atom.verify].params}})
        for kind in atom.sandbox:
            sandbox.append({"atom": atom.name, "kind": kind})
    if toolchain.make_targets:
        for entry in gates:
            rules = entry["params"].get("rules") if entry["kind"] == "bash-allowlist" else None
            if isinstance(rules, list) and not any(isinstance(r, dict) and r.get("program") == "make" for r in rules):
                entry["params"] = {**entry["params"], "rules": [*rules, make_rule(toolchain.make_targets)]}
    # `[session] reviewer`: the model that may allow what a person's session would be asked (a session's only).
    reviewer: _Reviewed = {} if role.reviewer is None else {"reviewer": {
        "model": role.reviewer.model, "api-base": role.reviewer.api_base, "script": role.reviewer.script}}
    doc: PolicyBody = {
        "format": FORMAT,
        "version": VERSION,
        "mode": mode,
        "audience": audience,
        "role": role.name,
        "escalation": role.escalation,
        "task": None if task is None else {
            "path": str(task.path.resolve()),
            "sha256": task.digest,
            "agent_id": task.agent_id,
            "parent_agent": task.parent_agent,
        },
        "root": str(Path(root).resolve()),
        # The session tools ride with the tools the role shows: the gate checks each one's fields.
        "tools": list(role.tools) + (list(SESSION_TOOLS) if role.session else []),
        "gates": gates,
        "verify": verify,
        "sandbox": sandbox,
        "toolchain": {"path": list(toolchain.path)},
        "package-scripts": package_scripts(Path(root).resolve()),
        "subagents": subagent_roles(catalog) if SUBAGENT_TOOLS.keys() & set(role.tools) else {},
        **reviewer,
        # Every layer's catalog files: an agent must not rewrite the rules it runs under.
        "protected": [str(layer / part) for layer in catalog.layers
                      for part in (*CATALOG_PARTS, TOOLCHAIN_FILE)]
                     + [str(Path(root).resolve() / path) for path in submodules],
    }
    return {**doc, "hash": content_hash(doc)}


def subagent_roles(catalog: Catalog) -> dict[str, str]:
    """The subagent types a person's session may start, each with the role the hook gates it by: every role
    of the catalog an agent may run under, by its own name, and Claude Code's built-in types mapped to the
    closest role (`BUILTIN_SUBAGENTS`) where no role has their name."""
    out: dict[str, str] = {}
    for name in catalog.role_names():
        try:
            role = load_role(catalog, name)
        except ManifestError:
            continue  # a role that does not load cannot gate a subagent; lint says why
        if role.spawnable:
            out[name] = name
    for builtin, mapped in BUILTIN_SUBAGENTS.items():
        if builtin not in out and mapped is not None and mapped in out:
            out[builtin] = mapped
    return dict(sorted(out.items()))


def compile_document(role: ResolvedRole, task: Task | None, root: Path | str, catalog: Catalog, *,
                     submodules: Sequence[str] = (), mode: str = STRICT, audience: str = AGENT) -> PolicyDocument:
    """`compile_policy`, read as the typed document every layer asks (`runtime.policy.document`)."""
    return PolicyDocument.read(compile_policy(role, task, root, catalog, submodules=submodules, mode=mode,
                                              audience=audience))
