"""Crash and resume: `runtime run` killed with SIGKILL after its first group was integrated,
then `runtime run --resume RUN_ID` finishes it without re-running accepted subtasks and
without merging anything twice."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import threading

from tests.conftest import RUNTIME
from tests.orchestration.conftest import (
    BASE_BRANCH,
    FIXED,
    Orchestra,
    parse_events,
)
from tests.support import kill_group, processes_with, running, wait_for


def test_killed_run_resumes_without_rerunning_or_double_merging(orchestra: Orchestra):
    o = orchestra
    n = str(100_000 + secrets.randbelow(800_000))  # a unique `sleep <n>` to find this test's agent
    slow_agent = (
        "mkdir -p docs && printf 'written by the slow agent\\n' > docs/slow.md; "
        f'if [ "$SLOW_AGENT" = yes ]; then sleep {n}; fi; '
        "printf 'Summary: wrote docs/slow.md\\nFiles changed: docs/slow.md\\n' > \"$RUNTIME_REPORT_FILE\""
    )
    fix = o.subtask("fix-mean", 1)
    slow = o.subtask("slow", 2, uses=["fix-mean"], command=slow_agent, env=["SLOW_AGENT"], whitelist=["docs/**"],
                     test_command="pytest -q tests", check_commands=["test -s docs/slow.md"])
    plan = o.plan([fix, slow], checks=["pytest -q tests"])

    proc = o.start(plan, "--merge", env={"SLOW_AGENT": "yes"})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(lambda: running("sleep", n) or proc.poll() is not None, 120,
                 what="the second group's agent to start")
        assert proc.poll() is None, (lines, proc.stderr.read())
        os.kill(proc.pid, signal.SIGKILL)  # the orchestrator alone; the sandbox dies with it
        proc.wait(timeout=10)
    finally:
        kill_group(proc)
    reader.join(timeout=10)
    wait_for(lambda: not processes_with(f"sleep {n}"), 10, what="the agent to die with the orchestrator")
    before, bad = parse_events("".join(lines))
    assert bad == []
    run_id = before[0]["run"]
    assert [e["subtask"] for e in before if e["event"] == "integrated"] == ["fix-mean"]
    assert not any(e["event"] == "run-end" for e in before)

    # The state after the crash: running, fix-mean accepted and integrated, slow interrupted.
    (run,) = o.runs()
    assert run["run_id"] == run_id and run["status"] == "running"
    rows = o.subtasks(run_id)
    assert rows["fix-mean"]["status"] == "ok" and rows["fix-mean"]["dispatches"] == 1
    assert rows["slow"]["status"] == "running"
    assert [m["subtask_id"] for m in o.merges(run_id)] == ["fix-mean"]
    assert o.sha(BASE_BRANCH) == o.base
    # What a person sees: the plan is interrupted, not running (its orchestrator's lock went with it).
    status = subprocess.run([RUNTIME, "status", "--json"], cwd=o.repo, capture_output=True, text=True,
                            env=o.full_env(), timeout=60)
    assert status.returncode == 0, status.stderr
    plans = [r for r in json.loads(status.stdout) if r["kind"] == "plan"]
    assert [(p["run_id"], p["status"]) for p in plans] == [(run_id, "interrupted")]
    fix_agent = rows["fix-mean"]["agent_id"]
    slow_agent_id = rows["slow"]["agent_id"]

    # Resume: the interrupted subtask runs again (quickly now); the accepted one does not.
    r = o.run("--resume", run_id, "--merge", env={"SLOW_AGENT": "no"})
    assert r.code == 0 and r.status == "accepted", r.describe()
    assert r.run_id == run_id
    assert r.of("dispatch", subtask="fix-mean") == []
    assert [e["agent"] for e in r.of("dispatch", subtask="slow")] == [slow_agent_id]
    assert [e["subtask"] for e in r.of("integrated")] == ["slow"]
    assert r.label("slow") == "ok"

    rows = o.subtasks(run_id)
    assert rows["fix-mean"]["dispatches"] == 1 and rows["fix-mean"]["agent_id"] == fix_agent
    assert rows["slow"]["dispatches"] == 1 and rows["slow"]["status"] == "ok"
    # No new agent ids: one spawn state folder per subtask, one spawn record for fix-mean.
    assert o.agent_folders() == sorted([fix_agent, slow_agent_id])
    assert [rec["agent"] for rec in o.audit("spawn")].count(fix_agent) == 1

    # No double merges: one merge row per subtask, each integration once on the branch.
    merges = o.merges(run_id)
    assert sorted(m["subtask_id"] for m in merges) == ["fix-mean", "slow"]
    integration = f"run/{run_id}"
    assert o.first_parents(f"{o.base}..{integration}") == [
        f"Integrate fix-mean into {integration}", f"Integrate slow into {integration}"]
    new = o.git("rev-list", f"{o.base}..{BASE_BRANCH}", "--first-parent").split()
    assert len(new) == 1 and o.parents(new[0]) == [o.base, o.sha(integration)]
    assert o.show(BASE_BRANCH, "docs/slow.md") == "written by the slow agent\n"
    assert f"/ {FIXED}" in o.show(BASE_BRANCH, "src/calc/__init__.py")

    # The report lists both subtasks; the run is over and cannot be resumed again.
    assert {row["subtask"]: row["outcome"] for row in r.rows()} == {"fix-mean": "ok", "slow": "ok"}
    assert o.runs()[0]["status"] == "accepted"
    again = o.run("--resume", run_id, "--merge", env={"SLOW_AGENT": "no"})
    assert again.code == 1 and "already ended" in again.stderr, again.describe()
    assert len(o.merges(run_id)) == 2


# -- the crash windows of the last steps ---------------------------------------------------------------
# A SIGKILL cannot be aimed at a window of a few milliseconds, so these tests build the exact state
# such a kill leaves (every step commits to the orchestrator's SQLite before the next one starts)
# from a finished run, and resume from it.

def _crash_state(o: Orchestra, run_id: str, *statements: tuple[str, tuple]) -> None:
    import sqlite3

    conn = sqlite3.connect(o.state / "orchestrator.sqlite", isolation_level=None)
    try:
        conn.execute("update runs set status = 'running', detail = null where run_id = ?", (run_id,))
        for sql, params in statements:
            conn.execute(sql, params)
    finally:
        conn.close()


def test_resume_after_a_kill_between_an_integration_merge_and_its_record_merges_nothing_twice(orchestra: Orchestra):
    """Killed after `git.merge` moved the integration branch, before `record_merge`: the branch
    holds the integration, the merges table does not. Resuming must not integrate it again."""
    o = orchestra
    plan = o.plan([o.subtask("fix-mean", 1)], checks=["pytest -q tests"])
    r = o.run(plan)
    assert r.code == 0 and r.status == "accepted", r.describe()
    run_id, integration = r.run_id, f"run/{r.run_id}"
    head = o.sha(integration)
    _crash_state(o, run_id, ("delete from merges where run_id = ? and subtask_id = 'fix-mean'", (run_id,)),
                 ("delete from events where run_id = ? and kind in ('plan-check', 'judgement', 'accepted', 'run-end')",
                  (run_id,)))

    resumed = o.run("--resume", run_id)
    assert resumed.code == 0 and resumed.status == "accepted", resumed.describe()
    assert resumed.of("dispatch") == []
    assert o.first_parents(f"{o.base}..{integration}") == [f"Integrate fix-mean into {integration}"]
    assert o.sha(integration) == head, "the agent branch was integrated a second time"
    assert [m["merged_as"] for m in o.merges(run_id)] == [head]


def test_resume_after_a_kill_right_after_the_merge_into_the_base_ends_accepted(orchestra: Orchestra):
    """Killed after the integration branch was merged into trunk, before the run was marked
    accepted: trunk now differs from the run's base because of the run's own merge. Resuming
    must finish the run as accepted (it is merged), not reject it as "trunk moved"."""
    o = orchestra
    plan = o.plan([o.subtask("fix-mean", 1)], checks=["pytest -q tests"])
    r = o.run(plan, "--merge")
    assert r.code == 0 and r.status == "accepted", r.describe()
    run_id = r.run_id
    merged = o.sha(BASE_BRANCH)
    _crash_state(o, run_id, ("delete from events where run_id = ? and kind in ('merged', 'accepted', 'run-end')",
                             (run_id,)))

    resumed = o.run("--resume", run_id, "--merge")
    assert resumed.code == 0 and resumed.status == "accepted", resumed.describe()
    assert o.sha(BASE_BRANCH) == merged, "trunk was merged into twice"
    assert o.runs()[0]["status"] == "accepted"
