"""A plan run's events: one typed event per kind, as the run's state stores them and its listeners get them.

`PlanRun.emit` takes one of these; the orchestrator's state stores its `data()` under its `kind`;
`runtime run --json` prints `to_json(run_id)`, one JSON object per line (`{"event": kind, "run": id,
...fields}`); the live view and the report read the fields. A stored event comes back through
`from_stored`. An event kind is one class and one registry entry: a listener never matches a kind
no one sends, and a field renamed is renamed everywhere at once.

The stream's format is versioned with `EVENTS_VERSION` (in `run-start`): a consumer of `--json`
knows which fields to expect.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from runtime.orchestration.judge import JudgementStatus
from runtime.orchestration.report import PlanStatus

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict, JSONObject

EVENTS_VERSION = 1


@dataclass(frozen=True)
class RunEvent:
    kind: ClassVar[str] = ""

    def data(self) -> JSONDict:
        """The fields, as stored and printed (a field left None where the kind makes it optional is omitted)."""
        out: JSONDict = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def to_json(self, run_id: str) -> JSONDict:
        return {"event": self.kind, "run": run_id, **self.data()}


def _optional() -> Any:
    return field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class RunStart(RunEvent):
    kind: ClassVar[str] = "run-start"
    goal: str
    base: str
    integration: str
    version: int = EVENTS_VERSION


@dataclass(frozen=True)
class Dispatch(RunEvent):
    kind: ClassVar[str] = "dispatch"
    subtask: str
    agent: str
    dispatch: int
    base: str


@dataclass(frozen=True)
class Redispatch(RunEvent):
    kind: ClassVar[str] = "redispatch"
    subtask: str
    agent: str
    reason: str


@dataclass(frozen=True)
class AgentProgress(RunEvent):
    """An agent's progress, as its spawn reports it (`runtime.spawn.progress.Progress`)."""

    kind: ClassVar[str] = "progress"
    subtask: str
    agent: str
    attempt: int
    state: str  # a `ProgressState`, by its value: what a worker node sent is shown, never trusted
    turns: int
    tool_calls: int
    denials: int
    elapsed_s: float
    cost_usd: float
    node: str | None = _optional()  # the cluster node the agent runs on (--executor ray)


@dataclass(frozen=True)
class SharedPath(RunEvent):
    """A file an `orchestrator-notify` agent wrote, for the people watching the run."""

    kind: ClassVar[str] = "shared-path"
    subtask: str
    agent: str
    path: str


@dataclass(frozen=True)
class SubtaskEnd(RunEvent):
    kind: ClassVar[str] = "subtask-end"
    subtask: str
    label: str
    commit: str | None
    cause: str | None = _optional()  # the first real cause, when it did not end ok


@dataclass(frozen=True)
class ImportRefused(RunEvent):
    """A cluster worker's result that the orchestrator's re-check refused to import."""

    kind: ClassVar[str] = "import-refused"
    subtask: str
    reason: str


@dataclass(frozen=True)
class Imported(RunEvent):
    kind: ClassVar[str] = "imported"
    subtask: str
    commit: str | None


@dataclass(frozen=True)
class Integrated(RunEvent):
    kind: ClassVar[str] = "integrated"
    subtask: str
    commit: str


@dataclass(frozen=True)
class MergeConflict(RunEvent):
    """An accepted branch that would not merge into the integration: left out, part of the gap. Like
    `MergeCommitted`, fan-in stores it; the run's listeners get `Integrated` and the judgement instead."""

    kind: ClassVar[str] = "merge-conflict"
    subtask: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class MergeCommitted(RunEvent):
    """A merge into the integration branch, stored by fan-in as it makes it."""

    kind: ClassVar[str] = "merge"
    subtask: str
    commit: str


@dataclass(frozen=True)
class PlanCheck(RunEvent):
    kind: ClassVar[str] = "plan-check"
    command: str
    exit_code: int


@dataclass(frozen=True)
class Judged(RunEvent):
    kind: ClassVar[str] = "judgement"
    status: JudgementStatus
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", JudgementStatus(self.status))  # read back, an event names it by value


@dataclass(frozen=True)
class Replan(RunEvent):
    kind: ClassVar[str] = "replan"
    reason: str
    gap: tuple[str, ...]
    subtasks: tuple[str, ...]


@dataclass(frozen=True)
class Merged(RunEvent):
    kind: ClassVar[str] = "merged"
    into: str | None
    commit: str | None


@dataclass(frozen=True)
class Accepted(RunEvent):
    kind: ClassVar[str] = "accepted"
    learn: tuple[str, ...]


@dataclass(frozen=True)
class RunEnd(RunEvent):
    kind: ClassVar[str] = "run-end"
    status: PlanStatus
    report: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", PlanStatus(self.status))  # read back, an event names it by value


EVENTS: dict[str, type[RunEvent]] = {cls.kind: cls for cls in (
    RunStart, Dispatch, Redispatch, AgentProgress, SharedPath, SubtaskEnd, ImportRefused, Imported, Integrated,
    MergeConflict, MergeCommitted, PlanCheck, Judged, Replan, Merged, Accepted, RunEnd)}


def from_stored(kind: str, data: JSONObject) -> RunEvent:
    """The event the state stored under ``kind``; lists come back as the tuples the fields hold."""
    cls = EVENTS[kind]
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
    return cls(**values)
