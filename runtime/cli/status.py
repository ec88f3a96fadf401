"""runtime status [AGENT]: the runs of this repository, read from their state files.

A run whose state is not final and whose agent-id lock has no live holder was
interrupted (its orchestrator died); re-running the task recovers it.
"""

from __future__ import annotations

import json
from pathlib import Path

from runtime.errors import UsageError
from runtime.spawn.state import FINAL, StateDir, default_state_dir
from runtime.workspace.git import Git
from runtime.workspace.locks import holder


def state_dir(args) -> StateDir:
    if args.state_dir:
        return StateDir(Path(args.state_dir).resolve())
    return StateDir(default_state_dir(Git(Path.cwd()).root))


def run(args) -> int:
    state = state_dir(args)
    runs = state.all_runs()
    if args.agent:
        runs = [r for r in runs if r.get("agent_id") == args.agent]
        if not runs:
            raise UsageError(f"no run of agent {args.agent} in {state.root}")
    for r in runs:
        if r.get("status") not in FINAL and holder(state.locks, r["agent_id"]) is None:
            r["status"] = "interrupted"
    if args.json:
        print(json.dumps(runs, indent=2))
        return 0
    from rich.table import Table

    from runtime.cli.show import console, text

    table = Table(title=text(f"runs in {state.root}"))
    for col in ("agent", "role", "status", "attempts", "branch", "commit", "updated"):
        table.add_column(col, overflow="fold")
    for r in runs:  # state files hold what runs wrote, messages quoting agents among it: shown as text
        attempts = r.get("attempts")
        table.add_row(*(text(v) for v in (r.get("agent_id", "?"), r.get("role", ""), r.get("label") or r.get("status", ""),
                                          len(attempts) if isinstance(attempts, list) else 0, r.get("branch") or "",
                                          str(r.get("commit") or "")[:12], r.get("updated") or "")))
    console().print(table)
    return 0
