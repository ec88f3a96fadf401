"""Approvals end to end: a builtin spawn whose role marks `touch` as `ask`, decided from other processes.

One spawn, played by the scripted model, under a custom role (edit-local, with `touch` needing
approval). While `runtime spawn` waits, the test acts as the person at another terminal: it finds
each pending request and runs `runtime approve ID` / `runtime deny ID --reason ...` as separate
processes, or lets one expire. The agent also tries to reach the approvals store from its sandbox.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from runtime.approvals.store import ApprovalStore
from runtime.manifests.catalog import Catalog
from runtime.manifests.compose import compose_bundle
from runtime.manifests.task import load_task
from runtime.models.broker import Broker
from runtime.models.types import ModelReach
from runtime.policy.compile import compile_policy
from tests.conftest import RUNTIME
from tests.spawn.conftest import FIX_TURN, REPORT, TEST_TURN, Spawner
from tests.support import kill_group

DENY_REASON = "not this file: keep src/calc free of stray files (DENY-7731)"
APPROVAL_TIMEOUT_S = 8


@pytest.fixture
def approving_catalog(catalog_copy) -> Path:
    """The shipped catalog plus role `edit-approve`: edit-local, where `touch` needs a person's approval."""
    text = (catalog_copy / "roles" / "edit-local.toml").read_text()
    text = text.replace('name = "edit-local"', 'name = "edit-approve"', 1)
    rule = '[[params."tools::bash-allowlist".rules]]\nprogram = "touch"\ngrammar = "touch"\n'
    assert rule in text
    text = text.replace(rule, rule + "ask = true\n", 1)
    (catalog_copy / "roles" / "edit-approve.toml").write_text(text)
    return catalog_copy


def touch(name: str) -> list[dict]:
    return [{"name": "Bash", "input": {"command": f"touch src/calc/{name}"}}]


