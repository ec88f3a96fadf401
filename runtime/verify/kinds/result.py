"""The answer of a verify check.

``passed`` and ``rejected`` are verdicts about the agent's work; a rejection's
feedback is sent back to the agent, so it says what to fix. ``error`` means the
check itself could not be run (malformed evidence or parameters): it is about
the runtime, not the agent, and must never be read as a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict
    from runtime.verify.kinds.summary import TestsSummary


class CheckStatus(StrEnum):
    """A check's answer: on the agent's work (passed, rejected), or that the check itself could not run."""

    PASSED = "passed"
    REJECTED = "rejected"
    ERROR = "error"

    @classmethod
    def of(cls, value: object) -> CheckStatus:
        """The status ``value`` names, as a record read back holds it; ValueError for anything else."""
        for member in cls:
            if member == value:
                return member
        raise ValueError(f"verify status must be one of {', '.join(cls)}, not {value!r}")


@dataclass(frozen=True)
class VerifyResult:
    """A status, feedback for the agent, and small structured details (counts, offending paths: each kind's
    own, shown as they are)."""

    status: CheckStatus
    feedback: str
    evidence: JSONDict = field(default_factory=dict)
    tests: TestsSummary | None = None  # what a tests-green verdict rests on (runtime.verify.kinds.summary)
    edits: list[str] = field(default_factory=list)  # the base's test files the work changed with the task's word
    # What shows the test run's report was forged (`runtime.verify.kinds.tests_green`): a rejection no retry answers.
    tampering: list[str] = field(default_factory=list)
    # What a reviewer asks a person to look at (`runtime.verify.kinds.review`): the work goes to a person.
    review: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # A kind built outside this module may name its status by value: it is held as the member.
        object.__setattr__(self, "status", CheckStatus.of(self.status))

    @property
    def ok(self) -> bool:
        return self.status == CheckStatus.PASSED


def passed(feedback: str, evidence: JSONDict | None = None, tests: TestsSummary | None = None, *,
           edits: list[str] | None = None) -> VerifyResult:
    return VerifyResult(CheckStatus.PASSED, feedback, dict(evidence or {}), tests, list(edits or []))


def rejected(feedback: str, evidence: JSONDict | None = None, tests: TestsSummary | None = None, *,
           edits: list[str] | None = None, tampering: list[str] | None = None,
           review: list[str] | None = None) -> VerifyResult:
    return VerifyResult(CheckStatus.REJECTED, feedback, dict(evidence or {}), tests, list(edits or []), list(tampering or []),
                        list(review or []))


def error(feedback: str, evidence: JSONDict | None = None, tests: TestsSummary | None = None, *,
           edits: list[str] | None = None) -> VerifyResult:
    return VerifyResult(CheckStatus.ERROR, feedback, dict(evidence or {}), tests, list(edits or []))
