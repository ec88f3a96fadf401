"""One check's verdict on an agent's work, as verify returns it and a spawn's outcome records it.

Here, in verify, because verify produces it and spawn records it: spawn imports verify, never the
other way round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from runtime.verify.kinds.result import CheckStatus
from runtime.verify.kinds.summary import TestsSummary

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONDict, JSONObject

# Text an agent controls (its report, its test output) is kept as an excerpt of at most this many
# characters wherever it is stored or printed: state.json, `--json`, the run report.
TEXT_BOUNDS = {"report": 64 * 1024, "feedback": 32 * 1024, "message": 64 * 1024, "sent_back": 32 * 1024}


def excerpt(text: str, limit: int) -> str:
    """``text`` itself, or its head and tail with a note of how much was cut between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


class Bounded:
    """Bounds the agent-controlled text fields on every assignment, construction included."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, str) and name in TEXT_BOUNDS:
            value = excerpt(value, TEXT_BOUNDS[name])
        super().__setattr__(name, value)


class CheckJSON(TypedDict):
    """A check's record as state.json and an outcome's JSON hold it: the lists only when not empty."""

    atom: str
    kind: str
    status: CheckStatus
    feedback: str
    tests: NotRequired[JSONDict]  # the summary, as its model dumps it
    test_edits: NotRequired[list[str]]
    tampering: NotRequired[list[str]]
    review: NotRequired[list[str]]


@dataclass
class CheckRecord(Bounded):
    atom: str
    kind: str
    status: CheckStatus
    feedback: str
    # What a tests-green verdict rests on (which tests, from where, against which base run).
    tests: TestsSummary | None = None
    # Existing test files (or test configuration) the work changed with the task's word: what a reviewer
    # reads first.
    test_edits: list[str] = field(default_factory=list)
    # What shows the test run's report was forged: the attempt ends `rejected(tampering)`, with no retry.
    tampering: list[str] = field(default_factory=list)
    # What a reviewer asks a person to look at: the work ends `needs-review`, committed for inspection alone.
    review: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.status = CheckStatus.of(self.status)  # a status named by its value is held as the member

    def to_json(self) -> CheckJSON:
        out: CheckJSON = {"atom": self.atom, "kind": self.kind, "status": self.status, "feedback": self.feedback}
        if self.tests is not None:
            out["tests"] = self.tests.model_dump(mode="json", by_alias=True)
        if self.test_edits:
            out["test_edits"] = list(self.test_edits)
        if self.tampering:
            out["tampering"] = list(self.tampering)
        if self.review:
            out["review"] = list(self.review)
        return out

    @classmethod
    def from_json(cls, data: JSONObject) -> CheckRecord:
        """A record `to_json` wrote (a record written before the typed summaries had none)."""
        tests = data.get("tests")
        return cls(str(data["atom"]), str(data["kind"]), CheckStatus.of(data["status"]), str(data["feedback"]),
                   TestsSummary.model_validate(tests) if isinstance(tests, dict) else None,
                   _strings(data.get("test_edits")), _strings(data.get("tampering")), _strings(data.get("review")))


def _strings(value: JSON | None) -> list[str]:
    """A list `to_json` wrote, each item as text; absent or empty: none."""
    if not value:
        return []
    if not isinstance(value, (Sequence, Mapping)):
        raise TypeError(f"{type(value).__name__!r} object is not iterable")
    return [str(item) for item in value]


# Checks of the report's own form. A retry that gave up ends with an empty report, which fails them:
# a symptom. What failed about the work (its tests, checks, scope) is the cause, and is said first.
REPORT_KINDS = frozenset({"report-fields", "severity-grades", "report-file"})


def by_cause(checks: list[CheckRecord]) -> list[CheckRecord]:
    """Checks in the order a person reads why work failed: failing before passed, the work's before the
    report's form, otherwise in the role's order."""
    return sorted(checks, key=lambda c: (c.status == CheckStatus.PASSED, c.kind in REPORT_KINDS))


def first_line(text: str) -> str:
    """The first line of ``text`` that says something (Markdown heading marks dropped)."""
    for raw in text.splitlines():
        stripped = raw.strip().lstrip("#").strip()
        if stripped:
            return stripped
    return ""
