"""The typed result of a spawn: ok, rejected, failed(kind) or exhausted(limit).

Nothing is dropped and nothing failed is reported as a success: every attempt
and every check is recorded, and the exit code follows the status (0 for ok,
2 otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from runtime.outcomes import OutcomeStatus
from runtime.spawn import fields
from runtime.verify.kinds.record import TEXT_BOUNDS, CheckRecord, by_cause, excerpt, first_line
from runtime.verify.kinds.record import Bounded as _Bounded
from runtime.verify.kinds.result import CheckStatus

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject
    from runtime.verify.kinds.record import CheckJSON

__all__ = ["TEXT_BOUNDS", "Acceptance", "Attempt", "CheckRecord", "Outcome", "Verdict", "excerpt"]


class _AttemptHead(TypedDict):
    number: int
    duration_s: float
    exit_code: int | None
    breach: str | None
    turns: int
    tool_calls: int
    denials: int
    tokens: int
    cost_usd: float
    peak_memory_mb: float
    report: str | None


class _AttemptTail(TypedDict):
    feedback: str | None
    peak_processes: int
    disk_mb: float
    series: int
    sent_back: str | None
    policy: str


class AttemptJSON(_AttemptHead, _AttemptTail):
    """An `Attempt` as `state.json` and an outcome's JSON hold it."""

    checks: list[CheckJSON]


@dataclass
class Attempt(_Bounded):
    number: int
    duration_s: float = 0.0
    exit_code: int | None = None
    breach: str | None = None
    turns: int = 0
    tool_calls: int = 0
    denials: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    peak_memory_mb: float = 0.0  # the run's cgroup's peak charge (else the tree's summed RSS, sampled)
    report: str | None = None
    checks: list[CheckRecord] = field(default_factory=list)
    feedback: str | None = None  # what was sent to the next attempt
    peak_processes: int = 0  # the cgroup's peak task count, threads included (else processes, sampled)
    disk_mb: float = 0.0  # written to disk by the agent's tree, as far as the meter saw
    series: int = 1  # the attempt series it belongs to: `runtime again` starts a new one on the same agent id
    sent_back: str | None = None  # what a person sent back to start its series (the first attempt of one)
    policy: str = ""  # the hash of the compiled policy it ran under (a rule added since an earlier attempt shows)

    def _head(self) -> _AttemptHead:
        return {"number": self.number, "duration_s": self.duration_s, "exit_code": self.exit_code,
                "breach": self.breach, "turns": self.turns, "tool_calls": self.tool_calls, "denials": self.denials,
                "tokens": self.tokens, "cost_usd": self.cost_usd, "peak_memory_mb": self.peak_memory_mb,
                "report": self.report}

    def _tail(self) -> _AttemptTail:
        return {"feedback": self.feedback, "peak_processes": self.peak_processes, "disk_mb": self.disk_mb,
                "series": self.series, "sent_back": self.sent_back, "policy": self.policy}

    def to_json(self, checks_last: bool = False) -> AttemptJSON:
        """Its fields in their order (as `state.json` holds them), or with the checks last (as an outcome's JSON
        does)."""
        checks = [c.to_json() for c in self.checks]
        if checks_last:
            return {**self._head(), **self._tail(), "checks": checks}
        return {**self._head(), "checks": checks, **self._tail()}

    @classmethod
    def from_json(cls, data: JSONObject) -> Attempt:
        """The attempt `to_json` gave."""
        fields.only(data, _ATTEMPT_FIELDS, "an attempt")
        return cls(fields.integer(data, "number"), fields.number(data, "duration_s", 0.0),
                   fields.optional_integer(data, "exit_code"), fields.optional_text(data, "breach"),
                   fields.integer(data, "turns", 0), fields.integer(data, "tool_calls", 0),
                   fields.integer(data, "denials", 0), fields.integer(data, "tokens", 0),
                   fields.number(data, "cost_usd", 0.0), fields.number(data, "peak_memory_mb", 0.0),
                   fields.optional_text(data, "report"),
                   [CheckRecord.from_json(c) for c in fields.objects(data, "checks")],
                   fields.optional_text(data, "feedback"), fields.integer(data, "peak_processes", 0),
                   fields.number(data, "disk_mb", 0.0), fields.integer(data, "series", 1),
                   fields.optional_text(data, "sent_back"), fields.text(data, "policy", ""))


_ATTEMPT_FIELDS = set(AttemptJSON.__annotations__)


@dataclass(frozen=True)
class Verdict:
    """How an agent's attempts ended: ok or rejected by its checks, or a typed failure, with every attempt."""

    status: OutcomeStatus
    detail: str | None
    message: str
    attempts: tuple[Attempt, ...]

    @property
    def label(self) -> str:
        return self.status if self.detail is None else f"{self.status}({self.detail})"


