"""A SIGKILL at any point of `runtime spawn --merge`, then the same command again: merged exactly once.

Kill points: while the checks run on the simulated merge (the state says
`merging`, the verified commit is on the branch), right after the real merge
but before the state file says so, and after the commit but before the merge
began (the state says `committing`). The last two are reproduced by putting
the state file back to what it held at that instant, which is all a killed
orchestrator leaves behind. Leftovers of a killed run (its worktree, git's
record of it, its socket folder) are gone after the next spawn starts.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.spawn.conftest import BASE_BRANCH, SH_FIX, SH_REPORT, Spawner, marker, no_survivors
from tests.support import kill_group, running, wait_for

# Says where it runs (into the run's command logs) and, told so by the task's declared HOLD, blocks on the
# simulated merge's checkout (a folder named `tree`). Each judged command has a home of its own, removed
# after it: nothing it could write would last, so the orchestrator's environment says when to hold.
HOLD_ON_MERGE = ("n=$(basename \"$PWD\"); echo \"checked in $n\"; "
                 "if [ \"$n\" = tree ] && [ \"$HOLD\" = yes ]; then sleep {n}; fi")


def merges_of(s: Spawner, commit: str) -> list[str]:
    """Merge commits on trunk (since the base) that bring in ``commit``."""
    out = s.git("rev-list", "--merges", "--parents", f"{s.base}..{BASE_BRANCH}")
    return [line.split()[0] for line in out.splitlines() if commit in line.split()[2:]]


def set_status(s: Spawner, agent_id: str, status: str) -> None:
    path = s.run_dir(agent_id) / "state.json"
    state = json.loads(path.read_text())
    state["status"] = status
    for key in ("label", "merged", "message"):
        state.pop(key, None)
    path.write_text(json.dumps(state))


def test_killed_during_the_merge_checks_then_rerun_merges_once(spawner: Spawner):
    s = spawner
    n = marker()
    task = s.task(agent_id="ag-merge-kill", command=f"{SH_FIX}; {SH_REPORT}", agent={"env": ["HOLD"]},
                  verification={"test-command": "pytest -q tests", "test-count-min": 4,
                                "check-commands": [f"sh -c '{HOLD_ON_MERGE.format(n=n)}'"]})
    proc = s.start(task, "--merge", env={"HOLD": "yes"})
    try:
        wait_for(lambda: running("sleep", n) or proc.poll() is not None, 90, what="the merge checks")
        assert proc.poll() is None, proc.communicate()
        assert s.state_json("ag-merge-kill")["status"] == "merging"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        kill_group(proc)
    no_survivors(f"sleep {n}", timeout=10)
    commit = s.sha("agent/ag-merge-kill")
    assert commit and "Verified: yes" in s.message(commit)
    assert s.sha(BASE_BRANCH) == s.base  # killed before the merge

    r = s.spawn(task, "--merge", env={"HOLD": "no"})
    assert r.code == 0 and r.label == "ok", r.describe()
    assert r.outcome["commit"] == commit and r.outcome["merged"] == s.sha(BASE_BRANCH)
    assert merges_of(s, commit) == [r.outcome["merged"]]
    merge_logs = (s.run_dir("ag-merge-kill") / "merge-commands").glob("*-merge.log")
    assert any("checked in tree" in log.read_text() for log in merge_logs)  # the checks ran again on the merge
    assert s.state_json("ag-merge-kill")["status"] == "ok"
    again = s.spawn(task, "--merge", env={"HOLD": "no"})
    assert again.code == 1 and "already ran" in again.stderr
    assert merges_of(s, commit) == [r.outcome["merged"]]
    s.audit_intact()


def test_killed_right_after_the_merge_then_rerun_does_not_merge_again(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-merged-kill", command=f"{SH_FIX}; {SH_REPORT}")
    first = s.spawn(task, "--merge")
    assert first.label == "ok" and first.outcome["merged"], first.describe()
    merged = first.outcome["merged"]
    set_status(s, "ag-merged-kill", "merging")  # what a kill between the merge and the state write leaves

    r = s.spawn(task, "--merge")
    assert r.code == 0 and r.label == "ok", r.describe()
    assert r.outcome["merged"] == merged and s.sha(BASE_BRANCH) == merged
    assert merges_of(s, first.outcome["commit"]) == [merged]


def test_killed_after_the_commit_then_rerun_with_merge_merges_once(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-commit-kill", command=f"{SH_FIX}; {SH_REPORT}")
    first = s.spawn(task)
    assert first.label == "ok" and first.outcome["merged"] is None, first.describe()
    commit = first.outcome["commit"]
    set_status(s, "ag-commit-kill", "committing")

    r = s.spawn(task, "--merge")
    assert r.code == 0 and r.label == "ok", r.describe()
    assert r.outcome["commit"] == commit and merges_of(s, commit) == [r.outcome["merged"]]
    assert s.spawn(task, "--merge").code == 1
    assert merges_of(s, commit) == [r.outcome["merged"]]


def test_leftovers_of_a_killed_run_are_cleaned_on_the_next_start(spawner: Spawner):
    s = spawner
    n = marker()
    slow = s.task(agent_id="ag-left", command=f"{SH_FIX}; sleep {n}; {SH_REPORT}")
    proc = s.start(slow)
    try:
        wait_for(lambda: running("sleep", n) or proc.poll() is not None, 60, what="the agent to start")
        assert proc.poll() is None, proc.communicate()
        registry = s.state / "sockets"
        folders = [Path(record.read_text().split("\n")[1]) for record in registry.iterdir()]
        assert folders and all(f.is_dir() for f in folders)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        kill_group(proc)
    no_survivors(f"sleep {n}", timeout=10)
    worktree = s.worktree("ag-left")
    assert worktree.is_dir() and str(worktree) in s.git("worktree", "list")

    r = s.spawn(s.task(agent_id="ag-next", command=f"{SH_FIX}; {SH_REPORT}"))
    assert r.label == "ok", r.describe()
    assert not worktree.exists() and str(worktree) not in s.git("worktree", "list")
    assert not any(f.exists() for f in folders) and not list(registry.iterdir())
    assert [r["status"] for r in s.status() if r["agent_id"] == "ag-left"] == ["interrupted"]
