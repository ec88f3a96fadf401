"""Where the orchestrator keeps its runs, and each run's recorded state.

The state folder lies outside the repository (agents never see it except
what is bound read-only into their sandbox): `worktrees/<id>` (the agent's
git worktree), `runs/<id>/` (bundle, policy, broker socket, private home,
one folder per attempt, `state.json`), `locks/` and `audit.jsonl`.
`state.json` is rewritten atomically at every phase, so `runtime status`
always reads a consistent picture, even after the orchestrator was killed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict, cast

from runtime.errors import FatalError
from runtime.outcomes import OutcomeStatus
from runtime.spawn.outcome import Attempt, AttemptJSON
from runtime.spawn.setup_record import SetupJSON, SetupRecord

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject


class RunStatus(StrEnum):
    """A run record's status before its outcome: the phase it is in, or interrupted (its orchestrator died)."""

    RUNNING = "running"
    VERIFYING = "verifying"
    COMMITTING = "committing"
    MERGING = "merging"
    INTERRUPTED = "interrupted"


# A run record's status: a phase, or, once the run ended, its outcome's status (final).
RecordStatus: TypeAlias = RunStatus | OutcomeStatus


def record_status(value: object) -> RecordStatus:
    """The status ``value`` names; ValueError for anything else."""
    members: list[RecordStatus] = [*RunStatus, *OutcomeStatus]
    for member in members:
        if member == value:
            return member
    raise ValueError(f"`status` must be one of {', '.join(members)}, not {value!r}")

# The version of `state.json`. A record without one was written before versions (its fields are version
# 1's); a newer version than this runtime knows is refused in one line rather than misread.
RECORD_VERSION = 1


class RunRecordJSON(TypedDict):
    """A `RunRecord` as `state.json` holds it (and `runtime status --json` prints it); a record also keeps the
    fields of a version this runtime does not name, ahead of these."""

    agent_id: str
    status: RecordStatus
    role: str
    task: str
    task_sha256: str
    backend: str
    base: str
    base_branch: str | None
    branch: str
    worktree: str
    pid: int
    resumed: str | None
    label: str | None
    message: str
    commit: str | None
    merged: str | None
    work: str | None
    id_free: bool
    catalog: str
    sandboxed: bool
    unattended: bool
    subtask: str | None
    series: int
    updated: str
    version: int
    attempts: list[AttemptJSON]
    setup: SetupJSON | None


