"""Plans (``plan.toml``): a goal, success criteria, and subtasks that are task manifests.

```toml
#:schema ../../schemas/plan.schema.json
[plan]
goal = "Fix calc.mean and document it."
success-criteria = ["the tests pass", "README documents mean"]
checks = ["pytest -q tests"]

[[subtask]]
id = "fix-mean"
sequence = 1                      # equal numbers run in parallel
file = "tasks/fix-mean.toml"      # a task manifest, relative to the plan file ...

[[subtask]]
id = "document-mean"
sequence = 2
uses = ["fix-mean"]               # outputs of subtasks with a smaller sequence
[subtask.task]                    # ... or the task's tables inline, at the subtask level
role = "edit-local"
goal = "Document mean in README.md."
[subtask.scope]
files-whitelist = ["README.md"]
[subtask.agent]
backend = "builtin"
model = "scripted/doc"
script = "doc.script.toml"        # relative to the plan file
[subtask.body]
text = "Describe calc.mean in README.md."
```

The whole plan is validated before anything runs, and every problem is
reported at once (``ManifestErrors``), each as ``file:line: message``:

- the schema (kebab-case keys, unknown keys rejected, ranges);
- subtask ids are unique, each subtask has exactly one of ``file`` and inline
  task tables, and its task loads through the task loader
  (``runtime.manifests.task``: the role exists and is spawnable, every field
  is consumed by an atom) with an ``[agent]`` table, and its policy compiles;
- agent ids are unique across the plan (explicit ones, and generated ones,
  which collide when two subtasks name the same task file);
- every ``uses`` names a subtask with a strictly smaller sequence;
- no two subtasks of one sequence group may write the same path (see
  ``runtime.orchestration.plans.scopes.globs_overlap``).

A task written inline has as digest (and so as generated agent id) the
sha256 of the plan file's bytes, a NUL byte and the subtask id (UTF-8):
``inline_digest``. Its ``Task.path`` is the plan file, so its ``[agent]
script`` is relative to the plan's folder, and its errors name the plan's
lines. A plan a planner model writes (JSON) goes through ``plan_from_json``:
it is rendered to TOML first (``runtime.orchestration.plans.save``) so its
errors have lines too.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from runtime.errors import ManifestError, ManifestErrors
from runtime.manifests.catalog import Catalog, display_path
from runtime.manifests.names import generated_agent_id
from runtime.manifests.params import check_value
from runtime.manifests.task import Task, load_task, task_from_data
from runtime.manifests.tomlsrc import TomlSource, read_toml
from runtime.model import Model, describe
from runtime.models.types import ModelReach
from runtime.orchestration.plans.schema import TASK_TABLES, PlannerSection, PlanSection, ReviewerSection, SubtaskEntry
from runtime.orchestration.plans.scopes import globs_overlap, write_scope

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject

_M = TypeVar("_M", bound=Model)

# The name an inline task's ``Task.path`` gets when the plan has no file yet (a planner's plan).
UNSAVED_PLAN_NAME = "plan.toml"


# --- what a loaded plan is -------------------------------------------------


@dataclass(frozen=True)
class Subtask:
    id: str
    sequence: int
    uses: tuple[str, ...]
    task: Task = field(repr=False)
    line: int  # the line of its `[[subtask]]` header in the plan
    file: Path | None  # the task manifest; None for an inline task
    node_labels: dict[str, str] = field(default_factory=dict)  # where a cluster may run it (executor ray)

    @property
    def inline(self) -> bool:
        return self.file is None


@dataclass(frozen=True)
class Plan:
    path: Path | None  # the plan file; None for a plan not saved yet
    base_dir: Path  # what `file` and inline `script` paths are relative to
    digest: str  # sha256 of the plan's text
    goal: str
    success_criteria: tuple[str, ...]
    checks: tuple[str, ...]
    max_replans: int
    concurrency: int
    max_dispatches: int
    executor: str  # "local" or "ray"
    ray_address: str | None
    planner: ModelReach | None  # `[plan.planner]` (`script` resolved against base_dir)
    reviewer: ModelReach | None  # `[plan.reviewer]` (likewise)
    subtasks: tuple[Subtask, ...]  # in file order
    data: JSONObject = field(repr=False, compare=False)  # the TOML tables as written, for `save_plan` and the state
    src: TomlSource = field(repr=False, compare=False)

    def subtask(self, subtask_id: str) -> Subtask:
        return next(s for s in self.subtasks if s.id == subtask_id)

    def groups(self) -> list[tuple[int, tuple[Subtask, ...]]]:
        """The sequence groups in the order they run, each with its subtasks in file order."""
        seqs = sorted({s.sequence for s in self.subtasks})
        return [(q, tuple(s for s in self.subtasks if s.sequence == q)) for q in seqs]


def plan_checks(plan: Plan) -> tuple[str, ...]:
    """The plan-level commands fan-in runs on the merged tree, in order."""
    return plan.checks


# --- loading and validation --------------------------------------------------


def inline_digest(plan_text: str, subtask_id: str) -> str:
    """The digest of an inline task: sha256 of the plan's bytes, a NUL byte and the subtask id."""
    return hashlib.sha256(plan_text.encode() + b"\0" + subtask_id.encode()).hexdigest()


