"""The read side both handles share: search, results, facts and learnings.

**Search.** ``search(query, tags, limit)`` turns the query into its words
(``\\w+``), each quoted, joined with OR, and ranks with ``bm25`` over title
(weight 4), body (1) and tags (2): an entry matching more, and rarer, words
ranks first; ties go to the newer entry. ``tags`` filters exactly: an entry
must carry every tag given. A query without words lists the entries with
those tags, newest first. FTS5 is required (it is compiled into the SQLite
of CPython's official builds and of this machine); without it the writer
refuses to create the store with a clear error, there is no LIKE fallback.
"""

from __future__ import annotations

import sqlite3
import typing
from collections.abc import Iterable

from runtime.memory.records import (
    Entry,
    Learning,
    LearningStatus,
    match_expression,
    tag_list,
    valid_limit,
    valid_name,
)

_RANK = "bm25(entries_fts, 4.0, 1.0, 2.0)"  # title, body, tags: lower is better

ENTRY_SELECT = """
SELECT e.id, e.kind, e.title, e.body, e.source, e.run_id, e.created_at,
       r.subtask_id, r.role, r.branch, r.commit_sha, f.learning_id,
       (SELECT group_concat(t.tag, char(10)) FROM entry_tags t WHERE t.entry_id = e.id) AS tags,
       {rank} AS rank
FROM {source}
LEFT JOIN results r ON r.entry_id = e.id
LEFT JOIN facts f ON f.entry_id = e.id
"""

LEARNING_SELECT = """
SELECT l.id, l.run_id, l.text, l.source, l.status, l.created_at, l.curated_at, l.curated_by,
       l.reason, f.entry_id AS fact_id
FROM learnings l LEFT JOIN facts f ON f.learning_id = l.id
"""

_LEARNING_STATUSES = typing.get_args(LearningStatus)


def _tags_filter(tags: list[str]) -> tuple[str, list[object]]:
    marks = ", ".join("?" * len(tags))
    return (f"e.id IN (SELECT entry_id FROM entry_tags WHERE tag IN ({marks}) "
            f"GROUP BY entry_id HAVING count(*) = ?)", [*tags, len(tags)])


def entry_from_row(row: sqlite3.Row) -> Entry:
    tags = tuple(sorted(row["tags"].split("\n"))) if row["tags"] else ()
    return Entry(
        id=row["id"], kind=row["kind"], title=row["title"], body=row["body"], tags=tags,
        source=row["source"], run_id=row["run_id"], created_at=row["created_at"],
        subtask_id=row["subtask_id"], role=row["role"], branch=row["branch"],
        commit=row["commit_sha"], learning_id=row["learning_id"],
        score=None if row["rank"] is None else -float(row["rank"]))


def learning_from_row(row: sqlite3.Row) -> Learning:
    return Learning(**{key: row[key] for key in row.keys()})


class Queries:
    """The read side, shared by both handles. Subclasses provide ``_rows``."""

    __slots__ = ()

    def _rows(self, sql: str, params: list[object] | tuple[object, ...] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def search(self, query: str, tags: Iterable[str] = (), limit: int = 10) -> list[Entry]:
        """Results and facts relevant to ``query``, best first, carrying every tag in ``tags``."""
        limit = valid_limit(limit)
        wanted = tag_list(tags)
        match = match_expression(query)
        where: list[str] = []
        params: list[object] = []
        if match is None:
            sql = ENTRY_SELECT.format(rank="NULL", source="entries e")
            order = "ORDER BY e.id DESC"
        else:
            sql = ENTRY_SELECT.format(rank=_RANK,
                                       source="entries_fts JOIN entries e ON e.id = entries_fts.rowid")
            where.append("entries_fts MATCH ?")
            params.append(match)
            order = "ORDER BY rank, e.id DESC"
        if wanted:
            clause, more = _tags_filter(wanted)
            where.append(clause)
            params += more
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [entry_from_row(r) for r in self._rows(f"{sql} {order} LIMIT ?", [*params, limit])]

    def results(self, run_id: str | None = None) -> list[Entry]:
        """Accepted results, oldest first; only those of ``run_id`` when given."""
        sql = ENTRY_SELECT.format(rank="NULL", source="entries e") + " WHERE e.kind = 'result'"
        params: list[object] = []
        if run_id is not None:
            sql += " AND e.run_id = ?"
            params.append(valid_name("run_id", run_id))
        return [entry_from_row(r) for r in self._rows(sql + " ORDER BY e.id", params)]

    def facts(self, tags: Iterable[str] = ()) -> list[Entry]:
        """Curated facts carrying every tag in ``tags``, oldest first (pending learnings are not facts)."""
        sql = ENTRY_SELECT.format(rank="NULL", source="entries e") + " WHERE e.kind = 'fact'"
        params: list[object] = []
        wanted = tag_list(tags)
        if wanted:
            clause, params = _tags_filter(wanted)
            sql += " AND " + clause
        return [entry_from_row(r) for r in self._rows(sql + " ORDER BY e.id", params)]

    def pending_learnings(self) -> list[Learning]:
        """Learnings waiting for curation, oldest first."""
        return self.learnings("pending")

    def learnings(self, status: str | None = None) -> list[Learning]:
        """Every learning (or those with ``status``), oldest first, with how each was curated."""
        sql = LEARNING_SELECT
        params: list[object] = []
        if status is not None:
            if status not in _LEARNING_STATUSES:
                raise ValueError(f"status must be one of {', '.join(_LEARNING_STATUSES)}: {status!r}")
            sql += " WHERE l.status = ?"
            params.append(status)
        return [learning_from_row(r) for r in self._rows(sql + " ORDER BY l.id", params)]
