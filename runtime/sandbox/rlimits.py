"""Resource limits of the process itself, where the kernel has nothing better to offer a run.

Always: ``RLIMIT_FSIZE``, so no single file a run writes grows past its disk budget (the write fails
with EFBIG, and SIGXFSZ ends the writer) whatever `runtime.sandbox.disk` sees between two looks.

In place of a cgroup controller the machine does not let the orchestrator use
(`runtime.sandbox.cgroups.Support.missing`):

- processes: ``RLIMIT_NPROC``, which the kernel counts per user, threads included. A root
  orchestrator's agents all run as the one agent uid (`runtime.sandbox.identity`), so the limit is
  shared by every agent of the machine at once; an orchestrator that is not root runs them as
  itself, so the limit is what its user runs now plus the run's own allowance.
- memory: ``RLIMIT_DATA``, the writable private memory of each process (heap and anonymous maps),
  not of the tree: a tree of N processes may hold N times it. Not ``RLIMIT_AS``, which counts
  address space reserved and never used (Go's and V8's arenas, a JVM's heap reservation) and
  breaks those toolchains; under ``RLIMIT_DATA`` of 256 MiB, python, node, go test, cargo and git
  run (tried here).

The limits are set by util-linux's ``prlimit`` as a command prefix, before anything of the run
starts, and inherited by all it starts. Soft and hard limits are both set, and raising a hard limit
takes CAP_SYS_RESOURCE, which no process of a run holds: they can only be lowered.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Rlimits:
    """The limits a run's first process sets (None: left as inherited)."""

    processes: int | None = None
    data_bytes: int | None = None
    file_bytes: int | None = None

    def prefix(self) -> list[str]:
        """``prlimit --nproc=N --data=B --fsize=B --``, or nothing when nothing is set."""
        options = []
        if self.processes is not None:
            options.append(f"--nproc={self.processes}")
        if self.data_bytes is not None:
            options.append(f"--data={self.data_bytes}")
        if self.file_bytes is not None:
            options.append(f"--fsize={self.file_bytes}")
        if not options:
            return []
        return [prlimit_path(), *options, "--"]


def prlimit_path() -> str:
    return shutil.which("prlimit") or "/usr/bin/prlimit"


def have_prlimit() -> bool:
    return shutil.which("prlimit") is not None or os.path.exists("/usr/bin/prlimit")


def nproc_for(allowance: int, agent_uid: int | None) -> int:
    """The RLIMIT_NPROC giving a run ``allowance`` processes: for the agent uid of a root orchestrator,
    the allowance itself; for an orchestrator running agents as itself, its user's tasks now plus it."""
    if agent_uid is not None:
        return allowance
    return _tasks_of(os.getuid()) + allowance


def _tasks_of(uid: int) -> int:
    """How many tasks (threads included: RLIMIT_NPROC counts them) ``uid`` runs now."""
    count = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as fh:
                uid_seen = threads = None
                for line in fh:
                    if line.startswith("Uid:"):
                        uid_seen = int(line.split()[1])
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
        if uid_seen == uid and threads:
            count += threads
    return count
