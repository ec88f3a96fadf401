"""`runtime spawn` end to end: the happy path, retries with feedback, rejection, --keep and --merge.

Real git repositories, real bubblewrap, the real CLI as a subprocess; the agent
is the builtin loop driven by the scripted model, or a command agent where a
test must act while the agent runs.
"""

from __future__ import annotations

import hashlib
import json
import time

from tests.spawn.conftest import (
    BASE_BRANCH,
    BUGGY,
    FIX_TURN,
    FIXED,
    REPORT,
    SH_FIX,
    SH_REPORT,
    TEST_TURN,
    Spawner,
)
from tests.support import git, kill_group, wait_for


def assert_trunk_untouched(s: Spawner) -> None:
    assert s.sha(BASE_BRANCH) == s.base
    assert s.git("status", "--porcelain", "--untracked-files=no") == ""
    assert BUGGY in (s.repo / "src" / "calc" / "__init__.py").read_text()


def test_happy_path_denials_commit_status_and_audit(spawner: Spawner):
    s = spawner
    remote = s.tmp / "origin.git"
    git(s.tmp, "init", "-q", "--bare", str(remote))
    s.git("remote", "add", "origin", str(remote))
    task = s.task(agent_id="ag-happy", script=[
        [{"name": "Bash", "input": {"command": "git push origin HEAD"}}],
        [{"name": "Write", "input": {"file_path": "README.md", "content": "Fixed!\n"}}],
        FIX_TURN, TEST_TURN, REPORT,
    ])
    r = s.spawn(task)
    assert r.code == 0, r.describe()
    out = r.outcome
    assert out["label"] == "ok" and out["status"] == "ok" and out["detail"] is None
    assert len(out["attempts"]) == 1
    attempt = out["attempts"][0]
    assert attempt["exit_code"] == 0 and attempt["denials"] == 2 and attempt["tool_calls"] == 4
    assert all(c["status"] == "passed" for c in attempt["checks"]), attempt["checks"]

    # The denied calls left no side effect: nothing was pushed, README.md is unchanged everywhere.
    assert git(remote, "for-each-ref") == ""
    commit = out["commit"]
    assert commit and s.sha("agent/ag-happy") == commit
    assert s.show(commit, "README.md") == (s.repo / "README.md").read_text() == "# calc\n\nA tiny calculator.\n"
    # The in-scope change is committed on agent/<id>, on top of the base, and nothing else.
    assert s.git("rev-parse", f"{commit}^") == s.base
    assert s.git("diff", "--name-only", s.base, commit).splitlines() == ["src/calc/__init__.py"]
    # Its attestation counts the gate's decisions as the audit log holds them, and names the log's head.
    shown = json.loads(s.cli("attest", "show", "--json", commit).stdout)
    gate = shown["statement"]["predicate"]["gate"]
    logged = [e["data"]["decision"] for e in s.audit(kind="gate", agent="ag-happy")]
    assert gate["decisions"] == {d: logged.count(d) for d in set(logged)} and gate["decisions"]["deny"] == 2
    assert gate["tool-calls"] == len(logged) and f"Audit-Head: {gate['audit-head']}" in s.message(commit)
    assert FIXED in s.show(commit, "src/calc/__init__.py") and BUGGY not in s.show(commit, "src/calc/__init__.py")
    message = s.message(commit)
    digest = hashlib.sha256(task.read_bytes()).hexdigest()
    for line in ("Agent-Id: ag-happy", "Role: edit-local", f"Task-Sha256: {digest}", "Verified: yes"):
        assert line in message.splitlines(), message
    checks_line = next(line for line in message.splitlines() if line.startswith("Checks: "))
    for atom in ("scope::files-whitelist", "quality::tests-green", "output::report-format"):
        assert f"{atom} passed" in checks_line
    # The base branch is untouched, the worktree removed (and git forgot it).
    assert_trunk_untouched(s)
    assert out["worktree"] is None and not s.worktree("ag-happy").exists()
    assert str(s.worktree("ag-happy")) not in s.git("worktree", "list")

    # The state file and `runtime status` agree.
    state = s.state_json("ag-happy")
    assert state["status"] == "ok" and state["commit"] == commit and state["task_sha256"] == digest
    assert state["base"] == s.base and state["base_branch"] == BASE_BRANCH and state["branch"] == "agent/ag-happy"
    runs = s.status()
    assert [(r["agent_id"], r["status"], r["label"]) for r in runs] == [("ag-happy", "ok", "ok")]

    # The audit log: intact, and it lists the two denials with their reasons.
    s.audit_intact()
    denials = [g for g in s.audit(kind="gate") if g["data"]["decision"] != "allow"]
    assert [(d["data"]["tool"], d["data"]["atom"]) for d in denials] == [
        ("Bash", "policy::no-git-ops"), ("Write", "scope::files-whitelist")]
    assert all(d["agent"] == "ag-happy" and d["data"]["reason"] for d in denials)
    shown = s.cli("audit", "show", "--kind", "gate")
    assert shown.returncode == 0, shown.stderr
    assert len([line for line in shown.stdout.splitlines() if '"deny"' in line and "gate" in line]) == 2
    kinds = [rec["kind"] for rec in s.audit(agent="ag-happy")]
    for kind in ("spawn", "gate", "tool", "check", "commit", "outcome"):
        assert kind in kinds
    assert kinds[0] == "spawn" and kinds[-1] == "outcome"
    commits = s.audit(kind="commit")
    assert [c["data"]["commit"] for c in commits] == [commit]
    # The commit message anchors the audit chain: its Audit-Head is a record of the log.
    head = next(line.split(": ", 1)[1] for line in message.splitlines() if line.startswith("Audit-Head: "))
    assert head in {rec["hash"] for rec in s.audit()}