@dataclass(frozen=True)
class Acceptance:
    """What accepting verified work did: its commit and merge, or why the merge did not happen."""

    commit: str | None
    merged: str | None = None
    message: str = ""
    refused: str | None = None  # the merge was refused (a conflict, checks failing on it): the work is `rejected`
    failure: tuple[OutcomeStatus, str, str] | None = None  # (status, detail, message): the merge failed, e.g. failed(merge)


class OutcomeJSON(TypedDict):
    """An `Outcome` as `runtime spawn --json` prints it, a plan's state keeps it and a worker node sends it back."""

    status: OutcomeStatus
    detail: str | None
    agent_id: str
    role: str
    base: str | None
    branch: str | None
    commit: str | None
    merged: str | None
    inspection: str | None
    worktree: str | None
    message: str
    timings: dict[str, float]
    id_free: bool
    attempts: list[AttemptJSON]
    label: str


@dataclass
class Outcome(_Bounded):
    status: OutcomeStatus
    detail: str | None
    agent_id: str
    role: str
    base: str | None = None
    branch: str | None = None
    commit: str | None = None  # the verified commit on the agent branch
    merged: str | None = None  # the merge commit on the base branch
    inspection: str | None = None  # unverified work committed on the agent branch, for inspection only
    worktree: str | None = None
    message: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    # Seconds the spawn spent in each phase (checks, prepare, model-access, agent, verify, commit, cleanup):
    # where the orchestrator's own time goes (`bench/run.py`).
    timings: dict[str, float] = field(default_factory=dict)
    # The run failed before its agent did anything and left nothing: its branch is gone, and the same
    # task may be spawned again under the same agent id.
    id_free: bool = False

    def __post_init__(self) -> None:
        try:
            self.status = OutcomeStatus(self.status)  # a status named by its value is held as the member
        except ValueError:
            raise ValueError(f"unknown outcome status {self.status!r}") from None

    @property
    def label(self) -> str:
        return self.status if self.detail is None else f"{self.status}({self.detail})"

    @property
    def exit_code(self) -> int:
        return 0 if self.status == OutcomeStatus.OK else 2

    def cause(self, limit: int = 300) -> str:
        """Why this outcome is not ok, in one line ('' when it is): the first failing check of the last
        attempt when its checks rejected the work (the work's own checks before the report's form),
        else the first line of the message (a failure, a refused merge)."""
        if self.status == OutcomeStatus.OK:
            return ""
        text = ""
        if self.status == OutcomeStatus.REJECTED and self.attempts:
            failing = [c for c in by_cause(self.attempts[-1].checks) if c.status != CheckStatus.PASSED]
            if failing:
                text = f"{failing[0].atom}: {first_line(failing[0].feedback)}"
        text = " ".join((text or first_line(self.message) or self.label).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def to_dict(self) -> OutcomeJSON:
        return {"status": self.status, "detail": self.detail, "agent_id": self.agent_id, "role": self.role,
                "base": self.base, "branch": self.branch, "commit": self.commit, "merged": self.merged,
                "inspection": self.inspection, "worktree": self.worktree, "message": self.message,
                "timings": dict(self.timings), "id_free": self.id_free,
                "attempts": [a.to_json(checks_last=True) for a in self.attempts], "label": self.label}

    @classmethod
    def from_dict(cls, data: JSONObject) -> Outcome:
        """The outcome ``to_dict`` gave (its label is derived, not read)."""
        fields.only(data, _OUTCOME_FIELDS, "an outcome")
        return cls(fields.member(data, "status", OutcomeStatus), fields.optional_text(data, "detail", required=True),
                   fields.text(data, "agent_id"), fields.text(data, "role"),
                   base=fields.optional_text(data, "base"), branch=fields.optional_text(data, "branch"),
                   commit=fields.optional_text(data, "commit"), merged=fields.optional_text(data, "merged"),
                   inspection=fields.optional_text(data, "inspection"),
                   worktree=fields.optional_text(data, "worktree"), message=fields.text(data, "message", ""),
                   attempts=[Attempt.from_json(a) for a in fields.objects(data, "attempts")],
                   timings=_timings(data), id_free=fields.flag(data, "id_free", False))


_OUTCOME_FIELDS = set(OutcomeJSON.__annotations__)


def _timings(data: JSONObject) -> dict[str, float]:
    value = data.get("timings") or {}
    if not isinstance(value, dict):
        raise ValueError(f"`timings` must be an object, not {type(value).__name__}")
    return {str(phase): fields.number(value, phase) for phase in value}
