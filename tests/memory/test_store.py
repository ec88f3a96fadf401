"""Shared memory: search, accepted results only, curation, the read-only handle, the writer's guard, WAL."""

from __future__ import annotations

import ast
import pickle
import sqlite3
import threading
from pathlib import Path

import pytest

from runtime.memory import schema
from runtime.memory import writer as writer_module
from runtime.memory.curate import curate
from runtime.memory.errors import CurationError, MemoryAccessDenied, MemoryStoreError
from runtime.memory.reader import MemoryReader, open_memory
from runtime.memory.records import match_expression
from runtime.memory.writer import (
    MemoryWriter,
    MetaValidationToken,
    issue_meta_validation_token,
    open_for_meta_validation,
)

REPO = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"


def _meta_token() -> MetaValidationToken:
    """A token as the meta-validation module gets it: code run under that module's name.

    That this works from a test is the guard's documented limit: it stops code
    paths, not hostile code in the same process.
    """
    namespace = {"__name__": "runtime.orchestration.meta"}
    exec("from runtime.memory.writer import issue_meta_validation_token\n"
         "def mint():\n"
         "    return issue_meta_validation_token()\n", namespace)
    return namespace["mint"]()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "memory.sqlite"


@pytest.fixture
def writer(db: Path):
    w = open_for_meta_validation(db, _meta_token())
    yield w
    w.close()


def _record(w: MemoryWriter, subtask: str, goal: str, summary: str, tags=(), run: str = "run-1") -> int:
    return w.record_result(run, subtask, "edit-local", goal, summary, f"agent/{subtask}", SHA, tags)


# -- record and search ----------------------------------------------------------------------------

def test_record_and_search_ranks_the_more_relevant_entry_first(db, writer):
    weak = _record(writer, "docs", "Update the README",
                   "Mentioned the tokenizer once in the changelog section.", ["docs"])
    strong = _record(writer, "tok", "Fix the tokenizer on unicode input",
                     "The tokenizer split multi-byte characters; the tokenizer now decodes first.",
                     ["python", "tokenizer"])
    _record(writer, "ci", "Speed up CI", "Cached the wheels.", ["ci"])
    reader = open_memory(db)
    hits = reader.search("tokenizer unicode")
    assert [h.id for h in hits] == [strong, weak]
    assert hits[0].score > hits[1].score > 0
    top = hits[0]
    assert (top.kind, top.title, top.subtask_id, top.role, top.branch, top.commit, top.run_id) == (
        "result", "Fix the tokenizer on unicode input", "tok", "edit-local", "agent/tok", SHA, "run-1")
    assert top.tags == ("python", "tokenizer")
    assert top.source == "meta-validation"
    assert top.to_dict()["tags"] == ["python", "tokenizer"]
    # stemming: "tokenizers" finds "tokenizer"; a word in no entry finds nothing
    assert strong in [h.id for h in reader.search("tokenizers")]
    assert reader.search("kubernetes") == []
    assert len(reader.search("tokenizer", limit=1)) == 1


def test_search_filters_tags_exactly_and_searches_tags(db, writer):
    a = _record(writer, "a", "Parse the config", "Config parsing is strict now.", ["python", "config"])
    b = _record(writer, "b", "Parse the config in Rust", "Config parsing in the Rust crate.", ["rust", "config"])
    fact = writer.add_fact("Config files are TOML.", ["config"], "user")
    reader = open_memory(db)
    assert {h.id for h in reader.search("config")} == {a, b, fact}
    assert [h.id for h in reader.search("config", tags=["rust"])] == [b]
    assert [h.id for h in reader.search("config", tags=["config", "python"])] == [a]
    assert reader.search("config", tags=["Python"]) == []  # exact, not case-folded
    assert reader.search("config", tags=["pyth"]) == []  # exact, not a prefix
    assert reader.search("config", tags=["python", "rust"]) == []  # every tag must match
    # a tag is searchable text too
    assert [h.id for h in reader.search("rust")] == [b]
    # a query without words lists the tagged entries, newest first
    assert [h.id for h in reader.search("", tags=["config"])] == [fact, b, a]
    assert all(h.score is None for h in reader.search("  ?!  "))