def test_keep_keeps_the_worktree(spawner: Spawner):
    s = spawner
    r = s.spawn(s.task(agent_id="ag-keep", command=f"{SH_FIX}; {SH_REPORT}"), "--keep")
    assert r.code == 0, r.describe()
    wt = s.worktree("ag-keep")
    assert r.outcome["worktree"] == str(wt) and wt.is_dir()
    assert FIXED in (wt / "src" / "calc" / "__init__.py").read_text()
    assert git(wt, "rev-parse", "HEAD") == r.outcome["commit"]
    assert git(wt, "status", "--porcelain") == ""
    assert_trunk_untouched(s)


def test_rejection_then_pass_with_feedback(spawner: Spawner):
    s = spawner
    # Attempt 1 breaks a test and reports; verify rejects it; attempt 2 fixes it.
    task = s.task(agent_id="ag-retry", agent={"retries": 1}, script=[
        [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": "return a + b",
                                     "new_string": "return a - b"}}],
        REPORT,
        [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": "return a - b",
                                     "new_string": "return a + b"}}],
        FIX_TURN, TEST_TURN, REPORT,
    ])
    r = s.spawn(task)
    assert r.code == 0, r.describe()
    out = r.outcome
    assert out["label"] == "ok" and len(out["attempts"]) == 2
    first, second = out["attempts"]
    rejected = [c for c in first["checks"] if c["status"] == "rejected"]
    assert [c["atom"] for c in rejected] == ["quality::tests-green"]
    assert first["feedback"] and "quality::tests-green" in first["feedback"]
    assert all(c["status"] == "passed" for c in second["checks"])
    # The feedback reached the second attempt: it was written for the agent to read...
    feedback = (s.run_dir("ag-retry") / "agent-ro" / "feedback-2.md").read_text()
    assert feedback == first["feedback"] and "test_add" in feedback
    # ...and every attempt is recorded in the state file and the audit log.
    state = s.state_json("ag-retry")
    assert [a["number"] for a in state["attempts"]] == [1, 2] and state["attempts"][0]["feedback"] == feedback
    retries = s.audit(kind="retry")
    assert len(retries) == 1 and retries[0]["data"]["checks"] == ["quality::tests-green"]
    commit = out["commit"]
    assert s.commits(f"{s.base}..agent/ag-retry") == [commit]
    assert "return a + b" in s.show(commit, "src/calc/__init__.py")
    assert "Verified: yes" in s.message(commit)
    assert_trunk_untouched(s)


