"""Versioned SQLite files: a schema is a list of migrations, and the file says how far it has come.

`PRAGMA user_version` holds the number of migrations applied. Opening a file applies the ones it
lacks, in one ``BEGIN IMMEDIATE`` (two processes opening it at once apply each once), and refuses in
one line a file of a version newer than the code (written by a newer runtime: reading it could
misread it, writing it could break it). A file made before versions (``user_version`` 0 with the
tables there) takes the first migration as a no-op, since it creates its tables only where they do
not exist.

Used by the orchestrator's state (``orchestrator.sqlite``) and the approvals store
(``approvals.sqlite``); the memory store (`runtime.memory.schema`) keeps its own, older, scheme.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from runtime.errors import FatalError


class SchemaTooNew(FatalError):
    """The file was written by a newer runtime."""


def version_of(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(conn: sqlite3.Connection, migrations: Sequence[str], path: Path | str) -> int:
    """Bring the open file to ``len(migrations)``; returns the version it had. The connection must be in
    autocommit mode (``isolation_level=None``): the migrations are one explicit transaction."""
    have = version_of(conn)
    if have > len(migrations):
        raise SchemaTooNew(f"{path}: written by a newer runtime (schema version {have}, this one reads up to "
                           f"{len(migrations)}); use that runtime, or move the file aside")
    if have == len(migrations):
        return have
    conn.execute("BEGIN IMMEDIATE")
    try:
        start = version_of(conn)  # another process may have migrated it while this one waited
        for number in range(start, len(migrations)):
            for statement in _statements(migrations[number]):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(migrations):d}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return have


def _statements(script: str) -> list[str]:
    """The statements of a migration, one by one (``executescript`` would commit the transaction)."""
    out, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    if current.strip():
        raise ValueError(f"an incomplete statement in a migration: {current.strip()[:60]}")
    return [s for s in out if s]
