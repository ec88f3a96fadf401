"""Task manifests (``task.toml``): one agent's role, scope, checks and body.

Every field a task sets must be consumed by an atom of its role: a whitelist
given to a role without a write scope, or a test command given to a role that
runs no tests, is an error rather than a silent no-op.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import Field

from runtime.errors import ManifestError
from runtime.lang.jsontypes import JSON
from runtime.manifests.agent import AgentSection, AgentSpec, check_agent
from runtime.manifests.catalog import Catalog, display_path
from runtime.manifests.kinds import TASK_FIELDS
from runtime.manifests.model import parse_model
from runtime.manifests.names import check_agent_id, generated_agent_id
from runtime.manifests.params import ParamValue, check_value
from runtime.manifests.role import ResolvedRole, load_role
from runtime.manifests.tomlsrc import TomlSource, read_toml
from runtime.model import Model


class TaskSection(Model):
    role: str
    agent_id: str = ""
    parent_agent: str = ""
    goal: str


class ScopeSection(Model):
    files_whitelist: list[str] | None = None
    files_denylist: list[str] | None = None
    control_files: list[str] | None = None
    test_edits: list[str] | None = None


class VerificationSection(Model):
    test_command: str | None = None
    test_count_min: int | None = None
    check_commands: list[str] | None = None
    baseline: bool | None = None
    test_results: str | None = None
    tests_removed: list[str] | None = None
    hidden_tests: str | None = None
    allow_suppressions: list[str] | None = None
    allow_test_detection: list[str] | None = None
    review: bool | None = None


class OutputSection(Model):
    report_fields_required: list[str] | None = None


class NetworkSection(Model):
    allowed_domains: list[str] | None = None


class BodySection(Model):
    text: str


class TaskFile(Model):
    task: TaskSection
    scope: ScopeSection = Field(default_factory=ScopeSection)
    verification: VerificationSection = Field(default_factory=VerificationSection)
    output: OutputSection = Field(default_factory=OutputSection)
    network: NetworkSection = Field(default_factory=NetworkSection)
    agent: AgentSection | None = None
    body: BodySection


@dataclass(frozen=True)
class Task:
    path: Path
    digest: str
    agent_id: str
    parent_agent: str
    goal: str
    role: ResolvedRole
    # The tables an atom's parameters may be bound to (kinds.TASK_FIELDS), each value checked as its type.
    scope: ScopeSection
    verification: VerificationSection
    output: OutputSection
    network: NetworkSection
    body: str
    agent: AgentSpec | None  # how spawn runs it; compose and lint need no [agent]
    src: TomlSource = field(repr=False, compare=False)  # a SourceView into the plan for an inline subtask
    # The task as a TOML document of its own (an inline subtask's tables written out): what crosses to
    # an executor, which loads it again with `task_from_manifest`.
    manifest: str = field(default="", repr=False, compare=False)

    def value_of(self, name: str) -> ParamValue | None:
        """The task field an atom's parameter names (`scope.files-whitelist`); None when the task does not set it."""
        table, attr = _attribute(name)
        value: ParamValue | None = getattr(getattr(self, table), attr)
        return value

    @property
    def fields(self) -> dict[str, ParamValue]:
        """Every task field the task sets, by name (`scope.files-whitelist`)."""
        return {name: value for name in TASK_FIELDS if (value := self.value_of(name)) is not None}


def _attribute(name: str) -> tuple[str, str]:
    """A task field's table and the attribute of its section: `scope.files-whitelist` -> (scope, files_whitelist)."""
    table, key = name.split(".")
    return table, key.replace("-", "_")


def _set_fields(task: TaskFile) -> dict[str, JSON]:
    out: dict[str, JSON] = {}
    for name in TASK_FIELDS:
        table, attr = _attribute(name)
        value = getattr(getattr(task, table), attr)
        if value is not None:
            out[name] = value
    return out


def _checked(task: TaskFile, values: dict[str, ParamValue]) -> TaskFile:
    """``task`` with each field set to its value as its type checks it (`./src/**` is `src/**`)."""
    tables: dict[str, dict[str, ParamValue]] = {}
    for name, value in values.items():
        table, attr = _attribute(name)
        tables.setdefault(table, {})[attr] = value
    return task.model_copy(update={table: getattr(task, table).model_copy(update=set_here)
                                   for table, set_here in tables.items()})


