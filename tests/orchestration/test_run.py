"""End-to-end tests of `runtime run PLAN`: the real CLI, real git, real bubblewrap, scripted agents.

Each test asserts typed outcomes (exit codes, subtask labels), the git history
(trunk, the run's integration branch, agent branches), the orchestrator's
state (`orchestrator.sqlite`), the memory store and the JSON event stream.
"""

from __future__ import annotations

import json
import re
import subprocess

from tests.conftest import RUNTIME
from tests.orchestration.conftest import (
    BASE_BRANCH,
    BUGGY,
    DOC_TEXT,
    EXAMPLE_PLAN,
    FIX_REPORT,
    FIX_TURN,
    FIXED,
    Orchestra,
    report_section,
)

DOC_TURN = [{"name": "Write", "input": {"file_path": "docs/calc.md", "content": DOC_TEXT}}]
ADD_TESTS = "pytest -q tests -k add"  # passes with the buggy mean too
DOC_REPORT = "Summary: documented calc.mean in docs/calc.md.\nFiles changed: docs/calc.md\n"


def planner_plan(*subtasks: dict, goal: str = "Fix calc.mean and document it.") -> str:
    """A scripted planner's reply: a plan in the planner's strict JSON shape (every key present)."""
    return json.dumps({"kind": "plan", "questions": None, "plan": {
        "plan": {"goal": goal, "success-criteria": ["docs/calc.md exists"], "checks": None},
        "subtask": list(subtasks),
    }})


def planned(sid: str, sequence: int = 1, whitelist: list[str] | None = None, test_command: str | None = "pytest -q tests -k add",
            check_commands: list[str] | None = None, role: str = "edit-local") -> dict:
    return {
        "id": sid, "sequence": sequence, "uses": [],
        "task": {"role": role, "goal": f"Subtask {sid}."},
        "scope": {"files-whitelist": whitelist or ["docs/**"], "files-denylist": None},
        "verification": {"test-command": test_command, "test-count-min": None, "check-commands": check_commands},
        "output": {"report-fields-required": None},
        "body": {"text": f"Do subtask {sid}."},
    }


def assert_trunk_untouched(o: Orchestra) -> None:
    assert o.sha(BASE_BRANCH) == o.base, "trunk moved"


# -- 1. the shipped example ------------------------------------------------------------------------

