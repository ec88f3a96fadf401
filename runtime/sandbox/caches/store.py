"""A cache's folder in the state folder: sealed snapshots, the runs' layers over them, fills in progress.

    <state>/caches/<kind>/
        sealed/<time>-<base>/   what a fill of that base wrote, owned by root, read-only (files 0444, folders 0555)
        layers/<random>/        one sandbox's view: the run's own folders, the sealed files linked or copied in
        fills/<random>/         a fill in progress (a layer over the newest snapshot, written by its sandbox)
        bases/<base>            a base already filled (or tried), so the next spawn on it does not fill again
        lock                    shared while a layer is made, exclusive while a snapshot is sealed or evicted

Why hard links and not an overlay: this machine's bubblewrap may have no overlay, and a kernel overlay needs
privileges of its own; a link to a file the run cannot write (root's, 0444, in a folder that is the run's) is
a copy-on-write layer for a tool that writes its cache by making new files. What the tool rewrites in place is
copied instead (`CacheKind.linked`). A run may delete or replace anything in its layer; the sealed inode stays
as it was, and the next sandbox gets a new layer. This holds only where the run is another uid than the
snapshot's owner: a root orchestrator's agents (`runtime.sandbox.identity`). Anywhere else no cache is shared.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from runtime.sandbox.caches.kind import CacheKind, CacheSlot, FillSite
from runtime.sandbox.identity import AgentUser

SEALED, LAYERS, FILLS, BASES = "sealed", "layers", "fills", "bases"
# The sealed snapshots of one kind are evicted, oldest first, past either bound; the newest always stays.
# A layer that still links an evicted snapshot's files keeps them until the layer is removed.
CAP_BYTES = 4 * 1024**3
KEEP = 4
# A layer or fill older than this was left by an orchestrator that died: removed at the next seal.
LEFTOVER_S = 2 * 86400


@contextlib.contextmanager
def _locked(folder: Path, how: int) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, how)
        yield
    finally:
        os.close(fd)  # releases it


def newest(folder: Path) -> Path | None:
    """The newest sealed snapshot in a kind's ``folder``, or None."""
    try:
        names = [n for n in os.listdir(folder / SEALED) if not n.startswith(".")]
    except OSError:
        return None
    return folder / SEALED / max(names) if names else None


def open_layer(slot: CacheSlot, kind: CacheKind, user: AgentUser | None) -> Path | None:
    """A fresh layer over the newest snapshot for one sandbox run as ``user``, or None: no snapshot yet, or
    no other uid to run as (the run would own the snapshot's files). Taken from the layers made ahead when
    there is one (`_Ahead`); the next is made while the sandbox runs."""
    sealed = newest(slot.folder) if user is not None else None
    if user is None or sealed is None:
        return None
    made = AHEAD.take(sealed, user)
    if made is None:
        with _locked(slot.folder, fcntl.LOCK_SH):
            sealed = newest(slot.folder)
            made = None if sealed is None else _layer(sealed, slot.folder / LAYERS, kind, user)
    if sealed is not None:
        AHEAD.ahead(sealed, slot.folder / LAYERS, kind, user)  # after: two at once only slow each other down
    return made