class SourceView:
    """A ``TomlSource`` seen from inside one of its tables.

    A task written inline in a plan (``[subtask.task]``, ``[subtask.scope]``,
    ...) is validated by the same code as a task file; every key path that
    code names is relative to the task, so the view prefixes it (with
    ``("subtask", n)``) before asking the plan's source for the line.
    """

    def __init__(self, src: TomlSource, prefix: tuple[Any, ...]) -> None:
        self.src = src
        self.prefix = tuple(prefix)

    @property
    def path(self) -> str:
        return self.src.path

    @property
    def text(self) -> str:
        return self.src.text

    def line_of(self, loc: tuple[Any, ...]) -> int:
        return self.src.line_of(self.prefix + tuple(loc))

    def error(self, loc: tuple[Any, ...], message: str) -> ManifestError:
        return ManifestError(self.src.path, self.line_of(loc), message)


def load_task(catalog: Catalog, path: Path | str) -> Task:
    path = Path(path)
    data, src = read_toml(path, display_path(path))
    return task_from_data(catalog, data, src, path)


def task_from_data(
    catalog: Catalog,
    data: Any,
    src: TomlSource,
    path: Path | str,
    loc_prefix: tuple[Any, ...] = (),
    *,
    digest: str | None = None,
) -> Task:
    """Validate a task's already-read TOML tables; errors name lines of ``src``.

    ``load_task`` passes a whole task file. A plan passes the tables of one
    inline subtask with ``loc_prefix=("subtask", n)`` (so errors point at the
    plan's lines), ``path`` the plan file (``[agent] script`` is relative to
    its folder) and its own ``digest`` (sha256 of the plan's bytes, a NUL and
    the subtask id: see ``runtime.orchestration.plans.load``). Without ``digest``,
    the digest is the sha256 of ``src``'s text, the file's bytes.
    """
    path = Path(path)
    where = src.path
    view: TomlSource | SourceView = SourceView(src, loc_prefix) if loc_prefix else src
    parsed = parse_model(TaskFile, data, src, tuple(loc_prefix))
    digest = digest or hashlib.sha256(src.text.encode()).hexdigest()
    role = load_role(catalog, parsed.task.role, where, view.line_of(("task", "role")))
    if role.for_sessions:
        raise view.error(("task", "role"), f"role `{role.name}` gates a person's own Claude Code session and is never "
                         "spawned: give the task a spawnable role (`runtime roles`)")
    if not role.spawnable:
        raise view.error(("task", "role"), f"role `{role.name}` is not spawnable: only the orchestrator holds git; give this work to the orchestrator")
    agent_id = parsed.task.agent_id or generated_agent_id(role.name, digest)
    for key, value in (("agent-id", agent_id), ("parent-agent", parsed.task.parent_agent)):
        try:
            if value:
                check_agent_id(value)
        except ValueError as exc:
            raise view.error(("task", key), str(exc)) from None
    if not parsed.task.goal.strip():
        raise view.error(("task", "goal"), "the goal is empty")
    fields: dict[str, ParamValue] = {}
    bound = {spec.task_field: (atom.name, pname) for atom in role.atoms for pname, spec in atom.params.items() if spec.task_field}
    for name, given in _set_fields(parsed).items():
        loc = tuple(name.split("."))
        if name not in bound:
            raise view.error(loc, f"`{name}` is set, but role `{role.name}` has no atom that uses it")
        try:
            fields[name] = check_value(TASK_FIELDS[name], given)
        except ValueError as exc:
            raise view.error(loc, f"`{name}`: {exc}") from None
    parsed = _checked(parsed, fields)
    for name, (atom_name, pname) in bound.items():
        spec = next(a for a in role.atoms if a.name == atom_name).params[pname]
        if name not in fields and spec.default is None and pname not in role.params.get(atom_name, {}):
            raise view.error(("task", "role"), f"role `{role.name}` needs `{name}` in this task (for `{atom_name}`)")
    if not parsed.body.text.strip():
        raise view.error(("body", "text"), "the body is empty")
    agent = check_agent(parsed.agent, view, path.resolve().parent) if parsed.agent is not None else None  # type: ignore[arg-type]
    manifest = tomlkit.dumps(data) if loc_prefix else src.text
    return Task(path, digest, agent_id, parsed.task.parent_agent, parsed.task.goal, role, parsed.scope,
                parsed.verification, parsed.output, parsed.network, parsed.body.text, agent,
                view, manifest)  # type: ignore[arg-type]


def task_from_manifest(catalog: Catalog, manifest: str, path: Path | str, digest: str) -> Task:
    """A task from its manifest text (``Task.manifest``), as an executor gets it: ``path`` resolves its
    relative paths (``[agent] script``) and ``digest`` is the one it had where it was written."""
    import tomllib

    try:
        data = tomllib.loads(manifest)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(str(path), 1, f"the task sent to the executor is not valid TOML: {exc}") from None
    return task_from_data(catalog, data, TomlSource(str(path), manifest), path, digest=digest)
