"""runtime status [ID]: the runs of this repository, read from their state: agents and plan runs.

A run whose state is not final and whose agent-id lock has no live holder was
interrupted (its orchestrator died); re-running the task recovers it. Plan runs
come from the orchestrator's state (`orchestrator.sqlite`), with their
subtasks' outcomes; one still `running` whose lock has no holder was
interrupted too, and `runtime run --resume ID` carries it on. With `--json`, one list: every entry has `kind`, `agent`
(the spawn's state record as written) or `plan`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import UsageError
from runtime.spawn.state import RunRecord, StateDir, default_state_dir
from runtime.workspace.git import Git
from runtime.workspace.locks import holder

if TYPE_CHECKING:
    import argparse


def state_dir(args: argparse.Namespace) -> StateDir:
    if args.state_dir:
        return StateDir(Path(args.state_dir).resolve())
    return StateDir(default_state_dir(Git(Path.cwd()).root))


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


def run(args: argparse.Namespace) -> int:
    state = state_dir(args)
    records = state.all_runs()
    plans = plan_runs(state)
    if args.agent:
        records = [r for r in records if r.agent_id == args.agent]
        plans = [p for p in plans if p["run_id"] == args.agent]
        if not records and not plans:
            raise UsageError(f"no run of agent {args.agent} in {state.root}, nor a plan run of that id")
    # A run not final whose lock has no holder was interrupted: its orchestrator died.
    agents = [r if r.final or holder(state.locks, r.agent_id) is not None else r.with_(status="interrupted")
              for r in records]
    from runtime.orchestration.state import plan_lock_name

    for p in plans:
        if p["status"] == "running" and holder(state.locks, plan_lock_name(p["run_id"])) is None:
            p["status"] = "interrupted"  # its orchestrator died: `runtime run --resume` carries it on
    if args.json:
        print(json.dumps([{"kind": "agent", **r.to_json()} for r in agents] + plans, indent=2))
        return 0
    from runtime.cli.show import console, text

    out = console()
    if not agents and not plans:
        out.print(text(f"no runs in {state.root}"))
        return 0
    if agents:
        out.print(_agents_table(state, agents))
    if plans:
        out.print(_plans_table(state, plans))
    return 0


def _agents_table(state: StateDir, runs: list[RunRecord]) -> Any:
    from rich.table import Table

    from runtime.cli.show import text

    table = Table(title=text(f"agent runs in {state.root}"))
    for col in ("agent", "role", "status", "attempts", "branch", "commit", "updated"):
        table.add_column(col, overflow="fold")
    for r in runs:  # state files hold what runs wrote, messages quoting agents among it: shown as text
        status = (r.label or r.status) + (", id free" if r.id_free else "")
        table.add_row(*(text(v) for v in (r.agent_id, r.role, status, len(r.attempts),
                                          "" if r.id_free else r.branch, (r.commit or "")[:12], r.updated)))
    return table


def _plans_table(state: StateDir, plans: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    from runtime.cli.show import text

    table = Table(title=text(f"plan runs in {state.root}"))
    for col in ("run", "status", "subtasks", "base", "integration", "updated", "goal"):
        table.add_column(col, overflow="fold")
    for p in plans:
        subtasks = p["subtasks"]
        ok = sum(1 for s in subtasks if s["status"] == "ok")
        table.add_row(*(text(v) for v in (p["run_id"], p["status"], f"{ok} of {len(subtasks)} ok",
                                          p["base_branch"] or str(p["base"] or "")[:12], p["integration"] or "",
                                          p["updated"], p["goal"])))
    return table