@dataclass(frozen=True)
class RunRecord:
    """One agent run's recorded state, as `state.json` holds it. The only reader and writer of that file
    is `StateDir`; everything else asks the record's fields."""

    agent_id: str
    status: RecordStatus = RunStatus.RUNNING
    role: str = ""
    task: str = ""  # the task manifest's resolved path
    task_sha256: str = ""
    backend: str = ""
    base: str = ""
    base_branch: str | None = None
    branch: str = ""
    worktree: str = ""
    pid: int = 0  # the orchestrator that wrote it
    attempts: tuple[Attempt, ...] = ()
    resumed: str | None = None  # the interrupted work this run carried on from
    label: str | None = None  # the outcome's label, once there is one
    message: str = ""
    commit: str | None = None  # the verified commit
    merged: str | None = None  # its merge into the base branch
    work: str | None = None  # an interrupted run's kept work
    id_free: bool = False  # the run left nothing and gave its agent id back
    # How it was spawned, so that `runtime again` runs it the same way: the catalog it was compiled from,
    # inside the OS sandbox or not, watched or not, and the plan subtask it was (None: `runtime spawn`).
    catalog: str = ""
    sandboxed: bool = True
    unattended: bool = False
    subtask: str | None = None
    series: int = 1  # how many attempt series the agent id has run (`runtime again` starts the next)
    setup: SetupRecord | None = None  # how the worktree's world was made (`[worktree]`), when it has one
    updated: str = ""  # when it was last written (UTC)
    version: int = RECORD_VERSION
    extra: JSONObject = field(default_factory=dict)  # fields of a version this runtime does not name, as read

    def __post_init__(self) -> None:
        # `with_` takes its changes untyped: a status named by its value is held as the member, a misspelt one
        # raises here rather than being written.
        object.__setattr__(self, "status", record_status(self.status))

    @property
    def final(self) -> bool:
        return isinstance(self.status, OutcomeStatus)

    def with_(self, **changes: Any) -> RunRecord:
        """The record with ``changes`` (field names; an unknown one is a bug, and raises)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> RunRecordJSON:
        out: RunRecordJSON = {
            "agent_id": self.agent_id, "status": self.status, "role": self.role, "task": self.task,
            "task_sha256": self.task_sha256, "backend": self.backend, "base": self.base,
            "base_branch": self.base_branch, "branch": self.branch, "worktree": self.worktree, "pid": self.pid,
            "resumed": self.resumed, "label": self.label, "message": self.message, "commit": self.commit,
            "merged": self.merged, "work": self.work, "id_free": self.id_free, "catalog": self.catalog,
            "sandboxed": self.sandboxed, "unattended": self.unattended, "subtask": self.subtask,
            "series": self.series, "updated": self.updated, "version": self.version,
            "attempts": [a.to_json() for a in self.attempts],
            "setup": self.setup.to_json() if self.setup is not None else None,
        }
        if not self.extra:
            return out
        # A TypedDict value may hold more keys than it names: the unnamed fields go first, as they were read.
        return cast(RunRecordJSON, {**self.extra, **out})

    @classmethod
    def from_json(cls, data: object, where: str = "state.json") -> RunRecord:
        if not isinstance(data, dict) or not isinstance(data.get("agent_id"), str):
            raise FatalError(f"{where}: not a run record (no agent_id); remove it or the run's folder")
        version = data.get("version", RECORD_VERSION)
        if not isinstance(version, int) or version > RECORD_VERSION:
            raise FatalError(f"{where}: a run record of version {version!r}, newer than this runtime reads "
                             f"({RECORD_VERSION}): use the runtime that wrote it")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        fields = {k: v for k, v in data.items() if k in names}
        if "status" in fields:
            try:
                fields["status"] = record_status(fields["status"])
            except ValueError as exc:
                raise FatalError(f"{where}: {exc}; remove it or the run's folder") from None
        fields["attempts"] = tuple(Attempt.from_json(a) for a in data.get("attempts") or [])
        fields["setup"] = SetupRecord.from_json(data["setup"]) if isinstance(data.get("setup"), dict) else None
        return cls(**fields, extra={k: v for k, v in data.items() if k not in names})


def default_state_dir(repo_top: Path) -> Path:
    explicit = os.environ.get("RUNTIME_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    digest = hashlib.sha256(str(repo_top.resolve()).encode()).hexdigest()[:10]
    return base / "agent-runtime" / f"{repo_top.name}-{digest}"


@dataclass(frozen=True)
class StateDir:
    root: Path

    def worktree(self, agent_id: str) -> Path:
        return self.root / "worktrees" / agent_id

    def run(self, agent_id: str) -> Path:
        return self.root / "runs" / agent_id

    def attempt(self, agent_id: str, n: int) -> Path:
        return self.run(agent_id) / f"attempt-{n}"

    def task_manifest(self, agent_id: str) -> Path:
        """The task as the run was spawned with it (a TOML document of its own, an inline subtask's too):
        what `runtime again` runs again."""
        return self.run(agent_id) / "task.toml"

    @property
    def audit(self) -> Path:
        return self.root / "audit.jsonl"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    def read(self, agent_id: str) -> RunRecord | None:
        path = self.run(agent_id) / "state.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise FatalError(f"{path}: not JSON ({exc}); remove it or the run's folder") from None
        return RunRecord.from_json(data, str(path))

    def write(self, record: RunRecord) -> RunRecord:
        """Write ``record`` atomically (a reader sees the old file or the new one); returns it as written."""
        folder = self.run(record.agent_id)
        folder.mkdir(parents=True, exist_ok=True)
        record = record.with_(updated=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), version=RECORD_VERSION)
        tmp = folder / f".state.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(record.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, folder / "state.json")
        return record

    def all_runs(self) -> list[RunRecord]:
        runs = []
        for folder in sorted((self.root / "runs").glob("*")):
            state = self.read(folder.name)
            if state is not None:
                runs.append(state)
        return runs
