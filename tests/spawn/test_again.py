"""`runtime again ID`: a new series of attempts on a finished agent's work, told first what a person sent back.

A rejected run goes again on its kept work and is accepted; the person's words reach the agent as its
first message; every series stays in the record; what cannot go again (merged work, no run, a running
one) is refused in one line before anything runs. Real git, real bubblewrap, the real CLI.
"""

from __future__ import annotations

import json

import pytest

from tests.spawn.conftest import BASE_BRANCH, SH_FIX, SH_REPORT, Spawner, SpawnResult, _parse

pytestmark = pytest.mark.slow
SENT = "A person reviewing your work sent it back"
# Fixes the bug only when a person's words arrive with the bundle (the command backend's stdin).
ONLY_WHEN_SENT_BACK = f"if grep -q '{SENT}'; then {SH_FIX}; fi; {SH_REPORT}"


def again(s: Spawner, agent_id: str, *flags: str, feedback: str | None = None) -> SpawnResult:
    args = ["again", agent_id, "--json", *flags] + (["--feedback", "-"] if feedback is not None else [])
    import subprocess

    from tests.conftest import RUNTIME

    proc = subprocess.run([RUNTIME, *args], cwd=s.repo, capture_output=True, text=True, env=s.full_env(),
                          input=feedback, timeout=150)
    return SpawnResult(proc, _parse(proc.stdout))


def test_a_rejected_run_sent_back_carries_on_its_work_and_is_accepted(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-back", command=ONLY_WHEN_SENT_BACK)
    first = s.spawn(task)
    assert first.label == "rejected", first.describe()
    kept = s.sha("agent/ag-back")
    refused = s.spawn(task)
    assert refused.code == 1 and "`runtime again ag-back`" in refused.stderr  # the way on is named
    second = again(s, "ag-back", feedback="mean must divide by the number of values\n")
    assert second.code == 0 and second.label == "ok", second.describe()
    commit = second.outcome["commit"]
    assert s.sha("agent/ag-back") == commit and s.git("merge-base", "--is-ancestor", kept, commit, check=False) == ""
    assert "len(values)" in (s.show(commit, "src/calc/__init__.py") or "")
    record = s.state_json("ag-back")
    assert [(a["number"], a["series"]) for a in record["attempts"]] == [(1, 1), (2, 2)]
    assert record["series"] == 2 and record["attempts"][1]["sent_back"].startswith(f"## {SENT}")
    assert "mean must divide" in (s.run_dir("ag-back") / "agent-ro" / "feedback-2.md").read_text()
    assert [e["data"]["series"] for e in s.audit(kind="again")] == [2]
    assert s.sha(BASE_BRANCH) == s.base  # nothing merged without --merge


def test_merged_work_is_done_and_is_not_sent_back(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-merged", command=f"{SH_FIX}; {SH_REPORT}")
    first = s.spawn(task, "--merge")
    assert first.label == "ok" and first.outcome["merged"], first.describe()
    head = s.sha(BASE_BRANCH)
    refused = again(s, "ag-merged", feedback="more")
    assert refused.code == 1 and refused.stderr.startswith("error: ") and "was merged" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert s.sha(BASE_BRANCH) == head and len(s.state_json("ag-merged")["attempts"]) == 1


def test_no_such_run_is_one_line(spawner: Spawner):
    s = spawner
    refused = again(s, "ag-never")
    assert refused.code == 1 and refused.stderr.count("\n") == 1 and "no run of agent ag-never" in refused.stderr
    bad = again(s, "../etc")
    assert bad.code == 1 and "not an agent id" in bad.stderr
    assert json.loads(s.cli("status", "--json").stdout) == []


def test_show_prints_the_outcome_the_checks_the_report_and_the_change(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-shown", command=f"{SH_FIX}; {SH_REPORT}")
    assert s.spawn(task).label == "ok"
    shown = s.cli("show", "ag-shown")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.startswith("ok  agent ag-shown (edit-local)") and "quality::tests-green" in out
    assert "Summary: fixed mean" in out and "-    return sum(values) / (len(values) + 1)" in out
    assert "+    return sum(values) / len(values)" in out
    stat = s.cli("show", "ag-shown", "--stat")
    assert "src/calc/__init__.py | 2 +-" in stat.stdout
    doc = json.loads(s.cli("show", "ag-shown", "--json").stdout)
    assert doc["agent"]["agent_id"] == "ag-shown" and doc["head"] == s.sha("agent/ag-shown")
    assert "+    return sum(values) / len(values)" in doc["diff"]
    missing = s.cli("show", "ag-nobody")
    assert missing.returncode == 1 and missing.stderr.startswith("error: no run of agent ag-nobody")


def test_a_task_rejected_for_its_own_file_runs_again_once_fixed_with_afresh(spawner: Spawner):
    """The task asks more tests than the project has: rejected whatever the agent does. Once the file is fixed,
    the same command is refused naming `--afresh`, which starts the task again from the current base and the
    fixed file; the first run's branch is kept under a named ref, and its folder beside the new one."""
    s = spawner
    wrong = {"test-command": "pytest -q tests", "test-count-min": 400, "check-commands": ["python3 -m tabnanny src"]}
    task = s.task(agent_id="ag-fixed", command=f"{SH_FIX}; {SH_REPORT}", verification=wrong)
    first = s.spawn(task)
    assert first.label == "rejected", first.describe()
    kept = s.sha("agent/ag-fixed")
    task = s.task(agent_id="ag-fixed", command=f"{SH_FIX}; {SH_REPORT}")  # the file fixed: the project's 4 tests
    refused = s.spawn(task)
    assert refused.code == 1 and f"`runtime spawn {task} --afresh`" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    second = s.spawn(task, "--afresh")
    assert second.code == 0 and second.label == "ok", second.describe()
    assert s.git("rev-parse", "refs/agent-runtime/previous/ag-fixed/1") == kept  # nothing lost
    assert s.git("rev-parse", second.outcome["commit"] + "^") == s.base  # from the base, not the first run's work
    assert [e["data"]["kept_ref"] for e in s.audit(kind="afresh")] == ["refs/agent-runtime/previous/ag-fixed/1"]
    assert (s.state / "previous" / "ag-fixed.1" / "state.json").is_file()
    assert len(s.state_json("ag-fixed")["attempts"]) == 1
