"""runtime spawn TASK: run one agent, verify its work, commit it (exit 0 ok, 2 otherwise)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple

from runtime.outcomes import OutcomeStatus
from runtime.printable import printable
from runtime.spawn.outcome import Outcome
from runtime.verify.kinds.result import CheckStatus

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from rich.live import Live

    from runtime.cli.settings import Spawn
    from runtime.spawn.pipeline import SpawnOptions
    from runtime.spawn.progress import Progress
    from runtime.spawn.state import RecordStatus

_T = TypeVar("_T")
_Args = TypeVarTuple("_Args")


def _summary(outcome: Outcome) -> None:
    """The outcome as tables. Everything in it may quote the agent (its stderr, its report, the names
    of its files, the output of the checks on its work): every value goes through ``show``."""
    from rich.table import Table

    from runtime.cli.show import block, console, line, text
    from runtime.verify.kinds.record import by_cause

    out = console()
    shade = colour(outcome.status, outcome.detail)
    out.print(line((outcome.label, f"bold {shade}"), f"  agent {outcome.agent_id} ({outcome.role})"))
    if outcome.status != OutcomeStatus.OK:
        out.print(line("cause: ", outcome.cause()))
    table = Table(title="attempts")
    for col in ("attempt", "exit", "turns", "tool calls", "denials", "tokens", "seconds", "ended"):
        table.add_column(col)
    for a in outcome.attempts:
        ended = f"stopped: {a.breach}" if a.breach else ("rejected" if a.feedback else "finished")
        number = f"{a.number} (series {a.series}, sent back)" if a.sent_back else a.number
        table.add_row(*(text(v) for v in (number, a.exit_code, a.turns, a.tool_calls, a.denials, a.tokens,
                                          f"{a.duration_s:.1f}", ended)))
    out.print(table)
    last = outcome.attempts[-1].checks if outcome.attempts else []
    edits = sorted({path for c in last for path in c.test_edits})
    if edits:  # first: the task let the work change the base's tests, and a reviewer reads those first
        out.print(line(("test edits (the task allowed them): ", "bold yellow"), ", ".join(edits)))
    for c in last:
        if c.tests is not None:
            out.print(line("tests: ", c.tests.trailer()))
    if last:
        checks = Table(title="checks of the last attempt")
        for col in ("atom", "status", "detail"):
            checks.add_column(col, overflow="fold")
        # What failed about the work first, the report's own form last: an empty report of a retry
        # that gave up is a symptom, the failing tests are the cause.
        for c in by_cause(last):
            style = CHECK_COLOURS.get(c.status, "red")
            detail = c.feedback.strip().splitlines()[0][:100] if c.feedback.strip() else ""
            checks.add_row(text(c.atom), text(c.status, style), text(detail))
        out.print(checks)
    for label, value in (("branch", None if outcome.id_free else outcome.branch), ("commit", outcome.commit), ("merged", outcome.merged),
                         ("kept for inspection", outcome.inspection), ("worktree", outcome.worktree)):
        if value:
            out.print(line(f"{label}: ", value))
    if outcome.message:
        out.print(block(outcome.message))
    if outcome.status != OutcomeStatus.OK and not outcome.id_free and outcome.branch:
        out.print(line(f"`runtime again {outcome.agent_id}` starts a new series of attempts on this work "
                       "(`--feedback FILE` tells the agent what to change)"))
    if outcome.id_free:
        out.print(line(f"nothing was kept: agent id {outcome.agent_id} is free, so the same command runs again "
                       "once the cause is fixed"))


def _live() -> tuple[Live, Callable[..., None]]:
    from rich.live import Live

    from runtime.cli.show import console, guarded, line

    err = console(stderr=True)
    live = Live(console=err, refresh_per_second=8, transient=True)

    def listener(progress: Progress) -> None:
        if not live.is_started:
            live.start()
        live.update(line((progress.agent_id, "bold"),
                         f" attempt {progress.attempt} · {progress.state} · turns {progress.turns} · "
                         f"tool calls {progress.tool_calls} · denials {progress.denials} · "
                         f"{progress.elapsed_s:.0f} s"))
    return live, guarded(listener, live.stop, err)


def _interrupted_line(task_path: str, options: SpawnOptions) -> str:
    """One line on what an interrupt left and how to go on."""
    from runtime.spawn.pipeline import load
    from runtime.spawn.state import RunStatus, StateDir, default_state_dir
    from runtime.workspace.git import Git

    try:
        task, _ = load(task_path, options)
        git = Git(options.repo)
        state = StateDir(Path(options.state_dir or default_state_dir(git.root)).resolve())
        record = state.read(task.agent_id)
    except Exception:  # noqa: BLE001 - the line is best effort; the state is what it is
        return f"interrupted; run `runtime spawn {task_path}` again to resume"
    if record is not None and record.status == RunStatus.INTERRUPTED:
        work = f" (commit {record.work[:12]})" if record.work else ""
        return (f"interrupted: agent {task.agent_id}'s work is kept on branch agent/{task.agent_id}{work}; "
                f"run `runtime spawn {task_path}` again to resume")
    return f"interrupted before agent {task.agent_id} started work; run `runtime spawn {task_path}` again to start it"


def run(args: Spawn) -> int:
    from runtime.spawn.pipeline import SpawnOptions, spawn

    if args.no_os_sandbox:
        print("WARNING: --no-os-sandbox: the agent runs WITHOUT an OS sandbox; only the gate stands between it "
              "and your machine (no file-system or network isolation)", file=sys.stderr)
    options = SpawnOptions(repo=Path.cwd(), base=args.base, merge=args.merge, keep=args.keep,
                           use_sandbox=not args.no_os_sandbox, state_dir=Path(args.state_dir) if args.state_dir else None,
                           catalog=args.catalog, unattended=args.unattended, afresh=args.afresh)
    return execute(lambda o: spawn(args.task, o), options, args.json, lambda: _interrupted_line(args.task, options))


def execute(start: Callable[[SpawnOptions], Awaitable[Outcome]], options: SpawnOptions, as_json: bool,
            interrupted: Callable[[], str]) -> int:
    """Run a spawn (``start(options)``) with a live line on stderr, print its outcome, return its exit code;
    Ctrl-C or SIGTERM stops it the way a spawn stops, and ``interrupted()`` says what it left."""
    import dataclasses

    import anyio

    from runtime.sandbox.limits import fallback_note

    if note := fallback_note():
        print(note, file=sys.stderr)
    live, listener = (None, None) if as_json else _live()
    options = dataclasses.replace(options, listener=listener)
    import signal

    # SIGTERM stops a spawn the way Ctrl-C does: the agent is stopped and its work kept to resume.
    previous = signal.signal(signal.SIGTERM, lambda _sig, _frame: signal.raise_signal(signal.SIGINT))
    try:
        outcome = anyio.run(_interruptible, start, options)
    except KeyboardInterrupt:
        if live is not None and live.is_started:
            live.stop()
        print(printable(interrupted()), file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        if live is not None and live.is_started:
            live.stop()
    if as_json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        _shown(outcome)
    return outcome.exit_code


async def _interruptible(func: Callable[[*_Args], Awaitable[_T]], *args: *_Args) -> _T:
    """``func(*args)``, cancelled through anyio when SIGINT or SIGTERM arrives, then KeyboardInterrupt.

    Left to asyncio, the first Ctrl-C cancels the main task natively; a cancellation that lands while
    the task waits inside a shielded scope (a process being started, a stop under way) can be absorbed
    there, and the spawn then waits on its agent for good. A cancel scope's cancellation is never lost:
    shielded work finishes, and the spawn's own handler then keeps the work to resume."""
    import signal

    import anyio

    interrupted = False
    results: list[_T] = []
    errors: list[Exception] = []
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:
            async def watch() -> None:
                nonlocal interrupted
                async for _ in signals:
                    interrupted = True
                    tg.cancel_scope.cancel()
                    return

            tg.start_soon(watch)
            try:
                results.append(await func(*args))
            except Exception as exc:  # raised as itself below, not wrapped in the task group's ExceptionGroup
                errors.append(exc)
            finally:
                tg.cancel_scope.cancel()  # the watcher ends with the spawn
    if interrupted:
        raise KeyboardInterrupt
    if errors:
        raise errors[0]
    return results[0]


