"""A cgroup of its own for every run of an agent's code: the kernel counts and bounds what it spends.

An agent, and every check that runs its code, gets a cgroup made for that run and removed after it:

- ``pids.max``: every task takes a pid, threads included, so a thread bomb is held like a fork bomb;
  a fork past the limit fails (EAGAIN) and ``pids.events`` counts it;
- the memory limit (``memory.max``, v1 ``memory.limit_in_bytes``) with swap held at none: page cache
  and tmpfs pages are charged to the cgroup of the process that made them, so the sandbox's private
  ``/tmp`` and ``/dev/shm`` count; past the limit the kernel reclaims, then kills inside the cgroup
  (v2: the whole cgroup at once, ``memory.oom.group``) and counts it (``oom_kill``);
- CPU time from ``cpus`` (``cpu.max``, v1 ``cpu.cfs_quota_us``), beside the pinning of
  ``runtime.sandbox.cpus``.

The orchestrator learns of a breach from the kernel's own counters (`RunCgroup.breach`, a few bytes
read per look), ends the tree at once (`RunCgroup.kill`: ``cgroup.kill`` on v2, SIGKILL to every
member until none is left on v1, where ``pids.max`` keeps the set from growing) and takes the figures
from the kernel's peaks (``pids.peak``, ``memory.peak`` or ``memory.max_usage_in_bytes``).

Where the cgroups go. Each controller is taken where the machine attaches it: a v1 hierarchy of its
own (a child of the orchestrator's cgroup there), or the unified v2 hierarchy, where a child needs its
parent to delegate the controller (``cgroup.subtree_control``) and a cgroup holding processes cannot
(the "no internal processes" rule): the orchestrator's own cgroup serves when it is the root of its
hierarchy (a container's cgroup namespace) or already delegates, else the nearest ancestor that
delegates and that the orchestrator may write. A machine may mix both (this one's CI: v1 memory, pids
and cpu beside an empty v2 mount). A controller usable nowhere (an orchestrator that is not root and
has no delegation, a container with /sys/fs/cgroup read-only) is left out, `Support.missing` says why,
and `runtime.sandbox.rlimits` stands in for it.

How a process enters: its command starts with `join_prefix`, a shell that writes its own pid into
each cgroup's ``cgroup.procs`` and then becomes the command, so nothing the run starts is ever
outside the cgroup (a pid written by the orchestrator after the start would miss what was forked
before). The sandbox never shows /sys/fs/cgroup and the agent's uid could not write it: no way out.

By hand, not a library: cgroupspy, the one maintained-looking package on PyPI, speaks v1 only and
models a tree of controller objects; what is needed is a handful of file writes and reads, on the
security boundary, for both versions.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import signal
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from runtime.pids import alive

CONTROLLERS = ("pids", "memory", "cpu")
# agent-runtime-<pid namespace>-<orchestrator pid>-<hex>: the owner is known, so its leftovers can go. A pid
# means something only in its own pid namespace (a container's, a cluster node's), and orchestrators of
# several namespaces can share a hierarchy: each clears only the leftovers of its own namespace.
PREFIX = "agent-runtime-"
_NAME = re.compile(r"^agent-runtime-(\d+)-(\d+)-[0-9a-f]+$")
CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class Budget:
    """What the kernel is asked to hold for one run (None: not limited)."""

    processes: int | None = None
    memory_bytes: int | None = None
    cpus: float | None = None

    def wanted(self) -> tuple[str, ...]:
        return tuple(c for c, v in (("pids", self.processes), ("memory", self.memory_bytes), ("cpu", self.cpus))
                     if v is not None)


@dataclass(frozen=True)
class Place:
    """Where one controller's run cgroups are made: under ``parent``, in a v1 or the v2 hierarchy."""

    controller: str
    version: int
    parent: Path


@dataclass(frozen=True)
class Support:
    """Which controllers this machine lets the orchestrator use, and why the others are not."""

    places: dict[str, Place] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        if not self.places:
            return "no cgroup"
        by_version: dict[int, list[str]] = {}
        for place in self.places.values():
            by_version.setdefault(place.version, []).append(place.controller)
        return ", ".join(f"cgroup v{v} ({' '.join(sorted(cs))})" for v, cs in sorted(by_version.items()))