def _validate_all(cls: type[_M], data: Any, src: TomlSource, prefix: tuple[Any, ...]) -> tuple[_M | None, list[ManifestError]]:
    """Like ``parse_model``, but every pydantic error becomes a ManifestError (one per line:
    a value failing each member of a union, `float | int`, is one mistake)."""
    try:
        return cls.model_validate(data), []
    except ValidationError as exc:
        errors: dict[int, ManifestError] = {}
        for err in exc.errors(include_url=False):
            loc = prefix + tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            line = src.line_of(loc)
            errors.setdefault(line, ManifestError(src.path, line, describe({"type": err["type"], "loc": loc, "msg": err["msg"]})))
        return None, list(errors.values())


def _model_reach(section: ReviewerSection, key: str, src: TomlSource, base_dir: Path,
                 errors: list[ManifestError]) -> ModelReach | None:
    """The planner's or the reviewer's model as its table says (None, and errors, when it says it wrong)."""
    loc = ("plan", key)
    before = len(errors)
    scripted = section.model.startswith("scripted/")
    if scripted != (section.script is not None):
        errors.append(src.error(loc + (("script",) if section.script else ("model",)), "`script` goes with a `scripted/<name>` model, and only with it"))
    if section.api_base is not None and not re.match(r"^https?://[^\s/]+", section.api_base):
        errors.append(src.error(loc + ("api-base",), "`api-base` must be an http(s) URL"))
    script = None
    if section.script is not None:
        path = (base_dir / section.script).resolve()
        if not path.is_file():
            errors.append(src.error(loc + ("script",), f"script file {section.script} does not exist"))
        script = str(path)
    if len(errors) > before:
        return None
    if isinstance(section, PlannerSection):
        return ModelReach.planner(section.model, api_base=section.api_base, script=script,
                                  max_retries=section.max_retries)
    return ModelReach.reviewer(section.model, api_base=section.api_base, script=script)


def _check_plan_section(section: PlanSection, src: TomlSource, base_dir: Path,
                        errors: list[ManifestError]) -> tuple[ModelReach | None, ModelReach | None]:
    if not section.goal.strip():
        errors.append(src.error(("plan", "goal"), "the goal is empty"))
    for n, criterion in enumerate(section.success_criteria):
        if not criterion.strip():
            errors.append(src.error(("plan", "success-criteria", n), "a success criterion is empty"))
    try:
        check_value("command-list", section.checks)
    except ValueError as exc:
        errors.append(src.error(("plan", "checks"), f"`checks`: {exc}"))
    if section.ray_address is not None and section.executor != "ray":
        errors.append(src.error(("plan", "ray-address"), '`ray-address` goes with executor = "ray"'))
    planner = _model_reach(section.planner, "planner", src, base_dir, errors) if section.planner else None
    reviewer = _model_reach(section.reviewer, "reviewer", src, base_dir, errors) if section.reviewer else None
    return planner, reviewer


