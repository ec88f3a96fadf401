"""`[agent.limits] cpus = N`: the agent runs pinned to N of this machine's CPUs.

The pin is the CPU affinity of the agent's whole process tree (`taskset`, before the sandbox
starts; every child inherits it), and the sandbox's seccomp filter refuses `sched_setaffinity`,
so the agent cannot widen it again. Which N: the CPUs fewest running agents are pinned to right
now, on this machine, whichever process pinned them. Agents of one orchestrator, of several, and
of a cluster's worker processes on one node share the record of who holds which CPU
(`cpus.json` beside a lock, in a folder of this uid's under the temporary folder). An entry whose
process is gone no longer counts, so a killed orchestrator leaves nothing held.

By hand, not a library: the record is a few lines of JSON under filelock's flock, and nothing
else on the hot path needs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock

from runtime.errors import FatalError
from runtime.pids import alive


def available() -> list[int]:
    """The CPUs this process may run on (its affinity, which a container or cgroup may narrow)."""
    return sorted(os.sched_getaffinity(0))


def check_cpus(wanted: int, where: str) -> None:
    """Before anything is created: the machine can pin ``wanted`` CPUs (FatalError: one line)."""
    have = len(available())
    if wanted > have:
        raise FatalError(f"{where}: [agent.limits] cpus = {wanted}, but this machine offers {have}")
    if shutil.which("taskset") is None:
        raise FatalError(f"{where}: [agent.limits] cpus needs taskset (util-linux) to pin the agent")


def _folder() -> Path:
    folder = Path(tempfile.gettempdir()) / f"agent-runtime-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or folder.stat().st_uid != os.getuid():
        raise FatalError(f"{folder} is not this user's own folder: cannot record which CPUs agents hold")
    return folder


@contextlib.contextmanager
def pinned(wanted: int) -> Iterator[list[str]]:
    """The command prefix pinning to ``wanted`` CPUs, held for as long as the block runs."""
    folder = _folder()
    key = f"{os.getpid()}:{secrets.token_hex(4)}"
    with FileLock(str(folder / "cpus.lock")):
        record = _read(folder / "cpus.json")
        load = {cpu: 0 for cpu in available()}
        for cpu in (c for held in record.values() for c in held if c in load):
            load[cpu] += 1
        chosen = sorted(sorted(load, key=lambda cpu: (load[cpu], cpu))[:wanted])
        record[key] = chosen
        _write(folder / "cpus.json", record)
    try:
        yield [shutil.which("taskset") or "taskset", "--cpu-list", ",".join(map(str, chosen))]
    finally:
        with FileLock(str(folder / "cpus.lock")):
            record = _read(folder / "cpus.json")
            record.pop(key, None)
            _write(folder / "cpus.json", record)


def _read(path: Path) -> dict[str, list[int]]:
    """The record, without the entries of processes that are gone."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, list[int]] = {}
    for owner, cpus in data.items():
        pid = owner.split(":", 1)[0]
        if pid.isdigit() and alive(int(pid)) and isinstance(cpus, list):
            out[owner] = [c for c in cpus if isinstance(c, int)]
    return out


def _write(path: Path, record: dict[str, list[int]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    tmp.replace(path)