# Reading the machine -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Mount:
    point: Path
    root: str  # the folder of the hierarchy this mount shows (a container's may be a sub-tree)
    version: int
    controllers: frozenset[str]  # v1: the mount's options; v2: filled from cgroup.controllers


def _unescape(field_: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_)


def parse_mounts(mountinfo: str) -> list[_Mount]:
    out = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        parts, rest = left.split(), right.split()
        if len(parts) < 5 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        options = set(rest[2].split(","))
        version = 2 if rest[0] == "cgroup2" else 1
        controllers = frozenset(options & set(CONTROLLERS)) if version == 1 else frozenset()
        out.append(_Mount(Path(_unescape(parts[4])), _unescape(parts[3]), version, controllers))
    return out


def parse_own(cgroup_file: str) -> tuple[dict[str, str], str | None]:
    """The process's cgroup in each v1 hierarchy (by controller) and in v2 (``0::path``)."""
    v1: dict[str, str] = {}
    v2 = None
    for line in cgroup_file.splitlines():
        hier, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        if hier == "0" and names == "":
            v2 = path
        else:
            for name in names.split(","):
                v1[name] = path
    return v1, v2


def _under(mount: _Mount, path: str) -> Path | None:
    """The folder of cgroup ``path`` in ``mount``, or None when the mount does not show it."""
    root = mount.root.rstrip("/")
    if path != root and not path.startswith(root + "/") and root != "":
        return None
    rel = path[len(root):].lstrip("/")
    return mount.point / rel if rel else mount.point


def _read(path: Path | str) -> str:
    # os.open and os.read rather than open(): the limits watcher reads these files many times a second, and a
    # text file object costs it several times the read itself.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii", "replace")


def _words(path: Path) -> set[str]:
    try:
        return set(_read(path).split())
    except OSError:
        return set()


def _v2_place(controller: str, mount: _Mount, own: str) -> tuple[Place | None, str]:
    """The folder whose children get ``controller``: the own cgroup or the nearest ancestor that delegates
    it (or the hierarchy's root, which may, processes or not) and that this user may write."""
    start = _under(mount, own)
    if start is None:
        return None, f"{controller}: the v2 mount {mount.point} does not show this process's cgroup"
    if controller not in _words(start / "cgroup.controllers"):
        return None, f"{controller}: not available in the v2 hierarchy here (attached elsewhere or not delegated)"
    folder: Path | None = start
    while folder is not None:
        at_root = folder == mount.point
        if (at_root or controller in _words(folder / "cgroup.subtree_control")) and os.access(folder, os.W_OK):
            return Place(controller, 2, folder), ""
        folder = None if at_root else folder.parent
    return None, (f"{controller}: no cgroup from {start} up delegates it to this user (run as root, or start the "
                  "runtime in a delegated cgroup: systemd-run --user --scope -p Delegate=yes)")


def _enable(places: dict[str, Place], missing: dict[str, str]) -> None:
    """Delegate to their children the controllers a v2 root folder does not delegate yet (one write per
    folder); a controller the kernel refuses there is moved to ``missing``."""
    by_folder: dict[Path, list[str]] = {}
    for place in places.values():
        if place.version == 2 and place.controller not in _words(place.parent / "cgroup.subtree_control"):
            by_folder.setdefault(place.parent, []).append(place.controller)
    for folder, controllers in by_folder.items():
        try:
            with open(folder / "cgroup.subtree_control", "w", encoding="ascii") as fh:
                fh.write(" ".join(f"+{c}" for c in controllers))
        except OSError as exc:
            for c in controllers:
                del places[c]
                missing[c] = f"{c}: {folder} does not delegate it and it could not be enabled there ({exc.strerror})"


def _v1_place(controller: str, mount: _Mount, own: str) -> tuple[Place | None, str]:
    folder = _under(mount, own)
    if folder is None:
        return None, f"{controller}: the v1 mount {mount.point} does not show this process's cgroup"
    if not os.access(folder, os.W_OK):
        return None, f"{controller}: {folder} is not writable by this user (run the orchestrator as root)"
    return Place(controller, 1, folder), ""


def find_support(mountinfo: str, own_cgroups: str) -> Support:
    """Where each controller can be used, from the text of /proc/self/mountinfo and /proc/self/cgroup."""
    mounts = parse_mounts(mountinfo)
    own_v1, own_v2 = parse_own(own_cgroups)
    places: dict[str, Place] = {}
    missing: dict[str, str] = {}
    for controller in CONTROLLERS:
        v1 = next((m for m in mounts if m.version == 1 and controller in m.controllers), None)
        v2 = next((m for m in mounts if m.version == 2), None)
        if v1 is not None and controller in own_v1:
            place, why = _v1_place(controller, v1, own_v1[controller])
        elif v2 is not None and own_v2 is not None:
            place, why = _v2_place(controller, v2, own_v2)
        else:
            place, why = None, f"{controller}: no cgroup hierarchy carries it here"
        if place is not None:
            places[controller] = place
        else:
            missing[controller] = why
    _enable(places, missing)
    return Support(places, missing)


@cache
def support() -> Support:
    """This machine's answer, read once per process."""
    if os.environ.get("RUNTIME_NO_CGROUPS") == "1":  # to see the fallback where cgroups exist
        return Support({}, {c: f"{c}: RUNTIME_NO_CGROUPS=1" for c in CONTROLLERS})
    try:
        return find_support(_read(Path("/proc/self/mountinfo")), _read(Path("/proc/self/cgroup")))
    except OSError as exc:
        return Support({}, {c: f"{c}: /proc cannot be read ({exc.strerror})" for c in CONTROLLERS})


# One run's cgroup --------------------------------------------------------------------------------

def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(value)


def _int_field(path: Path, key: str) -> int:
    """The value of ``key`` in a flat keyed file (``max 3``, ``oom_kill 1``); 0 when absent."""
    try:
        for line in _read(path).splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0


def _int_file(path: Path) -> int | None:
    try:
        text = _read(path).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class CgroupError(Exception):
    """A run cgroup could not be made or set (the caller falls back to rlimits)."""


class RunCgroup:
    """One run's cgroup in each hierarchy that carries a wanted controller."""

    def __init__(self, folders: dict[str, tuple[int, Path]], memory_bytes: int | None = None) -> None:
        self.folders = folders  # controller -> (version, folder)
        self.distinct = sorted({f for _, f in folders.values()})
        self._procs = str(self.distinct[0] / "cgroup.procs") if self.distinct else ""
        self.memory_bytes = memory_bytes
        self._hits = 0  # how many times the memory limit was hit, as last read
        self._activity: tuple[str, int, bytes] | None = None  # (unit, descriptor, key) of `activity`
        self._usage = -1  # v1's memory.usage_in_bytes, kept open for `usage_alarm`

    @classmethod
    def make(cls, budget: Budget, found: Support | None = None) -> RunCgroup | None:
        """A new cgroup holding ``budget``, or None when none of its controllers can be used here."""
        found = support() if found is None else found
        wanted = [c for c in budget.wanted() if c in found.places]
        if not wanted:
            return None
        name = f"{PREFIX}{_pid_namespace()}-{os.getpid()}-{secrets.token_hex(4)}"
        folders: dict[str, tuple[int, Path]] = {}
        made: list[Path] = []
        try:
            for controller in wanted:
                place = found.places[controller]
                folder = place.parent / name
                if folder not in made:
                    _clear_leftovers(place.parent)
                    folder.mkdir(mode=0o755)
                    made.append(folder)
                folders[controller] = (place.version, folder)
            group = cls(folders, budget.memory_bytes)
            group._set(budget)
        except OSError as exc:
            for folder in made:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise CgroupError(f"{exc.filename}: {exc.strerror}") from exc
        return group

    def _set(self, budget: Budget) -> None:
        if "pids" in self.folders and budget.processes is not None:
            _, folder = self.folders["pids"]
            _write(folder / "pids.max", str(budget.processes))
        if "memory" in self.folders and budget.memory_bytes is not None:
            version, folder = self.folders["memory"]
            limit = str(budget.memory_bytes)
            if version == 2:
                _write(folder / "memory.max", limit)
                if (folder / "memory.swap.max").exists():
                    _write(folder / "memory.swap.max", "0")
                if (folder / "memory.oom.group").exists():
                    _write(folder / "memory.oom.group", "1")  # one kill ends the whole run
            else:
                _write(folder / "memory.limit_in_bytes", limit)
                if (folder / "memory.memsw.limit_in_bytes").exists():  # memory and swap together: no swap
                    _write(folder / "memory.memsw.limit_in_bytes", limit)
        if "cpu" in self.folders and budget.cpus is not None:
            version, folder = self.folders["cpu"]
            quota = max(1000, int(budget.cpus * CPU_PERIOD_US))
            if version == 2:
                _write(folder / "cpu.max", f"{quota} {CPU_PERIOD_US}")
            else:
                _write(folder / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(folder / "cpu.cfs_quota_us", str(quota))

    @property
    def controllers(self) -> tuple[str, ...]:
        return tuple(self.folders)

    def join_prefix(self) -> list[str]:
        """The command prefix that puts its own process into every folder, then runs the rest."""
        script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *(str(f / "cgroup.procs") for f in self.distinct), "--"]

    def breach(self) -> str | None:
        """The limit the kernel has enforced so far: "processes" (a fork refused), "memory" (a kill, or the
        limit hit with all but a tenth of it memory that cannot be reclaimed).

        A write into tmpfs past the limit is not a page fault, so the kernel refuses it (ENOMEM) rather
        than kill: a filler that ignores the error would sit at the limit until its clock ran out. So a
        hit of the limit (``memory.failcnt``, v2's ``max`` event) is looked into: page cache the kernel
        can drop is no breach, anonymous memory and tmpfs pages filling the limit are."""
        if "pids" in self.folders and _int_field(self.folders["pids"][1] / "pids.events", "max") > 0:
            return "processes"
        if "memory" in self.folders:
            version, folder = self.folders["memory"]
            events = folder / ("memory.events" if version == 2 else "memory.oom_control")
            if _int_field(events, "oom_kill") > 0:
                return "memory"
            # v1 counts a hit of memory and swap together where that limit is the one reached first.
            hits = _int_field(folder / "memory.events", "max") if version == 2 else (
                (_int_file(folder / "memory.failcnt") or 0) + (_int_file(folder / "memory.memsw.failcnt") or 0))
            if hits > self._hits:
                self._hits = hits
                if self.memory_bytes is not None and self.unreclaimable() >= 0.9 * self.memory_bytes:
                    return "memory"
        return None

    def unreclaimable(self) -> int:
        """Bytes of the cgroup's memory the kernel cannot drop without swap: anonymous memory and tmpfs."""
        version, folder = self.folders["memory"]
        stat = folder / "memory.stat"
        anon = _int_field(stat, "anon" if version == 2 else "rss")
        return anon + _int_field(stat, "shmem")

    def peaks(self) -> tuple[float | None, int | None]:
        """(peak memory in MiB, peak task count) as the kernel recorded them, where it does."""
        memory = processes = None
        if "memory" in self.folders:
            version, folder = self.folders["memory"]
            value = _int_file(folder / ("memory.peak" if version == 2 else "memory.max_usage_in_bytes"))
            memory = None if value is None else round(value / (1024 * 1024), 1)
        if "pids" in self.folders:
            processes = _int_file(self.folders["pids"][1] / "pids.peak")
        return memory, processes

    def event_files(self) -> list[Path]:
        """The files the kernel notifies a change of (cgroup v2's ``pids.events`` and ``memory.events``), for
        every controller that has them; empty when any controller is v1's, whose counters must be polled."""
        files = []
        for controller, name in (("pids", "pids.events"), ("memory", "memory.events")):
            if controller in self.folders:
                version, folder = self.folders[controller]
                if version != 2:
                    return []
                files.append(folder / name)
        return files

    def activity(self) -> tuple[str, int] | None:
        """A count of the kernel's that moves whenever the tree may have written to disk, read with one pread of
        a descriptor kept open: ("cpu-us", v2's CPU time, ``cpu.stat`` usage_usec, which every v2 cgroup has)
        or ("memory", v1's charged memory, ``memory.usage_in_bytes``: page cache a tree writes is charged to
        it); None where neither is here. The limits watcher looks at the disk only when it moved."""
        if self._activity is None:
            v2 = next((f for v, f in self.folders.values() if v == 2), None)
            memory = self.folders.get("memory")
            found = (("cpu-us", v2 / "cpu.stat", b"usage_usec ") if v2 is not None else
                     ("memory", memory[1] / "memory.usage_in_bytes", b"") if memory is not None else None)
            if found is None:
                return None
            try:
                self._activity = (found[0], os.open(found[1], os.O_RDONLY | os.O_CLOEXEC), found[2])
            except OSError:
                return None
        unit, fd, key = self._activity
        try:
            data = os.pread(fd, 8192, 0)
            if not key:
                return unit, int(data)
            data = b"\n" + data
            start = data.index(b"\n" + key) + len(key) + 1
            return unit, int(data[start:data.index(b"\n", start)])
        except (OSError, ValueError):
            return None

    def usage_alarm(self, room: int) -> int | None:
        """An eventfd the kernel signals when the cgroup's charged memory grows by ``room`` bytes from now (v1's
        threshold notification, ``cgroup.event_control``: page cache a tree writes is charged memory, so a tree
        that starts to write crosses it at once). None where there is none (v2 has no thresholds), or where the
        memory limit is too near for the memory to grow that far (a writer there reclaims as it writes).
        Closing the eventfd withdraws it."""
        memory = self.folders.get("memory")
        if memory is None or memory[0] != 1:
            return None
        folder = memory[1]
        try:
            if self._usage < 0:
                self._usage = os.open(folder / "memory.usage_in_bytes", os.O_RDONLY | os.O_CLOEXEC)
            now = int(os.pread(self._usage, 64, 0))
        except (OSError, ValueError):
            return None
        if self.memory_bytes is not None and now + 2 * room > self.memory_bytes:
            return None
        alarm = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        try:
            _write(folder / "cgroup.event_control", f"{alarm} {self._usage} {now + room}")
        except OSError:
            os.close(alarm)
            return None
        return alarm

    def members(self) -> list[int]:
        """The processes in the cgroup now (host pids)."""
        try:
            return [int(p) for p in _read(self._procs).split()]
        except (OSError, ValueError):
            return []

    def signal_all(self, sig: int) -> None:
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def kill(self, wait_s: float = 2.0) -> bool:
        """End every process inside; True when none is left within ``wait_s``."""
        v2 = [f for v, f in self.folders.values() if v == 2 and (f / "cgroup.kill").exists()]
        if v2:
            with contextlib.suppress(OSError):
                _write(v2[0] / "cgroup.kill", "1")
        deadline = time.monotonic() + wait_s
        while True:
            pids = self.members()
            if not pids:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in pids:  # a process forking now puts its child here too; the next round gets it
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002)

    def remove(self) -> None:
        """Remove the folders (after `kill`); a folder still busy is retried briefly, then left for the
        next run of this machine to clear (`_clear_leftovers`)."""
        if self._activity is not None:
            os.close(self._activity[1])
            self._activity = None
        if self._usage >= 0:
            os.close(self._usage)
            self._usage = -1
        for folder in self.distinct:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        break
                    time.sleep(0.01)


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _clear_leftovers(parent: Path) -> None:
    """Remove the run cgroups of orchestrators of this pid namespace that are gone (a SIGKILLed one could
    not); what is still inside is killed first (the sandbox's parent-death signal has usually done it)."""
    namespace = _pid_namespace()
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        match = _NAME.fullmatch(name)
        if match and int(match.group(1)) == namespace and not alive(int(match.group(2))):
            folder = parent / name
            leftover = RunCgroup({"pids": (1, folder)})  # any controller's folder lists its members
            if leftover.kill(wait_s=0.5):
                with contextlib.suppress(OSError):
                    folder.rmdir()
