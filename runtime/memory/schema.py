"""The memory store's file: its schema, migrations and connection settings.

**Schema** (``PRAGMA user_version`` = ``SCHEMA_VERSION``, ``PRAGMA
application_id`` = ``APPLICATION_ID``; created by the writer on first open,
migrations applied by the writer inside one ``BEGIN IMMEDIATE``; a file whose
version is newer than this code is refused by both handles)::

    entries(id, kind 'result'|'fact', title, body, source, run_id, created_at)
        one row per searchable entry; a result's title is its goal and its
        body the summary, a fact's title is empty and its body the fact
    entry_tags(entry_id -> entries, tag)        exact tags, PRIMARY KEY(entry_id, tag)
    results(entry_id -> entries, run_id, subtask_id, role, branch, commit_sha)
        UNIQUE(run_id, subtask_id): a subtask's result is recorded once
    facts(entry_id -> entries, learning_id -> learnings UNIQUE)
        learning_id is the provenance of a promoted fact (NULL for add_fact)
    learnings(id, run_id, text, source, status 'pending'|'promoted'|'discarded',
              created_at, curated_at, curated_by, reason)
    entries_fts  FTS5(title, body, tags), rowid = entries.id,
                 tokenize 'porter unicode61 remove_diacritics 2'

Entries, tags, results and facts are append-only (triggers abort an UPDATE
or DELETE); a learning's text is fixed, and its status moves once, from
``pending`` to ``promoted`` (only with its fact in place) or ``discarded``.
Pending learnings live only in ``learnings``: ``facts()`` and ``search()``
do not see them until ``curate`` promotes them.

**Concurrency.** WAL mode, ``busy_timeout``, foreign keys on, ``synchronous
= FULL``. Readers never block the writer nor each other, and see the last
committed state: a write in progress (``MemoryWriter.batch()``) is invisible
until it commits, all at once or not at all. Writers serialise on SQLite's
write lock (``BEGIN IMMEDIATE``). Each handle's connection is guarded by a
lock, so a handle may be shared between threads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

from runtime.memory.errors import MemoryStoreError

SCHEMA_VERSION = 1
APPLICATION_ID = 0x524D454D  # "RMEM"
BUSY_TIMEOUT_MS = 5000

_V1 = """
CREATE TABLE entries (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('result', 'fact')),
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    source     TEXT NOT NULL,
    run_id     TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX entries_by_kind ON entries(kind, id);
