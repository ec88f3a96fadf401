"""Roles: ``roles/<name>.toml`` bundles atoms, shows tools, sets parameters.

``extends`` takes the parent's atoms first (duplicates dropped), ``relaxes``
drops atoms the parent brought, depth is limited to 16 and cycles are errors.
A role's shell rules are the ``tools::bash-allowlist`` atom's parameters:
there is no other way for a role to allow a command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, field_validator

from runtime.errors import ManifestError
from runtime.manifests.atom import Atom
from runtime.manifests.catalog import Catalog, display_path, warn_once
from runtime.manifests.kinds import PERSON_TOOLS, SUBAGENT_TOOLS, TOOLS
from runtime.manifests.locate import role_file_below
from runtime.manifests.model import parse_model
from runtime.manifests.names import check_role_name
from runtime.manifests.params import ParamValue, ProgramRule, check_value, param_list
from runtime.manifests.tomlsrc import TomlSource, read_toml
from runtime.model import Model

MAX_DEPTH = 16
Escalation = Literal["ask-via-return", "orchestrator-notify", "fail-fast"]


class RoleSection(Model):
    name: str
    display_name: str
    description: str
    use_cases: list[str] = Field(min_length=1)
    spawnable: bool = True
    # A role for a person's own Claude Code session (`runtime hook install`'s main session): it has a
    # policy, but no task names it and no agent is spawned under it (it may run git, which agents never do).
    for_sessions: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_role_name(v)


class CapabilitiesSection(Model):
    required: list[str] = Field(default_factory=list)
    extends: str | None = None
    relaxes: list[str] = Field(default_factory=list)


class ToolsSection(Model):
    shown: list[Literal[TOOLS]]  # type: ignore[valid-type]
    # The harness's session tools (kinds.SESSION_TOOLS: checklist, background output): inherited when absent.
    session: bool | None = None


class EscalationSection(Model):
    policy: Escalation


class SessionSection(Model):
    # A model that may allow the calls a person's session would be asked about because no rule decides them
    # (`runtime.approvals.reviewer`): what it judges routine runs, the rest is still asked of the person.
    reviewer: str = Field(min_length=1)
    api_base: str | None = None
    script: str | None = None  # a scripted model's script (`scripted/...`), relative to the role file


class RoleFile(Model):
    role: RoleSection
    capabilities: CapabilitiesSection = Field(default_factory=CapabilitiesSection)
    tools: ToolsSection | None = None
    escalation: EscalationSection | None = None
    session: SessionSection | None = None
    params: dict[str, dict[str, JsonValue]] = Field(default_factory=dict)  # by atom, checked as their types


@dataclass(frozen=True)
class SessionReviewer:
    """`[session] reviewer` resolved: the model, where it answers, and a scripted model's script (absolute)."""

    model: str
    api_base: str | None = None
    script: str | None = None


@dataclass(frozen=True)
class ResolvedRole:
    name: str
    display_name: str
    description: str
    use_cases: tuple[str, ...]
    spawnable: bool
    escalation: str
    tools: tuple[str, ...]
    atoms: tuple[Atom, ...]
    params: dict[str, dict[str, ParamValue]]  # values the role chain sets, by atom
    chain: tuple[str, ...]  # ancestors first, this role last
    path: Path
    src: TomlSource = field(repr=False, compare=False)
    # `[tools] session`: the harness's session tools (kinds.SESSION_TOOLS) pass too, with the fields they take.
    session: bool = False
    for_sessions: bool = False  # `[role] for-sessions`: gates a person's own session, never spawned
    # The file of each role of the chain, in its order: a project role may extend the shipped role of its own
    # name (adding to it), so a name may stand twice in the chain, for two files.
    paths: tuple[Path, ...] = ()
    reviewer: SessionReviewer | None = None  # `[session] reviewer`, this role's or its parent's

    def atom_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.atoms)


