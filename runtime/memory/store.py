"""The shared memory store: accepted results and curated facts in one SQLite file.

Two handles, two ways in:

- ``open_memory(path) -> MemoryReader``: what the planner and every other part
  of the runtime gets. The file is opened through SQLite's ``mode=ro`` URI
  (and ``PRAGMA query_only``), and the class has no write method, so a write
  through it fails twice over: there is nothing to call, and the connection
  itself refuses (``attempt to write a readonly database``). A missing file
  is an empty memory: the reader answers ``[]`` and never creates the file
  (nor its folder); once the writer has created it, the next call sees it.
- ``open_for_meta_validation(path, token) -> MemoryWriter``: the only way to
  a writer, for the meta-validation step once a merged result was accepted.
  A rejected run simply never calls it, so nothing is written.

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

**Search.** ``search(query, tags, limit)`` turns the query into its words
(``\\w+``), each quoted, joined with OR, and ranks with ``bm25`` over title
(weight 4), body (1) and tags (2): an entry matching more, and rarer, words
ranks first; ties go to the newer entry. ``tags`` filters exactly: an entry
must carry every tag given. A query without words lists the entries with
those tags, newest first. FTS5 is required (it is compiled into the SQLite
of CPython's official builds and of this machine); without it the writer
refuses to create the store with a clear error, there is no LIKE fallback.

**Concurrency.** WAL mode, ``busy_timeout``, foreign keys on, ``synchronous
= FULL``. Readers never block the writer nor each other, and see the last
committed state: a write in progress (``MemoryWriter.batch()``) is invisible
until it commits, all at once or not at all. Writers serialise on SQLite's
write lock (``BEGIN IMMEDIATE``). Each handle's connection is guarded by a
lock, so a handle may be shared between threads.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from runtime.errors import FatalError

SCHEMA_VERSION = 1
APPLICATION_ID = 0x524D454D  # "RMEM"
BUSY_TIMEOUT_MS = 5000
META_VALIDATION_MODULES = frozenset({"runtime.orchestration.meta"})

MAX_TEXT = 65536
MAX_NAME = 256
MAX_TAGS = 32
MAX_LIMIT = 1000
MAX_QUERY_WORDS = 32

_TAG_RE = re.compile(r"[^\s\x00-\x1f\x7f]{1,64}")
_COMMIT_RE = re.compile(r"[0-9a-f]{7,64}")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_WORD_RE = re.compile(r"\w+")
_RANK = "bm25(entries_fts, 4.0, 1.0, 2.0)"  # title, body, tags: lower is better
RESULT_SOURCE = "meta-validation"

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


class MemoryStoreError(FatalError):
    """The memory store cannot be used as asked: missing FTS5, a newer schema, a conflicting write."""


class MemoryAccessDenied(MemoryStoreError):
    """A writer was asked for by code that is not the meta-validation step."""


class CurationError(MemoryStoreError):
    """A curation decision names an unknown learning or one already curated."""


@dataclass(frozen=True)
class Entry:
    """One accepted result or one fact, as the planner reads it.

    For a result, ``title`` is the subtask's goal and ``body`` its summary;
    ``subtask_id``, ``role``, ``branch`` and ``commit`` are set. For a fact,
    ``title`` is empty and ``body`` is the fact; ``learning_id`` names the
    learning it was promoted from (None when added directly). ``score`` is
    set by ``search`` (higher is more relevant), None elsewhere.
    """

    id: int
    kind: Literal["result", "fact"]
    title: str
    body: str
    tags: tuple[str, ...]
    source: str
    run_id: str | None
    created_at: str
    subtask_id: str | None = None
    role: str | None = None
    branch: str | None = None
    commit: str | None = None
    learning_id: int | None = None
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"] = list(self.tags)
        return data


@dataclass(frozen=True)
class Learning:
    """A reviewer's ``learn`` text: pending until curated, then promoted (``fact_id``) or discarded."""

    id: int
    run_id: str
    text: str
    source: str
    status: Literal["pending", "promoted", "discarded"]
    created_at: str
    curated_at: str | None
    curated_by: str | None
    reason: str | None
    fact_id: int | None


