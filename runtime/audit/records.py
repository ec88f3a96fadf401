"""The audit log's records: one frozen class per kind, as `runtime.audit.log` writes them and reads them back.

A record's `data()` is the ``data`` object of its line: its fields in order, tuples as lists, a nested
record as an object, and a field made with `_optional()` left out when it is None (the kind's other
shapes do not have it). `AuditLog.append` takes a record; `records` and `read_from` give each line back as
an `AuditEntry`: the envelope every line has (seq, time, kind, agent, prev, hash) around its record.

Reading a line back is exact or not at all: the data becomes the class of its kind only when it is what
that class writes (the same keys in the same order, each value of its field's type), so that the record
written again is the line's data byte for byte. Anything else (a kind this version does not know, a line of
an older or a newer version, another writer's) is a `Foreign` record, which keeps the kind and the data as
they were: it never fails to read, a reader that matches the classes passes over it, and a forwarded one (a
cluster worker's records, `runtime.orchestration.ray_executor`) is written again unchanged.

A kind is one class here and one entry of `RECORDS`: a field renamed is renamed for every writer and reader
at once, and mypy checks each of them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONDict, JSONObject


def _optional() -> Any:
    """A field left out of the data when it is None: it is absent from the kind's other shapes."""
    return field(default=None, metadata={"optional": True})


@dataclass(frozen=True, slots=True, kw_only=True)
class _Shaped:
    """A record that is written as one JSON object of its fields, in order."""

    def data(self) -> JSONDict:
        return {name: _written(value) for name, value in self._written_fields()}

    def _written_fields(self) -> Iterator[tuple[str, object]]:
        for name, optional in _fields(type(self)):
            value = getattr(self, name)
            if value is None and optional and not self._null_written(name):
                continue
            yield name, value

    def _null_written(self, name: str) -> bool:
        """Whether the optional field ``name``, None, is written as null in this record's shape."""
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRecord(_Shaped):
    """One record of the log; its kind is its class's."""

    kind: ClassVar[str] = ""

    def kind_name(self) -> str:
        """The kind the record's line names."""
        return self.kind


# -- the kinds ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Spawned(AuditRecord):
    """An agent started."""

    kind: ClassVar[str] = "spawn"
    task: str
    sha256: str  # of the task file
    role: str
    backend: str
    base: str
    branch: str
    sandbox: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyUpdate(AuditRecord):
    """The policy compiled again before an attempt: a new one (its hash and catalog), or the one in force kept
    because the catalog no longer compiles (``kept`` and the error)."""

    kind: ClassVar[str] = "policy"
    attempt: int
    hash: str
    kept: bool | None = _optional()
    error: str | None = _optional()
    catalog: str | None = _optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class Egress(AuditRecord):
    """A request through the egress proxy (`runtime.sandbox.egress`): ``event`` "request" when it is decided
    (decision, status, reason; ``count`` on the record of connections turned away over the bound), "end" when
    an allowed one ends (bytes each way, duration, why). ``phase`` is "setup" for the world's setup commands."""

    kind: ClassVar[str] = "egress"
    phase: str | None = _optional()
    event: str
    id: str
    method: str | None
    host: str | None
    port: int | None
    address: str | None
    decision: str | None = _optional()
    status: int | None = _optional()  # null on a request's record when the tunnel's answer is the site's
    count: int | None = _optional()
    reason: str | None = _optional()
    bytes_up: int | None = _optional()
    bytes_down: int | None = _optional()
    duration_s: float | None = _optional()
    ended: str | None = _optional()
    credentialed: int | None = _optional()  # requests the proxy added the host's declared credential to

    def _null_written(self, name: str) -> bool:
        return name == "status" and self.event == "request"


