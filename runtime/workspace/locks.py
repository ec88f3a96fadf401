"""Agent-id locks: two spawns racing for one agent id cannot both proceed.

A lock is an ``flock`` on ``<state_dir>/locks/<agent-id>.lock``, taken with
filelock without waiting. The kernel decides who wins and drops the lock when
its holder dies, however it dies, so a lock is never stale and nothing has to
judge whether a recorded pid is still the holder. Beside it,
``<agent-id>.holder`` names the holder (pid and time), written by the winner
after it won, for messages and ``runtime status``; it is information, never
what decides.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from runtime.errors import FatalError
from runtime.manifests.names import check_agent_id
from runtime.pids import alive


class AgentIdInUse(FatalError):
    """Another live process holds the agent id."""


@dataclass
class AgentLock:
    """A held agent-id lock; ``release()`` (or leaving the ``with`` block) gives it back."""

    path: Path
    agent_id: str
    _lock: FileLock
    released: bool = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        with contextlib.suppress(FileNotFoundError):
            _holder_path(self.path).unlink()  # before the flock goes: no one else can have written it
        # The lock file stays: unlinking it would let one process lock the old file while another
        # creates and locks a new one under the same name.
        self._lock.release()

    def __enter__(self) -> AgentLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_path(state_dir: str | os.PathLike[str], agent_id: str) -> Path:
    try:
        check_agent_id(agent_id)
    except ValueError as exc:
        raise FatalError(str(exc)) from None
    return Path(state_dir) / "locks" / f"{agent_id}.lock"


def _holder_path(path: Path) -> Path:
    return path.with_suffix(".holder")


def _try(path: Path) -> FileLock | None:
    """The lock, held, or None when another open file holds it (another process, or this one)."""
    lock = FileLock(path, timeout=0, thread_local=False, is_singleton=False)
    try:
        lock.acquire()
    except Timeout:
        return None
    return lock


def acquire(state_dir: str | os.PathLike[str], agent_id: str) -> AgentLock:
    """Hold ``agent_id`` for this process, or raise AgentIdInUse naming the live holder."""
    path = lock_path(state_dir, agent_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = _try(path)
    if lock is None:
        pid, since = _read_holder(path, wait=True)
        who = f"pid {pid} (since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))})" if pid else "another process"
        raise AgentIdInUse(f"agent id {agent_id!r} is in use by {who}")
    info = _holder_path(path)
    draft = info.with_name(f".{info.name}.{os.getpid()}")
    draft.write_text(json.dumps({"pid": os.getpid(), "time": time.time()}))
    os.replace(draft, info)  # readers see the whole record or none
    return AgentLock(path, agent_id, lock)


def holder(state_dir: str | os.PathLike[str], agent_id: str) -> int | None:
    """The pid of the live process holding ``agent_id`` (0 when it is not known yet), or None when it is free."""
    path = lock_path(state_dir, agent_id)
    if not path.exists():
        return None
    lock = _try(path)
    if lock is not None:
        lock.release()
        return None
    return _read_holder(path, wait=False)[0]


def _read_holder(path: Path, wait: bool) -> tuple[int, float]:
    """The holder's (pid, time); (0, 0) when not written (yet: the winner writes it just after winning)."""
    for _ in range(20 if wait else 1):
        try:
            record = json.loads(_holder_path(path).read_text())
            if isinstance(record, dict) and isinstance(record.get("pid"), int) and alive(record["pid"]):
                return record["pid"], float(record.get("time", 0))
        except (OSError, ValueError):
            pass
        if wait:
            time.sleep(0.05)
    return 0, 0.0