def test_query_syntax_cannot_reach_fts5(db, writer):
    _record(writer, "a", "Fix parser", "NEAR the end, a column: filter and a \"quote\".")
    reader = open_memory(db)
    for query in ['"unbalanced', "title:parser", "parser NOT", "a* OR", "NEAR(parser end)", "-parser", "(("]:
        reader.search(query)  # never an FTS5 syntax error
    assert match_expression('fix "the" parser: -now') == '"fix" OR "the" OR "parser" OR "now"'
    assert match_expression("...") is None
    with pytest.raises(TypeError):
        reader.search(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        reader.search("x", tags="python")  # one string is not a list of tags
    with pytest.raises(ValueError):
        reader.search("x", limit=0)


def test_results_only_after_recording(db, writer):
    reader = open_memory(db)
    assert reader.results() == []  # the store exists, nothing accepted yet
    first = _record(writer, "a", "Goal A", "Done A.", run="run-1")
    second = _record(writer, "b", "Goal B", "Done B.", run="run-2")
    assert [e.id for e in reader.results()] == [first, second]
    assert [e.id for e in reader.results("run-2")] == [second]
    assert reader.results("run-3") == []
    assert reader.facts() == []  # results are not facts


def test_recording_a_subtask_twice(writer):
    first = _record(writer, "a", "Goal A", "Done A.", ["x"])
    assert _record(writer, "a", "Goal A", "Done A.", ["x"]) == first  # a resumed run repeating itself
    with pytest.raises(MemoryStoreError, match="already recorded"):
        _record(writer, "a", "Goal A", "Something else.", ["x"])
    assert len(writer.results()) == 1


def test_bad_values_are_refused_before_anything_is_written(writer):
    with pytest.raises(ValueError, match="commit"):
        writer.record_result("run-1", "a", "edit-local", "Goal", "Sum", "agent/a", "HEAD", [])
    with pytest.raises(ValueError, match="tag"):
        writer.record_result("run-1", "a", "edit-local", "Goal", "Sum", "agent/a", SHA, ["two words"])
    with pytest.raises(ValueError):
        writer.record_result("run-1", "", "edit-local", "Goal", "Sum", "agent/a", SHA, [])
    with pytest.raises(ValueError):
        writer.add_pending_learning("run-1", "   ")
    with pytest.raises(TypeError):
        writer.add_fact("A fact.", "config", "user")  # type: ignore[arg-type]
    assert writer.results() == [] and writer.facts() == [] and writer.learnings() == []


def test_a_batch_is_all_or_nothing(db, writer):
    with pytest.raises(RuntimeError):
        with writer.batch():
            _record(writer, "a", "Goal A", "Done A.")
            writer.add_pending_learning("run-1", "Uses pytest.")
            raise RuntimeError("the merge failed after all")
    reader = open_memory(db)
    assert reader.results() == [] and reader.pending_learnings() == []
    with writer.batch():
        _record(writer, "a", "Goal A", "Done A.")
        with pytest.raises(MemoryStoreError):
            _record(writer, "a", "Goal A", "Conflicting.")  # undoes only its own part
        writer.add_pending_learning("run-1", "Uses pytest.")
    assert len(reader.results()) == 1 and len(reader.pending_learnings()) == 1


# -- a reader never creates the store ------------------------------------------------------------

def test_reader_on_a_missing_file_is_empty_and_creates_nothing(tmp_path):
    db = tmp_path / "state" / "memory.sqlite"
    reader = open_memory(db)
    assert reader.search("anything") == []
    assert reader.search("", tags=["x"]) == []
    assert reader.results() == [] and reader.results("run-1") == []
    assert reader.facts() == [] and reader.pending_learnings() == []
    assert not db.parent.exists()  # neither the file, nor -wal/-shm, nor the folder
    # once the writer creates it, the same reader sees it
    with open_for_meta_validation(db, _meta_token()) as w:
        entry = _record(w, "a", "Goal", "Summary.")
    assert [e.id for e in reader.results()] == [entry]


def test_a_rejected_run_writes_nothing(tmp_path):
    """The orchestrator never asks for the writer when a run is rejected: the store stays absent."""
    db = tmp_path / "memory.sqlite"
    open_memory(db).results()
    open_memory(db).search("goal")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- learnings and curation ------------------------------------------------------------------------

def test_pending_learnings_are_not_facts_until_promoted(db, writer):
    writer.add_fact("The project uses Python 3.11.", ["python"], "user")
    lid = writer.add_pending_learning("run-7", "Project framework is Flask, not FastAPI")
    reader = open_memory(db)
    assert [f.body for f in reader.facts()] == ["The project uses Python 3.11."]
    assert reader.search("flask") == []
    [pending] = reader.pending_learnings()
    assert (pending.id, pending.run_id, pending.source, pending.status, pending.fact_id) == (
        lid, "run-7", "reviewer", "pending", None)

    [done] = curate(writer, {lid: "promote"}, tags={lid: ["framework"]})
    assert done.verdict == "promote" and done.fact_id is not None
    facts = reader.facts()
    assert [f.body for f in facts] == ["The project uses Python 3.11.", "Project framework is Flask, not FastAPI"]
    fact = facts[1]
    assert (fact.id, fact.learning_id, fact.run_id, fact.source, fact.tags) == (
        done.fact_id, lid, "run-7", "curator", ("framework",))
    assert [f.id for f in reader.facts(tags=["framework"])] == [fact.id]
    assert [h.id for h in reader.search("flask")] == [fact.id]
    assert reader.pending_learnings() == []
    [learning] = reader.learnings("promoted")
    assert (learning.id, learning.fact_id, learning.curated_by) == (lid, fact.id, "curator")
    assert learning.curated_at is not None


def test_promote_with_the_curators_wording(db, writer):
    lid = writer.add_pending_learning("run-1", "seems like they use pytest maybe")
    [done] = curate(writer, {lid: "promote"}, texts={lid: "Project uses pytest for testing."})
    [fact] = open_memory(db).facts()
    assert (fact.id, fact.body, fact.learning_id) == (done.fact_id, "Project uses pytest for testing.", lid)
    assert open_memory(db).learnings()[0].text == "seems like they use pytest maybe"  # origin kept


def test_discard(db, writer):
    keep = writer.add_pending_learning("run-1", "Uses Flask 2.3.")
    drop = writer.add_pending_learning("run-1", "The build was slow today.")
    done = curate(writer, {drop: "discard"}, reasons={drop: "transient"})
    assert [(d.learning_id, d.verdict, d.fact_id) for d in done] == [(drop, "discard", None)]
    reader = open_memory(db)
    assert reader.facts() == []
    assert [p.id for p in reader.pending_learnings()] == [keep]
    [gone] = reader.learnings("discarded")
    assert (gone.id, gone.reason, gone.fact_id) == (drop, "transient", None)


def test_a_learning_is_curated_once(db, writer):
    a = writer.add_pending_learning("run-1", "Uses Flask.")
    b = writer.add_pending_learning("run-1", "Uses Postgres.")
    curate(writer, {a: "promote"})
    for second in ("promote", "discard"):
        with pytest.raises(CurationError, match=f"learning {a} was already curated"):
            curate(writer, {a: second, b: "promote"})
    # the refused call changed nothing, b included
    assert [p.id for p in writer.pending_learnings()] == [b]
    assert len(writer.facts()) == 1
    with pytest.raises(CurationError, match="no such learning"):
        curate(writer, {999: "discard"})
    with pytest.raises(ValueError, match="verdict"):
        curate(writer, {b: "ask"})
    with pytest.raises(ValueError):
        curate(writer, {b: "discard"}, texts={b: "not a promotion"})
    # the store itself refuses a second curation, whatever the code above it does
    raw = writer._conn
    with pytest.raises(sqlite3.IntegrityError, match="already curated"):
        raw.execute("UPDATE learnings SET status = 'discarded' WHERE id = ?", (a,))
    with pytest.raises(sqlite3.IntegrityError, match="promoted learning needs its fact"):
        raw.execute("UPDATE learnings SET status = 'promoted', curated_at = 'now' WHERE id = ?", (b,))
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM entries")


def test_curate_needs_the_writer(db, writer):
    lid = writer.add_pending_learning("run-1", "Uses Flask.")
    with pytest.raises(TypeError):
        curate(open_memory(db), {lid: "promote"})  # type: ignore[arg-type]


# -- the read-only handle --------------------------------------------------------------------------

WRITE_METHODS = {"record_result", "add_pending_learning", "add_fact", "batch", "curate"}


def test_the_reader_has_no_write_method():
    public = {name for name in dir(MemoryReader) if not name.startswith("_")}
    assert public == {"path", "search", "results", "facts", "pending_learnings", "learnings", "close"}
    assert not public & WRITE_METHODS
    assert not issubclass(MemoryReader, MemoryWriter)
    assert WRITE_METHODS - {"curate"} <= set(dir(MemoryWriter))


def test_the_readers_connection_is_read_only(db, writer):
    _record(writer, "a", "Goal", "Summary.")
    reader = open_memory(db)
    reader.results()
    conn = reader._conn
    assert conn is not None
    for statement in ("INSERT INTO learnings (run_id, text, source, created_at) VALUES ('r', 't', 's', 'n')",
                      "PRAGMA user_version = 99",
                      "CREATE TABLE sneaky (x)"):
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute(statement)
    # not merely query_only: the file itself is opened with mode=ro
    conn.execute("PRAGMA query_only = OFF")
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("INSERT INTO learnings (run_id, text, source, created_at) VALUES ('r', 't', 's', 'n')")
    assert writer.learnings() == [] and len(reader.results()) == 1


# -- the writer's guard ------------------------------------------------------------------------------

def test_the_writer_cannot_be_had_without_the_token(db):
    with pytest.raises(MemoryAccessDenied):
        open_for_meta_validation(db, None)  # type: ignore[arg-type]
    with pytest.raises(MemoryAccessDenied):
        issue_meta_validation_token()  # this test module is not the meta-validation step
    with pytest.raises(MemoryAccessDenied):
        MetaValidationToken(object(), "runtime.orchestration.meta")
    forged = object.__new__(MetaValidationToken)
    forged.holder = "runtime.orchestration.meta"
    with pytest.raises(MemoryAccessDenied):
        open_for_meta_validation(db, forged)

    class Lookalike(MetaValidationToken):
        def __init__(self) -> None:
            self.holder = "runtime.orchestration.meta"

    with pytest.raises(MemoryAccessDenied):
        open_for_meta_validation(db, Lookalike())
    with pytest.raises(MemoryAccessDenied):
        MemoryWriter(db)
    with pytest.raises(TypeError):
        pickle.dumps(_meta_token())  # a token does not leave its process
    assert not db.parent.exists()  # nothing was created by any refused attempt

    with open_for_meta_validation(db, _meta_token()) as w:
        assert w.holder == "runtime.orchestration.meta"


def test_only_the_meta_validation_module_asks_for_the_writer():
    """Code structure: no module of the runtime but the memory package and the allowed ones names them."""
    guarded = {"issue_meta_validation_token", "open_for_meta_validation", "MetaValidationToken", "_MINT"}
    allowed = {REPO / (m.replace(".", "/") + ".py") for m in writer_module.META_VALIDATION_MODULES}
    offenders = []
    for path in sorted((REPO / "runtime").rglob("*.py")):
        if path.parent == REPO / "runtime" / "memory" or path in allowed:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                    else node.name if isinstance(node, ast.alias) else None)
            if name is not None and name.rsplit(".", 1)[-1] in guarded:
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    assert offenders == []