class _Ahead:
    """A layer made ahead, in a thread, per snapshot and uid, and layers removed in a thread when their sandbox
    has ended. A layer is a folder per cache folder (Go's 256), and making or removing one is tens of ms of
    mkdir and rmdir on ext4: off every sandbox start's path but the first. A layer made ahead is as fresh as one
    made on the spot: the snapshot it links is sealed and never changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: dict[tuple[str, int, int], Path] = {}
        self._making: set[tuple[str, int, int]] = set()
        self._threads: list[threading.Thread] = []

    def take(self, sealed: Path, user: AgentUser) -> Path | None:
        """The layer made ahead over ``sealed`` for ``user``, if one is ready (those over an older snapshot of
        the same cache are removed)."""
        key = (str(sealed), user.uid, user.gid)
        with self._lock:
            made = self._ready.pop(key, None)
            stale = [k for k in self._ready if k[0] != key[0] and Path(k[0]).parent == sealed.parent]
            for old in (self._ready.pop(k) for k in stale):
                self._start(remove, old)
        return made

    def ahead(self, sealed: Path, parent: Path, kind: CacheKind, user: AgentUser) -> None:
        """Make the next layer over ``sealed`` for ``user`` in a thread, unless one is ready or on its way."""
        key = (str(sealed), user.uid, user.gid)
        with self._lock:
            if key not in self._ready and key not in self._making:
                self._making.add(key)
                self._start(self._make, key, sealed, parent, kind, user)

    def remove(self, layer: Path) -> None:
        with self._lock:
            self._start(remove, layer)

    def _make(self, key: tuple[str, int, int], sealed: Path, parent: Path, kind: CacheKind, user: AgentUser) -> None:
        layer = None
        try:
            with _locked(sealed.parent.parent, fcntl.LOCK_SH):
                layer = _layer(sealed, parent, kind, user) if sealed.is_dir() else None
        except OSError:
            pass  # made on the spot instead, where its error is the sandbox's
        finally:
            with self._lock:
                self._making.discard(key)
                if layer is not None:
                    self._ready[key] = layer

    def _start(self, target: Callable[..., None], *args: object) -> None:
        # with self._lock held
        self._threads = [t for t in self._threads if t.is_alive()]
        thread = threading.Thread(target=target, args=args, daemon=True, name="cache-layer")
        self._threads.append(thread)
        thread.start()

    def settle(self) -> None:
        """Wait for the layers being made and removed, then remove those made ahead (at exit, and in tests)."""
        while True:
            with self._lock:
                threads = [t for t in self._threads if t.is_alive()]
                ready, self._ready = list(self._ready.values()), {}
            for layer in ready:
                remove(layer)
            if not threads:
                return
            for thread in threads:
                thread.join()


AHEAD = _Ahead()
atexit.register(AHEAD.settle)


def begin_fill(slot: CacheSlot, kind: CacheKind, user: AgentUser) -> Path:
    """A fill's folder: a layer over the newest snapshot (empty without one), the fill's to write."""
    with _locked(slot.folder, fcntl.LOCK_SH):
        sealed = newest(slot.folder)
        if sealed is not None:
            return _layer(sealed, slot.folder / FILLS, kind, user)
    (slot.folder / FILLS).mkdir(parents=True, exist_ok=True)
    fill = Path(tempfile.mkdtemp(prefix="fill-", dir=slot.folder / FILLS))
    os.chown(fill, user.uid, user.gid)
    return fill


def _layer(sealed: Path, parent: Path, kind: CacheKind, user: AgentUser) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    top = Path(tempfile.mkdtemp(prefix="layer-", dir=parent))
    try:
        os.chown(top, user.uid, user.gid)
        # By hand rather than shutil.copytree: each file is linked or copied by the kind's rule, each folder
        # made the run's; the snapshot is root's and sealed, so nothing in it moves while this walks.
        for here, dirs, files in os.walk(sealed):
            rel = os.path.relpath(here, sealed)
            into = top if rel == "." else top / rel
            for name in dirs:
                os.mkdir(into / name, 0o755)
                os.chown(into / name, user.uid, user.gid)
            for name in files:
                src = os.path.join(here, name)
                st = os.lstat(src)
                if not stat.S_ISREG(st.st_mode):
                    continue
                rel_file = name if rel == "." else f"{rel}/{name}"
                if kind.linked(rel_file, st.st_size):
                    os.link(src, into / name)
                else:
                    shutil.copyfile(src, into / name)
                    os.chown(into / name, user.uid, user.gid)
                    os.chmod(into / name, 0o644)
                    os.utime(into / name, ns=(st.st_atime_ns, st.st_mtime_ns))  # a tool's freshness reads them
    except BaseException:
        remove(top)
        raise
    return top


def remove(path: Path) -> None:
    """Remove a layer or a fill (whatever the run made of its folders: the orchestrator is root)."""
    shutil.rmtree(path, ignore_errors=True)


def filled(slot: CacheSlot, base: str) -> bool:
    return (slot.folder / BASES / base).exists()


@contextlib.contextmanager
def filling(slot: CacheSlot) -> Iterator[bool]:
    """Whether this process is the one to fill now: one fill of a kind at a time, the others go on without."""
    slot.folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(slot.folder / "fill.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def seal(slot: CacheSlot, kind: CacheKind, fill: Path, base: str, site: FillSite, note: str) -> Path:
    """Make a finished fill (its sandbox ended, every process of it gone) the newest snapshot: what the kind
    may not share taken out, anything but files and folders removed, everything the orchestrator's and
    read-only; then evict past the bounds. ``site``: where the fill ran; ``note``: how it went, kept for the
    base."""
    uid, gid = os.geteuid(), os.getegid()
    # What the fill wrote is made plain first (no symlink is followed by anything after, the kind's prune
    # included, which removes as root), then the kind takes out what it may not share.
    for here, dirs, files in os.walk(fill, topdown=False):
        for name in files + dirs:
            path = os.path.join(here, name)
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                os.chown(path, uid, gid, follow_symlinks=False)
                os.chmod(path, 0o555)
            elif stat.S_ISREG(st.st_mode):
                os.chown(path, uid, gid, follow_symlinks=False)  # clears set-ID bits
                os.chmod(path, 0o444)
            else:
                os.unlink(path)  # a symlink, a fifo, a socket: nothing a build cache needs
    os.chown(fill, uid, gid)
    os.chmod(fill, 0o555)
    kind.prune(fill, site)
    with _locked(slot.folder, fcntl.LOCK_EX):
        (slot.folder / SEALED).mkdir(exist_ok=True)
        dest = slot.folder / SEALED / f"{time.time_ns():020d}-{base[:12]}"
        os.rename(fill, dest)
        _evict(slot.folder)
    mark(slot, base, note)
    _sweep(slot.folder)
    return dest


def mark(slot: CacheSlot, base: str, how: str) -> None:
    (slot.folder / BASES).mkdir(parents=True, exist_ok=True)
    (slot.folder / BASES / base).write_text(how + "\n", encoding="utf-8")


def _evict(folder: Path) -> None:
    snapshots = sorted(os.listdir(folder / SEALED), reverse=True)
    seen: set[int] = set()
    total = 0
    for n, name in enumerate(snapshots):
        size = _size(folder / SEALED / name, seen)
        total += size
        if n > 0 and (n >= KEEP or total > CAP_BYTES):
            _unseal(folder / SEALED / name)


def _size(path: Path, seen: set[int]) -> int:
    """Bytes on disk under ``path``, each inode once (snapshots share the files they were layered from)."""
    total = 0
    for here, _, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(here, name))
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_blocks * 512
    return total


def _unseal(path: Path) -> None:
    # Its folders are 0555: made writable again to be removed (its files' modes do not matter).
    for here, _dirs, _ in os.walk(path):
        os.chmod(here, 0o755)
    shutil.rmtree(path, ignore_errors=True)


def _sweep(folder: Path) -> None:
    cutoff = time.time() - LEFTOVER_S
    for parent in (folder / LAYERS, folder / FILLS):
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    remove(Path(entry.path))


@dataclass(frozen=True)
class Snapshot:
    path: Path
    base: str
    made: float  # seconds since the epoch
    bytes: int


def snapshots(folder: Path) -> list[Snapshot]:
    """A kind's sealed snapshots, newest first (for `runtime doctor`)."""
    try:
        names = sorted((n for n in os.listdir(folder / SEALED) if not n.startswith(".")), reverse=True)
    except OSError:
        return []
    seen: set[int] = set()
    out = []
    for name in names:
        made, _, base = name.partition("-")
        out.append(Snapshot(folder / SEALED / name, base, int(made) / 1e9, _size(folder / SEALED / name, seen)))
    return out
