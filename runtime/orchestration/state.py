"""The orchestrator's own state: runs, subtasks, integration merges, events (SQLite, WAL).

Every transition is committed before the next step starts, so after a crash
`runtime run --resume RUN_ID` knows which subtasks were accepted (they are
not run again) and which branches were already merged (they are not merged
twice).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeAlias, TypeVar

from runtime.orchestration.report import PlanStatus
from runtime.outcomes import OutcomeStatus
from runtime.sqlite_schema import migrate

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject
    from runtime.orchestration.events import RunEvent

_E = TypeVar("_E", bound="RunEvent")

# The schema as migrations (runtime.sqlite_schema): `PRAGMA user_version` says how many a file has.
SCHEMA_V1 = """
create table if not exists runs (
    run_id text primary key, created real not null, updated real not null, status text not null,
    plan_path text, plan_json text not null, base text not null, base_branch text,
    integration text not null, replans integer not null default 0, detail text
);
create table if not exists subtasks (
    run_id text not null references runs(run_id), subtask_id text not null, round integer not null,
    sequence integer not null, agent_id text not null, status text not null, label text,
    dispatches integer not null default 0, branch text, commit_sha text, report text,
    outcome_json text, updated real not null,
    primary key (run_id, subtask_id)
);
create table if not exists merges (
    run_id text not null references runs(run_id), subtask_id text not null, commit_sha text not null,
    merged_as text not null, created real not null, primary key (run_id, subtask_id)
);
create table if not exists events (
    id integer primary key autoincrement, run_id text not null, time real not null,
    kind text not null, data text not null
);
"""


MIGRATIONS = (SCHEMA_V1,)


class SubtaskStatus(StrEnum):
    """A plan subtask's status before its outcome: waiting for its dispatch, or dispatched."""

    PENDING = "pending"
    RUNNING = "running"


# A subtask row's status: before its outcome, or its latest outcome's status.
SubtaskRowStatus: TypeAlias = SubtaskStatus | OutcomeStatus


def subtask_status(value: object) -> SubtaskRowStatus:
    """The status ``value`` names; ValueError for anything else."""
    members: list[SubtaskRowStatus] = [*SubtaskStatus, *OutcomeStatus]
    for member in members:
        if member == value:
            return member
    raise ValueError(f"a subtask's status must be one of {', '.join(members)}, not {value!r}")


@dataclass(frozen=True, slots=True)
class RunRow:
    """A plan run as its row in `runs` holds it."""

    run_id: str
    created: float
    updated: float
    status: PlanStatus
    plan_path: str | None
    plan: JSONObject  # the plan's tables as last stored: the replanned subtasks under the run's own [plan]
    base: str
    base_branch: str | None
    integration: str
    replans: int
    detail: str | None

    @property
    def goal(self) -> str:
        """The goal its `[plan]` table states ("" when the stored plan has none)."""
        header = self.plan.get("plan")
        return str(header.get("goal", "")) if isinstance(header, dict) else ""

    @classmethod
    def of(cls, row: sqlite3.Row) -> RunRow:
        return cls(row["run_id"], row["created"], row["updated"], PlanStatus(row["status"]), row["plan_path"],
                   json.loads(row["plan_json"]), row["base"], row["base_branch"], row["integration"], row["replans"],
                   row["detail"])


