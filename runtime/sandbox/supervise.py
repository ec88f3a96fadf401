"""Launch an agent process and enforce, from the parent, the limits it can observe.

The agent runs in its own session and process group. stdout and stderr are
pipes the parent drains all the time, so the agent never blocks on them, and
stores in files up to a cap (`Limits.output_bytes` each): the head as it
comes, the tail in memory, and between them a line saying how many bytes were
dropped. Nothing the agent prints is ever held whole, on disk or in memory
(1 GiB on stdout once meant a 1 GiB log, state file and orchestrator). The
caller follows stdout line by line (the agent's JSON events); a line longer
than `MAX_LINE` is not handed on. When the tree has been stopped the pipes
reach end of file (every writer is dead); a writer that escaped anyway only
costs a bounded wait.

The kernel holds the run first (`runtime.sandbox.limits.Hold`): a cgroup of its own bounds its
processes (threads included), its memory (tmpfs and page cache included) and its CPU, rlimits stand
in where the machine has no cgroup, every file is capped at the disk budget, and the disk the tree
writes is counted by the kernel per process. A watcher thread reads the kernel's counters the
moment the kernel says one changed (a fork refused, a process killed for memory) and the disk at a pace
set by how fast the tree writes, and SIGKILLs the
run's cgroup on the first breach, which ends the main process the event loop waits on (without a cgroup
it looks every `Limits.look_s`, 10 ms), and it stops the rest. Every `Limits.poll_s` it also snapshots the tree with psutil (the
descendants of every process ever seen, so a re-parented child stays known, plus every member of
the agent's session) for what no counter gives: the figures where there is no cgroup, the limits
there, and the caller's `check()` hook (turns, tool calls, tokens, cost); and checks the wall clock.

How the tree is stopped depends on why. When a limit is breached, the tree gets SIGKILL at once
(its cgroup, its group, every process seen): a fork bomb or an allocator given a grace uses it.
When the caller is cancelled or a budget of the caller's runs out (time, turns), SIGTERM at once,
then SIGKILL after a short grace. When the main process exits on its own, stdin is closed and what
it left behind gets SIGTERM, then SIGKILL after `Limits.grace_s`: the only grace is for a
well-behaved end. Then SIGKILL goes to every remembered process still alive until none remains. A
process that calls `setsid` and whose parent exits between two polls is invisible to the parent
but not to its cgroup, and the sandbox's PID namespace (`bwrap --unshare-pid`) ends it anyway.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import logging
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
from anyio.abc import Process

from runtime.sandbox.limits import RESOURCE_BREACHES, Hold, Spend

log = logging.getLogger(__name__)
_STEP_S = 0.02  # how often the bounded waits look again
MAX_LINE = 1024 * 1024  # a stdout line longer than this is not handed to the caller
DEFAULT_OUTPUT_BYTES = 4 * 1024 * 1024
Check = Callable[[], str | None | Awaitable[str | None]]  # a breach name or None


@dataclass(frozen=True)
class Limits:
    """What the parent enforces. None disables a limit; `grace_s` bounds each stop stage."""

    timeout_s: float
    memory_mb: float | None = None  # the cgroup's charged memory; sampled: the sum of RSS over the tree
    max_processes: int | None = None  # the cgroup's tasks (threads too); sampled: live processes in the tree
    disk_mb: float | None = None  # written to disk by the tree, as the kernel counts it per process
    cpus: float | None = None  # CPU time, in CPUs' worth (the cgroup's quota)
    poll_s: float = 0.1  # the tree's snapshot, the caller's check, the clock
    look_s: float = 0.01  # the kernel's counters
    grace_s: float = 2.0  # for what a main process that exited on its own left behind
    term_grace_s: float = 0.5  # between SIGTERM and SIGKILL, when the run is cut short
    output_bytes: int = DEFAULT_OUTPUT_BYTES  # stored per stream: head and tail, the rest counted

    def spend(self) -> Spend:
        return Spend.of(processes=self.max_processes, memory_mb=self.memory_mb, disk_mb=self.disk_mb, cpus=self.cpus)


@dataclass(frozen=True)
class ProcessResult:
    """How the run ended. `breach` names the limit (the run is `exhausted(<breach>)`).

    `exit_code` is the main process's (negative: the signal that ended it);
    `leftovers_killed` counts the processes other than the main one that were
    still alive when the stop began or that the sweep found later.
    """

    exit_code: int | None
    breach: str | None
    duration_s: float
    peak_memory_mb: float
    peak_processes: int
    leftovers_killed: int
    output_dropped: int = 0  # bytes of stdout and stderr beyond the cap, not stored
    disk_mb: float = 0.0  # written to disk by the tree, as far as the meter saw


def _alive(proc: psutil.Process) -> bool:
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _rss(proc: psutil.Process) -> int:
    try:
        return int(proc.memory_info().rss)
    except psutil.Error:
        return 0


# The last scan of /proc, shared by every supervisor of this process: (monotonic time, table).
_SHARED: tuple[float, list[tuple[int, int, int]]] = (-1.0, [])
SHARED_SCAN_S = 0.1  # the poll interval: limits are sampled at that pace anyway


def _proc_table(max_age_s: float = 0.0) -> list[tuple[int, int, int]]:
    """(pid, ppid, session) of every process: one read of /proc/<pid>/stat each.

    psutil's `process_iter` costs ten times as much per process, and several
    agents poll ten times a second each; psutil remains the fallback where
    /proc is not readable this way. With ``max_age_s``, a scan that recent
    (by another agent's supervisor) is reused: eight agents polling ten times
    a second made one scan of every process on the machine each 12 ms, the
    orchestrator's largest cost. Stopping a tree always scans afresh.
    """
    global _SHARED
    now = time.monotonic()
    if max_age_s > 0 and now - _SHARED[0] <= max_age_s:
        return _SHARED[1]
    table = _scan_proc()
    _SHARED = (time.monotonic(), table)
    return table


def _scan_proc() -> list[tuple[int, int, int]]:
    try:
        names = os.listdir("/proc")
    except OSError:
        names = None
    if names is None:
        out = []
        for proc in psutil.process_iter(["ppid"]):
            try:
                out.append((proc.pid, proc.info["ppid"], os.getsid(proc.pid)))
            except OSError:
                pass
        return out
    out = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended between the listing and the read
        out.append((int(name), int(fields[1]), int(fields[3])))
    return out


class _Tree:
    """Every process the agent started: descendants of all processes seen, and its session."""

    def __init__(self, pid: int) -> None:
        self.pid, self.known = pid, dict[int, psutil.Process]()  # the first scan finds pid: it leads the session
        self.peak_memory_mb, self.peak_processes = 0.0, 0

    def live(self, max_age_s: float = 0.0) -> list[psutil.Process]:
        # One pass over /proc per poll (parents and sessions together): walking
        # `children(recursive=True)` per known process is quadratic, and a fork
        # bomb would outrun the supervisor.
        children: dict[int, list[int]] = {}
        roots = {self.pid}
        # A tree not yet seen is looked for afresh: a shared scan taken before it started would miss it.
        for pid, ppid, sid in _proc_table(max_age_s if self.known else 0.0):
            children.setdefault(ppid, []).append(pid)
            if sid == self.pid:  # a session id cannot be reused while a member lives
                roots.add(pid)
        current = {pid for pids in children.values() for pid in pids}
        # A remembered pid is followed only while it is the same process (psutil
        # compares start times), so a reused pid never drags a stranger in.
        todo = [pid for pid in roots if pid in current]
        todo += [pid for pid, proc in self.known.items() if pid in current and _alive(proc)]
        seen: set[int] = set()
        while todo:
            pid = todo.pop()
            if pid not in seen:
                seen.add(pid)
                todo.extend(children.get(pid, ()))
        found = {}
        for pid in seen:
            proc = self.known.get(pid)
            if proc is None:
                try:
                    proc = psutil.Process(pid)
                except psutil.Error:
                    continue
            found[pid] = proc
        self.known.update(found)
        return [proc for proc in found.values() if _alive(proc)]

    def measure(self, procs: list[psutil.Process]) -> tuple[float, int]:
        memory_mb = sum(_rss(proc) for proc in procs) / (1024 * 1024)
        self.peak_memory_mb = max(self.peak_memory_mb, memory_mb)
        self.peak_processes = max(self.peak_processes, len(procs))
        return memory_mb, len(procs)


class CappedLog:
    """A log file that keeps the first and the last bytes written to it, and counts the rest.

    The head goes to disk as it arrives; the tail waits in memory as a queue of chunks (bounded
    by the cap, trimmed from the front), and is written after a line naming the dropped count
    when the log is closed.
    """

    def __init__(self, path: Path | str, cap: int) -> None:
        self.file = open(path, "wb")  # noqa: SIM115 - closed in close()
        self.head_left, self.tail_cap = cap // 2, cap - cap // 2
        self.tail: collections.deque[bytes] = collections.deque()
        self.tail_size = self.dropped = 0

    def write(self, data: bytes) -> None:
        if self.head_left > 0:
            head, data = data[:self.head_left], data[self.head_left:]
            self.file.write(head)
            self.head_left -= len(head)
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail_size > self.tail_cap:
            excess = self.tail_size - self.tail_cap
            first = self.tail[0]
            if len(first) <= excess:
                self.tail.popleft()
                self.tail_size -= len(first)
                self.dropped += len(first)
            else:
                self.tail[0] = first[excess:]
                self.tail_size -= excess
                self.dropped += excess

    def close(self) -> None:
        if self.file.closed:
            return
        if self.dropped:
            self.file.write(b"\n[... %d bytes dropped: the output was longer than the cap ...]\n" % self.dropped)
        for chunk in self.tail:
            self.file.write(chunk)
        self.tail.clear()
        self.file.close()


class _Lines:
    """Cuts a byte stream into lines for a callback; a line longer than MAX_LINE is skipped whole."""

    def __init__(self, callback: Callable[[str], Any] | None) -> None:
        self.callback, self.partial, self.skipping = callback, bytearray(), False

    async def feed(self, data: bytes, final: bool = False) -> None:
        if self.callback is None:
            return
        lines = data.split(b"\n")
        rest = lines.pop()
        for piece in lines:
            if not self.skipping:
                self.partial += piece
                if len(self.partial) <= MAX_LINE:
                    await _maybe_await(self.callback(bytes(self.partial).rstrip(b"\r").decode("utf-8", "replace")))
            self.partial.clear()
            self.skipping = False
        if not self.skipping:
            self.partial += rest
            if len(self.partial) > MAX_LINE:
                self.partial.clear()
                self.skipping = True
        if final and self.partial and not self.skipping:
            await _maybe_await(self.callback(bytes(self.partial).rstrip(b"\r").decode("utf-8", "replace")))
            self.partial.clear()


async def _drain(stream: Any, log: CappedLog, lines: _Lines, done: anyio.Event,
                 on_error: Callable[[Exception], None]) -> None:
    """Store everything the stream carries; hand its lines on until the callback fails (then only store)."""
    try:
        async for chunk in stream:
            log.write(chunk)
            if lines.callback is not None:
                try:
                    await lines.feed(chunk)
                except Exception as exc:  # the caller's error: stop the run and raise it there
                    lines.callback = None
                    on_error(exc)
        await lines.feed(b"", final=True)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    except Exception as exc:
        on_error(exc)
    finally:
        done.set()


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _close_stdin(stream: Any, data: bytes = b"") -> None:
    try:
        if data:
            await stream.send(data)
        await stream.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the agent exited or closed its stdin without reading everything


async def _monitor(proc: Process, tree: _Tree, hold: Hold, limits: Limits, check: Check | None,
                   started: float) -> str | None:
    """Look until the main process exits (None) or a limit is breached (its name)."""
    sample = not (hold.kernel_holds("processes") and hold.kernel_holds("memory"))
    pids: list[int] = []
    next_poll, memory_mb, count = 0.0, 0.0, 0
    while True:
        now = time.monotonic()
        due = now >= next_poll
        if due and (sample or hold.cgroup is None):
            procs = tree.live(SHARED_SCAN_S)
            pids = [p.pid for p in procs]
            memory_mb, count = tree.measure(procs)
        if proc.returncode is not None:
            return hold.breached or hold.breach()  # the kernel's counters outlive the tree: a kill for memory ends the main one
        remaining = limits.timeout_s - (now - started)
        if remaining <= 0:
            return "timeout"
        if due:
            next_poll = now + limits.poll_s
            if sample or hold.cgroup is None:
                if not hold.kernel_holds("memory") and limits.memory_mb is not None and memory_mb > limits.memory_mb:
                    return "memory"
                if not hold.kernel_holds("processes") and limits.max_processes is not None and count > limits.max_processes:
                    return "processes"
            if check is not None and (breach := await _maybe_await(check())):
                return str(breach)
        hold.pids = pids
        if hold.breached:
            return hold.breached
        # Where the run has a cgroup, the watcher's kill of it on a breach ends the main process, which wakes
        # this wait: it need not look more often than it samples. Without one, it looks every `look_s`.
        with anyio.move_on_after(min(limits.look_s if hold.cgroup is None else limits.poll_s, remaining)):
            await proc.wait()


async def _wait_until(done: Callable[[], bool], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not done() and time.monotonic() < deadline:  # noqa: ASYNC110 - a process predicate, no event to wait on
        await anyio.sleep(_STEP_S)


async def _stop(proc: Process, tree: _Tree, hold: Hold, limits: Limits, breach: str | None) -> int:
    """Stop the whole tree; return how many processes besides the main one it ended.

    A resource breach: SIGKILL at once. A run cut short otherwise (a budget of the caller's, the
    clock, a cancellation): SIGTERM at once, SIGKILL after `Limits.term_grace_s`. A main process
    that exited on its own: stdin closed, SIGTERM to what is left, SIGKILL after `Limits.grace_s`.
    """
    first = tree.live()
    leftovers = {p.pid: p for p in first if p.pid != proc.pid}
    ended = proc.returncode is not None and breach is None
    if breach in RESOURCE_BREACHES:
        signals: tuple[tuple[signal.Signals, float], ...] = ((signal.SIGKILL, 0.0),)
    elif ended:
        signals = ((signal.SIGTERM, limits.grace_s), (signal.SIGKILL, 0.0))
    else:
        signals = ((signal.SIGTERM, limits.term_grace_s), (signal.SIGKILL, 0.0))
    if proc.stdin is not None:
        await _close_stdin(proc.stdin)
    if not first and not hold.cgroup_members():
        # Nothing of the tree lived at the first look, the main process included: nothing can have
        # started since (the usual end of a check command), so there is nothing to stop.
        return 0
    for sig, wait_s in signals:
        if not tree.live() and not hold.cgroup_members():
            break
        hold.signal(sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)  # the group outlives its leader while a member lives
        if sig == signal.SIGKILL:
            await anyio.to_thread.run_sync(hold.kill)
        elif wait_s:
            await _wait_until(lambda: not tree.live() and not hold.cgroup_members(), wait_s)
    deadline = time.monotonic() + max(limits.grace_s, 1.0)
    while rest := tree.live():  # members that left the group, or that a dying parent started
        for p in rest:
            if p.pid != proc.pid:
                leftovers.setdefault(p.pid, p)
            with contextlib.suppress(psutil.Error):
                p.kill()
        if time.monotonic() >= deadline:
            log.error("agent processes survived SIGKILL: %s", sorted(p.pid for p in rest))
            break
        await anyio.sleep(_STEP_S)
    with anyio.move_on_after(max(limits.grace_s, 1.0)):
        await proc.wait()  # reaps the main process (its pipes are closed once they are drained)
    return len(leftovers)


async def supervise(
    argv: Sequence[str], *, cwd: Path | str, env: Mapping[str, str], stdin: bytes | None,
    stdout_path: Path | str, stderr_path: Path | str, limits: Limits,
    on_stdout_line: Callable[[str], Any] | None = None, check: Check | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessResult:
    """Run `argv` under `limits` and stop every process it started, whatever happens.

    `env` is the complete environment (nothing is inherited). `check()` returns
    a breach name ("turns", "tool-calls", "tokens", "cost") or None; it and
    `on_stdout_line` may be plain functions or coroutine functions.
    """
    started = time.monotonic()
    hold = await anyio.to_thread.run_sync(Hold.open, limits.spend())
    try:
        return await _supervise(hold, argv, cwd, env, stdin, stdout_path, stderr_path, limits, on_stdout_line,
                                check, pass_fds, started)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(hold.close)


async def _supervise(hold: Hold, argv: Sequence[str], cwd: Path | str, env: Mapping[str, str], stdin: bytes | None,
                     stdout_path: Path | str, stderr_path: Path | str, limits: Limits,
                     on_stdout_line: Callable[[str], Any] | None, check: Check | None, pass_fds: Sequence[int],
                     started: float) -> ProcessResult:
    out, err = CappedLog(stdout_path, limits.output_bytes), CappedLog(stderr_path, limits.output_bytes)
    try:
        with anyio.CancelScope(shield=True):
            proc = await anyio.open_process(  # shielded: a started process is always tracked
                [*hold.prefix(), *argv], stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=dict(env), start_new_session=True,
                pass_fds=tuple(pass_fds),
            )
    except BaseException:
        out.close()
        err.close()
        raise
    tree = _Tree(proc.pid)
    hold.watch()
    breach: str | None = None
    failures: list[Exception] = []
    drained = (anyio.Event(), anyio.Event())
    monitoring = anyio.CancelScope()

    def on_error(exc: Exception) -> None:
        failures.append(exc)
        monitoring.cancel()

    try:
        async with anyio.create_task_group() as drains:
            drains.start_soon(_drain, proc.stdout, out, _Lines(on_stdout_line), drained[0], on_error)
            drains.start_soon(_drain, proc.stderr, err, _Lines(None), drained[1], on_error)
            try:
                with monitoring:
                    async with anyio.create_task_group() as tg:
                        if stdin is not None and proc.stdin is not None:
                            tg.start_soon(_close_stdin, proc.stdin, stdin)
                        try:
                            breach = await _monitor(proc, tree, hold, limits, check, started)
                        except Exception as exc:  # re-raised below as itself, not wrapped in an ExceptionGroup
                            failures.append(exc)
                        tg.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True):
                    leftovers = await _stop(proc, tree, hold, limits, breach)
                    # Every writer is dead, so the pipes end; a writer that escaped costs a bounded wait.
                    with anyio.move_on_after(max(limits.grace_s, 1.0)):
                        for event in drained:
                            await event.wait()
                    drains.cancel_scope.cancel()
                    with anyio.move_on_after(max(limits.grace_s, 1.0)):
                        await proc.aclose()
        if failures:
            raise failures[0]
    finally:
        out.close()
        err.close()
    memory_mb, processes = hold.peaks()
    return ProcessResult(proc.returncode, breach, time.monotonic() - started,
                         memory_mb if memory_mb is not None else round(tree.peak_memory_mb, 1),
                         # sampled: a main process that ended before the first sample still was one
                         processes if processes is not None else max(1, tree.peak_processes), leftovers,
                         out.dropped + err.dropped, round(hold.disk_peak / (1024 * 1024), 1))