CREATE TABLE entry_tags (
    entry_id INTEGER NOT NULL REFERENCES entries(id),
    tag      TEXT NOT NULL,
    PRIMARY KEY (entry_id, tag)
) WITHOUT ROWID;
CREATE INDEX entry_tags_by_tag ON entry_tags(tag, entry_id);
CREATE TABLE results (
    entry_id   INTEGER PRIMARY KEY REFERENCES entries(id),
    run_id     TEXT NOT NULL,
    subtask_id TEXT NOT NULL,
    role       TEXT NOT NULL,
    branch     TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    UNIQUE (run_id, subtask_id)
);
CREATE TABLE learnings (
    id         INTEGER PRIMARY KEY,
    run_id     TEXT NOT NULL,
    text       TEXT NOT NULL,
    source     TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'promoted', 'discarded')),
    created_at TEXT NOT NULL,
    curated_at TEXT,
    curated_by TEXT,
    reason     TEXT,
    CHECK ((status = 'pending') = (curated_at IS NULL))
);
CREATE INDEX learnings_by_status ON learnings(status, id);
CREATE TABLE facts (
    entry_id    INTEGER PRIMARY KEY REFERENCES entries(id),
    learning_id INTEGER UNIQUE REFERENCES learnings(id)
);
CREATE VIRTUAL TABLE entries_fts USING fts5(
    title, body, tags, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries
BEGIN SELECT RAISE(ABORT, 'memory entries are append-only'); END;
CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries
BEGIN SELECT RAISE(ABORT, 'memory entries are append-only'); END;
CREATE TRIGGER entry_tags_no_update BEFORE UPDATE ON entry_tags
BEGIN SELECT RAISE(ABORT, 'memory entries are append-only'); END;
CREATE TRIGGER entry_tags_no_delete BEFORE DELETE ON entry_tags
BEGIN SELECT RAISE(ABORT, 'memory entries are append-only'); END;
CREATE TRIGGER results_no_update BEFORE UPDATE ON results
BEGIN SELECT RAISE(ABORT, 'memory entries are append-only'); END;
CREATE TRIGGER results_no_delete BEFORE DELETE ON results
BEGIN SELECT RAISE(ABORT, 'memory entries are append-only'); END;
CREATE TRIGGER facts_no_update BEFORE UPDATE ON facts
BEGIN SELECT RAISE(ABORT, 'memory entries are append-only'); END;
CREATE TRIGGER facts_no_delete BEFORE DELETE ON facts
BEGIN SELECT RAISE(ABORT, 'memory entries are append-only'); END;
CREATE TRIGGER facts_from_pending_learning BEFORE INSERT ON facts
WHEN NEW.learning_id IS NOT NULL
 AND (SELECT status FROM learnings WHERE id = NEW.learning_id) IS NOT 'pending'
BEGIN SELECT RAISE(ABORT, 'only a pending learning can be promoted'); END;
CREATE TRIGGER learnings_no_delete BEFORE DELETE ON learnings
BEGIN SELECT RAISE(ABORT, 'learnings are never deleted, only discarded'); END;
CREATE TRIGGER learnings_fixed BEFORE UPDATE OF id, run_id, text, source, created_at ON learnings
BEGIN SELECT RAISE(ABORT, 'a learning''s text and provenance are fixed'); END;
CREATE TRIGGER learnings_curated_once BEFORE UPDATE ON learnings
WHEN OLD.status <> 'pending'
BEGIN SELECT RAISE(ABORT, 'learning already curated'); END;
CREATE TRIGGER learnings_promoted_with_fact BEFORE UPDATE OF status ON learnings
WHEN NEW.status = 'promoted'
 AND NOT EXISTS (SELECT 1 FROM facts WHERE learning_id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'a promoted learning needs its fact'); END;
"""

# _MIGRATIONS[i] takes a store from user_version i to i + 1.
_MIGRATIONS: tuple[str, ...] = (_V1,)
assert len(_MIGRATIONS) == SCHEMA_VERSION


def statements(script: str) -> Iterator[str]:
    """Split a script into complete statements (``executescript`` would COMMIT our transaction)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf.strip()
            buf = ""
    if buf.strip():
        raise ValueError(f"incomplete SQL statement: {buf.strip()[:60]!r}")




def check_header(conn: sqlite3.Connection, path: Path) -> int:
    """The store's schema version (0: not created yet); refuses foreign and newer files."""
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]  # a PRAGMA's integer
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    if version and app != APPLICATION_ID:
        raise MemoryStoreError(f"{path}: not a memory store (application_id {app:#x})")
    if version > SCHEMA_VERSION:
        raise MemoryStoreError(f"{path}: memory schema version {version} is newer than this runtime's "
                               f"({SCHEMA_VERSION}); upgrade the runtime")
    return version


def require_fts5(conn: sqlite3.Connection, path: Path) -> None:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.memory_fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.memory_fts5_probe")
    except sqlite3.OperationalError as exc:
        raise MemoryStoreError(f"{path}: this Python's SQLite ({sqlite3.sqlite_version}) lacks FTS5, "
                               "which the memory store needs for search") from exc


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = check_header(conn, path)
        if version == 0 and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise MemoryStoreError(f"{path}: not a memory store (it has tables of its own)")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            for statement in statements(_MIGRATIONS[target - 1]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target}")
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def connect_writer(where: Path) -> sqlite3.Connection:
    """The writer's connection to ``where``: created if missing, in WAL mode, migrated to this schema."""
    where.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(where, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Refuse someone else's database before touching it (the journal mode is persistent).
        if (check_header(conn, where) == 0
                and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]):
            raise MemoryStoreError(f"{where}: not a memory store (it has tables of its own)")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise MemoryStoreError(f"{where}: cannot switch the memory store to WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        require_fts5(conn, where)
        migrate(conn, where)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise MemoryStoreError(f"{where}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn
