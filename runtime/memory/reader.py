"""The read-only handle every part of the runtime gets: ``open_memory(path) -> MemoryReader``.

The file is opened through SQLite's ``mode=ro`` URI (and ``PRAGMA
query_only``), and the class has no write method, so a write through it fails
twice over: there is nothing to call, and the connection itself refuses
(``attempt to write a readonly database``). A missing file is an empty
memory: the reader answers ``[]`` and never creates the file (nor its
folder); once the writer has created it, the next call sees it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from runtime.memory.errors import MemoryStoreError
from runtime.memory.queries import Queries
from runtime.memory.schema import BUSY_TIMEOUT_MS, SCHEMA_VERSION, check_header


class MemoryReader(Queries):
    """A read-only handle: ``search``, ``results``, ``facts``, ``pending_learnings``, ``learnings``.

    It has no write method, and its connection is opened with ``mode=ro``.
    """

    __slots__ = ("path", "_conn", "_lock", "_closed")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(os.path.abspath(path))
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False
        with self._lock:
            self._ready()

    def _ready(self) -> sqlite3.Connection | None:
        """The connection once the store exists and has a schema; None while it does not."""
        if self._closed:
            raise MemoryStoreError(f"{self.path}: this memory handle is closed")
        if self._conn is None:
            if not self.path.is_file():
                return None
            try:
                conn = sqlite3.connect(self.path.as_uri() + "?mode=ro", uri=True,
                                       timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                       check_same_thread=False)
            except sqlite3.OperationalError:
                return None  # removed between the check and the open: still nothing to read
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA query_only = ON")
            self._conn = conn
        try:
            version = check_header(self._conn, self.path)
        except sqlite3.DatabaseError as exc:
            raise MemoryStoreError(f"{self.path}: {exc}") from exc
        if version == 0:
            return None  # the writer has not created the schema yet
        if version < SCHEMA_VERSION:
            raise MemoryStoreError(f"{self.path}: memory schema version {version} is older than this "
                                   f"runtime's ({SCHEMA_VERSION}); the writer migrates it on its next open")
        return self._conn

    def _rows(self, sql: str, params: list[object] | tuple[object, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            conn = self._ready()
            if conn is None:
                return []
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise MemoryStoreError(f"{self.path}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> MemoryReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryReader({str(self.path)!r})"


def open_memory(path: str | os.PathLike[str]) -> MemoryReader:
    """A read-only handle on the memory at ``path`` (empty, and not created, while the file is missing)."""
    return MemoryReader(path)