# -- the file: schema, WAL, concurrency ------------------------------------------------------------

def test_wal_mode_schema_version_and_pragmas(db, writer):
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert raw.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    assert raw.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID
    raw.close()
    conn = writer._conn
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == schema.BUSY_TIMEOUT_MS
    # reopening an existing store neither recreates nor fails
    _record(writer, "a", "Goal", "Summary.")
    with open_for_meta_validation(db, _meta_token()) as again:
        assert len(again.results()) == 1


def test_a_newer_or_foreign_file_is_refused(tmp_path, db, writer):
    writer.close()
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA user_version = 99")
    raw.commit()
    raw.close()
    with pytest.raises(MemoryStoreError, match="newer"):
        open_memory(db).results()
    with pytest.raises(MemoryStoreError, match="newer"):
        open_for_meta_validation(db, _meta_token())

    foreign = tmp_path / "state.sqlite"
    raw = sqlite3.connect(foreign)
    raw.execute("CREATE TABLE runs (run_id TEXT)")
    raw.commit()
    raw.close()
    with pytest.raises(MemoryStoreError, match="not a memory store"):
        open_for_meta_validation(foreign, _meta_token())
    raw = sqlite3.connect(foreign)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # left untouched
    raw.close()

    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all, just some bytes" * 100)
    with pytest.raises(MemoryStoreError):
        open_memory(junk).results()
    with pytest.raises(MemoryStoreError):
        open_for_meta_validation(junk, _meta_token())