def load_role(catalog: Catalog, name: str, used_in: str | None = None, line: int = 1) -> ResolvedRole:
    """Load and resolve a role by name; unknown names are an error at ``used_in:line``."""
    path = catalog.role_path(name)
    try:
        check_role_name(name)
    except ValueError as exc:
        raise ManifestError(used_in or "<command line>", line, str(exc)) from None
    if not path.is_file():
        known = ", ".join(catalog.role_names()) or "none"
        raise ManifestError(used_in or "<command line>", line, f"unknown role `{name}` (roles: {known})")
    # Resolved once per catalog: a plan loads its role for every subtask, and an executor again.
    found = catalog.resolved_roles.get(name)
    if found is None:
        found = catalog.resolved_roles[name] = _resolve(catalog, path, ())
    return found


def _cycle_error(catalog: Catalog, seen: tuple[str, ...], back_to: str) -> ManifestError:
    """One error per cycle, whichever role the walk started from: at its first member by name."""
    members = list(seen[seen.index(back_to):]) if back_to in seen else [back_to]
    first = min(members)
    ring = members[members.index(first):] + members[: members.index(first)] + [first]
    path = catalog.role_path(first)
    _, src = read_toml(path, display_path(path))
    return src.error(("capabilities", "extends"), f"role inheritance cycle: {' -> '.join(ring)}")