# Ray's label syntax (that of Kubernetes), exact values only: no selector operators.
NODE_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
NODE_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def _load_subtask(
    catalog: Catalog, n: int, raw: JSONObject, entry: SubtaskEntry, src: TomlSource,
    base_dir: Path, inline_path: Path, errors: list[ManifestError],
) -> Subtask | None:
    here = ("subtask", n)
    for key, value in entry.node_labels.items():
        if not NODE_LABEL_KEY.fullmatch(key) or not NODE_LABEL_VALUE.fullmatch(value):
            errors.append(src.error(here + ("node-labels", key), f"node label {key} = {value!r} is not a label: keys and "
                                    "values are letters, digits, `-`, `_` and `.` (a key may have a `domain/` prefix), "
                                    "at most 63 characters, and match exactly"))
    inline = [k for k in TASK_TABLES if k in raw]
    if entry.file is not None and inline:
        tables = ", ".join(f"[subtask.{k}]" for k in inline)
        errors.append(src.error(here + ("file",), f"subtask `{entry.id}` has both `file` and inline task tables ({tables}): give one of them"))
        return None
    if entry.file is None and not inline:
        errors.append(src.error(here, f"subtask `{entry.id}` has no task: give `file = \"<task.toml>\"` or the task's tables inline ([subtask.task], [subtask.body], ...)"))
        return None
    from runtime.policy.compile import compile_policy  # the gate's modules, only once a task has loaded

    try:
        if entry.file is not None:
            path = base_dir / entry.file
            if not path.is_file():
                errors.append(src.error(here + ("file",), f"subtask `{entry.id}`: task file {entry.file} does not exist"))
                return None
            task = load_task(catalog, path)
            if task.agent is None:
                errors.append(src.error(here + ("file",), f"subtask `{entry.id}`: {display_path(path)} has no [agent] table: a plan's subtask must say which backend runs it"))
                return None
        else:
            data = {k: raw[k] for k in inline}
            task = task_from_data(catalog, data, src, inline_path, here, digest=inline_digest(src.text, entry.id))
            if task.agent is None:
                errors.append(src.error(here, f"subtask `{entry.id}` has no [subtask.agent] table: say which backend runs it"))
                return None
        if "scope.control-files" in task.fields:
            # A plan may be a planner model's, and a file it names may be any: only a task file a person
            # gives `runtime spawn` may open a control file (and its change waits for an approval).
            where = here + (("file",) if entry.file is not None else ("scope", "control-files"))
            errors.append(src.error(where, f"subtask `{entry.id}` sets `scope.control-files`: a plan's subtasks "
                                    "never change control files; run that task alone with `runtime spawn`"))
            return None
        compile_policy(task.role, task, base_dir, catalog)
    except ManifestErrors as exc:
        errors.extend(exc.errors)
        return None
    except ManifestError as exc:
        errors.append(exc)
        return None
    return Subtask(entry.id, entry.sequence, tuple(entry.uses), task, src.line_of(here),
                   None if entry.file is None else base_dir / entry.file, dict(entry.node_labels))


def _glob_line(sub: Subtask, n: int, glob_index: int | None, src: TomlSource) -> int:
    if sub.file is not None:
        return src.line_of(("subtask", n, "file"))
    if glob_index is not None and "scope.files-whitelist" in sub.task.fields:
        return src.line_of(("subtask", n, "scope", "files-whitelist", glob_index))
    return src.line_of(("subtask", n))