def test_rejection_without_retries_keeps_an_inspection_commit(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-reject", agent={"retries": 0},
                  command=f"sed -i 's/return a + b/return a - b/' src/calc/__init__.py; {SH_REPORT}")
    r = s.spawn(task, "--merge")
    assert r.code == 2, r.describe()
    out = r.outcome
    assert out["label"] == "rejected" and len(out["attempts"]) == 1
    assert out["commit"] is None and out["merged"] is None
    assert "quality::tests-green" in out["message"]
    inspection = out["inspection"]
    assert inspection and s.sha("agent/ag-reject") == inspection
    message = s.message(inspection)
    assert "Verified: no" in message.splitlines() and "Verified: yes" not in message
    assert "Outcome: rejected" in message
    assert "return a - b" in s.show(inspection, "src/calc/__init__.py")
    # Nothing merged, the base untouched, the worktree gone.
    assert_trunk_untouched(s)
    assert not s.worktree("ag-reject").exists()
    assert s.state_json("ag-reject")["status"] == "rejected"
    assert [r["label"] for r in s.status()] == ["rejected"]
    assert s.audit(kind="merge") == []
    s.audit_intact()


def test_bad_report_is_rejected_then_fixed(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-report", agent={"retries": 1}, script=[
        FIX_TURN, "I fixed it.",  # no `Summary:` or `Files changed:` field
        REPORT,
    ])
    r = s.spawn(task)
    assert r.code == 0, r.describe()
    first, second = r.outcome["attempts"]
    assert [c["atom"] for c in first["checks"] if c["status"] == "rejected"] == ["output::report-format"]
    feedback = (s.run_dir("ag-report") / "agent-ro" / "feedback-2.md").read_text()
    assert "summary" in feedback and "files-changed" in feedback
    assert second["report"] == REPORT


def test_merge_into_trunk(spawner: Spawner):
    s = spawner
    r = s.spawn(s.task(agent_id="ag-merge", command=f"{SH_FIX}; {SH_REPORT}"), "--merge")
    assert r.code == 0, r.describe()
    out = r.outcome
    assert out["label"] == "ok" and out["commit"] and out["merged"]
    merged = out["merged"]
    assert s.sha(BASE_BRANCH) == merged
    parents = s.git("rev-list", "--parents", "-n", "1", merged).split()[1:]
    assert parents == [s.base, out["commit"]]
    assert "Agent-Id: ag-merge" in s.message(merged)
    # trunk is checked out in the repository: its files follow the merge, cleanly.
    assert FIXED in (s.repo / "src" / "calc" / "__init__.py").read_text()
    assert s.git("status", "--porcelain", "--untracked-files=no") == ""
    assert [m["data"]["commit"] for m in s.audit(kind="merge")] == [merged]
    assert s.state_json("ag-merge")["merged"] == merged
    # both the verified commit and the merge carry an attestation that holds (and every commit since the base is
    # one of them)
    checked = s.cli("attest", "verify", "--require", "all", "--json", f"{s.base}..{BASE_BRANCH}")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    findings = {f["commit"]: f for f in map(json.loads, checked.stdout.splitlines())}
    assert set(findings) == {out["commit"], merged}
    work = findings[out["commit"]]["statement"]["predicate"]
    assert work["made"] == "work" and work["agent-id"] == "ag-merge" and work["verified"]
    assert work["task"]["sha256"] in s.message(out["commit"]) and work["sandbox"] is True
    assert {c["atom"]: c["status"] for c in work["checks"]}["quality::tests-green"] == "passed"
    merge = findings[merged]["statement"]["predicate"]
    assert merge["made"] == "merge" and merge["merge"]["parents"] == [s.base, out["commit"]]
    assert merge["merge"]["checks"] and all(c["status"] == "passed" for c in merge["merge"]["checks"])
    assert (s.run_dir("ag-merge") / "attestations" / f"{out['commit']}.intoto.json").is_file()


def _racing_agent(extra: str = "") -> str:
    """A command agent that fixes mean, then waits until the test removes src/calc/READY."""
    return (f"{SH_FIX} && {extra} touch src/calc/READY && "
            "i=0; while [ -e src/calc/READY ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; "
            f"{SH_REPORT}")


def _while_agent_waits(s: Spawner, agent_id: str, proc, action) -> None:
    ready = s.worktree(agent_id) / "src" / "calc" / "READY"
    try:
        wait_for(lambda: ready.exists() or proc.poll() is not None, 60, what="the agent to be ready")
        assert proc.poll() is None, proc.communicate()
        action()
        ready.unlink()
    except BaseException:
        kill_group(proc)
        raise