def _resolve(catalog: Catalog, path: Path, seen: tuple[str, ...]) -> ResolvedRole:
    where = display_path(path)
    data, src = read_toml(path, where)
    role = parse_model(RoleFile, data, src)
    if role.role.name != path.stem:
        raise src.error(("role", "name"), f"role name `{role.role.name}` does not match its file name `{path.stem}.toml`")
    caps = role.capabilities
    parent: ResolvedRole | None = None
    if caps.extends is not None:
        loc: tuple[str, ...] = ("capabilities", "extends")
        if caps.extends == role.role.name:
            # A project role extending the role of its own name adds to the one of the layer below (the shipped
            # `session` plus the rules `runtime allow --role session` wrote), instead of replacing it.
            below = role_file_below(str(catalog.root), role.role.name, str(path))
            if below is None:
                raise _cycle_error(catalog, (*seen, role.role.name), caps.extends)
            parent_path = Path(below)
        elif caps.extends in seen:
            raise _cycle_error(catalog, (*seen, role.role.name), caps.extends)
        else:
            parent_path = catalog.role_path(caps.extends)
        if not parent_path.is_file():
            raise src.error(loc, f"unknown parent role `{caps.extends}`")
        parent = _resolve(catalog, parent_path, (*seen, role.role.name))
        if len(parent.chain) + 1 > MAX_DEPTH:
            raise src.error(loc, f"role inheritance is {len(parent.chain) + 1} levels deep; the limit is {MAX_DEPTH}")

    def canon(names: list[str], key: str) -> list[str]:
        out: list[str] = []
        for n, name in enumerate(names):
            line = src.line_of(("capabilities", key, n))
            c = catalog.canonical(name, where, line)
            if c in out:
                raise ManifestError(where, line, f"`{name}` is listed twice in capabilities.{key}")
            out.append(c)
        return out

    required = canon(caps.required, "required")
    relaxes = canon(caps.relaxes, "relaxes")
    names = list(parent.atom_names()) if parent else []
    for n, r in enumerate(relaxes):
        if r in required:
            raise src.error(("capabilities", "relaxes", n), f"`{r}` is both required and relaxed")
        if r in names:
            names.remove(r)
        else:
            line = src.line_of(("capabilities", "relaxes", n))
            warn_once(f"relax:{where}:{line}", f"{where}:{line}: relaxes `{r}`, which the role does not have")
    for r in required:
        if r not in names:
            names.append(r)
    atoms = tuple(catalog.atoms[n] for n in names)

    tools = tuple(role.tools.shown) if role.tools else (parent.tools if parent else None)
    if tools is None:
        raise src.error(("role",), "missing required table `[tools]` (or `capabilities.extends` to inherit it)")
    if len(set(tools)) != len(tools):
        raise src.error(("tools", "shown"), "a tool is listed twice")
    session = role.tools.session if role.tools is not None and role.tools.session is not None else (
        parent is not None and parent.session)
    escalation = role.escalation.policy if role.escalation else (parent.escalation if parent else None)
    if escalation is None:
        raise src.error(("role",), "missing required table `[escalation]` (or `capabilities.extends` to inherit it)")

    params = {k: dict(v) for k, v in parent.params.items() if k in names} if parent else {}
    for key, values in role.params.items():
        line = src.line_of(("params", key))
        atom_name = catalog.canonical(key, where, line)
        if atom_name not in names:
            raise ManifestError(where, line, f"parameters for `{key}`, which is not one of the role's atoms")
        specs = catalog.atoms[atom_name].params
        for pname, value in values.items():
            loc = ("params", key, pname)
            if pname not in specs:
                raise src.error(loc, f"`{atom_name}` has no parameter `{pname}` (it has: {', '.join(sorted(specs)) or 'none'})")
            try:
                checked = check_value(specs[pname].type, value, catalog.grammars)
            except ValueError as exc:
                raise src.error(loc, f"`{pname}`: {exc}") from None
            inherited = params.get(atom_name, {}).get(pname)
            if specs[pname].type == "program-rules" and inherited:
                # Shell rules add to the parent's, program by program (the role's rules for a program
                # replace all the parent's for it): a project role allows `uv` without copying thirty rules.
                rules = param_list(checked, ProgramRule)
                mine = {r.program for r in rules}
                checked = [r for r in param_list(inherited, ProgramRule) if r.program not in mine] + rules
            params.setdefault(atom_name, {})[pname] = checked
    if role.role.for_sessions and role.role.spawnable:
        raise src.error(("role", "for-sessions"), "a role for sessions is never spawned: set `spawnable = false`")
    reviewer = parent.reviewer if parent else None
    if role.session is not None:
        reviewer = _reviewer(role.session, path, src, role.role.for_sessions)
    personal = [t for t in tools if t in PERSON_TOOLS or t in SUBAGENT_TOOLS]
    if personal and not role.role.for_sessions:
        raise src.error(("tools", "shown"), f"`{personal[0]}` is a tool of a person's own session (a question, plan "
                        "mode, a skill, a subagent): a spawned agent has nobody to answer it and no scope to hand on; "
                        "show it only in a role with `for-sessions = true`")
    return ResolvedRole(
        role.role.name, role.role.display_name, role.role.description, tuple(role.role.use_cases),
        role.role.spawnable, escalation, tools, atoms, params,
        (*(parent.chain if parent else ()), role.role.name), path, src, session, role.role.for_sessions,
        (*(parent.paths if parent else ()), path), reviewer,
    )


def _reviewer(section: SessionSection, path: Path, src: TomlSource, for_sessions: bool) -> SessionReviewer:
    """`[session]` checked: only a session's role has one; a scripted model names its script, which exists, and no
    other model does."""
    if not for_sessions:
        raise src.error(("session",), "`[session]` is for a role that gates a person's own session "
                        "(`for-sessions = true`): a spawned agent's asks go to a person through the approvals queue")
    scripted = section.reviewer.startswith("scripted/")
    if scripted and section.script is None:
        raise src.error(("session", "reviewer"), "a scripted reviewer needs `script`, the script file it plays")
    if section.script is not None and not scripted:
        raise src.error(("session", "script"), "`script` is for a scripted reviewer (`scripted/...`) alone")
    if section.api_base is not None and scripted:
        raise src.error(("session", "api-base"), "a scripted reviewer answers here: `api-base` is for a model server")
    script = None
    if section.script is not None:
        found = (path.parent / section.script).resolve()
        if not found.is_file():
            raise src.error(("session", "script"), f"no script file `{section.script}` beside the role file")
        script = str(found)
    return SessionReviewer(section.reviewer, section.api_base, script)
