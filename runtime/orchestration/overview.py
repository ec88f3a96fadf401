"""The runs of a state folder as `runtime status` and the console show them: agent runs and plan runs, with
those whose orchestrator died marked interrupted (a state not final whose lock has no holder)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from runtime.orchestration.report import PlanStatus
from runtime.spawn.state import RunRecord, RunStatus, StateDir
from runtime.workspace.git import Git
from runtime.workspace.locks import holder

if TYPE_CHECKING:
    from runtime.orchestration.state import SubtaskRowStatus


class SubtaskOverview(TypedDict):
    """A plan run's subtask as `runtime status --json` prints it."""

    subtask: str
    agent_id: str
    status: SubtaskRowStatus
    label: str
    commit: str | None


class PlanOverview(TypedDict):
    """A plan run as `runtime status --json` prints it (in this order) and the console's runs page shows it."""

    kind: str  # "plan"
    run_id: str
    status: PlanStatus  # as stored, or interrupted when its orchestrator died
    goal: str
    base: str
    base_branch: str | None
    integration: str
    replans: int
    detail: str | None
    created: str  # UTC, ISO 8601
    updated: str
    subtasks: list[SubtaskOverview]


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def plan_runs(state: StateDir) -> list[PlanOverview]:
    """The plan runs of the state folder, oldest first, each with its subtasks' latest outcomes; none
    when no plan ever ran here (the orchestrator's database is not created by looking)."""
    from runtime.orchestration.state import OrchestratorState

    path = state.root / "orchestrator.sqlite"
    if not path.is_file():
        return []
    db = OrchestratorState(path)
    try:
        out: list[PlanOverview] = []
        for run in db.runs():
            subtasks: list[SubtaskOverview] = [
                {"subtask": s.subtask_id, "agent_id": s.agent_id, "status": s.status, "label": s.label or s.status,
                 "commit": s.commit_sha} for s in db.subtasks(run.run_id)]
            out.append({"kind": "plan", "run_id": run.run_id, "status": run.status, "goal": run.goal, "base": run.base,
                        "base_branch": run.base_branch, "integration": run.integration, "replans": run.replans,
                        "detail": run.detail, "created": _when(run.created), "updated": _when(run.updated),
                        "subtasks": subtasks})
        return out
    finally:
        db.close()


def runs_overview(state: StateDir) -> tuple[list[RunRecord], list[PlanOverview]]:
    """Every agent run and plan run of ``state``; a run whose orchestrator died is `interrupted`."""
    from runtime.orchestration.state import plan_lock_name

    agents = [r if r.final or holder(state.locks, r.agent_id) is not None else r.with_(status=RunStatus.INTERRUPTED)
              for r in state.all_runs()]
    plans = plan_runs(state)
    for p in plans:
        if p["status"] == PlanStatus.RUNNING and holder(state.locks, plan_lock_name(p["run_id"])) is None:
            p["status"] = PlanStatus.INTERRUPTED  # its orchestrator died: `runtime run --resume` carries it on
    return agents, plans


def change_of(repo: Path, record: RunRecord, stat: bool = False) -> tuple[str | None, str]:
    """An agent's change in ``repo``: the head it ends at (its verified commit, else its kept work, else its
    branch; None when none is kept) and its diff (or stat) against the base. GitError when ``repo`` lacks them."""
    if not record.base:
        return None, ""
    git = Git(repo)
    head = record.commit or record.work or (git.resolve(f"refs/heads/{record.branch}")
                                            if record.branch and git.branch_exists(record.branch) else None)
    if head is None:
        return None, ""
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", *(["--stat"] if stat else []), record.base, head]
    return head, git.run(*args).stdout.decode("utf-8", errors="replace")