def test_a_concurrent_reader_sees_the_last_committed_state(db, writer):
    committed = _record(writer, "a", "First goal", "Committed before.")
    reader = open_memory(db)
    other = open_memory(db)
    with writer.batch():
        pending = _record(writer, "b", "Second goal", "Inside an open write transaction.")
        writer.add_pending_learning("run-1", "Not yet visible.")
        assert [e.id for e in writer.results()] == [committed, pending]  # the writer sees its own write
        # two readers, during the write: no blocking, the last committed state only
        assert [e.id for e in reader.results()] == [committed]
        assert [e.id for e in other.search("goal")] == [committed]
        assert reader.pending_learnings() == []
        seen: list[list[int]] = []
        thread = threading.Thread(target=lambda: seen.append([e.id for e in reader.results()]))
        thread.start()
        thread.join(timeout=10)
        assert seen == [[committed]]
        # a second writer waits for the write lock instead of interleaving
        second = sqlite3.connect(db, timeout=0.1, isolation_level=None)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            second.execute("BEGIN IMMEDIATE")
        second.close()
    assert [e.id for e in reader.results()] == [committed, pending]
    assert {h.id for h in other.search("goal")} == {committed, pending}
    assert len(reader.pending_learnings()) == 1


def test_closed_handles_refuse(db, writer):
    reader = open_memory(db)
    reader.close()
    with pytest.raises(MemoryStoreError, match="closed"):
        reader.results()
    writer.close()
    with pytest.raises(MemoryStoreError, match="closed"):
        writer.add_fact("A fact.", [], "user")
