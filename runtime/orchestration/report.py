"""The run report: Markdown, written at the end of every run (also a failed one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    checks: list[tuple[str, str]] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    message: str = ""


@dataclass
class RunReport:
    run_id: str
    goal: str
    status: str  # accepted | rejected | failed | questions
    reason: str
    base: str = ""
    integration: str = ""
    merged_into_base: str | None = None
    subtasks: list[SubtaskLine] = field(default_factory=list)
    checks: list[tuple[str, int]] = field(default_factory=list)
    replans: list[dict[str, Any]] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    path: str | None = None

    @property
    def exit_code(self) -> int:
        return {"accepted": 0, "questions": 3}.get(self.status, 2)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def render(report: RunReport) -> str:
    out = [f"# Run {report.run_id}: {report.status}", "", f"**Goal:** {report.goal}", "", report.reason.strip(), ""]
    out += [f"- Base: `{report.base[:12]}`", f"- Integration branch: `{report.integration}`",
            f"- Merged into the base: {('`' + report.merged_into_base[:12] + '`') if report.merged_into_base else 'no'}", ""]
    out += ["## Subtasks", "", "| round | seq | subtask | role | outcome | attempts | denials | tokens | cost | commit | integrated |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in report.subtasks:
        out.append(f"| {s.round} | {s.sequence} | {s.subtask_id} | {s.role} | {s.label} | {s.attempts} | {s.denials} | "
                   f"{s.tokens} | {s.cost_usd:.4f} | {(s.commit or '')[:10]} | {'yes' if s.merged else 'no'} |")
    for s in report.subtasks:
        if s.checks or s.message:
            out += ["", f"### {s.subtask_id}", ""]
            out += [f"- {atom}: {status}" for atom, status in s.checks]
            if s.message:
                out += ["", "```", s.message.strip()[:3000], "```"]
    if report.checks:
        out += ["", "## Plan checks on the merged result", ""]
        out += [f"- `{cmd}`: {'passed' if code == 0 else f'failed (exit {code})'}" for cmd, code in report.checks]
    if report.replans:
        out += ["", "## Replans", ""]
        for n, r in enumerate(report.replans, start=1):
            out += [f"{n}. {r.get('reason', '').strip()}", ""]
    if report.questions:
        out += ["", "## Questions", ""] + [f"- {q}" for q in report.questions]
    cost = sum(s.cost_usd for s in report.subtasks)
    tokens = sum(s.tokens for s in report.subtasks)
    out += ["", f"Total: {len(report.subtasks)} subtask runs, {tokens} tokens, ${cost:.4f}.", ""]
    return "\n".join(out)
