"""Meta-validation: is the merged result within range of the plan's success criteria?

Deterministic evidence first — every subtask's typed outcome, merge conflicts,
the plan-level checks on the merged tree; only when all of that holds is a
reviewer model (when configured) asked to judge the result against the
success criteria. Anything out of range becomes the gap a replan must close.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from runtime.outcomes import OutcomeStatus


class JudgementStatus(StrEnum):
    """The judge's and the reviewer's answer on a plan's merged result."""

    OK = "ok"
    REPLAN = "replan"


@dataclass
class Judgement:
    status: JudgementStatus
    reason: str
    learn: list[str] = field(default_factory=list)
    gap: list[str] = field(default_factory=list)


def deterministic_gap(outcomes: dict[str, str], conflicts: dict[str, list[str]],
                      checks: list[tuple[str, int, str]], causes: dict[str, str] | None = None) -> list[str]:
    """``outcomes``: each subtask's label (`Outcome.label`), which is its status alone when it ended ok;
    ``causes``: a subtask's reason in one line (`Outcome.cause`), said after its label."""
    gap = []
    for subtask_id, label in sorted(outcomes.items()):
        if label != OutcomeStatus.OK:
            cause = (causes or {}).get(subtask_id)
            gap.append(f"subtask {subtask_id} ended {label}" + (f": {cause}" if cause else ""))
    for subtask_id, paths in sorted(conflicts.items()):
        gap.append(f"subtask {subtask_id} conflicts with earlier work in: {', '.join(paths)}")
    for command, code, output in checks:
        if code != 0:
            tail = "\n".join(output.strip().splitlines()[-15:])
            gap.append(f"plan check `{command}` fails (exit {code}):\n{tail}")
    return gap


def judge(outcomes: dict[str, str], conflicts: dict[str, list[str]], checks: list[tuple[str, int, str]],
          review: Any = None, causes: dict[str, str] | None = None) -> Judgement:
    """``review`` is a callable returning the reviewer's verdict, called only when nothing else failed;
    ``causes`` says in one line why each subtask that is not ok is not."""
    gap = deterministic_gap(outcomes, conflicts, checks, causes)
    if gap:
        return Judgement(JudgementStatus.REPLAN, "the merged result is out of range:\n- " + "\n- ".join(gap), gap=gap)
    if review is None:
        return Judgement(JudgementStatus.OK, "every subtask was accepted, merged cleanly, and the plan checks pass")
    verdict = review()
    if verdict.status == JudgementStatus.OK:
        return Judgement(JudgementStatus.OK, verdict.reason, list(verdict.learn))
    return Judgement(JudgementStatus.REPLAN, verdict.reason, list(verdict.learn), gap=[f"reviewer: {verdict.reason}"])
