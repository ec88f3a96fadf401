"""Meta-validation's writes (runtime.orchestration.meta): an accepted run's results and learnings, and curation."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from runtime.memory.errors import CurationError
from runtime.memory.reader import open_memory
from runtime.memory.records import MAX_TEXT
from runtime.orchestration.judge import Judgement
from runtime.orchestration.meta import curate_learnings, memory_path, remember

COMMIT = "a" * 40


def sub(sid: str, goal: str | None = None, role: str = "edit-local"):
    task = SimpleNamespace(goal=goal or f"Do {sid}.", role=SimpleNamespace(name=role))
    return SimpleNamespace(id=sid, task=task)


def result(status: str = "ok", report: str | None = "Summary: done.", commit: str = COMMIT, sid: str = "x"):
    return SimpleNamespace(outcome=SimpleNamespace(status=status), report=report, branch=f"agent/{sid}", commit=commit)


def plan_run(tmp_path: Path, rounds, results, run_id: str = "run-1"):
    return SimpleNamespace(state_dir=tmp_path, run_id=run_id, rounds=rounds, results=results)


def stored(tmp_path: Path):
    reader = open_memory(memory_path(tmp_path))
    try:
        return reader.results(), reader.learnings()
    finally:
        reader.close()


def test_the_memory_lives_in_the_state_folder(tmp_path):
    assert memory_path(tmp_path) == tmp_path / "memory.sqlite"


def test_only_ok_subtasks_are_recorded_with_their_branch_commit_and_role(tmp_path):
    rounds = [[sub("fix", "Fix mean."), sub("docs", role="docs")], [sub("broken"), sub("never-ran")]]
    results = {"fix": result(report="  Summary: fixed mean.\n", sid="fix"), "docs": result(sid="docs"),
               "broken": result("rejected", sid="broken")}
    remember(plan_run(tmp_path, rounds, results), Judgement("ok", "fine"))
    entries, learnings = stored(tmp_path)
    assert [(e.subtask_id, e.role, e.title, e.body, e.branch, e.commit, e.tags, e.run_id) for e in entries] == [
        ("fix", "edit-local", "Fix mean.", "Summary: fixed mean.", "agent/fix", COMMIT, ("edit-local",), "run-1"),
        ("docs", "docs", "Do docs.", "Summary: done.", "agent/docs", COMMIT, ("docs",), "run-1"),
    ]
    assert learnings == []


@pytest.mark.parametrize("report", [None, "", "  \n "])
def test_a_result_without_a_report_is_summarised_by_its_goal(tmp_path, report):
    remember(plan_run(tmp_path, [[sub("fix", "Fix mean.")]], {"fix": result(report=report)}), Judgement("ok", ""))
    entries, _ = stored(tmp_path)
    assert [e.body for e in entries] == ["Fix mean."]


def test_a_report_is_stored_escaped_with_its_lines(tmp_path):
    report = "Summary: ok\x00 \x1b[31mred\x1b[0m\r\nFiles changed: a.py\n"
    remember(plan_run(tmp_path, [[sub("fix")]], {"fix": result(report=report)}), Judgement("ok", ""))
    entries, _ = stored(tmp_path)
    assert entries[0].body == "Summary: ok\\x00 \\x1b[31mred\\x1b[0m\nFiles changed: a.py"


def test_a_long_report_is_cut_to_4000_characters(tmp_path):
    remember(plan_run(tmp_path, [[sub("fix")]], {"fix": result(report="y" * 9000)}), Judgement("ok", ""))
    entries, _ = stored(tmp_path)
    assert entries[0].body == "y" * 4000


def test_the_reviewers_learnings_wait_as_pending_and_blank_ones_are_dropped(tmp_path):
    learn = ["Tests run with `pytest -q tests`.", "   ", "", "a NUL \x00 here"]
    remember(plan_run(tmp_path, [[sub("fix")]], {"fix": result()}), Judgement("ok", "", learn=learn))
    _, learnings = stored(tmp_path)
    assert [(le.text, le.source, le.status, le.run_id) for le in learnings] == [
        ("Tests run with `pytest -q tests`.", "reviewer", "pending", "run-1"),
        ("a NUL \\x00 here", "reviewer", "pending", "run-1"),
    ]
    reader = open_memory(memory_path(tmp_path))
    try:
        assert reader.facts() == []  # a learning is no fact until curated
    finally:
        reader.close()


def test_a_learning_is_bounded_to_what_the_store_holds(tmp_path):
    remember(plan_run(tmp_path, [], {}), Judgement("ok", "", learn=["z" * (MAX_TEXT + 10)]))
    _, learnings = stored(tmp_path)
    assert [len(le.text) for le in learnings] == [MAX_TEXT]


def test_one_bad_result_writes_nothing_of_the_run(tmp_path):
    rounds = [[sub("good"), sub("bad")]]
    results = {"good": result(), "bad": result(commit="not a commit")}
    with pytest.raises(ValueError, match="commit"):
        remember(plan_run(tmp_path, rounds, results), Judgement("ok", "", learn=["kept?"]))
    entries, learnings = stored(tmp_path)
    assert (entries, learnings) == ([], [])


def test_remembering_the_same_run_again_records_nothing_twice(tmp_path):
    run = plan_run(tmp_path, [[sub("fix")]], {"fix": result()})
    remember(run, Judgement("ok", ""))
    remember(run, Judgement("ok", ""))
    entries, _ = stored(tmp_path)
    assert len(entries) == 1


def test_curation_promotes_and_discards_pending_learnings(tmp_path):
    remember(plan_run(tmp_path, [], {}), Judgement("ok", "", learn=["keep me", "drop me"]))
    _, learnings = stored(tmp_path)
    keep, drop = (le.id for le in learnings)
    done = curate_learnings(tmp_path, {keep: "promote", drop: "discard"}, curator="alice")
    assert sorted((c.learning_id, c.verdict, c.fact_id is not None) for c in done) == [
        (keep, "promote", True), (drop, "discard", False)]
    reader = open_memory(memory_path(tmp_path))
    try:
        facts = reader.facts()
        assert [(f.body, f.source, f.learning_id, f.run_id) for f in facts] == [("keep me", "alice", keep, "run-1")]
        assert reader.pending_learnings() == []
        assert {le.id: (le.status, le.curated_by) for le in reader.learnings()} == {
            keep: ("promoted", "alice"), drop: ("discarded", "alice")}
    finally:
        reader.close()


def test_a_learning_is_curated_once(tmp_path):
    remember(plan_run(tmp_path, [], {}), Judgement("ok", "", learn=["once"]))
    (learning,) = stored(tmp_path)[1]
    curate_learnings(tmp_path, {learning.id: "promote"}, curator="alice")
    with pytest.raises(CurationError, match=str(learning.id)):
        curate_learnings(tmp_path, {learning.id: "discard"}, curator="bob")