def test_example_plan_runs_accepted_and_merged(orchestra: Orchestra):
    o = orchestra
    r = o.run(EXAMPLE_PLAN, "--merge")
    assert r.code == 0, r.describe()
    assert r.status == "accepted", r.describe()
    run_id = r.run_id

    # The event stream: one JSON object per line, every kind of step there, framed by start and end.
    assert r.bad_lines == [], r.bad_lines[:5]
    assert all(e.get("run") == run_id for e in r.events)
    kinds = r.kinds()
    for kind in ("run-start", "dispatch", "progress", "subtask-end", "integrated", "plan-check", "judgement",
                 "merged", "accepted", "run-end"):
        assert kind in kinds, (kind, sorted(set(kinds)))
    assert kinds[0] == "run-start" and kinds[-1] == "run-end"
    assert kinds.index("judgement") < kinds.index("merged") < kinds.index("run-end")
    assert {e["subtask"]: e["label"] for e in r.of("subtask-end")} == {
        "fix-mean": "ok", "add-median": "ok", "document": "ok"}
    assert [(e["command"], e["exit_code"]) for e in r.of("plan-check")] == [("pytest -q tests", 0)]
    assert [e["status"] for e in r.of("judgement")] == ["ok"]

    # The integration branch: the three integrations, in sequence order, on its first-parent line.
    integration = f"run/{run_id}"
    subjects = o.first_parents(f"{o.base}..{integration}")
    assert subjects == [f"Integrate {sid} into {integration}" for sid in ("fix-mean", "add-median", "document")]
    integrated = {e["subtask"]: e["commit"] for e in r.of("integrated")}
    assert set(integrated) == {"fix-mean", "add-median", "document"}
    assert integrated["document"] == o.sha(integration)
    assert {m["subtask_id"]: m["merged_as"] for m in o.merges(run_id)} == integrated

    # Trunk: exactly one new commit, the merge of the integration branch.
    new = o.git("rev-list", f"{o.base}..{BASE_BRANCH}", "--first-parent").split()
    assert len(new) == 1, new
    (merge,) = new
    assert o.parents(merge) == [o.base, o.sha(integration)]
    assert r.of("merged") and r.of("merged")[0]["commit"] == merge and r.of("merged")[0]["into"] == BASE_BRANCH
    assert o.show(BASE_BRANCH, "docs/calc.md")
    assert o.show(BASE_BRANCH, "src/calc/median.py")
    mean_src = o.show(BASE_BRANCH, "src/calc/__init__.py")
    assert BUGGY not in mean_src and f"/ {FIXED}" in mean_src

    # Every commit the run brought to trunk carries an attestation that holds: the three agents' verified
    # commits, the three integrations and the merge (the plan's check recorded on it).
    checked = subprocess.run([RUNTIME, "attest", "verify", "--require", "all", "--json", f"{o.base}..{BASE_BRANCH}"],
                             cwd=o.repo, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    made = sorted(json.loads(line)["statement"]["predicate"]["made"] for line in checked.stdout.splitlines())
    assert made == ["merge"] * 4 + ["work"] * 3
    top = next(json.loads(line) for line in checked.stdout.splitlines() if json.loads(line)["commit"] == merge)
    assert top["statement"]["predicate"]["merge"]["checks"] == [
        {"atom": "plan: pytest -q tests", "kind": "command", "status": "passed", "test-edits": [], "review": []}]

    # The second group started from the integration of the first: its worktree saw the fixed mean
    # (its `pytest -q tests` with at least 4 tests passed, which the buggy mean would fail).
    group_one_head = integrated["add-median"]
    (dispatch,) = r.of("dispatch", subtask="document")
    assert dispatch["base"] == group_one_head
    agent = dispatch["agent"]
    spawn_state = json.loads((o.state / "runs" / agent / "state.json").read_text())
    assert spawn_state["base"] == group_one_head
    doc_commit = o.subtasks(run_id)["document"]["commit_sha"]
    assert o.parents(doc_commit) == [group_one_head]
    outcome = json.loads(o.subtasks(run_id)["document"]["outcome_json"])
    checks = {c["atom"]: c["status"] for c in outcome["attempts"][-1]["checks"]}
    assert checks.get("quality::tests-green") == "passed", checks
    for sid in ("fix-mean", "add-median"):
        assert o.subtasks(run_id)[sid]["commit_sha"] and o.parents(o.subtasks(run_id)[sid]["commit_sha"]) == [o.base]

    # The Markdown report exists and lists every subtask.
    assert r.report_path is not None and r.report_path.is_file()
    assert r.report.startswith(f"# Run {run_id}: accepted")
    rows = {row["subtask"]: row for row in r.rows()}
    assert set(rows) == {"fix-mean", "add-median", "document"}
    assert all(row["outcome"] == "ok" and row["integrated"] == "yes" for row in rows.values()), rows
    assert "`pytest -q tests`: passed" in r.report

    # The orchestrator's state and memory: the run accepted, its three results remembered.
    (run,) = o.runs()
    assert run["run_id"] == run_id and run["status"] == "accepted"
    with o.memory() as memory:
        results = memory.results(run_id)
        assert sorted(e.subtask_id for e in results) == ["add-median", "document", "fix-mean"]
        assert {e.subtask_id: e.commit for e in results} == {
            sid: o.subtasks(run_id)[sid]["commit_sha"] for sid in ("fix-mean", "add-median", "document")}
        assert memory.pending_learnings() == []


# -- 2. a local retry with feedback ----------------------------------------------------------------

def test_subtask_fails_verify_then_retries_with_feedback_and_passes(orchestra: Orchestra):
    o = orchestra
    wrong = "(len(values) + 2)"
    flaky = o.subtask("fix-mean", 1, retries=1, test_count_min=4, turns=[
        [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": BUGGY, "new_string": wrong}}],
        "Summary: changed the divisor.\nFiles changed: src/calc/__init__.py\n",
        # the second attempt, after the feedback that the tests fail
        [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": wrong, "new_string": FIXED}}],
        FIX_REPORT,
    ])
    median = o.subtask("add-median", 1, whitelist=["src/calc/median.py"], test_command=ADD_TESTS,
                       check_commands=["test -s src/calc/median.py"], turns=[
                           [{"name": "Write", "input": {"file_path": "src/calc/median.py",
                                                       "content": "def median(v):\n    return sorted(v)[len(v) // 2]\n"}}],
                           "Summary: added median.\nFiles changed: src/calc/median.py\n"])
    doc = o.subtask("document", 2, uses=["fix-mean", "add-median"], whitelist=["docs/**"],
                    check_commands=["test -s docs/calc.md"], turns=[DOC_TURN, DOC_REPORT])
    plan = o.plan([flaky, median, doc], checks=["pytest -q tests"])
    r = o.run(plan)
    assert r.code == 0 and r.status == "accepted", r.describe()
    assert {e["subtask"]: e["label"] for e in r.of("subtask-end")} == {
        "fix-mean": "ok", "add-median": "ok", "document": "ok"}

    # Two attempts in the report for fix-mean, one for the others.
    assert r.row("fix-mean")["attempts"] == "2"
    assert r.row("add-median")["attempts"] == "1"
    assert r.row("document")["attempts"] == "1"

    # The first attempt was rejected by the tests and its feedback went to the second.
    outcome = json.loads(o.subtasks(r.run_id)["fix-mean"]["outcome_json"])
    first, second = outcome["attempts"]
    assert {c["atom"]: c["status"] for c in first["checks"]}["quality::tests-green"] == "rejected"
    assert first.get("feedback") and "test" in first["feedback"].lower()
    assert {c["atom"]: c["status"] for c in second["checks"]}["quality::tests-green"] == "passed"
    # Only one dispatch: the retry is local to the spawn, not a new subtask run.
    assert o.subtasks(r.run_id)["fix-mean"]["dispatches"] == 1
    assert len(r.of("dispatch", subtask="fix-mean")) == 1
    assert f"/ {FIXED}" in o.show(f"run/{r.run_id}", "src/calc/__init__.py")


# -- 3. out of range: replan ---------------------------------------------------------------------

def _replan_setup(o: Orchestra, max_replans: int):
    fix = o.subtask("fix-mean", 1)
    plan = o.plan([fix], goal="Fix calc.mean and document it.", criteria=["docs/calc.md documents mean"],
                  checks=["pytest -q tests", "test -s docs/calc.md"], max_replans=max_replans,
                  planner=[planner_plan(planned("write-docs", check_commands=["test -s docs/calc.md"]))])
    scripts = o.tmp / "agent-scripts"
    o.script("write-docs.toml", [DOC_TURN, DOC_REPORT], folder=scripts)
    return plan, scripts


def test_out_of_range_result_triggers_a_replan_that_closes_the_gap(orchestra: Orchestra):
    o = orchestra
    plan, scripts = _replan_setup(o, max_replans=1)
    r = o.run(plan, "--merge", "--agent-scripts", scripts, "--agent-model", "scripted/x")
    assert r.code == 0 and r.status == "accepted", r.describe()

    # Round 0 was judged out of range (the docs check failed); the replan added write-docs.
    judgements = [e["status"] for e in r.of("judgement")]
    assert judgements == ["replan", "ok"], r.describe()
    checks = [(e["command"], e["exit_code"]) for e in r.of("plan-check")]
    assert ("test -s docs/calc.md", 0) in checks and any(c == "test -s docs/calc.md" and code != 0 for c, code in checks)
    (replan,) = r.of("replan")
    assert replan["subtasks"] == ["write-docs"]
    assert "test -s docs/calc.md" in replan["reason"]
    assert r.label("fix-mean") == "ok" and r.label("write-docs") == "ok"
    assert len(r.of("dispatch", subtask="fix-mean")) == 1  # the accepted subtask is not run again

    # The report lists the replan, and both rounds' subtasks.
    assert r.row("fix-mean")["round"] == "0" and r.row("write-docs")["round"] == "1"
    replans = report_section(r.report, "Replans")
    assert replans.strip() and "docs/calc.md" in replans, r.report
    (run,) = o.runs()
    assert run["replans"] == 1 and run["status"] == "accepted"

    # Merged: both works are on trunk.
    assert o.show(BASE_BRANCH, "docs/calc.md") == DOC_TEXT
    assert f"/ {FIXED}" in o.show(BASE_BRANCH, "src/calc/__init__.py")
    subjects = o.first_parents(f"{o.base}..run/{r.run_id}")
    assert subjects == [f"Integrate fix-mean into run/{r.run_id}", f"Integrate write-docs into run/{r.run_id}"]


def test_out_of_range_result_without_replans_left_is_rejected(orchestra: Orchestra):
    o = orchestra
    plan, scripts = _replan_setup(o, max_replans=0)
    r = o.run(plan, "--merge", "--agent-scripts", scripts, "--agent-model", "scripted/x")
    assert r.code == 2, r.describe()
    assert r.status == "rejected"
    assert [e["status"] for e in r.of("judgement")] == ["replan"]
    assert r.of("replan") == [] and r.of("merged") == [] and r.of("accepted") == []
    assert r.label("fix-mean") == "ok" and r.label("write-docs") is None
    assert r.report.startswith(f"# Run {r.run_id}: rejected")
    assert "test -s docs/calc.md" in r.report
    # Nothing merged into trunk; the integration branch is kept with what was integrated.
    assert_trunk_untouched(o)
    assert o.first_parents(f"{o.base}..run/{r.run_id}") == [f"Integrate fix-mean into run/{r.run_id}"]
    (run,) = o.runs()
    assert run["status"] == "rejected" and run["replans"] == 0
    with o.memory() as memory:
        assert memory.results(r.run_id) == []


# -- 4. validation -----------------------------------------------------------------------------------

def test_overlapping_parallel_scopes_are_rejected_before_anything_starts(orchestra: Orchestra):
    o = orchestra
    a = o.subtask("edit-a", 1, whitelist=["src/calc/**"])
    b = o.subtask("edit-b", 1, whitelist=["docs/**", "src/calc/__init__.py"])
    plan = o.plan([a, b])
    r = o.run(plan, "--merge")
    assert r.code == 1, r.describe()
    assert r.events == []
    lines = [line for line in r.stderr.splitlines()
             if re.search(r"plan\.toml:\d+: ", line) and "edit-a" in line and "edit-b" in line]
    assert lines, r.stderr
    assert "overlaps" in lines[0] or "same paths" in lines[0]
    # Nothing started: no run recorded, no agent folder, no branch, no worktree.
    assert o.runs() == []
    assert o.agent_folders() == []
    assert not (o.state / "runs").exists() or not any((o.state / "runs").iterdir())
    assert o.branches() == [BASE_BRANCH]
    assert_trunk_untouched(o)
    assert len(o.git("worktree", "list").splitlines()) == 1


def test_a_subtask_whose_check_program_verify_would_not_find_stops_the_plan_before_any_agent(orchestra: Orchestra):
    o = orchestra
    fine = o.subtask("fine", 1)
    typo = o.subtask("typo", 2, whitelist=["docs/**"], check_commands=["pytset --collect-only -q tests"])
    plan = o.plan([fine, typo])
    r = o.run(plan)
    assert r.code == 1 and r.events == [], r.describe()
    (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
    assert re.search(r"plan\.toml:\d+: a check command runs `pytset`, which verify would not find", line), line
    assert o.runs() == [] and o.agent_folders() == [] and o.branches() == [BASE_BRANCH]


# -- 7. memory on acceptance only ----------------------------------------------------------------------

def test_rejected_run_writes_no_memory(orchestra: Orchestra):
    o = orchestra
    fix = o.subtask("fix-mean", 1)
    plan = o.plan([fix], checks=["test -s docs/missing.md"])
    r = o.run(plan)
    assert r.code == 2 and r.status == "rejected", r.describe()
    assert r.label("fix-mean") == "ok"
    path = o.state / "memory.sqlite"
    if path.exists():
        with o.memory() as memory:
            assert memory.results(r.run_id) == []
            assert memory.results() == []
            assert memory.learnings() == []


def test_accepted_run_records_results_and_a_pending_learning(orchestra: Orchestra):
    o = orchestra
    fix = o.subtask("fix-mean", 1)
    doc = o.subtask("document", 1, whitelist=["docs/**"], test_command=ADD_TESTS,
                    check_commands=["test -s docs/calc.md"], turns=[DOC_TURN, DOC_REPORT])
    review = json.dumps({"status": "ok", "reason": "mean is fixed and documented", "learn": ["a learning"]})
    plan = o.plan([fix, doc], checks=["pytest -q tests"], reviewer=[review])
    r = o.run(plan)
    assert r.code == 0 and r.status == "accepted", r.describe()
    (judgement,) = r.of("judgement")
    assert judgement["status"] == "ok" and judgement["reason"] == "mean is fixed and documented"
    assert r.of("accepted")[0]["learn"] == ["a learning"]
    with o.memory() as memory:
        results = memory.results(r.run_id)
        assert sorted(e.subtask_id for e in results) == ["document", "fix-mean"]
        pending = memory.pending_learnings()
        assert [(lr.text, lr.run_id, lr.status) for lr in pending] == [("a learning", r.run_id, "pending")]
        assert memory.facts() == []  # a learning is not a fact until curated


# -- 8. loop guards and dependencies --------------------------------------------------------------------

def test_redispatch_beyond_max_dispatches_ends_failed_loop(orchestra: Orchestra):
    o = orchestra
    broken = o.subtask("broken", 1, command="exit 3", whitelist=["docs/**"], test_command=ADD_TESTS)
    # The planner re-issues the very same subtask id; the plan allows one dispatch per subtask.
    plan = o.plan([broken], max_replans=1, max_dispatches=1,
                  planner=[planner_plan(planned("broken", check_commands=["true"]))])
    scripts = o.tmp / "agent-scripts"
    o.script("broken.toml", [DOC_TURN, DOC_REPORT], folder=scripts)
    r = o.run(plan, "--agent-scripts", scripts, "--agent-model", "scripted/x")
    assert r.code == 2 and r.status == "rejected", r.describe()
    labels = [e["label"] for e in r.of("subtask-end", subtask="broken")]
    assert labels == ["failed(agent)", "failed(loop)"], r.describe()
    assert len(r.of("replan")) == 1
    assert len(r.of("dispatch", subtask="broken")) == 1  # the second time it was not dispatched
    assert [f for f in o.agent_folders() if "broken" in f] == [f"{r.run_id}.broken"]
    row = o.subtasks(r.run_id)["broken"]
    assert row["label"] == "failed(loop)" and row["dispatches"] == 2
    assert r.row("broken", round=1)["outcome"] == "failed(loop)"
    assert_trunk_untouched(o)


def test_report_keeps_each_rounds_own_outcome(orchestra: Orchestra):
    """A subtask re-issued by a replan has a row per round; each row shows that round's outcome."""
    o = orchestra
    broken = o.subtask("broken", 1, command="exit 3", whitelist=["docs/**"], test_command=ADD_TESTS)
    plan = o.plan([broken], max_replans=1, max_dispatches=1,
                  planner=[planner_plan(planned("broken", check_commands=["true"]))])
    scripts = o.tmp / "agent-scripts"
    o.script("broken.toml", [DOC_TURN, DOC_REPORT], folder=scripts)
    r = o.run(plan, "--agent-scripts", scripts, "--agent-model", "scripted/x")
    assert r.code == 2, r.describe()
    assert r.row("broken", round=1)["outcome"] == "failed(loop)"
    assert r.row("broken", round=0)["outcome"] == "failed(agent)", r.report


def test_repeated_tool_call_ends_failed_loop_and_dependants_fail_without_dispatch(orchestra: Orchestra):
    o = orchestra
    read = [{"name": "Read", "input": {"file_path": "src/calc/__init__.py"}}]
    repeater = o.subtask("repeater", 1, turns=[read, read, read, read, read, FIX_REPORT])
    dependant = o.subtask("dependant", 2, uses=["repeater"], whitelist=["docs/**"], test_command=ADD_TESTS,
                          check_commands=["test -s docs/calc.md"], turns=[DOC_TURN, DOC_REPORT])
    plan = o.plan([repeater, dependant])
    r = o.run(plan)
    assert r.code == 2 and r.status == "rejected", r.describe()
    assert r.label("repeater") == "failed(loop)", r.describe()
    assert r.label("dependant") == "failed(dependency)", r.describe()
    # The dependant was never dispatched: no dispatch event, no agent, no branch.
    assert r.of("dispatch", subtask="dependant") == []
    rows = o.subtasks(r.run_id)
    assert rows["dependant"]["dispatches"] == 0 and rows["dependant"]["status"] == "failed"
    assert [f for f in o.agent_folders() if "dependant" in f] == []
    assert not any("dependant" in b for b in o.branches())
    assert r.row("repeater")["outcome"] == "failed(loop)"
    assert r.row("dependant")["outcome"] == "failed(dependency)"
    assert "repeater" in (json.loads(rows["dependant"]["outcome_json"]).get("message") or "")
    assert_trunk_untouched(o)


# -- 9. escalation ----------------------------------------------------------------------------------

def test_shared_path_event_and_questions_in_the_report(orchestra: Orchestra):
    o = orchestra
    shared = o.subtask("shared-edit", 1, role="edit-shared", whitelist=["src/calc/__init__.py"], turns=[FIX_TURN, FIX_REPORT])
    question = "Should the median of an empty list raise ValueError?"
    asker = o.subtask("asker", 1, whitelist=["docs/**"], test_command=ADD_TESTS, check_commands=["test -s docs/calc.md"],
                      turns=[DOC_TURN, f"Summary: documented mean.\nFiles changed: docs/calc.md\nQuestions: {question}\n"])
    plan = o.plan([shared, asker])
    r = o.run(plan)
    assert r.code == 0 and r.status == "accepted", r.describe()

    events = r.of("shared-path")
    assert events, r.describe()
    assert all(e["subtask"] == "shared-edit" for e in events)
    assert any(e["path"].endswith("src/calc/__init__.py") for e in events), events
    assert r.of("shared-path", subtask="asker") == []
    # The shared-path event came while the agent ran, before its subtask ended.
    kinds = [(e["event"], e.get("subtask")) for e in r.events]
    assert kinds.index(("shared-path", "shared-edit")) < kinds.index(("subtask-end", "shared-edit"))
    assert o.stored_events(r.run_id, "shared-path"), "the event is in the orchestrator's state too"

    questions = report_section(r.report, "Questions")
    assert question in questions, r.report


def test_shared_path_written_in_a_retry_attempt_is_reported(orchestra: Orchestra):
    """Every shared path the agent writes is announced, in whichever attempt it writes it."""
    o = orchestra
    shared = o.subtask("shared-edit", 1, role="edit-shared", retries=1, whitelist=["src/calc/__init__.py", "docs/**"],
                       check_commands=["test -s docs/shared.md"], turns=[
                           # attempt 1: only the docs; the tests still fail on the buggy mean
                           [{"name": "Write", "input": {"file_path": "docs/shared.md", "content": "shared\n"}}],
                           "Summary: wrote docs/shared.md.\nFiles changed: docs/shared.md\n",
                           # attempt 2, after the feedback: the fix
                           FIX_TURN, FIX_REPORT])
    plan = o.plan([shared])
    r = o.run(plan)
    assert r.code == 0 and r.status == "accepted", r.describe()
    assert r.row("shared-edit")["attempts"] == "2"
    paths = [e["path"] for e in r.of("shared-path", subtask="shared-edit")]
    assert any(p.endswith("docs/shared.md") for p in paths), paths
    assert any(p.endswith("src/calc/__init__.py") for p in paths), paths


def test_report_counts_the_tokens_of_every_agent(orchestra: Orchestra):
    """The scripted model reports token usage for every turn; the report's tokens column must
    include them, also for an agent that finishes quickly (between two polls of its usage)."""
    o = orchestra
    fix = o.subtask("fix-mean", 1)
    doc = o.subtask("document", 2, whitelist=["docs/**"], test_command=ADD_TESTS,
                    check_commands=["test -s docs/calc.md"], turns=[DOC_TURN, DOC_REPORT])
    r = o.run(o.plan([fix, doc]))
    assert r.code == 0 and r.status == "accepted", r.describe()
    for sid in ("fix-mean", "document"):
        (attempt,) = json.loads(o.subtasks(r.run_id)[sid]["outcome_json"])["attempts"]
        assert attempt["turns"] == 2
        assert attempt["tokens"] > 0, (sid, attempt)
        assert int(r.row(sid)["tokens"]) > 0, r.report
