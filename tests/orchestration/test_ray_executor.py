"""`runtime run --executor ray` on a real Ray cluster: a head and two worker nodes on this machine.

The cluster runs inside a network namespace of the test's own with only loopback up (see
`loopback_cluster.py`), so every Ray address is 127.0.0.1 and nothing leaves the machine. These
tests need Ray, `unshare` and `ip`; under CI a missing one fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.orchestration.conftest import FIX_REPORT, FIX_TURN, FIXED, result_of

HELPER = Path(__file__).with_name("loopback_cluster.py")
SERVE = Path(__file__).with_name("serve_fake_model.py")
STEPS = Path(__file__).with_name("kill_and_resume.py")
MODEL_PORT = 18080  # inside the cluster's own network namespace: no other test's port
CANARY = "sk-canary-ray-7f3a9c"
ADD_TESTS = "pytest -q tests -k add"  # passes with the buggy mean too


def _writes(path: str, text: str, *, sleep: int = 0) -> str:
    """A command agent that writes ``path`` and its report (after ``sleep`` seconds)."""
    report = f"printf 'Summary: wrote {path}\\nFiles changed: {path}\\n' > \"$RUNTIME_REPORT_FILE\""
    return (f"sleep {sleep}; " if sleep else "") + f"printf '{text}' > {path}; {report}"


def _need_cluster_tools() -> None:
    missing = [t for t in ("unshare", "ip") if shutil.which(t) is None]
    try:
        import ray  # noqa: F401
    except ImportError:
        missing.append("ray (pip install 'agent-role-runtime[ray]')")
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the Ray tests need {', '.join(missing)}")
        pytest.skip(f"needs {', '.join(missing)}")


def in_cluster(orchestra, *args: str, kill_busy_node: bool = False, env: dict[str, str] | None = None,
               timeout: float = 600, serve: list[str] | None = None,
               command: list[str] | None = None) -> tuple[object, dict]:
    """`runtime run --json --executor ray ARGS` (or ``command``) against a fresh loopback cluster;
    (RunResult, observed)."""
    _need_cluster_tools()
    temp = tempfile.mkdtemp(prefix="rr", dir="/tmp")  # short: Ray's socket paths live in it
    out = Path(temp) / "observed.json"
    spec = {"temp": f"{temp}/r", "command": command or [*orchestra.argv("--executor", "ray", *args)],
            "cwd": str(orchestra.repo),
            "env": {"RUNTIME_STATE_DIR": str(orchestra.state), **(env or {})}, "out": str(out),
            "kill_busy_node": kill_busy_node, "canary": CANARY, "serve": serve, "serve_port": MODEL_PORT}
    spec_path = Path(temp) / "spec.json"
    spec_path.write_text(json.dumps(spec))
    try:
        subprocess.run(["unshare", "-n", "-p", "-f", "--mount-proc", sys.executable, str(HELPER), str(spec_path)],
                       check=True, timeout=timeout, cwd=REPO)
        observed = json.loads(out.read_text())
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return result_of(observed["code"], observed["stdout"], observed["stderr"]), observed


def _returned_nodes(result) -> dict[str, str]:
    """Subtask id -> the node id its job ran on (from the `returned` progress events)."""
    return {e["subtask"]: e["node"] for e in result.events
            if e["event"] == "progress" and e.get("state") == "returned"}


def test_subtasks_run_on_both_workers_and_merge_once_with_no_key_anywhere(orchestra):
    subtasks = [orchestra.subtask("fix"),
                orchestra.subtask("note", command=_writes("NOTES.md", "notes\\n"), whitelist=["NOTES.md"],
                                  test_command=ADD_TESTS),
                orchestra.subtask("doc", sequence=2, uses=["fix", "note"], command=_writes("docs.md", "# calc\\n"),
                                  whitelist=["docs.md"])]
    plan = orchestra.plan(subtasks, checks=["pytest -q tests"], concurrency=2)
    result, observed = in_cluster(orchestra, str(plan), "--merge", env={"OPENAI_API_KEY": CANARY})
    assert result.code == 0, (result.stderr, observed["stderr"])
    nodes = _returned_nodes(result)
    workers = {node: name for node, name in observed["nodes"].items() if name != "head"}
    assert set(nodes) == {"fix", "note", "doc"}
    assert {nodes["fix"], nodes["note"]} == set(workers), "the first group is spread over both workers"
    # Merged once, by the orchestrator: one merge of the run into trunk, each agent's work in it once.
    assert [s for s in orchestra.first_parents("trunk") if s.startswith("Merge run")] != []
    assert len([s for s in orchestra.first_parents("trunk") if s.startswith("Merge run")]) == 1
    assert FIXED in orchestra.show("trunk", "src/calc/__init__.py")
    assert orchestra.show("trunk", "NOTES.md") == "notes\n" and orchestra.show("trunk", "docs.md") == "# calc\n"
    imported = [e["subtask"] for e in result.events if e["event"] == "imported"]
    assert sorted(imported) == ["doc", "fix", "note"]
    # No key in any Ray process's environment or any file of the cluster (objects spill, logs, sessions).
    assert observed["leaks"] == []
    # One audit log at the orchestrator, with the workers' records in it, chained.
    audit = [json.loads(line) for line in (orchestra.state / "audit.jsonl").read_text().splitlines()]
    from_workers = [r for r in audit if isinstance(r["data"].get("worker"), dict)]
    assert {r["data"]["worker"]["node"] for r in from_workers} == set(workers)
    assert {r["kind"] for r in from_workers} >= {"spawn", "check", "outcome"}
    verify = subprocess.run([str(Path(sys.executable).with_name("runtime")), "audit", "verify",
                             "--state-dir", str(orchestra.state)], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_model_calls_are_made_by_the_orchestrator_with_the_key_only_it_holds(orchestra, tmp_path):
    """A builtin agent on a worker node calls a real model API (a fake OpenAI server, over litellm's
    real HTTP path): the call is made by the orchestrator, with its key, which no worker ever sees;
    the agent's progress comes back while it runs."""
    turns, seen = tmp_path / "turns.json", tmp_path / "seen.json"
    turns.write_text(json.dumps([FIX_TURN, FIX_REPORT]))
    sub = orchestra.subtask("fix")
    sub["agent"] = {"backend": "builtin", "model": "openai/fake-model", "api-base": f"http://127.0.0.1:{MODEL_PORT}/v1",
                    "retries": 0, "limits": {"timeout-s": 90, "max-turns": 20}}
    result, observed = in_cluster(orchestra, str(orchestra.plan([sub])), "--merge", env={"OPENAI_API_KEY": CANARY},
                                  serve=[sys.executable, str(SERVE), str(turns), str(MODEL_PORT), str(seen)])
    assert result.code == 0, (result.stderr, observed["stderr"])
    requests = json.loads(seen.read_text())
    assert len(requests) == 2 and all(r["authorization"] == f"Bearer {CANARY}" for r in requests), requests
    assert {r["model"] for r in requests} == {"fake-model"}
    assert observed["leaks"] == []
    assert FIXED in orchestra.show("trunk", "src/calc/__init__.py")
    workers = {node for node, name in observed["nodes"].items() if name != "head"}
    live = [e for e in result.events if e["event"] == "progress" and e.get("state") not in ("dispatched", "returned")]
    assert any(e.get("tool_calls", 0) >= 1 and e.get("node") in workers for e in live), live


