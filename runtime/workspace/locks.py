"""Agent-id locks: two spawns racing for one agent id cannot both proceed.

A lock is the file ``<state_dir>/locks/<agent-id>.lock``: its holder's pid, the
pid's start time (so a recycled pid is not taken for the holder), when it was
taken, and a random token naming this acquisition. It is written in full to a
private ``O_CREAT | O_EXCL`` file first and published with ``link``, which is
atomic and fails if the lock exists; so no reader ever sees a half-written lock
(a crash between create and write would leave an empty one nobody could judge).

A lock whose holder is dead is stale and is taken over. Judging "stale" and
replacing the file are two steps, so two processes that find the same stale
lock could both replace it, one after the other, and both believe they won.
Takeovers therefore run one at a time under an ``flock`` on ``locks/.takeover``
(the kernel drops it if its holder dies, so the guard itself never goes stale)
and re-read the lock inside it: the first replaces it (``os.replace``), every
later one finds a live holder and gets ``AgentIdInUse``. Plain acquisition needs
no guard: ``link`` decides it, and a lock only disappears by its live holder's
``release``, which checks the token so it never removes someone else's lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import FatalError
from runtime.manifests.names import check_agent_id


class AgentIdInUse(FatalError):
    """Another live process holds the agent id (or its lock cannot be judged)."""


@dataclass
class AgentLock:
    """A held agent-id lock; ``release()`` (or leaving the ``with`` block) gives it back."""

    path: Path
    agent_id: str
    token: str
    released: bool = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        with contextlib.suppress(AgentIdInUse, FileNotFoundError):
            if (_read(self.path) or {}).get("token") == self.token:
                self.path.unlink()

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


def acquire(state_dir: str | os.PathLike[str], agent_id: str) -> AgentLock:
    """Hold ``agent_id`` for this process, or raise AgentIdInUse naming the live holder."""
    path = lock_path(state_dir, agent_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    record = {"pid": os.getpid(), "start": _start_time(os.getpid()), "time": time.time(), "token": token}
    draft = path.with_name(f".{path.name}.{token}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w") as out:
        json.dump(record, out)
    lock = AgentLock(path, agent_id, token)
    try:
        if _publish(draft, path):
            return lock
        with _takeover_guard(path.parent):
            for _ in range(100):
                held = _read(path)
                if held is None:  # released since our link failed: try again
                    if _publish(draft, path):
                        return lock
                    continue
                if _alive(held):
                    raise AgentIdInUse(f"agent id {agent_id!r} is in use by pid {held['pid']} "
                                       f"(since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(held.get('time', 0)))})")
                os.replace(draft, path)  # stale, and no other takeover can run now
                return lock
        raise AgentIdInUse(f"agent id {agent_id!r}: its lock keeps changing; giving up")
    finally:
        with contextlib.suppress(FileNotFoundError):
            draft.unlink()


def holder(state_dir: str | os.PathLike[str], agent_id: str) -> int | None:
    """The pid of the live process holding ``agent_id``, or None (free, or held by a dead process)."""
    held = _read(lock_path(state_dir, agent_id))
    return held["pid"] if held is not None and _alive(held) else None


def _publish(draft: Path, path: Path) -> bool:
    try:
        os.link(draft, path)
    except FileExistsError:
        return False
    return True


@contextlib.contextmanager
def _takeover_guard(folder: Path) -> Iterator[None]:
    fd = os.open(folder / ".takeover", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _read(path: Path) -> dict | None:
    """The lock's record; None if there is no lock; AgentIdInUse if it cannot be judged (fail closed)."""
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("pid"), int) or record["pid"] <= 0:
        raise AgentIdInUse(f"lock {path} is unreadable; remove it if no spawn of this agent id is running")
    return record


def _alive(record: dict) -> bool:
    pid = record["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    start = _start_time(pid)
    if start == "zombie":
        return False
    # Without /proc we cannot tell a recycled pid from the holder: assume the holder.
    return start is None or record.get("start") in (None, start)


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), "zombie", or None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces and parentheses
    return "zombie" if fields[0] in ("Z", "X") else fields[19]
