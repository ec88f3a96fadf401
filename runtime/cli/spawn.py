"""runtime spawn TASK: run one agent, verify its work, commit it (exit 0 ok, 2 otherwise)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runtime.spawn.outcome import Outcome


def _summary(outcome: Outcome) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    colour = {"ok": "green", "rejected": "yellow"}.get(outcome.status, "red")
    console.print(f"[bold {colour}]{outcome.label}[/]  agent {outcome.agent_id} ({outcome.role})")
    table = Table(title="attempts")
    for col in ("attempt", "exit", "turns", "tool calls", "denials", "tokens", "seconds", "ended"):
        table.add_column(col)
    for a in outcome.attempts:
        ended = f"stopped: {a.breach}" if a.breach else ("rejected" if a.feedback else "finished")
        table.add_row(str(a.number), str(a.exit_code), str(a.turns), str(a.tool_calls), str(a.denials),
                      str(a.tokens), f"{a.duration_s:.1f}", ended)
    console.print(table)
    last = outcome.attempts[-1].checks if outcome.attempts else []
    if last:
        checks = Table(title="checks of the last attempt")
        for col in ("atom", "status", "detail"):
            checks.add_column(col, overflow="fold")
        # What failed about the work first, the report's own form last: an empty report of a retry
        # that gave up is a symptom, the failing tests are the cause.
        for c in sorted(last, key=lambda c: (c.status == "passed", c.atom.startswith("output::"))):
            style = {"passed": "green", "rejected": "yellow"}.get(c.status, "red")
            checks.add_row(c.atom, f"[{style}]{c.status}[/]", c.feedback.strip().splitlines()[0][:100] if c.feedback.strip() else "")
        console.print(checks)
    for label, value in (("branch", outcome.branch), ("commit", outcome.commit), ("merged", outcome.merged),
                         ("kept for inspection", outcome.inspection), ("worktree", outcome.worktree)):
        if value:
            console.print(f"{label}: {value}")
    if outcome.message:
        console.print(outcome.message)


def _live():
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    live = Live(console=console, refresh_per_second=8, transient=True)

    def listener(progress) -> None:
        if not live.is_started:
            live.start()
        live.update(f"[bold]{progress.agent_id}[/] attempt {progress.attempt} · {progress.state} · "
                    f"turns {progress.turns} · tool calls {progress.tool_calls} · denials {progress.denials} · "
                    f"{progress.elapsed_s:.0f} s")
    return live, listener


def _interrupted_line(task_path: str, options) -> str:
    """One line on what an interrupt left and how to go on."""
    from runtime.spawn.pipeline import load
    from runtime.spawn.state import StateDir, default_state_dir
    from runtime.workspace.git import Git

    try:
        task, _ = load(task_path, options)
        git = Git(options.repo)
        state = StateDir(Path(options.state_dir or default_state_dir(git.root)).resolve())
        record = state.read(task.agent_id) or {}
    except Exception:  # noqa: BLE001 - the line is best effort; the state is what it is
        return f"interrupted; run `runtime spawn {task_path}` again to resume"
    if record.get("status") == "interrupted":
        work = f" (commit {record['work'][:12]})" if record.get("work") else ""
        return (f"interrupted: agent {task.agent_id}'s work is kept on branch agent/{task.agent_id}{work}; "
                f"run `runtime spawn {task_path}` again to resume")
    return f"interrupted before agent {task.agent_id} started work; run `runtime spawn {task_path}` again to start it"


def run(args) -> int:
    import anyio

    from runtime.spawn.pipeline import SpawnOptions, spawn

    if args.no_os_sandbox:
        print("WARNING: --no-os-sandbox: the agent runs WITHOUT an OS sandbox; only the gate stands between it "
              "and your machine (no file-system or network isolation)", file=sys.stderr)
    live, listener = (None, None) if args.json else _live()
    options = SpawnOptions(repo=Path.cwd(), base=args.base, merge=args.merge, keep=args.keep,
                           use_sandbox=not args.no_os_sandbox, state_dir=Path(args.state_dir) if args.state_dir else None,
                           catalog=args.catalog, listener=listener)
    import signal

    # SIGTERM stops a spawn the way Ctrl-C does: the agent is stopped and its work kept to resume.
    previous = signal.signal(signal.SIGTERM, lambda _sig, _frame: signal.raise_signal(signal.SIGINT))
    try:
        outcome = anyio.run(spawn, args.task, options)
    except KeyboardInterrupt:
        if live is not None and live.is_started:
            live.stop()
        print(_interrupted_line(args.task, options), file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        if live is not None and live.is_started:
            live.stop()
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        _summary(outcome)
    return outcome.exit_code