def wait_pending(store: ApprovalStore, summary: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for a in store.pending():
            if a.summary == summary:
                return a
        time.sleep(0.05)
    raise AssertionError(f"no pending approval for {summary!r} within {timeout} s")


def tool_events(s: Spawner, agent_id: str) -> list[dict]:
    lines = (s.run_dir(agent_id) / "attempt-1" / "stdout.log").read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    return [e for e in events if e.get("event") == "tool"]


def test_approved_denied_expired_and_no_self_approval(spawner: Spawner, approving_catalog: Path):
    s = spawner
    state = s.state
    agent_id = "ag-approve"
    script = [
        touch("approved.txt"),
        touch("denied.txt"),
        touch("expired.txt"),
        # The agent tries to reach the decisions: the state folder is not in its sandbox, and
        # nothing outside its write scope can be written.
        [{"name": "Bash", "input": {"command": f"ls -a {state}"}}],
        [{"name": "Bash", "input": {"command": f"cat {state}/approvals.sqlite"}}],
        [{"name": "Bash", "input": {"command": f"touch {state}/approvals.sqlite"}}],
        [{"name": "Write", "input": {"file_path": f"{state}/approvals.sqlite", "content": "approved"}}],
        FIX_TURN, TEST_TURN, REPORT,
    ]
    task = s.task(agent_id=agent_id, role="edit-approve", script=script,
                  limits={"approval-timeout-s": APPROVAL_TIMEOUT_S, "timeout-s": 120})
    proc = subprocess.Popen([RUNTIME, "spawn", "--json", "--catalog", str(approving_catalog), str(task)],
                            cwd=s.repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=s.full_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (state / "approvals.sqlite").is_file():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        store = ApprovalStore.for_state(state)

        # 1. Approved from another process while the spawn waits: the command ran.
        first = wait_pending(store, "Bash: touch src/calc/approved.txt")
        assert first.agent == agent_id and first.tool == "Bash" and "needs approval" in first.gate_reason
        listed = s.cli("approvals", "--json")
        assert listed.returncode == 0 and [a["id"] for a in json.loads(listed.stdout)] == [first.id]
        approved = s.cli("approve", first.id)
        assert approved.returncode == 0 and f"approved [{first.id}]" in approved.stdout, approved.stderr

        # 2. Denied with a reason: the command did not run; the model reads the reason.
        second = wait_pending(store, "Bash: touch src/calc/denied.txt")
        assert s.cli("deny", second.id).returncode == 1  # a denial needs --reason
        denied = s.cli("deny", second.id, "--reason", DENY_REASON)
        assert denied.returncode == 0, denied.stderr
        again = s.cli("approve", second.id)  # decided once
        assert again.returncode == 1 and "already denied" in again.stderr

        # 3. Nobody decides: it expires and is denied.
        third = wait_pending(store, "Bash: touch src/calc/expired.txt")
        out, err = proc.communicate(timeout=150)
    finally:
        kill_group(proc)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out[-4000:]}\n{err[-4000:]}"
    outcome = json.loads(out)
    assert outcome["label"] == "ok"
    late = s.cli("approve", third.id)
    assert late.returncode == 1 and "already expired" in late.stderr

    # What ran and what did not, in the committed work.
    commit = outcome["commit"]
    files = s.files_at(commit)
    assert "src/calc/approved.txt" in files
    assert "src/calc/denied.txt" not in files and "src/calc/expired.txt" not in files

    # The store: one request per call, decided by the person (the CLI), or by the expiry.
    rows = {a.id: a for a in store.all()}
    assert len(rows) == 3
    assert rows[first.id].status == "approved" and rows[first.id].decided_by.endswith("(runtime approve)")
    assert rows[second.id].status == "denied" and rows[second.id].decided_by.endswith("(runtime deny)")
    assert rows[second.id].reason == DENY_REASON
    assert rows[third.id].status == "expired" and rows[third.id].decided_by == "expiry"
    assert rows[third.id].expires - rows[third.id].created == pytest.approx(APPROVAL_TIMEOUT_S, abs=0.1)

    # What the model read as each tool result.
    events = tool_events(s, agent_id)
    by_command = {e["input"].get("command", e["input"].get("file_path")): e for e in events}
    ran = by_command["touch src/calc/approved.txt"]
    assert ran["decision"] == "allow" and ran["gate"] == "ask" and not ran["is_error"]
    refused = by_command["touch src/calc/denied.txt"]
    assert refused["decision"] == "deny" and refused["is_error"] and DENY_REASON in refused["result"]
    assert f"approval {second.id}" in refused["result"]
    expired = by_command["touch src/calc/expired.txt"]
    assert expired["decision"] == "deny" and "expired" in expired["result"]

    # The agent could not reach the decisions: the state folder's files are not in its sandbox,
    # and writing there is denied by the gate (no request for a person was even made).
    listing = by_command[f"ls -a {state}"]
    assert "approvals.sqlite" not in listing["result"] and "audit.jsonl" not in listing["result"]
    cat = by_command[f"cat {state}/approvals.sqlite"]
    assert cat["decision"] == "allow" and cat["is_error"] and "No such file" in cat["result"]
    for key in (f"touch {state}/approvals.sqlite", f"{state}/approvals.sqlite"):
        assert by_command[key]["decision"] == "deny" and by_command[key].get("gate") is None, key

    # The orchestrator showed each request with the command that decides it.
    for a in (first, second, third):
        assert f"approval needed [{a.id}]" in err and f"runtime approve {a.id} --state-dir {state}" in err

    # Every request and decision is in the (intact) audit log.
    s.audit_intact()
    requests = s.audit(kind="approval-request", agent=agent_id)
    decisions = s.audit(kind="approval-decision", agent=agent_id)
    assert [r["data"]["id"] for r in requests] == [first.id, second.id, third.id]
    assert all(r["data"]["new"] and r["data"]["input_hash"] == rows[r["data"]["id"]].input_hash for r in requests)
    assert [(d["data"]["id"], d["data"]["status"], d["data"]["decision"]) for d in decisions] == [
        (first.id, "approved", "allow"), (second.id, "denied", "deny"), (third.id, "expired", "deny")]
    assert decisions[1]["data"]["reason"] == DENY_REASON
    gates = {g["data"]["input"].get("command"): g["data"] for g in s.audit(kind="gate", agent=agent_id)}
    assert gates["touch src/calc/approved.txt"]["decision"] == "allow"
    assert gates["touch src/calc/denied.txt"]["decision"] == "deny"
    assert s.cli("approvals", "--json").stdout.strip() == "[]"


def test_the_agent_loop_without_an_approvals_socket_still_refuses_ask(spawner: Spawner, approving_catalog: Path):
    """`python -m runtime.agent` without --approvals (as before approvals existed): an `ask` is refused."""
    s = spawner
    task = s.task(agent_id="ag-refuse", role="edit-approve", script=[touch("x.txt"), REPORT])
    catalog = Catalog(approving_catalog)
    loaded = load_task(catalog, task)
    (s.tmp / "policy.json").write_text(json.dumps(compile_policy(loaded.role, loaded, s.repo, catalog)))
    (s.tmp / "bundle.md").write_text(compose_bundle(loaded.role, loaded))
    folder = Path(tempfile.mkdtemp(prefix="rt-t-"))
    try:
        config = ModelReach(model="scripted/test", script=str(s.tmp / "ag-refuse.script.toml"))
        with Broker(folder / "model.sock", "ag-refuse", config):
            proc = subprocess.run([sys.executable, "-I", "-m", "runtime.agent", "--bundle", str(s.tmp / "bundle.md"),
                                   "--policy", str(s.tmp / "policy.json"), "--broker", str(folder / "model.sock"),
                                   "--root", str(s.repo)], capture_output=True, text=True, timeout=120, cwd=s.repo)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr
    [event] = [json.loads(line) for line in proc.stdout.splitlines() if '"event": "tool"' in line]
    assert event["decision"] == "deny" and event["is_error"] and "needs approval" in event["result"]
    assert "nobody approves calls in this run, so what would be asked is refused" in event["result"]
    assert "gate" not in event and not (s.repo / "src" / "calc" / "x.txt").exists()


def test_an_unattended_spawn_refuses_what_it_would_ask_at_once(spawner: Spawner, approving_catalog: Path):
    """`runtime spawn --unattended`: no approvals service, so an ask is refused the moment it is made (never a
    wait for the expiry), and the run goes on to commit its verified work."""
    s = spawner
    agent_id = "ag-unattended"
    task = s.task(agent_id=agent_id, role="edit-approve", script=[touch("asked.txt"), FIX_TURN, TEST_TURN, REPORT],
                  limits={"approval-timeout-s": 300, "timeout-s": 120})
    started = time.monotonic()
    proc = s.cli("spawn", "--json", "--unattended", "--catalog", str(approving_catalog), str(task))
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcome = json.loads(proc.stdout)
    assert outcome["label"] == "ok" and took < 120  # never the 300 s an approval could wait
    [event] = [e for e in tool_events(s, agent_id) if e["input"].get("command") == "touch src/calc/asked.txt"]
    assert event["decision"] == "deny" and event["is_error"] and "gate" not in event
    assert "nobody approves calls in this run" in event["result"] and "needs approval" in event["result"]
    assert "src/calc/asked.txt" not in s.files_at(outcome["commit"])
    assert ApprovalStore.for_state(s.state).all() == [] and "approval needed" not in proc.stderr
    assert s.audit(kind="approval-request", agent=agent_id) == []


def test_a_command_agent_asks_through_runtime_check_inside_its_sandbox(spawner: Spawner, approving_catalog: Path):
    """The hook path (claude-code and command backends): `runtime check --approvals` from inside the sandbox."""
    s = spawner
    hook = ('{"hook_event_name":"PreToolUse","tool_name":"Bash",'
            '"tool_input":{"command":"touch src/calc/hooked.txt"},"cwd":"%s"}')
    program = (
        f"printf '{hook}' \"$PWD\" | {RUNTIME} check --policy \"$RUNTIME_POLICY\" --approvals \"$RUNTIME_APPROVALS\""
        " > \"$HOME/answer.json\" && touch src/calc/hooked.txt; "
        "sed -i 's/(len(values) + 1)/len(values)/' src/calc/__init__.py; "
        "printf 'Summary: fixed mean\\nFiles changed: src/calc/__init__.py\\n' > \"$RUNTIME_REPORT_FILE\""
    )
    task = s.task(agent_id="ag-hook", role="edit-approve", command=program, limits={"approval-timeout-s": 60})
    proc = subprocess.Popen([RUNTIME, "spawn", "--json", "--catalog", str(approving_catalog), str(task)],
                            cwd=s.repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=s.full_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (s.state / "approvals.sqlite").is_file():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        pending = wait_pending(ApprovalStore.for_state(s.state), "Bash: touch src/calc/hooked.txt")
        # `runtime check` bounds its wait below Claude Code's hook timeout, whatever the task says.
        assert pending.expires - pending.created == pytest.approx(25, abs=0.1)
        assert s.cli("approve", pending.id).returncode == 0
        out, err = proc.communicate(timeout=150)
    finally:
        kill_group(proc)
    assert proc.returncode == 0, f"{out[-3000:]}\n{err[-3000:]}"
    outcome = json.loads(out)
    assert "src/calc/hooked.txt" in s.files_at(outcome["commit"])
    [decision] = s.audit(kind="approval-decision", agent="ag-hook")
    assert decision["data"]["id"] == pending.id and decision["data"]["decision"] == "allow"
