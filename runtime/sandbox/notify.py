"""Waiting on files the kernel says have changed (inotify), for the limits watcher: cgroup v2's
``memory.events`` and ``pids.events`` generate a modify event whenever a count in them changes, so a breach
wakes the watcher at once and an idle run costs it nothing. By hand over the C library (three calls): the
standard library has no inotify, and this sits in the orchestrator's every run."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from pathlib import Path

_IN_MODIFY = 0x00000002
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_libc: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(None, use_errno=True)  # the C library the interpreter runs on (no lookup process)
            lib.inotify_init1.argtypes = [ctypes.c_int]
            lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        except (OSError, AttributeError):
            return None
        _libc = lib
    return _libc


class FileEvents:
    """A descriptor that becomes readable when one of ``paths`` is modified; ``drain`` empties it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def watch(cls, paths: Sequence[Path]) -> FileEvents | None:
        """None when the machine cannot (no inotify, a file it will not watch): the caller polls instead."""
        if not paths:
            return None
        lib = _c()
        if lib is None:
            return None
        fd = lib.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        for path in paths:
            if lib.inotify_add_watch(fd, os.fsencode(path), _IN_MODIFY) < 0:
                os.close(fd)
                return None
        return cls(fd)

    def drain(self) -> None:
        while True:
            try:
                if not os.read(self.fd, 4096):
                    return
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return

    def close(self) -> None:
        os.close(self.fd)
