"""The single writer, for the meta-validation step: ``open_for_meta_validation(path, token)``.

**The guard.** ``token`` must be a ``MetaValidationToken`` handed out by
``issue_meta_validation_token()``, which looks at the module that called it
and answers only a module named in ``META_VALIDATION_MODULES``
(``runtime.orchestration.meta``). The token's constructor needs a
module-private key, tokens are registered when issued (a token made with
``object.__new__`` is refused), cannot be pickled (they do not leave the
process), and ``MemoryWriter()`` cannot be constructed directly. A test scans
``runtime/`` and fails if any other module names these. This is a
code-structure guard, so that no code path other than meta-validation writes
by accident: it is not a security boundary against hostile Python in the same
process, which can import the private key or fake its ``__name__``. Agents
never get that far anyway: they run in other processes, in a sandbox that
does not contain the orchestrator's state folder.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from runtime.memory.errors import MemoryAccessDenied, MemoryStoreError
from runtime.memory.queries import ENTRY_SELECT, Queries, entry_from_row
from runtime.memory.records import now, valid_commit, valid_name, valid_tags, valid_text
from runtime.memory.schema import connect_writer

META_VALIDATION_MODULES = frozenset({"runtime.orchestration.meta"})
RESULT_SOURCE = "meta-validation"

_MINT = object()
_ISSUED: weakref.WeakSet[MetaValidationToken] = weakref.WeakSet()


class MetaValidationToken:
    """Proof, by code structure, that the caller is the meta-validation step.

    Obtain one with ``issue_meta_validation_token()`` from a module named in
    ``META_VALIDATION_MODULES``. Not a security boundary: see the module docstring.
    """

    __slots__ = ("holder", "__weakref__")

    def __init__(self, key: object, holder: str) -> None:
        if key is not _MINT:
            raise MemoryAccessDenied(
                "a MetaValidationToken is issued only by issue_meta_validation_token(), "
                "to the meta-validation step")
        self.holder = holder
        _ISSUED.add(self)

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError("a MetaValidationToken cannot be pickled or copied: it never leaves its process")

    def __repr__(self) -> str:
        return f"MetaValidationToken(holder={self.holder!r})"


def issue_meta_validation_token() -> MetaValidationToken:
    """A token for the calling module, if it is the meta-validation step; else ``MemoryAccessDenied``."""
    caller = sys._getframe(1).f_globals.get("__name__")
    if caller not in META_VALIDATION_MODULES:
        allowed = ", ".join(sorted(META_VALIDATION_MODULES))
        raise MemoryAccessDenied(
            f"{caller!s} may not write to shared memory: only the meta-validation step ({allowed}) "
            "may; read it with open_memory(path)")
    return MetaValidationToken(_MINT, caller)


class MemoryWriter(Queries):
    """The single writer, for the meta-validation step: ``open_for_meta_validation(path, token)``.

    Each write is its own transaction; ``with writer.batch():`` makes several
    one (all recorded or none). It reads like a ``MemoryReader``, its own
    uncommitted writes included.
    """

    __slots__ = ("path", "holder", "_conn", "_lock", "_depth")

    # Set by ``_attach`` (``__init__`` refuses): declared here for the type checker only.
    path: Path
    holder: str
    _conn: sqlite3.Connection | None
    _lock: threading.RLock
    _depth: int

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise MemoryAccessDenied("a MemoryWriter is obtained only through "
                                 "open_for_meta_validation(path, token)")

    # The factory bypasses __init__ on purpose.
    @classmethod
    def _attach(cls, conn: sqlite3.Connection, path: Path, holder: str) -> MemoryWriter:
        writer = object.__new__(cls)
        writer.path = path
        writer.holder = holder
        writer._conn = conn
        writer._lock = threading.RLock()
        writer._depth = 0
        return writer

    def _open_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MemoryStoreError(f"{self.path}: this memory writer is closed")
        return self._conn

    def _rows(self, sql: str, params: list[object] | tuple[object, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._open_conn().execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise MemoryStoreError(f"{self.path}: {exc}") from exc

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group writes into one transaction: committed together at the end, or rolled back on error."""
        with self._transaction():
            yield

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` at the outermost level, a savepoint inside (so a caught error undoes
        exactly its own part)."""
        with self._lock:
            conn = self._open_conn()
            depth = self._depth
            try:
                conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT memory_{depth}")
            except sqlite3.OperationalError as exc:
                raise MemoryStoreError(f"{self.path}: cannot start a write: {exc}") from exc
            self._depth = depth + 1
            try:
                yield conn
            except BaseException:
                self._depth = depth
                if depth == 0:
                    conn.execute("ROLLBACK")
                else:
                    conn.execute(f"ROLLBACK TO memory_{depth}")
                    conn.execute(f"RELEASE memory_{depth}")
                raise
            self._depth = depth
            try:
                conn.execute("COMMIT" if depth == 0 else f"RELEASE memory_{depth}")
            except sqlite3.DatabaseError as exc:
                if depth == 0 and conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise MemoryStoreError(f"{self.path}: write failed: {exc}") from exc

    def _insert_entry(self, conn: sqlite3.Connection, kind: str, title: str, body: str,
                      tags: tuple[str, ...], source: str, run_id: str | None) -> int:
        cur = conn.execute(
            "INSERT INTO entries (kind, title, body, source, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (kind, title, body, source, run_id, now()))
        # An INSERT's cursor always has the new row's id (None only before any INSERT).
        entry_id = int(cast(int, cur.lastrowid))
        conn.executemany("INSERT INTO entry_tags (entry_id, tag) VALUES (?, ?)",
                         [(entry_id, tag) for tag in tags])
        conn.execute("INSERT INTO entries_fts (rowid, title, body, tags) VALUES (?, ?, ?, ?)",
                     (entry_id, title, body, " ".join(tags)))
        return entry_id

    def _insert_fact(self, conn: sqlite3.Connection, text: str, tags: tuple[str, ...], source: str,
                     run_id: str | None, learning_id: int | None) -> int:
        entry_id = self._insert_entry(conn, "fact", "", text, tags, source, run_id)
        conn.execute("INSERT INTO facts (entry_id, learning_id) VALUES (?, ?)", (entry_id, learning_id))
        return entry_id

    def record_result(self, run_id: str, subtask_id: str, role: str, goal: str, summary: str,
                      branch: str, commit: str, tags: Iterable[str] = ()) -> int:
        """Remember one accepted subtask result; returns its entry id.

        Recording the same subtask of the same run again with the same content
        returns the existing id (a resumed run may repeat its last step); with
        different content it is a ``MemoryStoreError``.
        """
        run_id = valid_name("run_id", run_id)
        subtask_id = valid_name("subtask_id", subtask_id)
        role = valid_name("role", role)
        goal = valid_text("goal", goal)
        summary = valid_text("summary", summary, empty=True)
        branch = valid_name("branch", branch)
        commit = valid_commit(commit)
        tag_tuple = valid_tags(tags)
        with self._transaction() as conn:
            row = conn.execute("SELECT entry_id FROM results WHERE run_id = ? AND subtask_id = ?",
                               (run_id, subtask_id)).fetchone()
            if row is not None:
                old = entry_from_row(conn.execute(
                    ENTRY_SELECT.format(rank="NULL", source="entries e") + " WHERE e.id = ?",
                    (row[0],)).fetchone())
                if (old.title, old.body, old.role, old.branch, old.commit, old.tags) != (
                        goal, summary, role, branch, commit, tag_tuple):
                    raise MemoryStoreError(f"{self.path}: the result of subtask {subtask_id!r} of run "
                                           f"{run_id!r} is already recorded (entry {old.id}), differently")
                return old.id
            entry_id = self._insert_entry(conn, "result", goal, summary, tag_tuple, RESULT_SOURCE, run_id)
            conn.execute("INSERT INTO results (entry_id, run_id, subtask_id, role, branch, commit_sha) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (entry_id, run_id, subtask_id, role, branch, commit))
        return entry_id

    def add_pending_learning(self, run_id: str, text: str, source: str = "reviewer") -> int:
        """Keep a reviewer's ``learn`` text for curation; it is not a fact until promoted."""
        run_id = valid_name("run_id", run_id)
        text = valid_text("text", text)
        source = valid_name("source", source)
        with self._transaction() as conn:
            cur = conn.execute("INSERT INTO learnings (run_id, text, source, created_at) VALUES (?, ?, ?, ?)",
                               (run_id, text, source, now()))
            # An INSERT's cursor always has the new row's id (None only before any INSERT).
            return int(cast(int, cur.lastrowid))

    def add_fact(self, text: str, tags: Iterable[str], source: str, run_id: str | None = None) -> int:
        """Add a fact directly (a user's or an operator's statement); ``source`` is its provenance."""
        text = valid_text("text", text)
        tag_tuple = valid_tags(tags)
        source = valid_name("source", source)
        if run_id is not None:
            run_id = valid_name("run_id", run_id)
        with self._transaction() as conn:
            return self._insert_fact(conn, text, tag_tuple, source, run_id, None)

    def close(self) -> None:
        with self._lock:
            if self._depth:
                raise MemoryStoreError(f"{self.path}: cannot close inside a write batch")
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> MemoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryWriter({str(self.path)!r}, holder={self.holder!r})"


def open_for_meta_validation(path: str | os.PathLike[str], token: MetaValidationToken) -> MemoryWriter:
    """The writer of the memory at ``path``, created (WAL, current schema) if missing.

    ``token`` must come from ``issue_meta_validation_token()``; anything else
    is ``MemoryAccessDenied`` and nothing is created.
    """
    if type(token) is not MetaValidationToken or token not in _ISSUED:
        raise MemoryAccessDenied("the memory writer is only for the meta-validation step: pass the token "
                                 "from issue_meta_validation_token(); read with open_memory(path)")
    where = Path(os.path.abspath(path))
    return MemoryWriter._attach(connect_writer(where), where, token.holder)
