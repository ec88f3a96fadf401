"""Hostile trees against the limits a spawn holds them to, seen from the host.

Five attacks, each as the agent itself (the command backend) and as the task's test command (run by
verify over the agent's work): a fork bomb, a thread bomb, a tmpfs filler, a fast allocator and a disk
filler. Each has a cap of its own far past the limit, so a runtime that held nothing would not take the
machine down. A sampler on the host watches the attack's processes (their command lines carry a
marker) every 5 ms: their tasks, their memory, the host's shared memory (tmpfs pages) and the bytes in
the worktree. The limits (64 tasks, 256 MiB, 32 MiB of disk) are held, the tree is gone soon after,
nothing of it survives, and the run ends exhausted(<limit>).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runtime.sandbox import cgroups
from tests.conftest import require
from tests.spawn.conftest import PY, SH_FIX, SH_REPORT, Spawner, marker, no_survivors

LIMITS = {"max-processes": 64, "memory-mb": 256, "disk-mb": 32, "timeout-s": 60}
MIB = 1 << 20


def _attacks(n: str) -> dict[str, tuple[str, str]]:
    """name -> (the attack as a shell command carrying the marker n, the limit it breaks)."""
    return {
        # Up to 3000 processes; a refused fork is retried after a pause.
        "fork-bomb": (f"i=0; while [ $i -lt 3000 ]; do sleep {n} 2>/dev/null & i=$((i+1)); done; wait", "processes"),
        # Up to 1500 threads in one process.
        "thread-bomb": (f"exec {PY} -c 'import threading, time\nfor _ in range(1500):\n"
                        f"    try:\n        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
                        f"    except RuntimeError:\n        time.sleep(0.01)\ntime.sleep({n})'", "processes"),
        # Up to 1.5 GiB of files in /dev/shm and /tmp, then waiting.
        "tmpfs-filler": (f"exec {PY} -c 'import os, time\nchunk = os.urandom(1 << 20)\n"
                         f"for i in range(1536):\n    d = \"/dev/shm\" if i % 2 else \"/tmp\"\n"
                         f"    try:\n        open(f\"{{d}}/f{{i}}\", \"wb\").write(chunk)\n"
                         f"    except OSError:\n        pass\ntime.sleep({n})'", "memory"),
        # Up to 3 GiB, touched as fast as it comes.
        "allocator": (f"exec {PY} -c 'import time\nheld = []\nfor _ in range(48):\n"
                      f"    held.append(bytearray(b\"\\x01\") * (64 << 20))\ntime.sleep({n})'", "memory"),
        # Up to 1000 MiB of 1 MiB files in the worktree, then waiting.
        "disk-filler": (f"exec {PY} -c 'import os, time\nchunk = os.urandom(1 << 20)\nfor i in range(1000):\n"
                        f"    try:\n        open(f\"fill-{{i}}.bin\", \"wb\").write(chunk)\n"
                        f"    except OSError:\n        break\ntime.sleep({n})'", "disk"),
    }


@dataclass
class Seen:
    tasks: int = 0
    rss: int = 0
    shmem: int = 0
    disk: int = 0
    over_at: float | None = None  # when a sample first saw a limit broken
    gone_at: float | None = None  # when no process of the attack was left after that
    alive_once: bool = False
    stop: threading.Event = field(default_factory=threading.Event)


def _shmem() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    return 0


def _marked(n: str) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if n.encode() in fh.read():
                        out.append(int(name))
            except OSError:
                pass
    return out


def _status(pid: int) -> tuple[int, int]:
    threads = rss = 0
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Threads:"):
                    threads = int(line.split()[1])
                elif line.startswith("RssAnon:"):  # what the cgroup charges; shared libraries are not
                    rss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return threads, rss


def _folder_bytes(folder: Path) -> int:
    total = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("fill-"):
                    try:
                        total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        pass
    except OSError:
        pass
    return total


def _sample(seen: Seen, n: str, folders: list[Path], shmem0: int, limit: str) -> None:
    bound = {"processes": LIMITS["max-processes"], "memory": LIMITS["memory-mb"] * MIB,
             "disk": LIMITS["disk-mb"] * MIB}[limit]
    while not seen.stop.is_set():
        pids = _marked(n)
        tasks = rss = 0
        for pid in pids:
            t, r = _status(pid)
            tasks, rss = tasks + t, rss + r
        shmem = max(0, _shmem() - shmem0)
        disk = sum(_folder_bytes(f) for f in folders)
        seen.tasks, seen.rss, seen.shmem, seen.disk = (max(seen.tasks, tasks), max(seen.rss, rss),
                                                       max(seen.shmem, shmem), max(seen.disk, disk))
        now = time.monotonic()
        value = {"processes": tasks, "memory": rss + shmem, "disk": disk}[limit]
        if pids:
            seen.alive_once = True
        if seen.over_at is None and value >= bound:
            seen.over_at = now
        if seen.over_at is not None and seen.gone_at is None and not pids:
            seen.gone_at = now
        time.sleep(0.005)


def _attack_run(s: Spawner, name: str, where: str) -> tuple[dict, Seen, str]:
    found = cgroups.support()
    require({"pids", "memory"} <= set(found.places), f"no cgroup for pids and memory here: {found.missing}")
    n = marker()
    command, limit = _attacks(n)[name]
    agent_id = f"ag-{name}-{where}"
    if where == "agent":
        task = s.task(agent_id=agent_id, command=command, limits=LIMITS)
    else:
        task = s.task(agent_id=agent_id, command=f"{SH_FIX}; {SH_REPORT}", limits=LIMITS,
                      # the command is no test runner: judged by its exit code (and held to the limits)
                      verification={"test-command": command, "test-results": "exit-code",
                                    "check-commands": ["python3 -m tabnanny src"]})
    seen = Seen()
    folders = [s.worktree(agent_id), s.run_dir(agent_id) / "scratch" / "tree"]
    sampler = threading.Thread(target=_sample, args=(seen, n, folders, _shmem(), limit), daemon=True)
    sampler.start()
    try:
        r = s.spawn(task, timeout=120)
    finally:
        time.sleep(0.05)
        seen.stop.set()
        sampler.join()
        no_survivors(n, timeout=5)
    assert r.outcome is not None, r.describe()
    return r.outcome, seen, limit


@pytest.mark.parametrize("where", ["agent", "test-command"])
@pytest.mark.parametrize("name", ["fork-bomb", "thread-bomb", "tmpfs-filler", "allocator", "disk-filler"])
def test_the_limit_holds_seen_from_the_host(spawner: Spawner, name: str, where: str):
    outcome, seen, limit = _attack_run(spawner, name, where)
    assert seen.alive_once, "the attack never ran"
    assert outcome["label"] == f"exhausted({limit})", outcome
    if limit == "processes":
        assert seen.tasks <= LIMITS["max-processes"], f"{seen.tasks} tasks under a limit of {LIMITS['max-processes']}"
    elif limit == "memory":
        # The kernel charges the processes' memory and their tmpfs pages together; the host's shared memory
        # also moves with whatever else runs, hence a margin.
        assert seen.rss <= LIMITS["memory-mb"] * MIB, f"{seen.rss / MIB:.0f} MiB resident"
        assert seen.shmem <= (LIMITS["memory-mb"] + 64) * MIB, f"{seen.shmem / MIB:.0f} MiB in tmpfs"
    else:
        # Writes to the page cache run at gigabytes a second: the margin is what a tree writes between two
        # looks of the watcher (1 ms once past half the budget) and its kill, on a loaded machine.
        assert seen.disk <= LIMITS["disk-mb"] * MIB * 1.25, f"{seen.disk / MIB:.0f} MiB on the host's disk"
    # The tree is ended at once, not after a grace or at the timeout (the bench measures how fast).
    assert seen.over_at is None or (seen.gone_at is not None and seen.gone_at - seen.over_at < 3.0)
    if where == "test-command":
        assert "was stopped" in outcome.get("message", "") or outcome["attempts"], outcome