def _shown(outcome: Outcome) -> None:
    """The summary, after the work is committed (and maybe merged): the exit code is the outcome's,
    whatever happens to its presentation. The summary is total over any string; a bug in it still
    gets one line (the traceback with RUNTIME_DEBUG=1), never an `internal error` exit 1 that would
    say a committed run failed."""
    try:
        _summary(outcome)
    except BrokenPipeError:
        pass
    except Exception as exc:
        if os.environ.get("RUNTIME_DEBUG"):
            raise
        print(printable(f"error: the summary could not be shown ({type(exc).__name__}: {exc}); the outcome is "
                        f"{outcome.label}, agent {outcome.agent_id}, branch {outcome.branch or '-'}, commit "
                        f"{outcome.commit or outcome.inspection or '-'} (`runtime status {outcome.agent_id}`); "
                        "set RUNTIME_DEBUG=1 for the traceback"), file=sys.stderr)


# A check's colour, by its status (any other: red).
CHECK_COLOURS: dict[str, str] = {CheckStatus.PASSED: "green", CheckStatus.REJECTED: "yellow"}
_OUTCOME_COLOURS: dict[str, str] = {OutcomeStatus.OK: "green", OutcomeStatus.REJECTED: "yellow",
                                    OutcomeStatus.ESCALATED: "cyan"}


def colour(status: RecordStatus, detail: str | None) -> str:
    """An outcome's colour, by its status (a run's that has none yet: red): a forged report is never a mere
    rejection; an escalation waits for a person."""
    if detail == "tampering":
        return "red"
    return _OUTCOME_COLOURS.get(status, "red")
