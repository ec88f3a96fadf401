"""Walking and removing a folder tree an agent wrote, whatever it left there.

The agent controls every name, mode and depth below its writable folders: a
chain of folders deeper than PATH_MAX, names of 255 bytes, bytes that are not
UTF-8, newlines and escapes in names, FIFOs, sockets, folders with mode 0,
tens of thousands of files. Path-string APIs fail on the first of these:
``os.lstat`` of a joined path raises ENAMETOOLONG, ``os.walk`` skips what it
cannot open, and in Python 3.11 ``shutil.rmtree`` and ``os.fwalk`` recurse in
Python (RecursionError past about a thousand levels) and ``fwalk`` holds a
descriptor per level.

So the walk here is iterative and descriptor-relative: it holds one folder
descriptor at a time, steps down with ``openat(O_NOFOLLOW | O_DIRECTORY)`` and
back up through ``..``, checked against the device and inode recorded on the way
down. No system call ever sees more than one name, no symlink is ever followed,
and a folder the orchestrator may not enter is made enterable if it owns it
(an orchestrator that is not root owns what its agent made), else reported.
Hand-written because this is the security boundary between the agent's tree
and the orchestrator, and the standard library has no walk with these
properties.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_UP_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class TreeChanged(OSError):
    """A folder was moved while it was walked: nothing else runs in the tree when the orchestrator
    walks it, so this is refused rather than guessed around."""


@dataclass
class Folder:
    """One folder of the walk, while the walk stands in it.

    ``fd`` is open only until the walk moves on. ``dirs`` are the subfolders it will enter next:
    remove names from it to skip them. ``others`` is everything else (files, symlinks, FIFOs,
    sockets, devices), as ``os.DirEntry`` objects whose methods never follow a symlink when called
    with ``follow_symlinks=False``. ``path`` is relative to the root ("" for the root) when the walk
    was asked for paths, else "".
    """

    path: str
    fd: int
    depth: int
    dirs: list[str]
    others: list[os.DirEntry[str]]


@dataclass
class _Frame:
    name: str
    path: str
    dev: int
    ino: int
    pending: list[str] = field(default_factory=list)


def _list(fd: int) -> tuple[list[str], list[os.DirEntry[str]]]:
    dirs: list[str] = []
    others: list[os.DirEntry[str]] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                dirs.append(entry.name)
            else:
                others.append(entry)
    dirs.sort()
    others.sort(key=lambda e: e.name)
    return dirs, others


def _open_child(fd: int, name: str) -> int:
    """The subfolder ``name`` of ``fd``, never through a symlink. A folder this process may not enter
    (mode 0, say) is given owner rwx first when this process owns it; ``PermissionError`` otherwise."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except PermissionError:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise
        # No symlink can stand here (lstat said folder, and nothing else runs in the tree); Linux
        # has no fchmodat(AT_SYMLINK_NOFOLLOW) to say so to the kernel.
        os.chmod(name, stat.S_IMODE(st.st_mode) | stat.S_IRWXU, dir_fd=fd)
        return os.open(name, _DIR_FLAGS, dir_fd=fd)


def walk(root: str | os.PathLike[str] | int, *, paths: bool = True, writable: bool = False,
         skipped: list[tuple[str, str]] | None = None,
         leave: Callable[[int, str], None] | None = None) -> Iterator[Folder]:
    """Every folder of the tree at ``root`` (a path, or an open folder descriptor, which stays open),
    never through a symlink, parents before children.

    ``writable``: make each folder owner-writable when this process owns it (for removal).
    ``skipped`` collects ``(path, why)`` of subfolders that could not be entered. ``leave(fd, name)``
    is called after the subfolder ``name`` of the folder open as ``fd`` was walked whole (removal
    deletes it there). With ``paths=False`` no path string is built: a chain of a million folders
    costs a million small frames, not a million ever longer strings.
    """
    fd = os.dup(root) if isinstance(root, int) else os.open(root, _UP_FLAGS)
    try:
        st = os.fstat(fd)
        frames = [_Frame("", "", st.st_dev, st.st_ino)]
        while True:
            frame = frames[-1]
            dirs, others = _list(fd)
            folder = Folder(frame.path, fd, len(frames) - 1, dirs, others)
            yield folder
            frame.pending = list(reversed(folder.dirs))
            while frames:
                frame = frames[-1]
                if frame.pending:
                    name = frame.pending.pop()
                    child_path = (f"{frame.path}/{name}" if frame.path else name) if paths else ""
                    try:
                        if writable:
                            _make_writable(fd, name)
                        child = _open_child(fd, name)
                    except OSError as exc:
                        if exc.errno == errno.ENOENT:
                            continue
                        if skipped is not None:
                            skipped.append((child_path, exc.strerror or str(exc)))
                        continue
                    st = os.fstat(child)
                    os.close(fd)
                    fd = child
                    frames.append(_Frame(name, child_path, st.st_dev, st.st_ino))
                    break
                done = frames.pop()
                if not frames:
                    return
                up = os.open("..", _UP_FLAGS, dir_fd=fd)
                st = os.fstat(up)
                if (st.st_dev, st.st_ino) != (frames[-1].dev, frames[-1].ino):
                    os.close(up)
                    raise TreeChanged(errno.EIO, f"a folder moved while it was walked: {frames[-1].path or '.'}")
                os.close(fd)
                fd = up
                if leave is not None:
                    leave(fd, done.name)
    finally:
        os.close(fd)


def _make_writable(fd: int, name: str) -> None:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and (st.st_mode & stat.S_IRWXU) != stat.S_IRWXU:
        os.chmod(name, stat.S_IMODE(st.st_mode) | stat.S_IRWXU, dir_fd=fd)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Delete ``path`` and everything below it, whatever the agent left there; a symlink or file at
    ``path`` is unlinked, never followed. Missing is fine. Folders the orchestrator owns are made
    writable on the way; what it cannot delete raises ``OSError``."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    pfd = os.open(parent or "/", _UP_FLAGS)
    try:
        remove_at(pfd, name)
    finally:
        os.close(pfd)


def remove_at(fd: int, name: str) -> None:
    """`remove_tree` of ``name`` in the folder open as ``fd``: a symlink or file unlinked, never followed, a
    folder removed with everything in it; missing is fine."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=fd)
        return
    _make_writable(fd, name)
    remove_below(fd, name)


def remove_below(fd: int, name: str) -> None:
    """Delete the folder ``name`` of the folder open as ``fd``, with everything in it."""
    def unlink_others(folder: Folder) -> None:
        for entry in folder.others:
            try:
                os.unlink(entry.name, dir_fd=folder.fd)
            except FileNotFoundError:
                pass

    def rmdir(parent: int, child: str) -> None:
        os.rmdir(child, dir_fd=parent)

    _make_writable(fd, name)
    top = _open_child(fd, name)
    try:
        skipped: list[tuple[str, str]] = []
        for folder in walk(top, paths=False, writable=True, skipped=skipped, leave=rmdir):
            unlink_others(folder)
        if skipped:
            raise OSError(errno.EACCES, f"cannot enter {len(skipped)} folder(s) to remove them: {skipped[0][1]}")
    finally:
        os.close(top)
    os.rmdir(name, dir_fd=fd)
