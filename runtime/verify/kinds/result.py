"""The answer of a verify check.

``passed`` and ``rejected`` are verdicts about the agent's work; a rejection's
feedback is sent back to the agent, so it says what to fix. ``error`` means the
check itself could not be run (malformed evidence or parameters): it is about
the runtime, not the agent, and must never be read as a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict
    from runtime.verify.kinds.summary import TestsSummary

PASSED = "passed"
REJECTED = "rejected"
ERROR = "error"
STATUSES = (PASSED, REJECTED, ERROR)


@dataclass(frozen=True)
class VerifyResult:
    """A status, feedback for the agent, and small structured details (counts, offending paths: each kind's
    own, shown as they are)."""

    status: str
    feedback: str
    evidence: JSONDict = field(default_factory=dict)
    tests: TestsSummary | None = None  # what a tests-green verdict rests on (runtime.verify.kinds.summary)
    edits: list[str] = field(default_factory=list)  # the base's test files the work changed with the task's word
    # What shows the test run's report was forged (`runtime.verify.kinds.tests_green`): a rejection no retry answers.
    tampering: list[str] = field(default_factory=list)
    # What a reviewer asks a person to look at (`runtime.verify.kinds.review`): the work goes to a person.
    review: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verify status must be one of {', '.join(STATUSES)}, not {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status == PASSED


def passed(feedback: str, evidence: JSONDict | None = None, tests: TestsSummary | None = None, *,
           edits: list[str] | None = None) -> VerifyResult:
    return VerifyResult(PASSED, feedback, dict(evidence or {}), tests, list(edits or []))


def rejected(feedback: str, evidence: JSONDict | None = None, tests: TestsSummary | None = None, *,
           edits: list[str] | None = None, tampering: list[str] | None = None,
           review: list[str] | None = None) -> VerifyResult:
    return VerifyResult(REJECTED, feedback, dict(evidence or {}), tests, list(edits or []), list(tampering or []),
                        list(review or []))


def error(feedback: str, evidence: JSONDict | None = None, tests: TestsSummary | None = None, *,
           edits: list[str] | None = None) -> VerifyResult:
    return VerifyResult(ERROR, feedback, dict(evidence or {}), tests, list(edits or []))