def _cross_checks(
    raws: Sequence[JSON], entries: dict[int, SubtaskEntry], loaded: dict[int, Subtask], src: TomlSource, errors: list[ManifestError],
) -> None:
    # Ids and sequences as written, even where the entry failed its schema:
    # a subtask with a bad `body` should not also make every `uses` of it an error.
    ids: dict[str, int] = {}
    seqs: dict[str, int] = {}
    for n, raw in enumerate(raws):
        if not isinstance(raw, dict):
            continue
        sid = raw.get("id")
        if not isinstance(sid, str):
            continue
        if sid in ids:
            first = src.line_of(("subtask", ids[sid], "id"))
            errors.append(src.error(("subtask", n, "id"), f"subtask id `{sid}` is already used on line {first}"))
            continue
        ids[sid] = n
        seq = raw.get("sequence")
        if isinstance(seq, int) and not isinstance(seq, bool):
            seqs[sid] = seq

    for n, entry in entries.items():
        seen: set[str] = set()
        for i, used in enumerate(entry.uses):
            loc: tuple[str | int, ...] = ("subtask", n, "uses", i)
            if used in seen:
                errors.append(src.error(loc, f"subtask `{entry.id}` lists `{used}` twice in `uses`"))
            elif used == entry.id:
                errors.append(src.error(loc, f"subtask `{entry.id}` uses its own output"))
            elif used not in ids:
                known = ", ".join(f"`{k}`" for k in ids) or "none"
                errors.append(src.error(loc, f"subtask `{entry.id}` uses `{used}`, which is not a subtask of this plan (subtasks: {known})"))
            elif used in seqs and seqs[used] >= entry.sequence:
                errors.append(src.error(loc, (
                    f"subtask `{entry.id}` (sequence {entry.sequence}) uses `{used}` (sequence {seqs[used]}): "
                    "outputs come only from subtasks with a smaller sequence"
                )))
            seen.add(used)

    agents: dict[str, tuple[int, Subtask]] = {}
    for n, sub in loaded.items():
        explicit = explicit_agent_id(sub)
        if not sub.inline:
            loc = ("subtask", n, "file")
        else:
            loc = ("subtask", n, "task", "agent-id") if explicit else ("subtask", n)
        if sub.task.agent_id in agents:
            m, other = agents[sub.task.agent_id]
            how = "" if explicit else " (generated from the task's content: give one of them an explicit `agent-id`)"
            errors.append(src.error(loc, (
                f"subtask `{sub.id}`: agent id `{sub.task.agent_id}` is also used by subtask `{other.id}` "
                f"(line {src.line_of(('subtask', m))}){how}"
            )))
            continue
        agents[sub.task.agent_id] = (n, sub)

    by_seq: dict[int, list[tuple[int, Subtask]]] = {}
    for n, sub in loaded.items():
        by_seq.setdefault(sub.sequence, []).append((n, sub))
    for seq, members in sorted(by_seq.items()):
        scopes = [(n, sub, write_scope(sub.task)) for n, sub in members]
        for x, (_na, a, ga) in enumerate(scopes):
            for nb, b, gb in scopes[x + 1:]:
                hit = next(((i, j) for i, g in enumerate(ga) for j, h in enumerate(gb) if globs_overlap(g, h)), None)
                if hit is None:
                    continue
                i, j = hit
                errors.append(ManifestError(src.path, _glob_line(b, nb, j, src), (
                    f"subtasks `{a.id}` and `{b.id}` both run in sequence {seq} and may write the same paths: "
                    f"`{ga[i]}` (of `{a.id}`) overlaps `{gb[j]}` (of `{b.id}`); "
                    "give them different sequences or disjoint write scopes"
                )))


def explicit_agent_id(sub: Subtask) -> bool:
    """Whether the task's agent id was written (not generated from its digest)."""
    return sub.task.agent_id != generated_agent_id(sub.task.role.name, sub.task.digest)


def _sorted(errors: list[ManifestError], plan_path: str) -> list[ManifestError]:
    unique: dict[str, ManifestError] = {}
    for err in errors:
        unique.setdefault(str(err), err)
    order = {p: i for i, p in enumerate(dict.fromkeys(e.path for e in unique.values()))}
    return sorted(unique.values(), key=lambda e: (e.path != plan_path, order[e.path], e.line))


