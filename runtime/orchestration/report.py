"""The run report: Markdown, written at the end of every run (also a failed one)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from runtime.printable import printable

if TYPE_CHECKING:
    from runtime.verify.kinds.result import CheckStatus


class PlanStatus(StrEnum):
    """A plan run's status: running, then how it ended (the report's, and its row's in the run's state)."""

    RUNNING = "running"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    FAILED = "failed"
    QUESTIONS = "questions"
    # Never stored: how `runtime status` and the console show a running plan whose orchestrator died.
    INTERRUPTED = "interrupted"


# The ends `runtime run --resume` refuses to continue (a failed run goes on where it stopped).
PLAN_ENDED = frozenset({PlanStatus.ACCEPTED, PlanStatus.REJECTED, PlanStatus.QUESTIONS})


@dataclass
class SubtaskLine:
    subtask_id: str
    round: int
    sequence: int
    role: str
    agent_id: str
    label: str
    attempts: int = 0
    denials: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    commit: str | None = None
    merged: str | None = None
    checks: list[tuple[str, CheckStatus]] = field(default_factory=list)  # (atom, status) of its last attempt
    questions: list[str] = field(default_factory=list)
    message: str = ""
    cause: str = ""  # why it is not ok, in one line (`Outcome.cause`)
    test_edits: list[str] = field(default_factory=list)  # the base's test files it changed, as its task allowed
    tests: str = ""  # what its verdict on the tests rests on (`TestsSummary.trailer`)


@dataclass(frozen=True)
class ReplanNote:
    """A replan the run asked for: why the result fell short, and the gap the judge named."""

    reason: str
    gap: tuple[str, ...] = ()


@dataclass
class RunReport:
    run_id: str
    goal: str
    status: PlanStatus
    reason: str
    base: str = ""
    integration: str = ""
    merged_into_base: str | None = None
    subtasks: list[SubtaskLine] = field(default_factory=list)
    checks: list[tuple[str, int]] = field(default_factory=list)
    replans: list[ReplanNote] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    path: str | None = None

    @property
    def exit_code(self) -> int:
        return {PlanStatus.ACCEPTED: 0, PlanStatus.QUESTIONS: 3}.get(self.status, 2)


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``: a message cannot close it early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def render(report: RunReport) -> str:
    """The report as Markdown. Messages, questions and replan reasons quote agents and models: their
    control characters are escaped (``printable``), so the file is as safe to `cat` as the terminal
    output is; newlines stay where a block is meant."""
    p = printable
    out = [f"# Run {p(report.run_id)}: {p(report.status)}", "", f"**Goal:** {p(report.goal)}", "",
           p(report.reason.strip(), multiline=True), ""]
    out += [f"- Base: `{p(report.base[:12])}`", f"- Integration branch: `{p(report.integration)}`",
            f"- Merged into the base: {('`' + p(report.merged_into_base[:12]) + '`') if report.merged_into_base else 'no'}", ""]
    out += ["## Subtasks", "", "| round | seq | subtask | role | outcome | attempts | denials | tokens | cost | commit | integrated |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in report.subtasks:
        out.append(f"| {s.round} | {s.sequence} | {p(s.subtask_id)} | {p(s.role)} | {p(s.label)} | {s.attempts} | {s.denials} | "
                   f"{s.tokens} | {s.cost_usd:.4f} | {p((s.commit or '')[:10])} | {'yes' if s.merged else 'no'} |")
    for s in report.subtasks:
        if s.checks or s.message:
            out += ["", f"### {p(s.subtask_id)}", ""]
            if s.test_edits:  # first: what a reviewer reads before anything else
                out += [f"**Test edits (the task allowed them):** {', '.join(f'`{p(t)}`' for t in s.test_edits)}", ""]
            if s.cause:
                out += [f"**Cause:** {p(s.cause)}", ""]
            if s.tests:
                out += [f"**Tests:** {p(s.tests)}", ""]
            out += [f"- {p(atom)}: {p(status)}" for atom, status in s.checks]
            if s.message:
                message = p(s.message.strip()[:3000], multiline=True)
                out += ["", _fence(message), message, _fence(message)]
    if report.checks:
        out += ["", "## Plan checks on the merged result", ""]
        out += [f"- `{p(cmd)}`: {'passed' if code == 0 else f'failed (exit {code})'}" for cmd, code in report.checks]
    if report.replans:
        out += ["", "## Replans", ""]
        for n, r in enumerate(report.replans, start=1):
            out += [f"{n}. {p(r.reason.strip(), multiline=True)}", ""]
    if report.questions:
        out += ["", "## Questions", ""] + [f"- {p(q)}" for q in report.questions]
    cost = sum(s.cost_usd for s in report.subtasks)
    tokens = sum(s.tokens for s in report.subtasks)
    out += ["", f"Total: {len(report.subtasks)} subtask runs, {tokens} tokens, ${cost:.4f}.", ""]
    return "\n".join(out)