def test_a_worker_node_killed_mid_job_is_dispatched_again(orchestra):
    sub = orchestra.subtask("slow", command=_writes("SLOW.md", "done\\n", sleep=6), whitelist=["SLOW.md"],
                            test_command=ADD_TESTS)
    plan = orchestra.plan([sub], max_dispatches=3)
    result, observed = in_cluster(orchestra, str(plan), kill_busy_node=True)
    assert observed["killed"], "a busy node's raylet was killed"
    assert result.code == 0, (result.stderr, observed["stderr"])
    assert result.bad_lines == [], "stdout stays the JSON event stream when Ray reports the dead node"
    ends = [e for e in result.events if e["event"] == "subtask-end"]
    assert [e["label"] for e in ends] == ["failed(node)", "ok"]
    assert [e["subtask"] for e in result.events if e["event"] == "redispatch"] == ["slow"]
    run_end = next(e for e in result.events if e["event"] == "run-end")
    assert run_end["status"] == "accepted"


def test_jobs_go_where_their_labels_say_and_none_waits_for_a_node_that_cannot_hold_it(orchestra):
    """Placed by its node labels and reserving its CPUs; a job that no node can hold (memory, CPUs,
    labels) is failed(runtime) at once with the figures, instead of Ray's endless wait."""
    def sub(sid: str, path: str, **extra):
        return orchestra.subtask(sid, command=_writes(path, f"{sid}\\n"), whitelist=[path], test_command=ADD_TESTS, **extra)

    placed = sub("placed", "D.md", limits={"cpus": 2})
    placed["node-labels"] = {"runtime-test/worker": "w2"}
    nowhere = sub("nowhere", "C.md")
    nowhere["node-labels"] = {"runtime-test/worker": "w9"}
    subtasks = [sub("huge", "A.md", limits={"memory-mb": 4_000_000}), sub("wide", "B.md", limits={"cpus": 64}),
                nowhere, placed]
    result, observed = in_cluster(orchestra, str(orchestra.plan(subtasks, concurrency=4)), timeout=300)
    assert result.code == 2, (result.stderr, observed["stderr"])
    ends = {e["subtask"]: e["label"] for e in result.events if e["event"] == "subtask-end"}
    assert ends == {"huge": "failed(runtime)", "wide": "failed(runtime)", "nowhere": "failed(runtime)", "placed": "ok"}
    w2 = next(node for node, name in observed["nodes"].items() if name == "w2")
    assert _returned_nodes(result)["placed"] == w2
    report = result.report or ""
    assert "memory-mb = 4000000" in report and "cpus = 64 (the most is 2)" in report, report
    assert "carries the labels runtime-test/worker=w9" in report, report


