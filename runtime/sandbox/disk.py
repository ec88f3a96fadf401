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
machine, and project quotas need a file system mounted for them. The meter is read every 10 ms
beside the cgroup's counters (`runtime.sandbox.supervise`), and ``RLIMIT_FSIZE``
(`runtime.sandbox.rlimits`) stops any single file at the budget between two looks.

It counts writes, not the space they take: a file written twice counts twice. What a repository's
tests and an agent write besides their change (caches, coverage data, a CLI's transcripts) is small
beside the slack the budget gives (`runtime.manifests.agent`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def _io(pid: int) -> int:
    # os.open and os.read (the watcher reads this for every process of every run many times a second).
    try:
        fd = os.open(f"/proc/{pid}/io", os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        written = cancelled = 0
        for line in data.split(b"\n"):
            if line.startswith(b"write_bytes:"):
                written = int(line[12:])
            elif line.startswith(b"cancelled_write_bytes:"):
                cancelled = int(line[22:])
    except (OSError, ValueError):
        return 0  # ended between the listing and the read: its parent has its bytes now
    return written - cancelled


def written(pids: Iterable[int]) -> int:
    """Bytes the processes ``pids`` (a whole tree) have written to disk, net of what they took back."""
    return max(0, sum(_io(pid) for pid in pids))


def readable() -> bool:
    """Whether this kernel keeps per-process I/O figures (CONFIG_TASK_IO_ACCOUNTING)."""
    try:
        with open("/proc/self/io", "rb") as fh:
            return b"write_bytes:" in fh.read()
    except OSError:
        return False
