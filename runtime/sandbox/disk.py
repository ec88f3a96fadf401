"""What a run writes to disk, as the kernel counts it for each of its processes.

``write_bytes`` in ``/proc/<pid>/io`` is what a process caused to be written to storage, counted when
it dirties a page of the page cache (so at once, not at writeback, which may come 30 s later), and
``cancelled_write_bytes`` what it took back by truncating or deleting pages still dirty. A process's
figures include those of every child it has reaped, so the sum over the live processes of a tree is
all the tree wrote: a process that ended was reaped by one of them (the sandbox's init reaps the
orphans), and its bytes are in exactly one live figure. tmpfs pages are memory, not disk: they are
not counted here, and the run's cgroup charges them to its memory.

Why a meter and not a file system of a fixed size: the worktree is a git worktree on the host's own
file system, where the orchestrator's git and the agent's next attempt find it; a size-capped mount
(a loop device, a tmpfs) would need root, move the worktree off the host's disk or lose it with the
machine, and project quotas need a file system mounted for them. The meter is read every ~10 ms while
the tree runs, beside the cgroup's counters (`runtime.sandbox.limits`), and ``RLIMIT_FSIZE``
(`runtime.sandbox.rlimits`) stops any single file at the budget between two looks.

It counts writes, not the space they take: a file written twice counts twice. What a repository's
tests and an agent write besides their change (caches, coverage data, a CLI's transcripts) is small
beside the slack the budget gives (`runtime.manifests.agent`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable


def _figure(data: bytes) -> int:
    """``write_bytes`` less ``cancelled_write_bytes`` of a /proc/PID/io."""
    try:
        start = data.index(b"\nwrite_bytes: ") + 14
        cut = data.index(b"\ncancelled_write_bytes: ", start)
        return int(data[start:cut]) - int(data[cut + 24:].split(b"\n", 1)[0])
    except ValueError:
        return 0


class Meter:
    """What a tree of processes has written, read through a descriptor per process kept open: a look reads
    each figure again with one pread. Why kept: the watcher looks every ~10 ms, and opening and closing
    each process's file was most of a look's cost. A process that has ended reads as an error (ESRCH): its
    bytes are its parent's now, and its descriptor is closed; a pid used again is opened afresh."""

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}
        # The watcher's thread and the run's own monitor both look: a descriptor closed by one while the other
        # reads it could be a number reused for another file by then.
        self._lock = threading.Lock()

    def written(self, pids: Iterable[int]) -> int:
        """Bytes the processes ``pids`` (a whole tree) have written to disk, net of what they took back."""
        with self._lock:
            return self._written(pids)

    def _written(self, pids: Iterable[int]) -> int:
        total, seen = 0, set()
        for pid in pids:
            seen.add(pid)
            fd = self._fds.get(pid)
            if fd is None:
                try:
                    fd = self._fds[pid] = os.open(f"/proc/{pid}/io", os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    continue  # ended between the listing and the open: its parent has its bytes now
            try:
                total += _figure(os.pread(fd, 4096, 0))
            except OSError:
                self._drop(pid)
        for pid in [p for p in self._fds if p not in seen]:
            self._drop(pid)
        return max(0, total)

    def _drop(self, pid: int) -> None:
        fd = self._fds.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        with self._lock:
            for pid in list(self._fds):
                self._drop(pid)


def written(pids: Iterable[int]) -> int:
    """Bytes the processes ``pids`` (a whole tree) have written to disk, net of what they took back (a look
    with descriptors of its own: `Meter` keeps them between looks)."""
    meter = Meter()
    try:
        return meter.written(pids)
    finally:
        meter.close()


def readable() -> bool:
    """Whether this kernel keeps per-process I/O figures (CONFIG_TASK_IO_ACCOUNTING)."""
    try:
        with open("/proc/self/io", "rb") as fh:
            return b"write_bytes:" in fh.read()
    except OSError:
        return False
