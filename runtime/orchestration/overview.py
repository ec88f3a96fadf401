"""The runs of a state folder as `runtime status` and the console show them: agent runs and plan runs, with
those whose orchestrator died marked interrupted (a state not final whose lock has no holder)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runtime.spawn.state import RunRecord, StateDir
from runtime.workspace.git import Git
from runtime.workspace.locks import holder


def _when(epoch: Any) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch)) if isinstance(epoch, int | float) else ""


def plan_runs(state: StateDir) -> list[dict[str, Any]]:
    """The plan runs of the state folder, oldest first, each with its subtasks' latest outcomes; none
    when no plan ever ran here (the orchestrator's database is not created by looking)."""
    from runtime.orchestration.state import OrchestratorState

    path = state.root / "orchestrator.sqlite"
    if not path.is_file():
        return []
    db = OrchestratorState(path)
    try:
        out = []
        for row in db.runs():
            record = db.run(row["run_id"]) or {}
            subtasks = [{"subtask": s["subtask_id"], "agent_id": s["agent_id"], "status": s["status"],
                         "label": s["label"] or s["status"], "commit": s["commit_sha"]} for s in db.subtasks(row["run_id"])]
            out.append({"kind": "plan", "run_id": row["run_id"], "status": row["status"], "goal": record.get("plan", {})
                        .get("plan", {}).get("goal", ""), "base": record.get("base"), "base_branch": record.get("base_branch"),
                        "integration": record.get("integration"), "replans": row["replans"], "detail": row["detail"],
                        "created": _when(row["created"]), "updated": _when(row["updated"]), "subtasks": subtasks})
        return out
    finally:
        db.close()


def runs_overview(state: StateDir) -> tuple[list[RunRecord], list[dict[str, Any]]]:
    """Every agent run and plan run of ``state``; a run whose orchestrator died is `interrupted`."""
    from runtime.orchestration.state import plan_lock_name

    agents = [r if r.final or holder(state.locks, r.agent_id) is not None else r.with_(status="interrupted")
              for r in state.all_runs()]
    plans = plan_runs(state)
    for p in plans:
        if p["status"] == "running" and holder(state.locks, plan_lock_name(p["run_id"])) is None:
            p["status"] = "interrupted"  # its orchestrator died: `runtime run --resume` carries it on
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
