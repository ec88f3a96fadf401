"""What a test run proved, test by test: the typed results every runner's report is read into.

A test is known by its identity (``id``: pytest's node id, unittest's dotted id, ``package::TestName``
for go, ``target::path`` for cargo, ``file > suite > name`` for the JavaScript runners), which the base's
run and the work's run share, so verify compares them per test rather than counting lines of text.
"""

from __future__ import annotations

from typing import Literal

from runtime.verify.kinds.kind import Evidence

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
# What a test's outcome says about the code: it ran and held, it ran and broke, or it did not run.
GREEN: frozenset[str] = frozenset({"passed", "xpassed"})
BROKEN: frozenset[str] = frozenset({"failed", "error"})
NOT_RUN: frozenset[str] = frozenset({"skipped", "xfailed"})


class TestCase(Evidence):
    """One test's outcome, the file it lives in where the runner says (relative to the tree), and the
    runner's words about a failure (cut)."""

    __test__ = False  # not a pytest test class
    id: str
    outcome: Outcome
    file: str = ""
    message: str = ""


class RunnerReport(Evidence):
    """One runner's structured report of one step of the plan. ``complete``: the runner said it finished
    (a run the code under test ended early, `os._exit`, a crash, has no end); ``problem``: why the report
    is missing or unreadable, in words for the agent; ``config``: what configured the runner (pytest's
    rootdir and inifile, the plugins it loaded), as the runner reported it."""

    runner: str
    command: str
    exit_code: int
    complete: bool
    problem: str = ""
    config: str = ""
    tests: list[TestCase] = []
    # Why the report cannot be the runner's own: a record without the run's key or out of its order, a record
    # after the end, an end whose exit status is not the process's (`runtime.verify.test_runs`).
    tampered: str = ""


class StepRun(Evidence):
    """One step of a test plan as it ran: a runner's (with its report) or a plain command's (judged by its
    exit code alone), and its output."""

    command: str
    exit_code: int
    output: str
    report: RunnerReport | None = None
    sealed: dict[str, int] = {}  # each sealed test file (`runtime.verify.sealed`) and how often it was asked for


class TestRun(Evidence):
    """A test plan run on one tree: each step, in order (every step runs, whatever the one before did), and
    which tests came from hidden files."""

    __test__ = False
    steps: list[StepRun]
    hidden: list[str] = []  # the tests that come from the hidden tests laid over the tree
    side: str = ""  # which side of the tests it ran (`runtime.verify.kinds.kind.TestSide`); '' for the base's own run

    @property
    def exit_code(self) -> int:
        """The plan's exit code: the first failing step's, else 0."""
        return next((step.exit_code for step in self.steps if step.exit_code != 0), 0)

    @property
    def output(self) -> str:
        return "\n".join(step.output for step in self.steps)

    def reports(self) -> list[RunnerReport]:
        return [step.report for step in self.steps if step.report is not None]

    def cases(self) -> dict[str, TestCase]:
        """Every test of every report by id; a test reported twice keeps its worst outcome."""
        out: dict[str, TestCase] = {}
        for report in self.reports():
            for case in report.tests:
                seen = out.get(case.id)
                if seen is None or _rank(case.outcome) > _rank(seen.outcome):
                    out[case.id] = case
        return out


def _rank(outcome: str) -> int:
    return {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}.get(outcome, 3)