def plan_from_data(
    catalog: Catalog, data: JSONObject, src: TomlSource, base_dir: Path | str, *, path: Path | str | None = None,
) -> Plan:
    """Validate a plan's TOML tables; raise ``ManifestErrors`` with every problem found.

    ``src`` is the text ``data`` was read from (for a planner's JSON: its
    rendering, see ``plan_from_json``); ``base_dir`` is what ``file`` and
    inline ``script`` paths are relative to; ``path`` is the plan file, if any.
    """
    base_dir = Path(base_dir)
    plan_path = Path(path) if path is not None else None
    inline_path = plan_path if plan_path is not None else base_dir / UNSAVED_PLAN_NAME
    errors: list[ManifestError] = []
    if not isinstance(data, dict):
        raise ManifestErrors([ManifestError(src.path, 1, "a plan is a `[plan]` table and `[[subtask]]` entries")])
    for key in data:
        if key not in ("plan", "subtask"):
            errors.append(src.error((key,), f"unknown key `{key}` (a plan has `[plan]` and `[[subtask]]`)"))

    section: PlanSection | None = None
    planner: ModelReach | None = None
    reviewer: ModelReach | None = None
    if "plan" not in data:
        errors.append(ManifestError(src.path, 1, "missing required table `[plan]`"))
    else:
        section, errs = _validate_all(PlanSection, data["plan"], src, ("plan",))
        errors += errs
        if section is not None:
            planner, reviewer = _check_plan_section(section, src, base_dir, errors)

    raws = data.get("subtask", [])
    if not isinstance(raws, list):
        errors.append(src.error(("subtask",), "`subtask` must be an array of tables: write each one under `[[subtask]]`"))
        raws = []
    elif not raws:
        errors.append(ManifestError(src.path, src.line_of(("subtask",)) if "subtask" in data else 1, "a plan needs at least one `[[subtask]]`"))
    entries: dict[int, SubtaskEntry] = {}
    loaded: dict[int, Subtask] = {}
    for n, raw in enumerate(raws):
        entry, errs = _validate_all(SubtaskEntry, raw, src, ("subtask", n))
        errors += errs
        if entry is None:
            continue
        entries[n] = entry
        sub = _load_subtask(catalog, n, raw, entry, src, base_dir, inline_path, errors)
        if sub is not None:
            loaded[n] = sub
    _cross_checks(raws, entries, loaded, src, errors)

    if errors or section is None:
        raise ManifestErrors(_sorted(errors, src.path))
    return Plan(
        plan_path, base_dir, hashlib.sha256(src.text.encode()).hexdigest(),
        section.goal, tuple(section.success_criteria), tuple(section.checks),
        section.max_replans, section.concurrency, section.max_dispatches, section.executor, section.ray_address,
        planner, reviewer,
        tuple(loaded[n] for n in sorted(loaded)), data, src,
    )


def load_plan(catalog: Catalog, path: Path | str) -> Plan:
    """Load and validate a ``plan.toml``; raise ``ManifestErrors`` with every problem found."""
    path = Path(path)
    where = display_path(path)
    try:
        data, src = read_toml(path, where)
    except ManifestError as exc:
        raise ManifestErrors([exc]) from None
    return plan_from_data(catalog, data, src, path.resolve().parent, path=path)


def plan_from_json(catalog: Catalog, plan_data: JSONObject, base_dir: Path | str, display: str = "<planner plan>") -> Plan:
    """Validate a plan given as data (a planner's JSON), through its TOML rendering.

    The errors name lines of ``render_plan(plan_data)``, shown as ``display``;
    send that text along with them, so line numbers mean something.
    """
    from runtime.orchestration.plans.save import render_plan

    try:
        text = render_plan(plan_data)
        data = tomllib.loads(text)
    except (ValueError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise ManifestErrors([ManifestError(display, 1, f"the plan cannot be written as TOML: {exc}")]) from None
    return plan_from_data(catalog, data, TomlSource(display, text), base_dir)
