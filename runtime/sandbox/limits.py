"""The kernel's hold on one run of an agent's code: what it may spend, and who counts it.

`Hold.open(budget)` gives a run its cgroup (`runtime.sandbox.cgroups`: processes, memory, CPU),
its rlimits (`runtime.sandbox.rlimits`: every file capped at the disk budget, and in place of a
controller the machine lacks, processes per uid and memory per process) and its disk meter
(`runtime.sandbox.disk`). The caller prefixes the run's command with `prefix()`, looks at
`breach()` often (a few small reads: the kernel's event counters and, for the disk, each process's
I/O figures) and ends the tree with `kill()` on the first breach. The observed sampling of the
process tree (`runtime.sandbox.supervise`) remains for what no kernel counter holds here.

`describe()` is the one line a spawn prints and `runtime doctor` shows: which limits the kernel
holds on this machine, and which are left to rlimits and sampling, and why.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import signal
import threading
import time
from dataclasses import dataclass

from runtime.sandbox import disk
from runtime.sandbox.cgroups import Budget, CgroupError, RunCgroup, Support, support
from runtime.sandbox.identity import agent_user
from runtime.sandbox.notify import FileEvents
from runtime.sandbox.rlimits import Rlimits, have_prlimit, nproc_for

log = logging.getLogger(__name__)
MIB = 1024 * 1024
# The breaches a run's resources make: the tree is ended at once, with no grace.
RESOURCE_BREACHES = ("processes", "memory", "disk")
# How often the watcher reads the counters where the kernel cannot tell it of a change (cgroup v1): the kernel
# enforces the limits itself (a fork refused, a process killed), so a look only reports a breach and ends the
# rest of the tree. A wake-up of the watcher's thread and a look cost ~0.15-0.3 ms of CPU (most of it the wake,
# its caches cold after a sleep): one every 5 ms cost 53 ms per agent-second; the counters every 100 ms, the disk
# at its own pace below and its meter only when the tree moved (`_Quiet`), and a still tree waited on with the
# kernel's memory alarm where there is one, ~5 ms.
LOOK_S = 0.1
CLOSE_LOOK_S = 0.001  # the shortest wait between two looks at the disk, while the tree writes fast
DISK_LOOK_S = 0.1  # the longest, while it writes little
# The fastest a tree is assumed to write (1 MiB files into the page cache: ~3 GiB/s here): the disk is looked at
# often enough that such a writer goes at most a quarter past its budget from a standing start. With a spawn's
# default budget (64 MiB and the change) that is a look every ~10 ms; a budget of gigabytes, every `DISK_LOOK_S`.
FAST_WRITE = 8 * 1024 * MIB
# The most a process can write to disk in a microsecond of its CPU time (`_Quiet`): 64 GiB a CPU-second, several
# times a page-cache writer's ~3 GiB and an O_DIRECT writer's disk.
WRITE_PER_CPU_US = 64 * 1024 * MIB // 1_000_000
# Looks in a row at which a tree must be still before the watcher waits on the kernel's alarm instead of its
# pace: a tree that starts, pauses and writes (an interpreter's start, then its work) stays at the pace.
STILL_LOOKS = 5
WATCHER_NICE = -10


@dataclass(frozen=True)
class Spend:
    """What one run may spend (None: not limited)."""

    processes: int | None = None  # tasks, threads included
    memory_bytes: int | None = None  # charged memory: the processes', their page cache and tmpfs
    disk_bytes: int | None = None  # written to disk by the tree
    cpus: float | None = None  # CPU time, in CPUs' worth

    @classmethod
    def of(cls, *, processes: int | None = None, memory_mb: float | None = None, disk_mb: float | None = None,
           cpus: float | None = None) -> Spend:
        return cls(processes, None if memory_mb is None else int(memory_mb * MIB),
                   None if disk_mb is None else int(disk_mb * MIB), cpus)


class Hold:
    """One run's cgroup, rlimits and disk meter."""

    def __init__(self, spend: Spend, cgroup: RunCgroup | None, rlimits: Rlimits) -> None:
        self.spend, self.cgroup, self.rlimits = spend, cgroup, rlimits
        self.disk_peak = 0
        self._meter = disk.Meter()
        self.breached: str | None = None  # set by the watcher, once
        self.pids: list[int] = []  # the tree as the caller last sampled it (where there is no cgroup)
        self._stop = threading.Event()
        self._wake_r, self._wake_w = -1, -1
        self._watcher: threading.Thread | None = None

    @classmethod
    def open(cls, spend: Spend, found: Support | None = None) -> Hold:
        found = support() if found is None else found
        cgroup = None
        try:
            cgroup = RunCgroup.make(Budget(spend.processes, spend.memory_bytes, spend.cpus), found)
        except CgroupError as exc:  # the machine said yes, the write said no: rlimits stand in
            log.warning("no cgroup for this run (%s): rlimits stand in", exc)
        held = set(cgroup.controllers) if cgroup is not None else set()
        user = agent_user()
        rlimits = Rlimits(
            processes=None if "pids" in held or spend.processes is None else nproc_for(
                spend.processes, user.uid if user is not None else None),
            data_bytes=None if "memory" in held else spend.memory_bytes,
            file_bytes=spend.disk_bytes,
        )
        if not have_prlimit():
            rlimits = Rlimits()
        return cls(spend, cgroup, rlimits)

    def kernel_holds(self, limit: str) -> bool:
        """Whether the kernel bounds ``limit`` ("processes", "memory") for the whole tree."""
        controller = {"processes": "pids", "memory": "memory"}[limit]
        return self.cgroup is not None and controller in self.cgroup.controllers

    def prefix(self) -> list[str]:
        return [*(self.cgroup.join_prefix() if self.cgroup is not None else []), *self.rlimits.prefix()]

    def breach(self, pids: list[int] | None = None, *, counters: bool = True, meter: bool = True) -> str | None:
        """The first limit the run has broken: the kernel's counters, then the disk meter over ``pids``
        (the cgroup's members where there is one). The disk is broken when the tree has written its whole
        budget (RLIMIT_FSIZE stops a single file right there). A reading at the budget is read again
        before it counts: a child read just before its parent reaped it is in both figures for that look."""
        if counters and self.cgroup is not None and (found := self.cgroup.breach()):
            return found
        budget = self.spend.disk_bytes
        if budget is None:
            return None
        if self.disk_peak >= budget:
            return "disk"  # seen at an earlier look, before the tree ended
        if not meter:
            return None
        members = self.cgroup.members() if self.cgroup is not None else (pids or [])
        used = self._meter.written(members)
        if used >= budget:
            used = min(used, self._meter.written(self.cgroup.members() if self.cgroup is not None else members))
        self.disk_peak = max(self.disk_peak, used)
        return "disk" if used >= budget else None

    def watch(self) -> None:
        """Start the watcher (once the run's first process exists)."""
        if self._watcher is None and (self.cgroup is not None or self.spend.disk_bytes is not None):
            self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            self._watcher = threading.Thread(target=self._watch, name="limits-watcher", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        """Look at the counters whenever the kernel says one changed (cgroup v2's event files, through inotify)
        and at the disk at a pace set by how fast the tree writes, reading its meter only when the tree moved
        (`_Quiet`); a tree still for `STILL_LOOKS` looks is waited on with the kernel's memory alarm where there
        is one (v1), which rings when it starts to write. An idle run costs next to nothing, a breach is seen at
        once. Where the kernel cannot tell of the counters (cgroup v1, no inotify), every `LOOK_S` as well."""
        budget = self.spend.disk_bytes
        # Ahead of the run it watches: on a loaded machine (the run itself may be what loads it) a watcher at
        # the same priority waits its turn while a writer fills the page cache. It sleeps nearly always, so
        # it takes next to nothing from anyone. Only root may raise a priority; others keep theirs.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WATCHER_NICE)
        events = FileEvents.watch(self.cgroup.event_files()) if self.cgroup is not None else None
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        if events is not None:
            poller.register(events.fd, select.POLLIN)
        seen, at = 0, time.monotonic()
        counters_due, told, rang = at, True, False
        quiet = _Quiet(self.cgroup, budget)
        metered = at
        alarm = -1  # v1's memory threshold, armed while the tree is quiet (`RunCgroup.usage_alarm`)
        stillness = 0  # looks in a row at which the tree had not moved
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                # The counters when the kernel told of a change (or, where it cannot, every LOOK_S); the disk
                # each time round.
                counters = told or (events is None and now >= counters_due - CLOSE_LOOK_S)
                if counters and events is None:
                    counters_due = now + LOOK_S
                # The meter (a read per process) only when the tree may have written since it last read: the
                # kernel's count of its activity moved (or its memory rang), or `DISK_LOOK_S` went by.
                moved = quiet.moved() or rang
                meter = moved or now - metered >= DISK_LOOK_S - CLOSE_LOOK_S
                if meter:
                    metered = now
                try:
                    found = self.breach(self.pids, counters=counters, meter=meter)
                except Exception:  # the run's own monitor still looks, and its stop still kills
                    log.exception("the limits watcher failed")
                    return
                if found is not None:
                    self.breached = found
                    self.signal(signal.SIGKILL)  # there and then: the caller's stop kills whatever is left
                    return
                wait = _disk_wait(budget, self.disk_peak, seen, now - at)
                seen, at = self.disk_peak, now
                # A quiet tree is looked at when the kernel rings (its memory grew: it writes), and every
                # `DISK_LOOK_S`; one that moved, at the disk's pace.
                stillness = 0 if moved else stillness + 1
                if stillness >= STILL_LOOKS and budget is not None and self.cgroup is not None and alarm < 0:
                    alarm = self.cgroup.usage_alarm(max(1, budget // 16)) or -1
                    if alarm >= 0:
                        poller.register(alarm, select.POLLIN)
                        if quiet.moved():  # it wrote while the alarm was being set, above where it rings: look now
                            rang = True
                            continue
                elif moved and alarm >= 0:
                    poller.unregister(alarm)
                    os.close(alarm)
                    alarm = -1
                if alarm >= 0:
                    wait = max(CLOSE_LOOK_S, metered + DISK_LOOK_S - time.monotonic())
                if events is None:
                    left = max(0.0, counters_due - time.monotonic())
                    wait = left if wait is None else min(wait, left)
                ready = {fd for fd, _ in poller.poll(-1 if wait is None else max(1, math.ceil(wait * 1000)))}
                rang = alarm in ready
                told = bool(ready - {alarm})
                if events is not None:
                    events.drain()
        finally:
            if events is not None:
                events.close()
            if alarm >= 0:
                os.close(alarm)

    def peaks(self) -> tuple[float | None, int | None]:
        return self.cgroup.peaks() if self.cgroup is not None else (None, None)

    def cgroup_members(self) -> list[int]:
        return self.cgroup.members() if self.cgroup is not None else []

    def signal(self, sig: int) -> None:
        if self.cgroup is not None:
            self.cgroup.signal_all(sig)

    def kill(self) -> bool:
        """End every process of the run at once (True: none is left)."""
        return self.cgroup.kill() if self.cgroup is not None else True

    def close(self) -> None:
        self._stop.set()
        if self._wake_w >= 0:
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._wake_r = self._wake_w = -1
        self._meter.close()
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.kill(wait_s=1.0)
            self.cgroup.remove()


class _Quiet:
    """Whether a run's tree may have written to disk since the last look at its meter, from one count of the
    kernel's (`RunCgroup.activity`): its CPU time (v2), at `WRITE_PER_CPU_US` bytes a microsecond, or its charged
    memory (v1), which page cache it writes grows. Below a sixteenth of the budget, nothing the meter would
    count can have happened: a process writes by running, and what it writes is charged to its memory until
    the memory is near its limit, where the kernel makes room by reclaiming as it writes (there, every look
    reads the meter). Why: a look at the meter reads a file per process, and an idle tree (an agent waiting
    on its model) needs none.

    What neither count sees is a page of the page cache written again after it was written back (a loop of
    write and fsync over one file, bounded by the disk's speed): the meter still reads every `DISK_LOOK_S`."""

    def __init__(self, cgroup: RunCgroup | None, budget: int | None) -> None:
        self._cgroup, self._slack = cgroup, (budget or 0) // 16
        self._limit = cgroup.memory_bytes if cgroup is not None else None
        self._at: int | None = None

    def moved(self) -> bool:
        count = self._cgroup.activity() if self._cgroup is not None and self._slack else None
        if count is None:
            return True
        unit, value = count
        if self._at is None:
            moved = True
        elif unit == "cpu-us":
            moved = (value - self._at) * WRITE_PER_CPU_US >= self._slack
        else:
            moved = abs(value - self._at) >= self._slack or (
                self._limit is not None and value > self._limit - 2 * self._slack)
        if moved:
            self._at = value  # read before the meter is: what comes after is the next look's
        return moved


def describe(found: Support | None = None) -> str:
    """One line: which of a run's limits the kernel holds here, and what stands in for the rest."""
    found = support() if found is None else found
    held = set(found.places)
    parts = []
    if held:
        names = {"pids": "processes", "memory": "memory (tmpfs included)", "cpu": "CPU"}
        parts.append(f"{', '.join(names[c] for c in ('pids', 'memory', 'cpu') if c in held)} by {found.describe()}")
    if "pids" not in held:
        parts.append("processes by RLIMIT_NPROC" + (", shared by every agent of the agent uid" if agent_user() else
                                                       " over this user's processes"))
    if "memory" not in held:
        parts.append("memory by RLIMIT_DATA per process and the tree sampled every 0.1 s (tmpfs by its size alone)")
    parts.append("tmpfs sized")
    parts.append("disk counted per process, every ~10 ms while the tree runs" if disk.readable()
                 else "disk per file only (no I/O figures)")
    parts.append("each file capped at the disk limit" if have_prlimit() else "no prlimit: rlimits unset")
    line = "limits: " + "; ".join(parts)
    if found.missing:
        line += " (" + "; ".join(found.missing[c] for c in sorted(found.missing)) + ")"
    return line


def fallback_note(found: Support | None = None) -> str | None:
    """The line a spawn or run prints before it starts where the kernel does not hold a run's processes
    and memory whole (no cgroup for them here); None where it does."""
    found = support() if found is None else found
    if {"pids", "memory"} <= set(found.places):
        return None
    return f"note: {describe(found)}; `runtime doctor` says more"


def _disk_wait(budget: int | None, used: int, before: int, elapsed: float) -> float | None:
    """How long the watcher may wait before it looks at the disk again (None: no disk budget, so never): no
    longer than a tree writing at `FAST_WRITE` takes to go a quarter of the budget past what is left of it (the
    most a look can then be late by), nor than a quarter of the time it would take at the pace it wrote since
    the last look; within `CLOSE_LOOK_S` and `DISK_LOOK_S`."""
    if budget is None:
        return None
    left = max(0, budget - used)
    wait = (left + budget / 4) / FAST_WRITE
    rate = (used - before) / elapsed if elapsed > 0 else 0.0
    if rate > 0:
        wait = min(wait, left / rate / 4)
    return max(CLOSE_LOOK_S, min(DISK_LOOK_S, wait))