# -- the capability ---------------------------------------------------------------------------

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


# -- validation -------------------------------------------------------------------------------

def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _name(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string, not {type(value).__name__}")
    if not value.strip() or value != value.strip() or len(value) > MAX_NAME or _CONTROL_RE.search(value):
        raise ValueError(f"{field} must be 1 to {MAX_NAME} characters, without surrounding spaces "
                         f"or control characters: {value!r}")
    return value


def _text(field: str, value: object, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string, not {type(value).__name__}")
    if (not empty and not value.strip()) or len(value) > MAX_TEXT or "\x00" in value:
        raise ValueError(f"{field} must be {'' if empty else 'non-empty '}text of at most "
                         f"{MAX_TEXT} characters, without NUL")
    return value


def _tag_list(tags: object) -> list[str]:
    if isinstance(tags, (str, bytes)):
        raise TypeError("tags must be a list of strings, not one string")
    if not isinstance(tags, Iterable):
        raise TypeError(f"tags must be a list of strings, not {type(tags).__name__}")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"a tag must be a string, not {type(tag).__name__}")
        if tag not in out:
            out.append(tag)
    return out


def _tags_to_write(tags: object) -> tuple[str, ...]:
    out = _tag_list(tags)
    for tag in out:
        if not _TAG_RE.fullmatch(tag):
            raise ValueError(f"a tag is 1 to 64 characters without spaces or control characters: {tag!r}")
    if len(out) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags, got {len(out)}")
    return tuple(sorted(out))


def _limit(limit: object) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer from 1 to {MAX_LIMIT}: {limit!r}")
    return limit


def match_expression(query: str) -> str | None:
    """The FTS5 expression for a free-text query: its words, quoted, joined with OR (None if none).

    Quoting every word keeps FTS5's own syntax (``-``, ``:``, ``NEAR``, ``*``,
    quotes, column filters) out of the planner's hands: a query is only words.
    """
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, not {type(query).__name__}")
    words: list[str] = []
    for word in _WORD_RE.findall(query.lower()):
        if word not in words:
            words.append(word)
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in words[:MAX_QUERY_WORDS])


def _statements(script: str) -> Iterator[str]:
    """Split a script into complete statements (``executescript`` would COMMIT our transaction)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf.strip()
            buf = ""
    if buf.strip():
        raise ValueError(f"incomplete SQL statement: {buf.strip()[:60]!r}")


# -- reading ----------------------------------------------------------------------------------

_ENTRY_SELECT = """
SELECT e.id, e.kind, e.title, e.body, e.source, e.run_id, e.created_at,
       r.subtask_id, r.role, r.branch, r.commit_sha, f.learning_id,
       (SELECT group_concat(t.tag, char(10)) FROM entry_tags t WHERE t.entry_id = e.id) AS tags,
       {rank} AS rank
FROM {source}
LEFT JOIN results r ON r.entry_id = e.id
LEFT JOIN facts f ON f.entry_id = e.id
"""

_LEARNING_SELECT = """
SELECT l.id, l.run_id, l.text, l.source, l.status, l.created_at, l.curated_at, l.curated_by,
       l.reason, f.entry_id AS fact_id
