"""Reading files an agent could have written, without following anything it planted.

The orchestrator reads the agent's report, the files of its worktree (verify
evidence, fingerprints) and its home. An agent that replaces one of them, or a
folder on the way, with a symlink to a host file the sandbox hides (the
orchestrator's `~/.aws/credentials`) must not get that file read into the
state file, the `--json` output or the audit log. So every component below the
trusted root is opened with O_NOFOLLOW, folder by folder through descriptors
(no path is resolved twice), the last one must be a regular file, FIFOs and
devices are opened non-blocking and refused, and reads are bounded.
Hand-written rather than a library: this is the security boundary, and
`openat2(RESOLVE_NO_SYMLINKS)` has no standard-library binding.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

_CHUNK = 1024 * 1024


class UnsafeFile(Exception):
    """The path leads through a symlink, or does not end in a regular file."""


def _parts(relative: str | os.PathLike[str]) -> list[str]:
    parts = [p for p in PurePosixPath(os.fspath(relative)).parts if p not in ("", ".")]
    if not parts or parts[0] == "/" or ".." in parts:
        raise UnsafeFile(f"{relative} is not a plain relative path")
    return parts


def _descend(root: str | os.PathLike[str], names: list[str], relative: str | os.PathLike[str]) -> int:
    """A descriptor of the folder ``root/names...`` (the caller closes it), reached one folder at a time
    without following a symlink; UnsafeFile on a symlink or non-folder on the way."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in names:
            try:
                nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeFile(f"{relative}: {name} is a symlink or not a folder") from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def open_under(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> Iterator[int]:
    """A read-only descriptor of the regular file ``root/relative``; UnsafeFile on any symlink or
    non-regular file on the way, FileNotFoundError when it does not exist."""
    parts = _parts(relative)
    fd = _descend(root, parts[:-1], relative)
    try:
        try:
            leaf = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeFile(f"{relative} is a symlink") from None
            raise
    finally:
        os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(leaf).st_mode):
            raise UnsafeFile(f"{relative} is not a regular file")
        yield leaf
    finally:
        os.close(leaf)


@contextmanager
def folder_under(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> Iterator[int]:
    """A descriptor of the folder ``root/relative`` (``""`` for ``root``); UnsafeFile on any symlink or
    non-folder on the way, FileNotFoundError when it does not exist."""
    parts = _parts(relative) if PurePosixPath(os.fspath(relative)).parts else []
    fd = _descend(root, parts, relative)
    try:
        yield fd
    finally:
        os.close(fd)


def read_under(root: str | os.PathLike[str], relative: str | os.PathLike[str], limit: int) -> tuple[bytes, int]:
    """At most ``limit`` bytes of the file, and its size."""
    with open_under(root, relative) as fd:
        size = os.fstat(fd).st_size
        data = bytearray()
        while len(data) < limit and (chunk := os.read(fd, min(_CHUNK, limit - len(data)))):
            data += chunk
        return bytes(data), size


def size_under(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> int | None:
    """The size of a regular file, None for anything else (symlink, folder, missing): never opened."""
    try:
        st = os.lstat(Path(root, relative))
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def sha256_under(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> str:
    """The SHA-256 of the file, streamed."""
    digest = hashlib.sha256()
    with open_under(root, relative) as fd:
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_file(path: str | os.PathLike[str], limit: int) -> tuple[bytes, int]:
    """``read_under`` for one file whose folder is trusted (the orchestrator made it)."""
    path = Path(path)
    return read_under(path.parent, path.name, limit)