def test_an_unreachable_cluster_is_one_line_and_nothing_is_created(orchestra):
    _need_cluster_tools()
    plan = orchestra.plan([orchestra.subtask("fix")])
    proc = subprocess.run([*orchestra.argv("--executor", "ray", "--ray-address", "127.0.0.1:1", str(plan))],
                          cwd=orchestra.repo, capture_output=True, text=True, env=orchestra.full_env(), timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Ray cluster at 127.0.0.1:1" in lines[0], proc.stderr
    assert not orchestra.state.exists() and orchestra.branches() == ["trunk"]


def test_a_plan_naming_an_unreachable_cluster_is_one_line_and_nothing_is_created(orchestra):
    _need_cluster_tools()
    plan = orchestra.plan([orchestra.subtask("fix")], executor="ray", ray_address="127.0.0.1:1")
    proc = subprocess.run([*orchestra.argv(str(plan))], cwd=orchestra.repo, capture_output=True, text=True,
                          env=orchestra.full_env(), timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Ray cluster at 127.0.0.1:1" in lines[0], proc.stderr
    assert not orchestra.state.exists() and orchestra.branches() == ["trunk"]
    local = subprocess.run([*orchestra.argv("--executor", "local", "--ray-address", "127.0.0.1:1", str(plan))],
                           cwd=orchestra.repo, capture_output=True, text=True, env=orchestra.full_env(), timeout=120)
    assert local.returncode == 1 and "--ray-address goes with --executor ray" in local.stderr


def test_an_orchestrator_killed_mid_run_resumes_on_the_cluster_without_double_merges(orchestra, tmp_path):
    """SIGKILL the orchestrator while the second group's job is out on a worker; `--resume` with
    the Ray executor runs that subtask again and merges each accepted subtask exactly once."""
    fix = orchestra.subtask("fix-mean", 1)
    slow = orchestra.subtask("slow", 2, uses=["fix-mean"], command=_writes("docs.md", "slow\\n", sleep=8),
                             whitelist=["docs.md"], test_command=ADD_TESTS)
    plan = orchestra.plan([fix, slow], checks=["pytest -q tests"])
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps({"run": orchestra.argv("--executor", "ray", str(plan), "--merge"),
                                 "resume": orchestra.argv("--executor", "ray", "--merge"),
                                 "subtask": "slow", "after_s": 3}))
    _, observed = in_cluster(orchestra, command=[sys.executable, str(STEPS), str(steps)])
    said = json.loads(observed["stdout"].strip().splitlines()[-1])
    assert said["killed"], said
    before = [json.loads(line) for line in said["first"].splitlines() if line.startswith("{")]
    assert [e["subtask"] for e in before if e["event"] == "integrated"] == ["fix-mean"]
    assert not any(e["event"] == "run-end" for e in before)
    after = result_of(said["code"], said["stdout"], said["stderr"])
    assert after.code == 0, (said["stderr"], observed["stderr"])
    assert [e["subtask"] for e in after.events if e["event"] == "subtask-end"] == ["slow"]  # fix-mean is not rerun
    assert next(e for e in after.events if e["event"] == "run-end")["status"] == "accepted"
    assert [m["subtask_id"] for m in orchestra.merges(said["run"])] == ["fix-mean", "slow"]
    merges = [s for s in orchestra.first_parents("trunk") if s.startswith("Merge run")]
    assert len(merges) == 1
    assert FIXED in orchestra.show("trunk", "src/calc/__init__.py") and orchestra.show("trunk", "docs.md") == "slow\n"


def test_a_plan_placing_subtasks_by_node_labels_is_refused_by_the_local_executor(orchestra):
    sub = orchestra.subtask("fix")
    sub["node-labels"] = {"pool": "big"}
    plan = orchestra.plan([sub])
    proc = subprocess.run(orchestra.argv(str(plan)), cwd=orchestra.repo, capture_output=True, text=True,
                          env=orchestra.full_env(), timeout=120)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "subtask `fix` has node-labels, which only a cluster can honour" in line and "plan.toml:" in line
    assert not orchestra.state.exists() and orchestra.branches() == ["trunk"]
