"""Meta-validation's writes: only an accepted run is remembered.

The memory writer is handed out to this module alone (see
`runtime.memory.writer.META_VALIDATION_MODULES`); everything else reads.
Results of accepted subtasks are recorded with their branch and commit;
the reviewer's learnings wait as pending until curation promotes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from runtime.memory.records import MAX_TEXT
from runtime.memory.writer import issue_meta_validation_token, open_for_meta_validation
from runtime.outcomes import OutcomeStatus
from runtime.printable import printable

if TYPE_CHECKING:  # annotations only
    from runtime.memory.curate import Curated
    from runtime.orchestration.judge import Judgement
    from runtime.orchestration.run import PlanRun


def memory_path(state_dir: Path) -> Path:
    return state_dir / "memory.sqlite"


def remember(run: PlanRun, verdict: Judgement) -> None:
    """Record an accepted run's subtasks and the reviewer's learnings (called on acceptance only)."""
    writer = open_for_meta_validation(memory_path(run.state_dir), issue_meta_validation_token())
    try:
        with writer.batch():
            for round_ in run.rounds:
                for sub in round_:
                    result = run.results.get(sub.id)
                    if result is None or result.outcome.status != OutcomeStatus.OK:
                        continue
                    # An agent's report (and a reviewer's learning) may hold anything: a NUL, which the store
                    # refuses, undecodable bytes, escapes. Kept escaped, as they are shown, and bounded.
                    summary = _text((result.report or "").strip()[:4000]) or sub.task.goal
                    # An accepted result has its branch and commit (and record_result checks them again).
                    writer.record_result(run.run_id, sub.id, sub.task.role.name, sub.task.goal, summary,
                                         cast(str, result.branch), cast(str, result.commit),
                                         tags=[sub.task.role.name])
            for text in verdict.learn:
                if _text(text).strip():
                    writer.add_pending_learning(run.run_id, _text(text), source="reviewer")
    finally:
        writer.close()


def _text(text: str) -> str:
    return printable(text, multiline=True)[:MAX_TEXT]


def curate_learnings(state_dir: Path, decisions: dict[int, str], curator: str) -> list[Curated]:
    """The curation step: promote pending learnings into facts, or discard them (each once)."""
    from runtime.memory.curate import curate

    writer = open_for_meta_validation(memory_path(state_dir), issue_meta_validation_token())
    try:
        return curate(writer, decisions, curator=curator)
    finally:
        writer.close()
