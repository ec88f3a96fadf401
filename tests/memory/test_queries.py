"""The read side over a store filled row by row: search, results, facts, learnings."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from runtime.memory.queries import Queries, entry_from_row
from runtime.memory.schema import connect_writer

SHA = "0123456789abcdef0123456789abcdef01234567"


class Store(Queries):
    """Queries over one connection; rows are inserted by the test itself."""

    __slots__ = ("conn", "sql")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.sql: list[str] = []

    def _rows(self, sql, params=()):
        self.sql.append(sql)
        return self.conn.execute(sql, params).fetchall()

    def entry(self, kind: str, title: str, body: str, tags=(), run_id: str | None = "run-1",
              created_at: str = "2024-01-01T00:00:00Z") -> int:
        cur = self.conn.execute(
            "INSERT INTO entries (kind, title, body, source, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (kind, title, body, "test", run_id, created_at))
        entry_id = cur.lastrowid
        self.conn.executemany("INSERT INTO entry_tags (entry_id, tag) VALUES (?, ?)", [(entry_id, t) for t in tags])
        self.conn.execute("INSERT INTO entries_fts (rowid, title, body, tags) VALUES (?, ?, ?, ?)",
                          (entry_id, title, body, " ".join(tags)))
        return entry_id

    def result(self, goal: str, summary: str, tags=(), run_id: str = "run-1", subtask: str = "s1") -> int:
        entry_id = self.entry("result", goal, summary, tags, run_id)
        self.conn.execute("INSERT INTO results (entry_id, run_id, subtask_id, role, branch, commit_sha) "
                          "VALUES (?, ?, ?, ?, ?, ?)", (entry_id, run_id, subtask, "edit-local", f"b/{subtask}", SHA))
        return entry_id

    def fact(self, text: str, tags=(), learning_id: int | None = None) -> int:
        entry_id = self.entry("fact", "", text, tags, None)
        self.conn.execute("INSERT INTO facts (entry_id, learning_id) VALUES (?, ?)", (entry_id, learning_id))
        return entry_id

    def learning(self, text: str, status: str = "pending", run_id: str = "run-1") -> int:
        curated = None if status == "pending" else "2024-02-01T00:00:00Z"
        cur = self.conn.execute(
            "INSERT INTO learnings (run_id, text, source, status, created_at, curated_at, curated_by, reason) "
            "VALUES (?, ?, 'reviewer', 'pending', '2024-01-01T00:00:00Z', NULL, NULL, NULL)", (run_id, text))
        learning_id = cur.lastrowid
        if status != "pending":
            if status == "promoted":
                self.fact(text, learning_id=learning_id)
            self.conn.execute("UPDATE learnings SET status = ?, curated_at = ?, curated_by = 'curator', reason = 'ok' "
                              "WHERE id = ?", (status, curated, learning_id))
        return learning_id


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory) -> Path:
    """A store with the real schema, made once; each test writes to its own copy."""
    path = tmp_path_factory.mktemp("memory") / "memory.sqlite"
    connect_writer(path).close()
    return path


@pytest.fixture
def store(tmp_path, empty_store):
    path = tmp_path / "memory.sqlite"
    shutil.copyfile(empty_store, path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA synchronous = OFF")  # a throwaway store: no fsync per row
    yield Store(conn)
    conn.close()


def test_the_base_class_has_no_rows():
    with pytest.raises(NotImplementedError):
        Queries()._rows("SELECT 1")


# ---------------------------------------------------------------- search


def test_search_ranks_more_matching_words_first_and_scores_higher(store):
    weak = store.result("Fix the parser", "one word")
    strong = store.result("Fix the tokenizer", "unicode tokenizer handling", subtask="s2")
    hits = store.search("tokenizer unicode")
    assert [h.id for h in hits] == [strong]
    assert hits[0].score is not None and hits[0].score > 0
    both = store.search("fix tokenizer")
    assert [h.id for h in both] == [strong, weak]
    assert both[0].score > both[1].score


def test_search_weighs_a_title_above_the_body(store):
    in_body = store.fact("all about caching")
    in_title = store.result("Caching layer", "something else entirely")
    assert [h.id for h in store.search("caching")] == [in_title, in_body]


def test_search_ties_go_to_the_newer_entry(store):
    older = store.fact("alpha")
    newer = store.fact("alpha")
    assert [h.id for h in store.search("alpha")] == [newer, older]


def test_search_with_no_words_lists_newest_first_without_scores(store):
    first = store.fact("one")
    second = store.result("two", "")
    hits = store.search(" ?! ")
    assert [h.id for h in hits] == [second, first]
    assert all(h.score is None for h in hits)


def test_search_filters_on_every_tag_given(store):
    a = store.fact("config", tags=["python", "config"])
    b = store.fact("config", tags=["rust", "config"])
    assert [h.id for h in store.search("config", tags=["python"])] == [a]
    assert {h.id for h in store.search("config", tags=["config"])} == {a, b}
    assert store.search("config", tags=["python", "rust"]) == []
    assert [h.id for h in store.search("", tags=["rust", "rust"])] == [b]  # a repeated tag counts once


def test_search_respects_the_limit(store):
    for n in range(5):
        store.fact(f"entry {n}")
    assert len(store.search("entry", limit=3)) == 3
    assert len(store.search("", limit=2)) == 2


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 2.0, "3"])
def test_search_refuses_a_bad_limit_before_querying(store, limit):
    with pytest.raises(ValueError, match="limit must be an integer from 1 to 1000"):
        store.search("x", limit=limit)
    assert store.sql == []


@pytest.mark.parametrize("tags,message", [("python", "not one string"), ([1], "a tag must be a string")])
def test_search_refuses_bad_tags_before_querying(store, tags, message):
    with pytest.raises(TypeError, match=message):
        store.search("x", tags=tags)
    assert store.sql == []


@pytest.mark.parametrize("query", ['"', "a OR", "NEAR(a b)", "title:x", "-x", "x*", "(", "AND"])
def test_search_never_passes_fts5_syntax_through(store, query):
    store.fact("title near and or x a b")
    # no sqlite3.OperationalError: the query's words are searched as words (none: everything is listed)
    assert [h.body for h in store.search(query)] == ["title near and or x a b"]


# ---------------------------------------------------------------- results and facts


def test_results_are_oldest_first_with_their_subtask(store):
    first = store.result("goal one", "summary one", tags=["b", "a"], run_id="run-1", subtask="s1")
    store.fact("a fact")
    second = store.result("goal two", "", run_id="run-2", subtask="s2")
    results = store.results()
    assert [r.id for r in results] == [first, second]
    r = results[0]
    assert (r.kind, r.title, r.body, r.tags, r.run_id) == ("result", "goal one", "summary one", ("a", "b"), "run-1")
    assert (r.subtask_id, r.role, r.branch, r.commit, r.learning_id, r.score) == ("s1", "edit-local", "b/s1", SHA, None, None)


def test_results_of_one_run(store):
    store.result("g", "", run_id="run-1")
    mine = store.result("g", "", run_id="run-2")
    assert [r.id for r in store.results("run-2")] == [mine]
    assert store.results("run-3") == []


@pytest.mark.parametrize("run_id,error", [("", ValueError), (" run ", ValueError), ("a\nb", ValueError), (3, TypeError)])
def test_results_refuse_a_bad_run_id(store, run_id, error):
    with pytest.raises(error, match="run_id must be"):
        store.results(run_id)


def test_facts_are_oldest_first_and_filtered_by_every_tag(store):
    a = store.fact("uses pytest", tags=["python", "testing"])
    b = store.fact("uses cargo", tags=["rust"])
    store.result("not a fact", "")
    assert [f.id for f in store.facts()] == [a, b]
    assert [f.id for f in store.facts(["testing", "python"])] == [a]
    assert store.facts(["python", "rust"]) == []
    fact = store.facts()[0]
    assert (fact.kind, fact.title, fact.body, fact.subtask_id) == ("fact", "", "uses pytest", None)


def test_a_promoted_fact_names_its_learning(store):
    learning = store.learning("the project uses tox", status="promoted")
    [fact] = store.facts()
    assert fact.learning_id == learning


# ---------------------------------------------------------------- learnings


def test_learnings_by_status_oldest_first(store):
    p1 = store.learning("one")
    promoted = store.learning("two", status="promoted")
    discarded = store.learning("three", status="discarded")
    p2 = store.learning("four")
    assert [x.id for x in store.learnings()] == [p1, promoted, discarded, p2]
    assert [x.id for x in store.pending_learnings()] == [p1, p2]
    assert [x.id for x in store.learnings("discarded")] == [discarded]
    [done] = store.learnings("promoted")
    assert done.id == promoted and done.status == "promoted" and done.curated_by == "curator" and done.reason == "ok"
    assert done.fact_id == store.facts()[0].id
    assert store.pending_learnings()[0].fact_id is None


@pytest.mark.parametrize("status", ["Pending", "approved", ""])
def test_learnings_refuse_an_unknown_status_naming_it(store, status):
    with pytest.raises(ValueError) as exc:
        store.learnings(status)
    assert repr(status) in str(exc.value) and "pending, promoted, discarded" in str(exc.value)


# ---------------------------------------------------------------- rows


def test_entry_from_row_splits_and_sorts_tags_and_negates_the_rank():
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    row = conn.execute("SELECT 1 AS id, 'fact' AS kind, '' AS title, 'b' AS body, 's' AS source, NULL AS run_id, "
                       "'t' AS created_at, NULL AS subtask_id, NULL AS role, NULL AS branch, NULL AS commit_sha, "
                       "NULL AS learning_id, 'z' || char(10) || 'a' AS tags, -2.5 AS rank").fetchone()
    entry = entry_from_row(row)
    assert entry.tags == ("a", "z") and entry.score == 2.5