def test_merge_conflict_with_a_moved_base_is_rejected(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-conflict", command=_racing_agent())
    proc = s.start(task, "--merge")
    conflicting: list[str] = []

    def move_trunk():
        path = s.repo / "src" / "calc" / "__init__.py"
        path.write_text(path.read_text().replace(BUGGY, "max(len(values), 1)"))
        s.git("commit", "-q", "-am", "trunk moves: mean of nothing is 0")
        conflicting.append(s.git("rev-parse", "HEAD"))

    _while_agent_waits(s, "ag-conflict", proc, move_trunk)
    stdout, stderr = proc.communicate(timeout=120)
    out = json.loads(stdout)
    assert proc.returncode == 2, stdout + stderr
    assert out["label"] == "rejected" and out["merged"] is None
    assert "conflict" in out["message"] and "src/calc/__init__.py" in out["message"]
    # Nothing merged: trunk is the test's commit, its checkout clean.
    assert s.sha(BASE_BRANCH) == conflicting[0]
    assert "max(len(values), 1)" in (s.repo / "src" / "calc" / "__init__.py").read_text()
    assert s.git("status", "--porcelain", "--untracked-files=no") == ""
    assert s.audit(kind="merge") == []
    # The verified work stays on its branch, never on trunk.
    if out["commit"]:
        assert s.git("merge-base", "--is-ancestor", out["commit"], BASE_BRANCH, check=False) == ""
        assert out["commit"] not in s.commits(BASE_BRANCH)


def test_merge_whose_checks_fail_on_the_simulated_merge_is_rejected(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-simfail", command=_racing_agent())
    proc = s.start(task, "--merge")
    moved: list[str] = []

    def move_trunk():
        # No textual conflict, but a test on trunk that the agent's fix makes fail.
        (s.repo / "tests" / "test_trunk.py").write_text(
            "import sys\nfrom pathlib import Path\n\n"
            "sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'src'))\n\n"
            "from calc import mean  # noqa: E402\n\n\n"
            "def test_trunk_expects_the_old_mean():\n    assert mean([3.0]) == 1.5\n")
        s.git("add", "tests/test_trunk.py")
        s.git("commit", "-q", "-m", "trunk pins the old behaviour")
        moved.append(s.git("rev-parse", "HEAD"))

    _while_agent_waits(s, "ag-simfail", proc, move_trunk)
    stdout, stderr = proc.communicate(timeout=120)
    out = json.loads(stdout)
    assert proc.returncode == 2, stdout + stderr
    assert out["label"] == "rejected" and out["merged"] is None
    assert "simulated merge" in out["message"]
    assert s.sha(BASE_BRANCH) == moved[0]
    assert s.audit(kind="merge") == []


def test_status_while_running_and_progress_in_state(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-live", command=_racing_agent())
    proc = s.start(task)

    def look():
        state = s.state_json("ag-live")
        assert state["status"] == "running" and state["pid"] == proc.pid
        runs = s.status()
        assert [(r["agent_id"], r["status"]) for r in runs] == [("ag-live", "running")]

    _while_agent_waits(s, "ag-live", proc, look)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and json.loads(stdout)["label"] == "ok"
    deadline = time.monotonic() + 5
    while s.status()[0]["status"] != "ok" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert s.status()[0]["status"] == "ok"


def test_merge_into_a_dirty_base_is_refused_before_anything_is_made(spawner: Spawner):
    s = spawner
    (s.repo / "README.md").write_text("edited, not committed\n")
    task = s.task(agent_id="ag-dirty", command=f"{SH_FIX}; {SH_REPORT}")
    r = s.spawn(task, "--merge")
    assert r.code == 1, r.describe()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "uncommitted changes" in lines[0] and "commit or stash" in lines[0], r.stderr
    assert s.git("branch", "--list", "agent/ag-dirty") == ""
    assert not s.run_dir("ag-dirty").exists()
    # Committed, the same task spawns and merges.
    s.git("commit", "-q", "-am", "readme")
    ok = s.spawn(task, "--merge")
    assert ok.code == 0 and ok.outcome["merged"], ok.describe()
