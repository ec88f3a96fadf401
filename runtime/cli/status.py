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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import UsageError
from runtime.orchestration.overview import runs_overview
from runtime.outcomes import OutcomeStatus
from runtime.spawn.state import RunRecord, StateDir, default_state_dir
from runtime.workspace.git import Git

if TYPE_CHECKING:
    from runtime.cli.settings import Status
    from runtime.orchestration.overview import PlanOverview


def state_dir(chosen: str | None) -> StateDir:
    """The state folder a verb's --state-dir names, else the default one of the repository around here."""
    if chosen:
        return StateDir(Path(chosen).resolve())
    return StateDir(default_state_dir(Git(Path.cwd()).root))


def run(args: Status) -> int:
    state = state_dir(args.state_dir)
    agents, plans = runs_overview(state)
    if args.agent:
        agents = [r for r in agents if r.agent_id == args.agent]
        plans = [p for p in plans if p["run_id"] == args.agent]
        if not agents and not plans:
            raise UsageError(f"no run of agent {args.agent} in {state.root}, nor a plan run of that id")
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


def _plans_table(state: StateDir, plans: list[PlanOverview]) -> Any:
    from rich.table import Table

    from runtime.cli.show import text

    table = Table(title=text(f"plan runs in {state.root}"))
    for col in ("run", "status", "subtasks", "base", "integration", "updated", "goal"):
        table.add_column(col, overflow="fold")
    for p in plans:
        subtasks = p["subtasks"]
        ok = sum(1 for s in subtasks if s["status"] == OutcomeStatus.OK)
        table.add_row(*(text(v) for v in (p["run_id"], p["status"], f"{ok} of {len(subtasks)} ok",
                                          p["base_branch"] or p["base"][:12], p["integration"],
                                          p["updated"], p["goal"])))
    return table
