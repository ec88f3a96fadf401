"""The typed result of a spawn: ok, rejected, failed(kind) or exhausted(limit).

Nothing is dropped and nothing failed is reported as a success: every attempt
and every check is recorded, and the exit code follows the status (0 for ok,
2 otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from runtime.verify.kinds.record import TEXT_BOUNDS, CheckRecord, by_cause, excerpt, first_line
from runtime.verify.kinds.record import Bounded as _Bounded

__all__ = ["STATUSES", "TEXT_BOUNDS", "Acceptance", "Attempt", "CheckRecord", "Outcome", "Verdict", "excerpt"]

# escalated: the agent said the task cannot be done as asked, and why; nothing is committed.
# needs-review: the checks passed and a reviewer asks a person to look; committed for inspection alone.
STATUSES = ("ok", "rejected", "failed", "exhausted", "escalated", "needs-review")


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


@dataclass(frozen=True)
class Verdict:
    """How an agent's attempts ended: ok or rejected by its checks, or a typed failure, with every attempt."""

    status: str
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
    failure: tuple[str, str, str] | None = None  # (outcome, detail, message): the merge failed, e.g. failed(merge)


@dataclass
class Outcome(_Bounded):
    status: str
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
        if self.status not in STATUSES:
            raise ValueError(f"unknown outcome status {self.status!r}")

    @property
    def label(self) -> str:
        return self.status if self.detail is None else f"{self.status}({self.detail})"

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "ok" else 2

    def cause(self, limit: int = 300) -> str:
        """Why this outcome is not ok, in one line ('' when it is): the first failing check of the last
        attempt when its checks rejected the work (the work's own checks before the report's form),
        else the first line of the message (a failure, a refused merge)."""
        if self.status == "ok":
            return ""
        text = ""
        if self.status == "rejected" and self.attempts:
            failing = [c for c in by_cause(self.attempts[-1].checks) if c.status != "passed"]
            if failing:
                text = f"{failing[0].atom}: {first_line(failing[0].feedback)}"
        text = " ".join((text or first_line(self.message) or self.label).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "attempts"}
        out["attempts"] = [{**{f.name: getattr(a, f.name) for f in fields(a) if f.name != "checks"},
                            "checks": [c.to_json() for c in a.checks]} for a in self.attempts]
        out["timings"] = dict(self.timings)
        out["label"] = self.label
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        """The outcome ``to_dict`` gave (its label is derived, not read)."""
        data = dict(data)
        attempts = [Attempt(**{**a, "checks": [CheckRecord.from_json(c) for c in a.get("checks", [])]})
                    for a in data.pop("attempts", [])]
        data.pop("label", None)
        return cls(**data, attempts=attempts)