FROM learnings l LEFT JOIN facts f ON f.learning_id = l.id
"""

_LEARNING_STATUSES = ("pending", "promoted", "discarded")


def _tags_filter(tags: list[str]) -> tuple[str, list[object]]:
    marks = ", ".join("?" * len(tags))
    return (f"e.id IN (SELECT entry_id FROM entry_tags WHERE tag IN ({marks}) "
            f"GROUP BY entry_id HAVING count(*) = ?)", [*tags, len(tags)])


def _entry(row: sqlite3.Row) -> Entry:
    tags = tuple(sorted(row["tags"].split("\n"))) if row["tags"] else ()
    return Entry(
        id=row["id"], kind=row["kind"], title=row["title"], body=row["body"], tags=tags,
        source=row["source"], run_id=row["run_id"], created_at=row["created_at"],
        subtask_id=row["subtask_id"], role=row["role"], branch=row["branch"],
        commit=row["commit_sha"], learning_id=row["learning_id"],
        score=None if row["rank"] is None else -float(row["rank"]))


def _learning(row: sqlite3.Row) -> Learning:
    return Learning(**{key: row[key] for key in row.keys()})


class _Queries:
    """The read side, shared by both handles. Subclasses provide ``_rows``."""

    __slots__ = ()

    def _rows(self, sql: str, params: list[object] | tuple[object, ...] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def search(self, query: str, tags: Iterable[str] = (), limit: int = 10) -> list[Entry]:
        """Results and facts relevant to ``query``, best first, carrying every tag in ``tags``."""
        limit = _limit(limit)
        tag_list = _tag_list(tags)
        match = match_expression(query)
        where: list[str] = []
        params: list[object] = []
        if match is None:
            sql = _ENTRY_SELECT.format(rank="NULL", source="entries e")
            order = "ORDER BY e.id DESC"
        else:
            sql = _ENTRY_SELECT.format(rank=_RANK,
                                       source="entries_fts JOIN entries e ON e.id = entries_fts.rowid")
            where.append("entries_fts MATCH ?")
            params.append(match)
            order = "ORDER BY rank, e.id DESC"
        if tag_list:
            clause, more = _tags_filter(tag_list)
            where.append(clause)
            params += more
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [_entry(r) for r in self._rows(f"{sql} {order} LIMIT ?", [*params, limit])]

    def results(self, run_id: str | None = None) -> list[Entry]:
        """Accepted results, oldest first; only those of ``run_id`` when given."""
        sql = _ENTRY_SELECT.format(rank="NULL", source="entries e") + " WHERE e.kind = 'result'"
        params: list[object] = []
        if run_id is not None:
            sql += " AND e.run_id = ?"
            params.append(_name("run_id", run_id))
        return [_entry(r) for r in self._rows(sql + " ORDER BY e.id", params)]

    def facts(self, tags: Iterable[str] = ()) -> list[Entry]:
        """Curated facts carrying every tag in ``tags``, oldest first (pending learnings are not facts)."""
        sql = _ENTRY_SELECT.format(rank="NULL", source="entries e") + " WHERE e.kind = 'fact'"
        params: list[object] = []
        tag_list = _tag_list(tags)
        if tag_list:
            clause, params = _tags_filter(tag_list)
            sql += " AND " + clause
        return [_entry(r) for r in self._rows(sql + " ORDER BY e.id", params)]

    def pending_learnings(self) -> list[Learning]:
        """Learnings waiting for curation, oldest first."""
        return self.learnings("pending")

    def learnings(self, status: str | None = None) -> list[Learning]:
        """Every learning (or those with ``status``), oldest first, with how each was curated."""
        sql, params = _LEARNING_SELECT, []
        if status is not None:
            if status not in _LEARNING_STATUSES:
                raise ValueError(f"status must be one of {', '.join(_LEARNING_STATUSES)}: {status!r}")
            sql += " WHERE l.status = ?"
            params.append(status)
        return [_learning(r) for r in self._rows(sql + " ORDER BY l.id", params)]


def _check_header(conn: sqlite3.Connection, path: Path) -> int:
    """The store's schema version (0: not created yet); refuses foreign and newer files."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    if version and app != APPLICATION_ID:
        raise MemoryStoreError(f"{path}: not a memory store (application_id {app:#x})")
    if version > SCHEMA_VERSION:
        raise MemoryStoreError(f"{path}: memory schema version {version} is newer than this runtime's "
                               f"({SCHEMA_VERSION}); upgrade the runtime")
    return version


