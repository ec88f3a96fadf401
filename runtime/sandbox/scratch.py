"""A throwaway copy of a worktree, for tests and checks to run over (``SandboxSpec.scratch``).

A repository's own suite writes where its developers' machines let it: a
doctest's `file.txt.part` in the working folder, a `.coverage`, a snapshot
beside a test. Run over the agent's worktree, those writes would either fail
(the sandbox keeps the worktree read-only outside the write scope) or become
part of the change being judged. So each command runs over a copy shown at the
worktree's path, writable throughout, and removed after it: what the command
wrote is never part of the change, and the next command sees the work as the
agent left it.

Bubblewrap 0.8 (Debian 12's, which CI has) has no overlay mounts, and an
overlay the orchestrator mounts itself would need root; a copy works for every
orchestrator. Its cost is one pass over the tree: `copy_file_range`, which
shares the blocks on a file system with reflinks (btrfs, xfs) and copies in the
kernel elsewhere, and holes skipped, so a sparse terabyte the agent made with
`truncate` costs nothing. `bench/scratch.py` measures it.

Hand-written over ``runtime.workspace.tree.walk`` rather than `cp -a` or
`shutil.copytree`: the tree is the agent's (any depth, mode, name, FIFOs,
symlinks to anywhere), the orchestrator may be root, and GNU cp stops at paths
longer than PATH_MAX and `copytree` follows what it is told to. Nothing is
followed here: symlinks are copied as symlinks, FIFOs made anew, sockets and
devices left out (nothing can be read from them), hard links become separate
files. What cannot be copied (a folder too deep for git or unreadable, which
verify rejects anyway) makes the copy incomplete, and the command is not run
over it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import AgentFailed
from runtime.sandbox.identity import AgentUser
from runtime.workspace.hazards import MAX_PATH_BYTES
from runtime.workspace.tree import remove_at, walk

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 8 * 1024 * 1024


@dataclass
class Copied:
    """What a copy holds, and what it had to leave out (``(path, why)``: the copy is then incomplete)."""

    files: int = 0
    bytes: int = 0
    missing: list[tuple[str, str]] = field(default_factory=list)


def scratch_copy(source: Path, dest: Path, user: AgentUser | None = None,
                 leave_out: frozenset[str] = frozenset()) -> Copied:
    """Copy the tree at ``source`` to ``dest`` (which must not exist), every entry owned by ``user``
    (the sandbox's; None: stay the orchestrator's), modes and modification times kept. The files named
    in ``leave_out`` (paths relative to ``source``) are not copied."""
    os.mkdir(dest, 0o700)
    done = Copied()
    root = os.open(dest, _DIR_FLAGS)
    folders: list[tuple[str, os.stat_result]] = []  # modes and times set last: a read-only folder is filled first
    try:
        skipped: list[tuple[str, str]] = []
        for folder in walk(source, skipped=skipped):
            here = root if not folder.path else os.open(folder.path, _DIR_FLAGS, dir_fd=root)
            try:
                keep = []
                for name in folder.dirs:
                    path = f"{folder.path}/{name}" if folder.path else name
                    if len(os.fsencode(path)) > MAX_PATH_BYTES:
                        done.missing.append((path, "a folder deeper than git can hold"))
                        continue
                    st = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
                    os.mkdir(name, 0o700, dir_fd=here)
                    folders.append((path, st))
                    keep.append(name)
                folder.dirs[:] = keep
                for entry in folder.others:
                    if (f"{folder.path}/{entry.name}" if folder.path else entry.name) not in leave_out:
                        _copy_entry(folder.fd, here, entry.name, folder.path, user, done)
            finally:
                if here != root:
                    os.close(here)
        done.missing += [(path, why) for path, why in skipped]
        for path, st in reversed(folders):  # deepest first
            _finish(root, path, st, user)
        _finish_root(root, os.stat(source), user)
    finally:
        os.close(root)
    return done


def _copy_entry(src_dir: int, dst_dir: int, name: str, where: str, user: AgentUser | None, done: Copied) -> None:
    path = f"{where}/{name}" if where else name
    try:
        st = os.stat(name, dir_fd=src_dir, follow_symlinks=False)
    except FileNotFoundError:
        return
    owner = (user.uid, user.gid) if user is not None else None
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=src_dir), name, dir_fd=dst_dir)
        if owner:
            os.chown(name, *owner, dir_fd=dst_dir, follow_symlinks=False)
    elif stat.S_ISFIFO(st.st_mode):
        os.mkfifo(name, stat.S_IMODE(st.st_mode) & 0o777, dir_fd=dst_dir)
        if owner:
            os.chown(name, *owner, dir_fd=dst_dir, follow_symlinks=False)
    elif stat.S_ISREG(st.st_mode):
        try:
            src = os.open(name, _FILE_FLAGS, dir_fd=src_dir)
        except OSError as exc:
            done.missing.append((path, exc.strerror or str(exc)))
            return
        try:
            st = os.fstat(src)
            if not stat.S_ISREG(st.st_mode):  # replaced since the listing: nothing runs in the tree, so refuse
                done.missing.append((path, "not a regular file"))
                return
            dst = os.open(name, _NEW_FLAGS, 0o600, dir_fd=dst_dir)
            try:
                done.bytes += _copy_data(src, dst, st.st_size)
                if owner:
                    os.fchown(dst, *owner)
                os.fchmod(dst, stat.S_IMODE(st.st_mode) & 0o777)  # no set-ID bits on a copy the agent owns
                os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
            finally:
                os.close(dst)
        finally:
            os.close(src)
        done.files += 1
    # Sockets and devices: nothing to copy.


def _copy_data(src: int, dst: int, size: int) -> int:
    """Copy the data of ``src`` into the empty ``dst``, skipping holes; the bytes copied."""
    copied = offset = 0
    while offset < size:
        try:
            start = os.lseek(src, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                break
            raise
        end = os.lseek(src, start, os.SEEK_HOLE)
        copied += _copy_range(src, dst, start, end)
        offset = end
    os.ftruncate(dst, size)
    return copied


def _copy_range(src: int, dst: int, start: int, end: int) -> int:
    position = start
    while position < end:
        count = min(end - position, _CHUNK)
        try:
            n = os.copy_file_range(src, dst, count, position, position)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            n = _copy_plain(src, dst, position, count)
        if n == 0:  # the file shrank under us: nothing runs in the tree, so this is the end
            break
        position += n
    return position - start


def _copy_plain(src: int, dst: int, position: int, count: int) -> int:
    """Across file systems where the kernel cannot: read and write."""
    data = os.pread(src, count, position)
    view, written = memoryview(data), 0
    while written < len(data):
        written += os.pwrite(dst, view[written:], position + written)
    return len(data)


def _finish(root: int, path: str, st: os.stat_result, user: AgentUser | None) -> None:
    fd = os.open(path, _DIR_FLAGS, dir_fd=root)
    try:
        _finish_root(fd, st, user)
    finally:
        os.close(fd)


def _finish_root(fd: int, st: os.stat_result, user: AgentUser | None) -> None:
    if user is not None:
        os.fchown(fd, user.uid, user.gid)
    # The owner keeps rwx (it is the agent's copy, and it must be removable); no set-ID or sticky bits.
    os.fchmod(fd, (stat.S_IMODE(st.st_mode) & 0o777) | stat.S_IRWXU)
    os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))


def lay_over(source: Path, entries: list[str] | tuple[str, ...], dest: Path, user: AgentUser | None = None) -> Copied:
    """Copy each of ``entries`` (paths relative to ``source``: files or folders) into the tree at ``dest``,
    replacing what is there, owned by ``user``. Nothing in ``dest`` is followed: a folder on the way that is
    a symlink or a file there (the agent's, in a copy of its work) is replaced by a real folder, so nothing
    is written outside ``dest``; each step is opened relative to the one before, without following links."""
    done = Copied()
    root = os.open(dest, _DIR_FLAGS)
    try:
        for rel in entries:
            parts = [p for p in rel.split("/") if p not in ("", ".")]
            if not parts or ".." in parts:
                done.missing.append((rel, "not a path inside the tree"))
                continue
            fd = os.dup(root)
            try:
                for part in parts[:-1]:
                    fd = _real_folder(fd, part, user)
                name = parts[-1]
                remove_at(fd, name)
                source_parent = os.open(source.joinpath(*parts[:-1]) if len(parts) > 1 else source, _DIR_FLAGS)
                try:
                    st = os.stat(name, dir_fd=source_parent, follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        inner = scratch_copy(source.joinpath(*parts), Path(f"/proc/self/fd/{fd}") / name, user)
                        done.files, done.bytes = done.files + inner.files, done.bytes + inner.bytes
                        done.missing += [(f"{rel}/{p}", why) for p, why in inner.missing]
                    else:
                        _copy_entry(source_parent, fd, name, "/".join(parts[:-1]), user, done)
                finally:
                    os.close(source_parent)
            except FileNotFoundError:
                done.missing.append((rel, "not in the source"))
            finally:
                os.close(fd)
    finally:
        os.close(root)
    return done


def _real_folder(fd: int, name: str, user: AgentUser | None) -> int:
    """The folder ``name`` in ``fd`` opened (``fd`` closed), made when absent; whatever else is there (a
    symlink, a file) removed first."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=fd)
        st = None
    if st is None:
        os.mkdir(name, 0o755, dir_fd=fd)
        if user is not None:
            os.chown(name, user.uid, user.gid, dir_fd=fd, follow_symlinks=False)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class World:
    """A tree's world (`runtime.spawn.world`): ``entries`` (paths relative to the tree's root) as ``folder`` holds
    them, laid over every copy verify runs commands over."""

    folder: Path
    entries: tuple[str, ...]

    def lay_over(self, tree: Path, user: AgentUser | None) -> None:
        missing = lay_over(self.folder, self.entries, tree, user).missing
        if missing:
            raise AgentFailed("setup", f"the worktree's world could not be laid over {tree}: {missing[0][0]}: "
                                       f"{missing[0][1]}")