@dataclass(frozen=True, slots=True, kw_only=True)
class Escalated(AuditRecord):
    """The agent said the task cannot be done as asked, and why."""

    kind: ClassVar[str] = "escalated"
    attempt: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ScratchThrown(AuditRecord):
    """New files outside the write scope, thrown away before verify (the first 200 of ``count``)."""

    kind: ClassVar[str] = "scratch"
    attempt: int
    paths: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckJudged(AuditRecord):
    """A verify check and its status (passed, rejected, error)."""

    kind: ClassVar[str] = "check"
    attempt: int
    atom: str
    check: str  # its verify kind
    status: str
    feedback: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Tampering(AuditRecord):
    """Checks whose test report was forged, and what shows it."""

    kind: ClassVar[str] = "tampering"
    attempt: int
    checks: tuple[str, ...]
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NeedsReview(AuditRecord):
    """Every check passed and a reviewer asks a person to look at these."""

    kind: ClassVar[str] = "needs-review"
    attempt: int
    findings: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Retried(AuditRecord):
    """The attempt was rejected by these checks and sent back with their feedback."""

    kind: ClassVar[str] = "retry"
    attempt: int
    checks: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupStep(_Shaped):
    """One setup command of the world's setup and how it ended."""

    command: str
    exit_code: int
    duration_s: float
    log: str  # the file its output is in


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldSetup(AuditRecord):
    """The worktree's world, taken from the cache (``cached``) or made by its setup commands."""

    kind: ClassVar[str] = "setup"
    key: str
    cached: bool
    shared: bool
    entries: tuple[str, ...]
    commands: tuple[SetupStep, ...] | None = _optional()  # made: each command
    duration_s: float | None = _optional()  # made: how long


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitIntent(AuditRecord):
    """Written before the commit, whose message names this record's hash."""

    kind: ClassVar[str] = "commit-intent"
    verified: bool
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Committed(AuditRecord):
    """A commit on the agent's branch: the verified work (None: nothing to commit), or, ``verified`` False,
    work kept for inspection."""

    kind: ClassVar[str] = "commit"
    commit: str | None
    branch: str
    verified: bool | None = _optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class MergedIn(AuditRecord):
    """The verified commit merged into the base branch."""

    kind: ClassVar[str] = "merge"
    into: str | None
    commit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested(AuditRecord):
    """A call put to a person (`runtime.approvals`); ``new`` False when the same call was already waiting."""

    kind: ClassVar[str] = "approval-request"
    attempt: int | None = _optional()
    id: str
    tool: str
    input_hash: str
    summary: str
    gate_reason: str
    expires_at: str | None
    new: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecided(AuditRecord):
    """A person's decision on a request, or its expiry."""

    kind: ClassVar[str] = "approval-decision"
    attempt: int | None = _optional()
    id: str
    tool: str
    input_hash: str
    status: str
    decision: str  # what the call was answered: allow or deny
    by: str | None
    reason: str | None
    decided_at: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Again(AuditRecord):
    """`runtime again`: a new series of attempts on the agent's kept work."""

    kind: ClassVar[str] = "again"
    previous: str  # how the last series ended
    head: str
    series: int
    sent_back: bool  # with what a person sent back


@dataclass(frozen=True, slots=True, kw_only=True)
class Afresh(AuditRecord):
    """`--afresh`: a finished run started again from the current base, its old branch and folder kept."""

    kind: ClassVar[str] = "afresh"
    previous: str
    kept_ref: str | None
    kept_head: str | None
    kept_run: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovered(AuditRecord):
    """What became of an interrupted run: resumed (``resumed`` "interrupted" with its kept ``work``, or "merge"
    of its verified ``commit``), finished from what git holds (``finished``, ``commit``), or started over from
    the ``previous`` status."""

    kind: ClassVar[str] = "recover"
    finished: bool
    resumed: str | None = _optional()
    work: str | None = _optional()
    commit: str | None = _optional()
    previous: str | None = _optional()

    def _null_written(self, name: str) -> bool:
        return name == "work" and self.resumed == "interrupted"


@dataclass(frozen=True, slots=True, kw_only=True)
class Gated(AuditRecord):
    """A gate decision on one tool call, as the agent's backend reported it."""

    kind: ClassVar[str] = "gate"
    attempt: int
    tool: str | None
    input: JSON  # the call's input as the model wrote it
    decision: str
    reason: str | None
    atom: str | None
    rule: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRan(AuditRecord):
    """A tool call that ran, and the start of what it returned."""

    kind: ClassVar[str] = "tool"
    attempt: int
    tool: str | None
    is_error: bool
    result: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Notified(AuditRecord):
    """How the person's `[notify]` command ended for an event: its exit code (and last line of stderr), or
    why it did not run."""

    kind: ClassVar[str] = "notify"
    event: str
    command: str
    error: str | None = _optional()
    exit_code: int | None = _optional()
    stderr: str | None = _optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class Freed(AuditRecord):
    """A run that left nothing: its branch deleted and its agent id free again."""

    kind: ClassVar[str] = "free"
    label: str
    branch: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Interrupted(AuditRecord):
    """A run interrupted, its work so far kept on its branch (``work``: the commit, None when there was none)."""

    kind: ClassVar[str] = "interrupted"
    branch: str
    work: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ended(AuditRecord):
    """The run's outcome."""

    kind: ClassVar[str] = "outcome"
    label: str
    message: str
    commit: str | None
    merged: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewAsked(AuditRecord):
    """The session's reviewer model's answer on a call the gate asked about (`runtime.approvals.reviewer`)."""

    kind: ClassVar[str] = "review-ask"
    tool: str
    input: JSONObject
    gate_reason: str
    verdict: str  # allow or ask
    reason: str
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Pruned(AuditRecord):
    """`runtime prune`: the agents and plan runs it removed."""

    kind: ClassVar[str] = "prune"
    agents: tuple[str, ...]
    runs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Foreign(AuditRecord):
    """A line this version does not read as one of its kinds, kept as it was: its kind and its data."""

    name: str
    body: JSONObject

    def kind_name(self) -> str:
        return self.name

    def data(self) -> JSONDict:
        return dict(self.body)


RECORDS: dict[str, type[AuditRecord]] = {cls.kind: cls for cls in (
    Spawned, PolicyUpdate, Egress, Escalated, ScratchThrown, CheckJudged, Tampering, NeedsReview, Retried, WorldSetup,
    CommitIntent, Committed, MergedIn, ApprovalRequested, ApprovalDecided, Again, Afresh, Recovered, Gated, ToolRan,
    Notified, Freed, Interrupted, Ended, ReviewAsked, Pruned)}


# -- the envelope -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Worker(_Shaped):
    """Where a record forwarded from a cluster worker was first written: its node, and its seq and time in
    the worker's own log. Kept as the last key of the record's data, ``worker``."""

    node: str
    seq: int
    time: str


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the log: the envelope every record has, and the record."""

    seq: int
    time: str  # ISO-8601, UTC, microseconds, "Z"
    kind: str
    agent: str | None
    record: AuditRecord
    prev: str  # the hash of the line before ("sha256:..."; `GENESIS` for the first)
    hash: str
    worker: Worker | None = None

    def data(self) -> JSONDict:
        """The line's ``data``, as written."""
        out = self.record.data()
        if self.worker is not None:
            out["worker"] = self.worker.data()
        return out

    def to_json(self) -> JSONDict:
        """The line's object, as written."""
        return {"seq": self.seq, "time": self.time, "kind": self.kind, "agent": self.agent, "data": self.data(),
                "prev": self.prev, "hash": self.hash}


def record_of(kind: str, data: JSONObject) -> AuditRecord:
    """The record of a line of ``kind`` whose data is ``data``: its kind's class when the data is exactly what
    that class writes, else `Foreign`."""
    cls = RECORDS.get(kind)
    record = _decoded(cls, data) if cls is not None else None
    return record if record is not None else Foreign(kind, data)


def read_data(kind: str, data: JSONObject) -> tuple[AuditRecord, Worker | None]:
    """A line's record and, when it was forwarded from a cluster worker, where it was first written."""
    last = next(reversed(data), None) if isinstance(data, dict) else None
    if last == "worker":
        worker = _decoded(Worker, data["worker"])
        if worker is not None:
            return record_of(kind, {k: v for k, v in data.items() if k != "worker"}), worker
    return record_of(kind, data), None


# -- reading ----------------------------------------------------------------------------------------------

# What the JSON-typed fields' annotations stand for when the hints are evaluated (they are aliases for mypy).
class _AnyJSON:
    pass


class _AnyObject:
    pass


_HINT_NAMES = {"JSON": _AnyJSON, "JSONObject": _AnyObject, "JSONDict": _AnyObject}
_S = TypeVar("_S", bound=_Shaped)
_Reader = Callable[["JSON"], object]
_READERS: dict[type[_Shaped], tuple[tuple[str, _Reader, bool], ...]] = {}
_FIELDS: dict[type[_Shaped], tuple[tuple[str, bool], ...]] = {}


class _Mismatch(Exception):
    pass


def _fields(cls: type[_Shaped]) -> tuple[tuple[str, bool], ...]:
    """(name, optional) of each field of ``cls``, in order."""
    known = _FIELDS.get(cls)
    if known is None:
        known = _FIELDS[cls] = tuple((f.name, bool(f.metadata.get("optional"))) for f in dataclasses.fields(cls))
    return known


def _readers(cls: type[_Shaped]) -> tuple[tuple[str, _Reader, bool], ...]:
    """(name, reader, required) of each field of ``cls``, made from its annotations once."""
    known = _READERS.get(cls)
    if known is None:
        hints = typing.get_type_hints(cls, localns=_HINT_NAMES)
        known = _READERS[cls] = tuple(
            (f.name, _reader(hints[f.name]), f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(cls))
    return known


def _decoded(cls: type[_S], data: JSON) -> _S | None:
    """``data`` as a ``cls``, or None when it is not exactly what a ``cls`` writes."""
    if not isinstance(data, dict):
        return None
    values: dict[str, object] = {}
    try:
        for name, read, required in _readers(cls):
            if name in data:
                values[name] = read(data[name])
            elif required:
                return None
    except _Mismatch:
        return None
    if len(values) != len(data):
        return None  # a key no field has
    record = cls(**values)
    # Each value is kept as read (a list as a tuple of the same items), so the record writes ``data`` again
    # exactly when it writes the same keys in the same order.
    return record if [name for name, _ in record._written_fields()] == list(data) else None


def _reader(hint: object) -> _Reader:
    """What reads a JSON value as a field of type ``hint`` holds it, raising _Mismatch for any other value."""
    if hint is _AnyJSON:
        return _as_is
    if hint is _AnyObject:
        return _instance_of(dict)
    if hint is str:
        return _instance_of(str)
    if hint is bool:
        return _instance_of(bool)
    if hint is type(None):
        return _instance_of(type(None))
    if hint is int:
        return _number(int)
    if hint is float:
        return _number((int, float))  # an int is a JSON number a float field keeps as it was written
    origin = typing.get_origin(hint)
    if origin is types.UnionType or origin is typing.Union:
        return _first_of(tuple(_reader(arm) for arm in typing.get_args(hint)))
    if origin is tuple:
        return _list_of(_reader(typing.get_args(hint)[0]))
    if isinstance(hint, type) and issubclass(hint, _Shaped):
        return _nested(hint)
    raise TypeError(f"an audit record's field cannot be of type {hint!r}")


def _as_is(value: JSON) -> object:
    return value


def _instance_of(kind: type) -> _Reader:
    def read(value: JSON) -> object:
        if not isinstance(value, kind):
            raise _Mismatch
        return value
    return read


def _number(kind: type | tuple[type, ...]) -> _Reader:
    def read(value: JSON) -> object:
        if not isinstance(value, kind) or isinstance(value, bool):  # true is no number to JSON
            raise _Mismatch
        return value
    return read


def _first_of(arms: tuple[_Reader, ...]) -> _Reader:
    def read(value: JSON) -> object:
        for arm in arms:
            try:
                return arm(value)
            except _Mismatch:
                continue
        raise _Mismatch
    return read


def _list_of(item: _Reader) -> _Reader:
    def read(value: JSON) -> object:
        if not isinstance(value, list):
            raise _Mismatch
        return tuple(item(v) for v in value)
    return read


def _nested(cls: type[_Shaped]) -> _Reader:
    def read(value: JSON) -> object:
        nested = _decoded(cls, value)
        if nested is None:
            raise _Mismatch
        return nested
    return read


def _written(value: object) -> JSON:
    if isinstance(value, tuple):
        return [_written(v) for v in value]
    if isinstance(value, _Shaped):
        return value.data()
    if value is None or isinstance(value, (str, int, float, dict, list)):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON; convert it explicitly")