class MemoryReader(_Queries):
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
            version = _check_header(self._conn, self.path)
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


# -- writing ----------------------------------------------------------------------------------

class MemoryWriter(_Queries):
    """The single writer, for the meta-validation step: ``open_for_meta_validation(path, token)``.

    Each write is its own transaction; ``with writer.batch():`` makes several
    one (all recorded or none). It reads like a ``MemoryReader``, its own
    uncommitted writes included.
    """

    __slots__ = ("path", "holder", "_conn", "_lock", "_depth")

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
            (kind, title, body, source, run_id, _now()))
        entry_id = int(cur.lastrowid)
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
        run_id = _name("run_id", run_id)
        subtask_id = _name("subtask_id", subtask_id)
        role = _name("role", role)
        goal = _text("goal", goal)
        summary = _text("summary", summary, empty=True)
        branch = _name("branch", branch)
        if not isinstance(commit, str) or not _COMMIT_RE.fullmatch(commit):
            raise ValueError(f"commit must be a lowercase hex commit id (7 to 64 digits): {commit!r}")
        tag_tuple = _tags_to_write(tags)
        with self._transaction() as conn:
            row = conn.execute("SELECT entry_id FROM results WHERE run_id = ? AND subtask_id = ?",
                               (run_id, subtask_id)).fetchone()
            if row is not None:
                old = _entry(conn.execute(
                    _ENTRY_SELECT.format(rank="NULL", source="entries e") + " WHERE e.id = ?",
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
        run_id = _name("run_id", run_id)
        text = _text("text", text)
        source = _name("source", source)
        with self._transaction() as conn:
            cur = conn.execute("INSERT INTO learnings (run_id, text, source, created_at) VALUES (?, ?, ?, ?)",
                               (run_id, text, source, _now()))
            return int(cur.lastrowid)

    def add_fact(self, text: str, tags: Iterable[str], source: str, run_id: str | None = None) -> int:
        """Add a fact directly (a user's or an operator's statement); ``source`` is its provenance."""
        text = _text("text", text)
        tag_tuple = _tags_to_write(tags)
        source = _name("source", source)
        if run_id is not None:
            run_id = _name("run_id", run_id)
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


def _require_fts5(conn: sqlite3.Connection, path: Path) -> None:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.memory_fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.memory_fts5_probe")
    except sqlite3.OperationalError as exc:
        raise MemoryStoreError(f"{path}: this Python's SQLite ({sqlite3.sqlite_version}) lacks FTS5, "
                               "which the memory store needs for search") from exc


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = _check_header(conn, path)
        if version == 0 and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise MemoryStoreError(f"{path}: not a memory store (it has tables of its own)")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            for statement in _statements(_MIGRATIONS[target - 1]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target}")
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def open_for_meta_validation(path: str | os.PathLike[str], token: MetaValidationToken) -> MemoryWriter:
    """The writer of the memory at ``path``, created (WAL, current schema) if missing.

    ``token`` must come from ``issue_meta_validation_token()``; anything else
    is ``MemoryAccessDenied`` and nothing is created.
    """
    if type(token) is not MetaValidationToken or token not in _ISSUED:
        raise MemoryAccessDenied("the memory writer is only for the meta-validation step: pass the token "
                                 "from issue_meta_validation_token(); read with open_memory(path)")
    where = Path(os.path.abspath(path))
    where.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(where, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Refuse someone else's database before touching it (the journal mode is persistent).
        if (_check_header(conn, where) == 0
                and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]):
            raise MemoryStoreError(f"{where}: not a memory store (it has tables of its own)")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise MemoryStoreError(f"{where}: cannot switch the memory store to WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        _require_fts5(conn, where)
        _migrate(conn, where)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise MemoryStoreError(f"{where}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return MemoryWriter._attach(conn, where, token.holder)