@dataclass(frozen=True, slots=True)
class SubtaskRow:
    """A subtask of a plan run as its row in `subtasks` holds it: its latest dispatch and outcome."""

    run_id: str
    subtask_id: str
    round: int
    sequence: int
    agent_id: str  # "" until it is first dispatched
    status: SubtaskRowStatus
    label: str | None
    dispatches: int
    branch: str | None
    commit_sha: str | None
    report: str | None
    outcome_json: str | None  # `Outcome.to_dict()`, as JSON
    updated: float

    @classmethod
    def of(cls, row: sqlite3.Row) -> SubtaskRow:
        return cls(row["run_id"], row["subtask_id"], row["round"], row["sequence"], row["agent_id"],
                   subtask_status(row["status"]),
                   row["label"], row["dispatches"], row["branch"], row["commit_sha"], row["report"],
                   row["outcome_json"], row["updated"])


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(
        method: Callable[Concatenate[OrchestratorState, _P], _R]) -> Callable[Concatenate[OrchestratorState, _P], _R]:
    def wrapper(self: OrchestratorState, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.lock:
            return method(self, *args, **kwargs)
    wrapper.__name__, wrapper.__doc__ = method.__name__, method.__doc__
    return wrapper


class OrchestratorState:
    @classmethod
    def read_only(cls, path: Path, timeout: float = 5) -> OrchestratorState | None:
        """The state at ``path`` opened for reading alone (the console, beside a live run): nothing created,
        migrated or written; None when there is none. A read may raise `sqlite3.Error` while a run writes."""
        if not path.is_file():
            return None
        self = cls.__new__(cls)
        self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout, check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.lock = threading.RLock()
        return self

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Integration runs in a worker thread while the event loop records progress: one
        # connection, shared, each use under the lock.
        self.conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.lock = threading.RLock()
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("pragma journal_mode=wal")
        # WAL with synchronous=NORMAL survives a crash of the process (what --resume needs)
        # without an fsync per progress event.
        self.conn.execute("pragma synchronous=normal")
        self.conn.execute("pragma foreign_keys=on")
        migrate(self.conn, MIGRATIONS, path)

    @_locked
    def close(self) -> None:
        self.conn.close()

    # -- runs ---------------------------------------------------------------------------------
    @_locked
    def create_run(self, run_id: str, plan_path: str | None, plan: JSONObject, base: str, base_branch: str | None,
                   integration: str) -> None:
        now = time.time()
        self.conn.execute(
            "insert into runs values (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, null)",
            (run_id, now, now, PlanStatus.RUNNING, plan_path, json.dumps(plan), base, base_branch, integration),
        )

    @_locked
    def run(self, run_id: str) -> RunRow | None:
        row = self.conn.execute("select * from runs where run_id = ?", (run_id,)).fetchone()
        return None if row is None else RunRow.of(row)

    @_locked
    def runs(self) -> list[RunRow]:
        """Every plan run, oldest first."""
        return [RunRow.of(r) for r in self.conn.execute("select * from runs order by created")]

    @_locked
    def update_run(self, /, run_id: str, *, status: PlanStatus | None = None, **fields: Any) -> None:
        if status is not None:
            fields["status"] = status
        if "plan" in fields:
            fields["plan_json"] = json.dumps(fields.pop("plan"))
        fields["updated"] = time.time()
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.conn.execute(f"update runs set {cols} where run_id = ?", (*fields.values(), run_id))  # noqa: S608 - keys are ours

    @_locked
    def delete_run(self, run_id: str) -> None:
        """Forget a run (`runtime prune`): its events, merges, subtasks and record, in one transaction."""
        self.conn.execute("begin immediate")
        try:
            for table in ("events", "merges", "subtasks", "runs"):
                self.conn.execute(f"delete from {table} where run_id = ?", (run_id,))  # noqa: S608 - names are ours
        except BaseException:
            self.conn.execute("rollback")
            raise
        self.conn.execute("commit")

    # -- subtasks -----------------------------------------------------------------------------
    @_locked
    def subtask(self, run_id: str, subtask_id: str) -> SubtaskRow | None:
        row = self.conn.execute("select * from subtasks where run_id = ? and subtask_id = ?", (run_id, subtask_id)).fetchone()
        return SubtaskRow.of(row) if row else None

    @_locked
    def subtasks(self, run_id: str) -> list[SubtaskRow]:
        return [SubtaskRow.of(r) for r in self.conn.execute(
            "select * from subtasks where run_id = ? order by round, sequence, subtask_id", (run_id,))]

    @_locked
    def put_subtask(self, /, run_id: str, subtask_id: str, *, status: SubtaskRowStatus, **fields: Any) -> None:
        fields["status"] = status
        fields["updated"] = time.time()
        if self.subtask(run_id, subtask_id) is None:
            cols = ["run_id", "subtask_id", *fields]
            self.conn.execute(f"insert into subtasks ({', '.join(cols)}) values ({', '.join('?' * len(cols))})",  # noqa: S608
                              (run_id, subtask_id, *fields.values()))
        else:
            sets = ", ".join(f"{k} = ?" for k in fields)
            self.conn.execute(f"update subtasks set {sets} where run_id = ? and subtask_id = ?",  # noqa: S608
                              (*fields.values(), run_id, subtask_id))

    @_locked
    def dispatched(self, run_id: str, subtask_id: str) -> int:
        """Count one more dispatch of a subtask; returns the new count (the loop guard reads it)."""
        self.conn.execute("update subtasks set dispatches = dispatches + 1, updated = ? where run_id = ? and subtask_id = ?",
                          (time.time(), run_id, subtask_id))
        row = self.subtask(run_id, subtask_id)
        assert row is not None, f"subtask {subtask_id} of run {run_id} was dispatched before it was put"
        return row.dispatches

    # -- merges and events --------------------------------------------------------------------
    @_locked
    def merges(self, run_id: str) -> dict[str, str]:
        return {r["subtask_id"]: r["merged_as"] for r in self.conn.execute("select * from merges where run_id = ?", (run_id,))}

    @_locked
    def record_merge(self, run_id: str, subtask_id: str, commit: str, merged_as: str) -> None:
        self.conn.execute("insert into merges values (?, ?, ?, ?, ?)", (run_id, subtask_id, commit, merged_as, time.time()))

    @_locked
    def events_of(self, run_id: str, kind: type[_E]) -> list[_E]:
        """The run's events of one kind, in the order they were stored."""
        from runtime.orchestration.events import from_stored

        found = []
        for r in self.conn.execute("select data from events where run_id = ? and kind = ? order by id",
                                   (run_id, kind.kind)):
            event = from_stored(kind.kind, json.loads(r["data"]))
            assert isinstance(event, kind), f"{kind.kind} is stored as {type(event).__name__}"  # one class per kind
            found.append(event)
        return found

    @_locked
    def events(self, run_id: str) -> list[tuple[float, RunEvent]]:
        """Every event of the run, typed (``runtime.orchestration.events``), with when it was stored; a kind this
        version does not know is left out."""
        from runtime.orchestration.events import EVENTS, from_stored

        return [(float(r["time"]), from_stored(r["kind"], json.loads(r["data"]))) for r in self.conn.execute(
            "select time, kind, data from events where run_id = ? order by id", (run_id,)) if r["kind"] in EVENTS]

    @_locked
    def changes_since(self, event_id: int) -> tuple[dict[str, PlanStatus], set[str], int]:
        """For a watcher: every run's status, the runs with events stored after ``event_id``, and the last
        event's id (0 for none)."""
        statuses = {str(r[0]): PlanStatus(r[1]) for r in self.conn.execute("select run_id, status from runs")}
        changed = {str(r[0]) for r in self.conn.execute("select distinct run_id from events where id > ?", (event_id,))}
        last = self.conn.execute("select coalesce(max(id), 0) from events").fetchone()[0]
        return statuses, changed, int(last)

    @_locked
    def event(self, run_id: str, event: RunEvent) -> None:
        self.conn.execute("insert into events (run_id, time, kind, data) values (?, ?, ?, ?)",
                          (run_id, time.time(), event.kind, json.dumps(event.data())))


def plan_lock_name(run_id: str) -> str:
    """The lock a live plan run holds (`runtime.workspace.locks`), among the agent-id locks of its state folder."""
    return f"plan-run-{run_id}"
