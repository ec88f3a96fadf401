"""Faults `runtime spawn` must handle, each end to end with real processes, git and bubblewrap.

The agent exits non-zero, hangs, leaves children behind, forks without bound,
eats memory, takes too many turns, deletes its worktree, plants symlinks,
plants a conftest.py that tries to escape its scope; the model server errors
or hangs; the orchestrator is killed mid-run; secrets stay out of agents and
out of the audit log.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.spawn.conftest import (
    BASE_BRANCH,
    FIX_TURN,
    FIXED,
    PY,
    REPORT,
    SH_FIX,
    SH_REPORT,
    TEST_TURN,
    Spawner,
    b64,
    marker,
    no_survivors,
)
from tests.support import kill_group, running, wait_for


def assert_trunk_untouched(s: Spawner) -> None:
    assert s.sha(BASE_BRANCH) == s.base
    assert s.git("status", "--porcelain") == ""


def assert_ended(s: Spawner, r, agent_id: str, label: str) -> None:
    """The outcome, the exit code, the state file and the audit log all say `label`."""
    assert r.outcome is not None, r.describe()
    assert r.label == label, r.describe()
    assert r.code == (0 if label == "ok" else 2), r.describe()
    state = s.state_json(agent_id)
    assert state["label"] == label and state["status"] == label.split("(")[0]
    outcomes = s.audit(kind="outcome", agent=agent_id)
    assert outcomes and outcomes[-1]["data"]["label"] == label
    s.audit_intact()


# -- the agent process misbehaves ------------------------------------------------------------------

def test_agent_exits_non_zero(spawner: Spawner):
    s = spawner
    r = s.spawn(s.task(agent_id="ag-exit", command=f"{SH_FIX}; echo 'giving up: broken' >&2; exit 3"))
    assert_ended(s, r, "ag-exit", "failed(agent)")
    assert "exited with code 3" in r.outcome["message"] and "giving up: broken" in r.outcome["message"]
    assert r.outcome["attempts"][0]["exit_code"] == 3 and r.outcome["commit"] is None
    # Its work is kept for inspection on its branch, never verified, never on trunk.
    inspection = r.outcome["inspection"]
    assert inspection and "Verified: no" in s.message(inspection)
    assert_trunk_untouched(s)


def test_agent_hangs_past_its_timeout(spawner: Spawner):
    s = spawner
    n = marker()
    started = time.monotonic()
    r = s.spawn(s.task(agent_id="ag-hang", command=f"sleep {n}", limits={"timeout-s": 2}))
    assert_ended(s, r, "ag-hang", "exhausted(timeout)")
    assert r.outcome["attempts"][0]["breach"] == "timeout"
    assert time.monotonic() - started < 30
    no_survivors(f"sleep {n}")
    assert_trunk_untouched(s)


@pytest.mark.parametrize("how", ["background", "setsid", "double-fork"])
def test_background_child_is_killed(spawner: Spawner, how: str):
    s = spawner
    n = marker()
    start = {"background": f"sleep {n} &",
             "setsid": f"setsid sleep {n} &",
             "double-fork": f"( ( sleep {n} & ) & );"}[how]
    r = s.spawn(s.task(agent_id=f"ag-orphan-{how}", command=f"{SH_FIX}; {start} {SH_REPORT}; exit 0"))
    assert_ended(s, r, f"ag-orphan-{how}", "ok")
    no_survivors(f"sleep {n}")


def test_background_child_is_killed_without_os_sandbox(spawner: Spawner):
    s = spawner
    n = marker()
    r = s.spawn(s.task(agent_id="ag-orphan-nosb", command=f"{SH_FIX}; sleep {n} & {SH_REPORT}; exit 0"),
                "--no-os-sandbox")
    assert_ended(s, r, "ag-orphan-nosb", "ok")
    no_survivors(f"sleep {n}")


def test_fork_bomb_is_stopped_at_max_processes(spawner: Spawner):
    s = spawner
    n = marker()
    # Forks as fast as the shell can (bounded at 1000 so a broken limit cannot take the machine down).
    bomb = f"i=0; while [ $i -lt 1000 ]; do sleep {n} & i=$((i+1)); done; wait"
    started = time.monotonic()
    r = s.spawn(s.task(agent_id="ag-forks", command=bomb, limits={"max-processes": 30, "timeout-s": 60}))
    assert_ended(s, r, "ag-forks", "exhausted(processes)")
    no_survivors(f"sleep {n}", timeout=10)
    assert_trunk_untouched(s)
    # The limit is enforced promptly (a poll is 0.1 s), not after the tree has grown for many seconds.
    attempt = r.outcome["attempts"][0]
    assert attempt["duration_s"] < 10, f"the fork bomb ran {attempt['duration_s']:.1f} s before it was stopped"
    assert time.monotonic() - started < 30


def test_memory_growth_is_stopped(spawner: Spawner):
    s = spawner
    n = marker()
    hog = f"exec {PY} -c 'import time; x = bytearray(b\"a\") * (400 << 20); time.sleep({n})'"
    r = s.spawn(s.task(agent_id="ag-memory", command=hog, limits={"memory-mb": 100, "timeout-s": 30}))
    assert_ended(s, r, "ag-memory", "exhausted(memory)")
    no_survivors(f"time.sleep({n})")


def test_too_many_turns(spawner: Spawner):
    s = spawner
    turns = [[{"name": "Glob", "input": {"pattern": f"src/**/*{i}.py"}}] for i in range(60)] + [REPORT]
    r = s.spawn(s.task(agent_id="ag-turns", script=turns, limits={"max-turns": 3}))
    assert_ended(s, r, "ag-turns", "exhausted(turns)")
    assert r.outcome["commit"] is None
    assert_trunk_untouched(s)


def test_turns_over_the_limit_are_exhausted_even_when_the_agent_is_quick(spawner: Spawner):
    """An agent that ends between two polls after more turns than allowed has still breached the limit."""
    s = spawner
    script = [FIX_TURN, [{"name": "Read", "input": {"file_path": "src/calc/__init__.py"}}],
              [{"name": "Read", "input": {"file_path": "tests/test_calc.py"}}], REPORT]
    r = s.spawn(s.task(agent_id="ag-quick-turns", script=script, limits={"max-turns": 2}))
    assert r.outcome is not None, r.describe()
    assert r.outcome["attempts"][0]["turns"] == 4
    assert r.label == "exhausted(turns)", r.describe()
    assert r.outcome["commit"] is None


def test_agent_deletes_its_worktree_outside_the_sandbox(spawner: Spawner):
    s = spawner
    # Without the OS sandbox nothing stops it: it empties its worktree, .git link included.
    wipe = ('case "$PWD" in */state/worktrees/*) rm -rf ./* ./.git ./.gitignore;; *) exit 9;; esac; ' + SH_REPORT)
    r = s.spawn(s.task(agent_id="ag-wipe", command=wipe), "--no-os-sandbox")
    assert_ended(s, r, "ag-wipe", "failed(workspace)")
    assert r.outcome["commit"] is None
    assert "Verified: yes" not in s.git("log", "--format=%B", "--all")
    assert_trunk_untouched(s)
    assert not s.worktree("ag-wipe").exists()
    assert (s.repo / "src" / "calc" / "__init__.py").exists()


def test_agent_removes_its_worktree_folder_outside_the_sandbox(spawner: Spawner):
    s = spawner
    wipe = 'case "$PWD" in */state/worktrees/*) d=$PWD; cd / && rm -rf "$d";; *) exit 9;; esac'
    r = s.spawn(s.task(agent_id="ag-rmdir", command=wipe), "--no-os-sandbox")
    assert_ended(s, r, "ag-rmdir", "failed(workspace)")
    assert r.outcome["commit"] is None and r.outcome["inspection"] is None
    assert_trunk_untouched(s)
    assert s.git("worktree", "prune") == "" and str(s.worktree("ag-rmdir")) not in s.git("worktree", "list")


def test_sandbox_stops_an_agent_deleting_its_worktree(spawner: Spawner):
    s = spawner
    n = marker()
    # Inside the sandbox only the write scope is writable: .git and the rest of the worktree survive.
    wipe = (f'rm -rf ./* ./.git ./.gitignore 2>/dev/null; '
            f'if [ -e .git ] && [ -e README.md ]; then echo survived-{n}; fi; {SH_REPORT}')
    r = s.spawn(s.task(agent_id="ag-wipe-sb", command=wipe, scope={"files-whitelist": ["src/calc/**"]}))
    assert r.outcome is not None, r.describe()
    assert (s.run_dir("ag-wipe-sb") / "attempt-1" / "stdout.log").read_text().strip() == f"survived-{n}"
    # What it could delete was inside its scope; the tests then fail: rejected, never verified.
    assert r.label == "rejected", r.describe()
    assert r.outcome["commit"] is None
    assert "Verified: yes" not in s.git("log", "--format=%B", "--all")
    assert_trunk_untouched(s)


@pytest.mark.parametrize("target", ["../../.git", "/etc", "../../../../../repo/.git"], ids=["dotgit", "etc", "repo-git"])
def test_planted_symlink_is_rejected(spawner: Spawner, target: str, request):
    s = spawner
    agent_id = "ag-link-" + request.node.callspec.id
    plant = f"{SH_FIX}; ln -s '{target}' src/calc/escape; {SH_REPORT}"
    r = s.spawn(s.task(agent_id=agent_id, command=plant), "--merge")
    assert_ended(s, r, agent_id, "rejected")
    scope = next(c for c in r.outcome["attempts"][0]["checks"] if c["atom"] == "scope::files-whitelist")
    assert scope["status"] == "rejected" and "src/calc/escape" in scope["feedback"]
    assert r.outcome["commit"] is None and r.outcome["merged"] is None
    assert "Verified: yes" not in s.git("log", "--format=%B", "--all")
    assert_trunk_untouched(s)


def test_conftest_cannot_escape_the_scope(spawner: Spawner):
    """A conftest.py the agent writes in scope runs (in the verify tests) but cannot write outside it."""
    s = spawner
    targets = {
        "worktree root": str(s.worktree("ag-conftest") / "PWNED-root"),
        "base repository": str(s.repo / "PWNED-repo"),
        "base repository's .git": str(s.repo / ".git" / "PWNED-git"),
        "agent .git link": str(s.worktree("ag-conftest") / ".git"),
        "state folder": str(s.state / "PWNED-state"),
        "test tmp": str(s.tmp / "PWNED-tmp"),
    }
    conftest = (
        "import os\n\n"
        "print('conftest ran', flush=True)\n"
        "with open(os.path.join(os.environ['HOME'], 'conftest-ran'), 'a') as fh:\n"
        "    fh.write('ran\\n')\n"
        f"TARGETS = {json.dumps(list(targets.values()))}\n"
        "for target in TARGETS:\n"
        "    try:\n"
        "        with open(target, 'a') as fh:\n"
        "            fh.write('pwned\\n')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    script = [FIX_TURN, [{"name": "Write", "input": {"file_path": "tests/conftest.py", "content": conftest}}],
              TEST_TURN, REPORT]
    # verify's and the merge's commands each have a home of their own, removed after: the conftest says it ran
    # in the run's command logs
    verification = {"test-command": "pytest -q -s tests", "test-count-min": 4, "check-commands": ["python3 -m tabnanny src"]}
    r = s.spawn(s.task(agent_id="ag-conftest", script=script, verification=verification), "--merge", "--keep")
    assert r.outcome is not None, r.describe()
    wt = s.worktree("ag-conftest")
    for what, target in targets.items():
        if what == "agent .git link":
            assert "pwned" not in (wt / ".git").read_text(), "the conftest rewrote the worktree's .git link"
        else:
            assert not os.path.exists(target), f"the conftest wrote into the {what}: {target}"
    # The conftest did run, sandboxed: in the agent's own pytest, in verify's run of the work's own tests and on
    # the simulated merge; never beside the base's tests, which run on the base's own conftest.
    run_dir = s.run_dir("ag-conftest")
    runs = (run_dir / "home" / "conftest-ran").read_text().split()
    logs = sorted((run_dir / "attempt-1" / "commands").glob("*-work.log"))
    base_tests, new_tests = [log.read_text() for log in logs if "pytest" in log.read_text().splitlines()[0]]
    assert "conftest ran" not in base_tests and "conftest ran" in new_tests
    for log in [*logs, *(run_dir / "merge-commands").glob("*.log")]:
        runs += [line for line in log.read_text().splitlines() if line == "conftest ran"]
    assert runs == ["ran", "conftest ran", "conftest ran"], runs
    # The sandbox stopped every effect but a new file at the worktree's top, where a repository's own commands
    # write their scratch: thrown away before verify, and said so. The work itself is clean: ok, and nothing
    # foreign committed.
    assert r.label == "ok", r.describe()
    (attempt,) = r.outcome["attempts"]
    (scratch,) = [c for c in attempt["checks"] if c["kind"] == "scratch"]
    assert scratch["status"] == "passed" and "`PWNED-root`" in scratch["feedback"], scratch
    assert sorted(s.git("diff", "--name-only", s.base, r.outcome["commit"]).splitlines()) == [
        "src/calc/__init__.py", "tests/conftest.py"]
    assert not (s.repo / "PWNED-root").exists()


# -- the model server --------------------------------------------------------------------------------

def assert_id_free(s: Spawner, agent_id: str) -> None:
    """A run that failed before its agent did anything claims nothing: no branch, no worktree, and its
    state says the id is free."""
    assert s.git("branch", "--list", f"agent/{agent_id}") == ""
    assert not s.worktree(agent_id).exists()
    assert s.state_json(agent_id)["id_free"] is True
    assert [r["data"]["branch"] for r in s.audit(kind="free", agent=agent_id)] == [f"agent/{agent_id}"]


def test_model_server_errors_end_as_failed_llm_and_leave_the_agent_id_free(spawner: Spawner):
    s = spawner
    with FakeOpenAIServer([[FIX_TURN[0]], REPORT]) as server:
        server.fail_next(3, status=500)  # up (its model list answers), but every chat of the first run fails
        task = s.task(agent_id="ag-llm-500", agent={"model": "openai/fake", "api-base": server.url + "/v1"})
        started = time.monotonic()
        r = s.spawn(task, env={"OPENAI_API_KEY": "sk-fake-orchestrator-key-0001"})
        elapsed = time.monotonic() - started
        requests = server.chat_requests()
        assert_ended(s, r, "ag-llm-500", "failed(llm)")
        assert "500" in r.outcome["message"] and r.outcome["id_free"] is True
        # Bounded retries: the first call and two retries, then the run ends, in seconds.
        assert len(requests) == 3 and all(req.outcome == "failed:500" for req in requests)
        assert elapsed < 60
        assert r.outcome["commit"] is None and r.outcome["inspection"] is None
        assert_trunk_untouched(s)
        assert_id_free(s, "ag-llm-500")
        # The same command again, once the server answers: no `prune --unmerged` needed.
        again = s.spawn(task, env={"OPENAI_API_KEY": "sk-fake-orchestrator-key-0001"})
    assert_ended(s, again, "ag-llm-500", "ok")
    assert FIXED in s.show(again.outcome["commit"], "src/calc/__init__.py")
    assert "id_free" not in s.state_json("ag-llm-500") or s.state_json("ag-llm-500")["id_free"] is False
    assert [r["data"]["label"] for r in s.audit(kind="outcome", agent="ag-llm-500")] == ["failed(llm)", "ok"]


def test_a_model_server_failing_every_call_is_refused_before_anything_is_made(spawner: Spawner):
    s = spawner
    with FakeOpenAIServer([REPORT]) as server:
        server.fail_every(500)
        task = s.task(agent_id="ag-llm-down", agent={"model": "openai/fake", "api-base": server.url + "/v1"})
        r = s.spawn(task, env={"OPENAI_API_KEY": "sk-fake-orchestrator-key-0004"})
        chats = server.chat_requests()
        asked = [req.path for req in server.requests]
    assert r.code == 1, r.describe()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "[agent] model" in lines[0] and "answers HTTP 500" in lines[0], r.stderr
    assert chats == [] and asked == ["/v1/models"]  # one look at its model list, no model call
    assert s.git("branch", "--list", "agent/ag-llm-down") == ""
    assert not s.run_dir("ag-llm-down").exists() and not s.worktree("ag-llm-down").exists()
    assert_trunk_untouched(s)


def test_an_agent_that_never_started_leaves_its_id_free(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-no-start", command=["/nonexistent/agent-program"])
    r = s.spawn(task)
    assert_ended(s, r, "ag-no-start", "failed(agent)")
    assert r.outcome["id_free"] is True and r.outcome["inspection"] is None
    assert_id_free(s, "ag-no-start")
    again = s.spawn(task)  # refused as "already ran" before; now it runs (and fails the same way)
    assert_ended(s, again, "ag-no-start", "failed(agent)")
    assert again.outcome["id_free"] is True


def test_a_runtime_fault_before_the_agent_starts_leaves_its_id_free(spawner: Spawner, monkeypatch):
    """The broker does not start (a fault of the runtime, raised as it is): nothing ran, so nothing claims
    the id, and the same task then runs."""
    import anyio

    from runtime.spawn import attempts
    from runtime.spawn.pipeline import SpawnOptions, spawn
    from tests.conftest import REPO

    s = spawner
    task = s.task(agent_id="ag-no-broker")

    def broken(run):
        raise RuntimeError("the broker would not start")

    monkeypatch.setattr(attempts, "_start_broker", broken)
    options = SpawnOptions(repo=s.repo, state_dir=s.state, catalog=str(REPO))
    with pytest.raises(RuntimeError, match="would not start"):
        anyio.run(spawn, task, options)
    assert s.state_json("ag-no-broker")["label"] == "failed(runtime)"
    assert_id_free(s, "ag-no-broker")
    monkeypatch.undo()
    again = s.spawn(task)
    assert_ended(s, again, "ag-no-broker", "ok")


def test_an_agent_that_did_something_keeps_its_id(spawner: Spawner):
    """The same failure after the agent worked: its work is kept for inspection, and the id with it."""
    s = spawner
    task = s.task(agent_id="ag-did-work", command=f"{SH_FIX}; exit 3")
    r = s.spawn(task)
    assert_ended(s, r, "ag-did-work", "failed(agent)")
    assert r.outcome["id_free"] is False and r.outcome["inspection"]
    again = s.spawn(task)
    assert again.code == 1 and "already ran" in again.stderr, again.describe()


def test_model_server_over_real_http(spawner: Spawner):
    s = spawner
    key = "sk-fake-orchestrator-key-0002"
    with FakeOpenAIServer([[FIX_TURN[0]], [TEST_TURN[0]], REPORT]) as server:
        server.fail_next(1, status=503)  # one transient error, retried by the broker
        task = s.task(agent_id="ag-llm-http", agent={"model": "openai/fake", "api-base": server.url + "/v1"})
        r = s.spawn(task, env={"OPENAI_API_KEY": key})
        requests = server.chat_requests()
    assert_ended(s, r, "ag-llm-http", "ok")
    assert FIXED in s.show(r.outcome["commit"], "src/calc/__init__.py")
    assert [req.outcome for req in requests] == ["failed:503", "turn", "turn", "turn"]
    first = requests[1].body
    assert first["messages"][0]["role"] == "system" and "calc.mean returns a wrong average" in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} >= {"Read", "Edit", "Bash"}
    # The key is the orchestrator's: it went to the model server, never to the agent.
    assert requests[1].headers.get("Authorization") == f"Bearer {key}"
    for log in (s.run_dir("ag-llm-http") / "attempt-1").rglob("*"):  # its transcripts and command logs
        assert log.is_dir() or key not in log.read_text()
    assert key not in s.audit_text()


def test_model_server_hang_is_bounded_by_the_timeout(spawner: Spawner):
    s = spawner
    with FakeOpenAIServer([REPORT], hang_s=60) as server:
        server.hang_next(10)
        task = s.task(agent_id="ag-llm-hang", agent={"model": "openai/fake", "api-base": server.url + "/v1"},
                      limits={"timeout-s": 3})
        started = time.monotonic()
        r = s.spawn(task, env={"OPENAI_API_KEY": "sk-fake-orchestrator-key-0003"}, timeout=90)
        elapsed = time.monotonic() - started
    assert_ended(s, r, "ag-llm-hang", "exhausted(timeout)")
    assert elapsed < 45
    no_survivors(str(s.run_dir("ag-llm-hang") / "agent-ro" / "bundle.md"))  # the agent process is gone
    assert_trunk_untouched(s)


# -- the orchestrator dies ---------------------------------------------------------------------------

def test_orchestrator_killed_mid_run_then_rerun(spawner: Spawner):
    s = spawner
    n = marker()
    # Slow only when told so: the re-run of the very same task finishes quickly.
    agent = f'{SH_FIX}; if [ "$SLOW_AGENT" = yes ]; then sleep {n}; fi; {SH_REPORT}'
    task = s.task(agent_id="ag-killed", command=agent, agent={"env": ["SLOW_AGENT"]})
    proc = s.start(task, env={"SLOW_AGENT": "yes"})
    try:
        wait_for(lambda: running("sleep", n) or proc.poll() is not None, 60, what="the agent to start")
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGKILL)  # the orchestrator alone; the sandbox dies with it
        proc.wait(timeout=10)
    finally:
        kill_group(proc)
    no_survivors(f"sleep {n}", timeout=10)

    # A consistent picture: the run shows as interrupted, trunk untouched, the chain intact.
    runs = s.status()
    assert [(r["agent_id"], r["status"]) for r in runs] == [("ag-killed", "interrupted")]
    assert s.state_json("ag-killed")["status"] == "running"
    assert_trunk_untouched(s)
    s.audit_intact()
    assert s.audit(kind="outcome") == []

    # The re-run recovers and completes, with exactly one verified commit.
    r = s.spawn(task, env={"SLOW_AGENT": "no"})
    assert_ended(s, r, "ag-killed", "ok")
    verified = [c for c in s.commits(f"{s.base}..agent/ag-killed") if "Verified: yes" in s.message(c)]
    assert verified == [r.outcome["commit"]]
    assert s.commits(f"{s.base}..agent/ag-killed") == verified
    assert [rec["data"]["finished"] for rec in s.audit(kind="recover")] == [False]
    # And once more: the finished run is refused, nothing committed twice.
    again = s.spawn(task, env={"SLOW_AGENT": "no"})
    assert again.code == 1 and "already ran" in again.stderr
    assert s.commits(f"{s.base}..agent/ag-killed") == verified
    assert_trunk_untouched(s)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_mid_spawn_keeps_the_work_and_a_rerun_resumes_it(spawner: Spawner, sig):
    s = spawner
    n = marker()
    agent_id = f"ag-int-{sig.name.lower()}"
    agent = f'{SH_FIX}; if [ "$SLOW_AGENT" = yes ]; then sleep {n}; fi; {SH_REPORT}'
    task = s.task(agent_id=agent_id, command=agent, agent={"env": ["SLOW_AGENT"]})
    proc = s.start(task, env={"SLOW_AGENT": "yes"})
    try:
        wait_for(lambda: running("sleep", n) or proc.poll() is not None, 60, what="the agent to start")
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, sig)  # what a terminal's Ctrl-C, or a service manager's stop, sends
        out, err = proc.communicate(timeout=60)
    finally:
        kill_group(proc)
    no_survivors(f"sleep {n}", timeout=10)
    # One line saying what was kept and how to go on; exit 130; the state says interrupted.
    assert proc.returncode == 130, (out, err)
    assert f"work is kept on branch agent/{agent_id}" in err and "again to resume" in err, err
    state = s.state_json(agent_id)
    assert state["status"] == "interrupted" and state["work"]
    kept = s.commits(f"{s.base}..agent/{agent_id}")
    assert kept == [state["work"]] and "Outcome: interrupted" in s.message(kept[0])
    assert FIXED in s.git("show", f"{kept[0]}:src/calc/__init__.py")
    assert_trunk_untouched(s)
    s.audit_intact()
    assert [r["data"]["work"] for r in s.audit(kind="interrupted")] == [state["work"]]

    # The same command again carries on from the kept work, and ends verified on top of it.
    r = s.spawn(task, env={"SLOW_AGENT": "no"})
    assert_ended(s, r, agent_id, "ok")
    assert s.commits(f"{s.base}..agent/{agent_id}") == [r.outcome["commit"], state["work"]]
    assert [rec["data"].get("resumed") for rec in s.audit(kind="recover")] == ["interrupted"]
    assert_trunk_untouched(s)


# -- secrets -------------------------------------------------------------------------------------------

SECRET = "tok-SECRET-abcdef123"


def test_undeclared_secret_never_reaches_the_agent(spawner: Spawner):
    s = spawner
    agent = f"{SH_FIX}; env; cat /proc/self/environ | tr '\\0' '\\n'; {SH_REPORT}"
    r = s.spawn(s.task(agent_id="ag-env", command=agent),
                env={"MY_SERVICE_TOKEN": SECRET, "OPENAI_API_KEY": "sk-orchestrator-only-123"})
    assert_ended(s, r, "ag-env", "ok")
    seen = (s.run_dir("ag-env") / "attempt-1" / "stdout.log").read_text()
    assert "HOME=" in seen and "PATH=" in seen  # it did print its environment
    for leaked in (SECRET, "MY_SERVICE_TOKEN", "sk-orchestrator-only-123", "OPENAI_API_KEY",
                   "RUNTIME_STATE_DIR", "RUNTIME_CACHE_DIR", str(s.repo)):
        assert leaked not in seen, leaked


def test_declared_secret_reaches_the_agent(spawner: Spawner):
    s = spawner
    agent = (f'{SH_FIX}; if [ "$MY_SERVICE_TOKEN" = {SECRET} ]; then echo declared-seen; fi; '
             'if [ -n "$OTHER_TOKEN" ]; then echo undeclared-seen; fi; ' + SH_REPORT)
    r = s.spawn(s.task(agent_id="ag-env-decl", command=agent, agent={"env": ["MY_SERVICE_TOKEN"]}),
                env={"MY_SERVICE_TOKEN": SECRET, "OTHER_TOKEN": "other-secret-456789"})
    assert_ended(s, r, "ag-env-decl", "ok")
    assert (s.run_dir("ag-env-decl") / "attempt-1" / "stdout.log").read_text().split() == ["declared-seen"]


def test_declared_secret_echoed_is_redacted_in_the_audit_log(spawner: Spawner):
    s = spawner
    script = [
        FIX_TURN,
        [{"name": "Bash", "input": {"command": f"echo {SECRET}"}}],
        [{"name": "Bash", "input": {"command": f"echo {b64(SECRET)}"}}],
        TEST_TURN,
        REPORT + f"Token: {SECRET}\nEncoded: {b64(SECRET)}\n",
    ]
    # verify's test command prints the token too: its log on disk must not hold it
    verification = {"test-command": 'pytest -q tests && echo "token: $MY_SERVICE_TOKEN"', "test-count-min": 4,
                    "check-commands": ["python3 -m tabnanny src"]}
    task = s.task(agent_id="ag-redact", script=script, agent={"env": ["MY_SERVICE_TOKEN"]}, verification=verification)
    r = s.spawn(task, env={"MY_SERVICE_TOKEN": SECRET})
    assert_ended(s, r, "ag-redact", "ok")
    audit = s.audit_text()
    assert "[REDACTED:MY_SERVICE_TOKEN]" in audit
    tools = [t for t in s.audit(kind="tool") if t["data"]["tool"] == "Bash"]
    assert len(tools) == 3
    for form in (SECRET, b64(SECRET), b64(SECRET).rstrip("=")):
        assert form not in audit, f"the audit log holds {form}"
    # Reports and transcripts are redacted too: the run's state, its logs, the printed outcome.
    attempt = s.run_dir("ag-redact") / "attempt-1"
    logs = "".join(log.read_text() for log in (attempt / "commands").glob("*.log"))
    assert "token: [REDACTED:MY_SERVICE_TOKEN]" in logs  # verify's command logs are among them, redacted
    for path in [s.run_dir("ag-redact") / "state.json", *(p for p in attempt.rglob("*") if p.is_file())]:
        text = path.read_text()
        for form in (SECRET, b64(SECRET)):
            assert form not in text, f"{path.name} holds {form}"
    assert SECRET not in r.proc.stdout and b64(SECRET) not in r.proc.stdout
