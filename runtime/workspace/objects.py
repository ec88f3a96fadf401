"""Reading a repository's object store through one long-lived `git cat-file --batch-command` per repository.

The orchestrator asks the object store many small questions per agent (what a revision names, whether a
branch exists, a file of the base, the base's file listing): each used to be a `git` process of its own,
some 30 of the ~54 a subtask cost. One batch process per repository answers them all for the orchestrator's
lifetime, with git's own semantics (revision syntax, peeling, packed and loose refs, SHA-256 repositories),
which an in-process library (dulwich, pygit2) would reimplement or need a native build for. It runs with
the same hardening as every other git command and executes nothing of the repository's.

Refs and objects written after it started are seen: git reads a loose ref on every lookup, checks the packed
refs file's stat, and rescans the packs when an object is not found. A name holding a newline cannot be
asked (the protocol is line-based): callers fall back to a command of its own.
"""

from __future__ import annotations

import os
import subprocess
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


class ObjectStoreError(Exception):
    """The batch process failed or answered out of protocol; the caller treats it as a failed git command."""


@dataclass(frozen=True)
class Entry:
    """One entry of a recursive tree listing: its mode, object type, object id and path from the top level."""

    mode: str
    kind: str
    oid: str
    path: str


_LISTINGS = 16  # full tree listings kept per repository, by tree id (a plan's bases, a few at a time)


class ObjectReader:
    """One `git cat-file --batch-command` over ``root``, started on first use, one question at a time."""

    def __init__(self, root: Path, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self._root, self._argv, self._env = root, list(argv), dict(env)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._listings: OrderedDict[str, tuple[Entry, ...]] = OrderedDict()
        self.started = 0  # processes started (a benchmark counts them)

    def _process(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, env=self._env, cwd=self._root)
            self.started += 1
            weakref.finalize(self, _stop, self._proc)
        return self._proc

    def _ask(self, name: str, read: bool) -> tuple[str, str, int, bytes] | None:
        """(object id, type, size, and the bytes when ``read``) of the object ``name`` names; None: it names none."""
        if "\n" in name or "\r" in name or not name:
            raise ObjectStoreError(f"cannot ask the batch for {name!r}")
        with self._lock:
            proc = self._process()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(f"{'contents' if read else 'info'} {name}\n".encode("utf-8", "surrogateescape"))
                proc.stdin.flush()
                header = proc.stdout.readline()
                if not header.endswith(b"\n"):
                    raise ObjectStoreError("the batch process ended")
                fields = header.split()
                if len(fields) == 3 and fields[2].isdigit():
                    oid, kind, size = fields[0].decode(), fields[1].decode(), int(fields[2])
                    if not read:
                        return oid, kind, size, b""
                    data = proc.stdout.read(size + 1)  # a buffered reader: all of it, or less only at its end
                    if len(data) != size + 1 or data[-1:] != b"\n":
                        raise ObjectStoreError("the batch process ended inside an object")
                    return oid, kind, size, data[:-1]
                if fields and fields[-1] in (b"missing", b"ambiguous"):
                    return None
                raise ObjectStoreError(f"the batch process answered {header[:200]!r}")
            except (OSError, ObjectStoreError):
                _stop(proc)
                self._proc = None
                raise

    def info(self, name: str) -> tuple[str, str, int] | None:
        """(object id, type, size) of the object ``name`` names (any revision syntax); None when it names none."""
        got = self._ask(name, read=False)
        return None if got is None else got[:3]

    def contents(self, name: str) -> tuple[str, str, bytes] | None:
        """(object id, type, bytes) of the object ``name`` names; None when it names none."""
        got = self._ask(name, read=True)
        return None if got is None else (got[0], got[1], got[3])

    def listing(self, tree: str) -> tuple[Entry, ...]:
        """Every entry below the tree ``tree`` (an object id), recursively, as `ls-tree -r --full-tree` lists
        them; kept by tree id, which names its content for good."""
        with self._lock:
            kept = self._listings.get(tree)
            if kept is not None:
                self._listings.move_to_end(tree)
                return kept
        entries: list[Entry] = []
        self._walk(tree, "", entries)
        out = tuple(entries)
        with self._lock:
            self._listings[tree] = out
            while len(self._listings) > _LISTINGS:
                self._listings.popitem(last=False)
        return out

    def _walk(self, tree: str, prefix: str, entries: list[Entry]) -> None:
        got = self.contents(tree)
        if got is None or got[1] != "tree":
            raise ObjectStoreError(f"{tree} is not a tree")
        data, width = got[2], len(tree) // 2  # a raw object id: 20 bytes (SHA-1) or 32 (SHA-256)
        at = 0
        while at < len(data):
            space = data.index(b" ", at)
            nul = data.index(b"\0", space)
            mode = data[at:space].decode().rjust(6, "0")
            name = os.fsdecode(data[space + 1:nul])
            oid = data[nul + 1:nul + 1 + width].hex()
            at = nul + 1 + width
            path = prefix + name
            if mode == "040000":
                self._walk(oid, path + "/", entries)
            else:
                entries.append(Entry(mode, "commit" if mode == "160000" else "blob", oid, path))

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                _stop(self._proc)
                self._proc = None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stdin):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


_READERS: OrderedDict[str, ObjectReader] = OrderedDict()
_READERS_GUARD = threading.Lock()
_KEPT = 8  # readers kept open at once: a process that makes many repositories (a test suite) keeps a few


def reader_for(root: Path, argv: Sequence[str], env: Mapping[str, str]) -> ObjectReader:
    """The one reader of the repository (or linked worktree: its HEAD is its own) at ``root``."""
    key = os.fspath(root)
    with _READERS_GUARD:
        reader = _READERS.get(key)
        if reader is None:
            reader = _READERS[key] = ObjectReader(root, argv, env)
            while len(_READERS) > _KEPT:
                _READERS.popitem(last=False)[1].close()
        _READERS.move_to_end(key)
        return reader
