"""The approvals socket: an agent asks, a person decides, the answer travels back; and `runtime check --approvals`."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runtime.approvals import ANSWER_GRACE_S, HOOK_TIMEOUT_S, HOOK_WAIT_MAX_S
from runtime.approvals.service import ApprovalService, ask_orchestrator, console_notifier
from runtime.approvals.store import ApprovalStatus, ApprovalStore
from runtime.audit.log import AuditLog, records, verify
from runtime.policy.document import content_hash
from tests.conftest import REPO, run_cli

CALL = {"command": "npm install left-pad"}
GATE_REASON = "`npm` needs approval under this role's rules"


@pytest.fixture
def short_dir():
    """Unix socket paths are limited to 107 bytes: a short folder of our own under /tmp."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="rt-t-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


class Env:
    def __init__(self, tmp_path: Path, short_dir: Path):
        self.state = tmp_path / "state"
        self.store = ApprovalStore.for_state(self.state)
        self.audit = AuditLog(self.state / "audit.jsonl")
        self.socket = short_dir / "approvals.sock"
        self.shown: list = []
        self.services: list[ApprovalService] = []

    def service(self, timeout_s: float = 30, agent: str = "ag-1") -> ApprovalService:
        svc = ApprovalService(self.socket, agent, self.store, timeout_s=timeout_s, audit=self.audit,
                              on_pending=self.shown.append).start()
        self.services.append(svc)
        return svc

    def records(self, kind: str) -> list[dict]:
        return [r.to_json() for r in records(self.audit.path, kind=kind)]

    def decide_when_pending(self, approved: bool, reason: str | None = None, by: str = "alice", count: int = 1):
        """A person in another thread: waits for the request to show up, then decides it."""
        def run():
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                pending = self.store.pending()
                if len(pending) >= count:
                    for a in pending:
                        self.store.decide(a.id, approved, reason, by)
                    return
                time.sleep(0.05)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


@pytest.fixture
def env(tmp_path, short_dir):
    e = Env(tmp_path, short_dir)
    yield e
    for svc in e.services:
        svc.close()


def raw_ask(path: Path, payload: bytes, timeout: float = 10) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(payload)
        return json.loads(sock.makefile("rb").readline())


def test_approved_calls_are_allowed_and_audited(env):
    env.service()
    env.decide_when_pending(True, "fine once", by="alice (runtime approve)")
    decision, reason = ask_orchestrator(env.socket, "Bash", CALL, GATE_REASON, 10)
    assert decision == "allow" and "approved by alice (runtime approve)" in reason and "fine once" in reason
    [shown] = env.shown
    assert shown.agent == "ag-1" and shown.tool == "Bash" and shown.summary == "Bash: npm install left-pad"
    assert shown.gate_reason == GATE_REASON and env.store.get(shown.id).status == ApprovalStatus.APPROVED
    [req] = env.records("approval-request")
    [dec] = env.records("approval-decision")
    assert req["agent"] == dec["agent"] == "ag-1"
    assert req["data"]["id"] == dec["data"]["id"] == shown.id and req["data"]["new"] is True
    assert req["data"]["input_hash"] == shown.input_hash and req["data"]["summary"] == shown.summary
    assert dec["data"]["status"] == "approved" and dec["data"]["decision"] == "allow"
    assert dec["data"]["by"] == "alice (runtime approve)" and verify(env.audit.path) == []


def test_denied_calls_carry_the_persons_reason(env):
    env.service()
    env.decide_when_pending(False, "use the vendored copy instead", by="bob")
    decision, reason = ask_orchestrator(env.socket, "Bash", CALL, GATE_REASON, 10)
    assert decision == "deny" and "denied by bob" in reason and "use the vendored copy instead" in reason
    [dec] = env.records("approval-decision")
    assert dec["data"]["status"] == "denied" and dec["data"]["reason"] == "use the vendored copy instead"


def test_an_undecided_call_expires_and_is_denied(env):
    env.service(timeout_s=0.5)
    started = time.monotonic()
    decision, reason = ask_orchestrator(env.socket, "Bash", CALL, GATE_REASON, 10)
    assert decision == "deny" and "expired" in reason and time.monotonic() - started < 5
    [a] = env.store.all()
    assert a.status == ApprovalStatus.EXPIRED and a.decided_by == "expiry"
    [dec] = env.records("approval-decision")
    assert dec["data"]["status"] == "expired" and dec["data"]["decision"] == "deny"


def test_the_askers_own_bound_only_shortens_the_wait(env):
    env.service(timeout_s=300)
    started = time.monotonic()
    decision, _ = ask_orchestrator(env.socket, "Bash", CALL, GATE_REASON, 0.5)
    assert decision == "deny" and time.monotonic() - started < 0.5 + ANSWER_GRACE_S + 1
    [a] = env.store.all()
    assert a.status == ApprovalStatus.EXPIRED and a.expires - a.created == pytest.approx(0.5, abs=0.05)
    # A longer bound than the service's does not lengthen it.
    env.services[0].timeout_s = 0.3
    ask_orchestrator(env.socket, "Bash", {"command": "npm ci"}, GATE_REASON, 100)
    b = env.store.all()[-1]
    assert b.expires - b.created == pytest.approx(0.3, abs=0.05)


def test_the_same_call_asked_twice_while_pending_is_one_request(env):
    env.service()
    answers: list = []
    threads = [threading.Thread(target=lambda: answers.append(ask_orchestrator(env.socket, "Bash", CALL, GATE_REASON, 10)))
               for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while len(env.records("approval-request")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    [pending] = env.store.pending()
    env.store.decide(pending.id, True, None, "alice")
    for t in threads:
        t.join(10)
    assert [a[0] for a in answers] == ["allow", "allow"] and len(env.shown) == 1
    assert sorted(r["data"]["new"] for r in env.records("approval-request")) == [False, True]
    assert len(env.records("approval-decision")) == 1


def test_the_agent_id_is_the_services_and_a_request_cannot_decide(env):
    env.service(agent="ag-1")
    for payload in ({"tool": "Bash", "input": CALL, "reason": "r", "agent": "someone-else"},
                    {"tool": "Bash", "input": CALL, "reason": "r", "decision": "allow"},
                    {"approve": "00000000"}, {"id": "00000000", "status": "approved"}):
        answer = raw_ask(env.socket, json.dumps(payload).encode() + b"\n")
        assert answer["decision"] == "deny", payload
    for line in (b"not json\n", b"[]\n", b'{"tool": "", "input": {}}\n', b'{"tool": "Bash", "input": "x"}\n',
                 b'{"tool": "Bash", "input": {}, "timeout_s": -1}\n'):
        assert raw_ask(env.socket, line)["decision"] == "deny", line
    assert env.store.all() == [] and env.shown == []
    # A well-formed request is recorded under the service's agent id, whatever the agent is.
    env.decide_when_pending(True)
    assert ask_orchestrator(env.socket, "Bash", CALL, "r", 10)[0] == "allow"
    assert [a.agent for a in env.store.all()] == ["ag-1"]


def test_an_oversized_request_is_denied_and_the_next_line_is_read_cleanly(env):
    env.services.append(ApprovalService(env.socket, "ag-1", env.store, timeout_s=0.3, audit=env.audit,
                                        on_pending=env.shown.append, max_line_bytes=512).start())
    big = json.dumps({"tool": "Bash", "input": {"command": "x" * 2000}, "reason": "r"}).encode() + b"\n"
    small = json.dumps({"tool": "Bash", "input": CALL, "reason": "r"}).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(env.socket))
        sock.sendall(big + small)
        replies = sock.makefile("rb")
        first, second = json.loads(replies.readline()), json.loads(replies.readline())
    assert first["decision"] == "deny" and "longer than 512 bytes" in first["reason"]
    # The oversized call was never recorded; the next line was a request of its own (and expired).
    assert second["decision"] == "deny" and "expired" in second["reason"]
    [only] = env.store.all()
    assert only.tool == "Bash" and only.status == ApprovalStatus.EXPIRED and len(env.shown) == 1


def test_an_asker_that_hangs_up_withdraws_its_request(env):
    env.service()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(env.socket))
    sock.sendall(json.dumps({"tool": "Bash", "input": CALL, "reason": "r"}).encode() + b"\n")
    deadline = time.monotonic() + 10
    while not env.store.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    [a] = env.store.pending()
    sock.close()
    deadline = time.monotonic() + 10
    while env.store.get(a.id).status == ApprovalStatus.PENDING and time.monotonic() < deadline:
        time.sleep(0.05)
    gone = env.store.get(a.id)
    assert gone.status == ApprovalStatus.EXPIRED and gone.decided_by == "withdrawn"
    deadline = time.monotonic() + 5
    while not env.records("approval-decision") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert env.records("approval-decision")[0]["data"]["status"] == "expired"


def test_closing_the_service_denies_what_still_waits(env):
    svc = env.service()
    answers: list = []
    t = threading.Thread(target=lambda: answers.append(ask_orchestrator(env.socket, "Bash", CALL, "r", 20)))
    t.start()
    deadline = time.monotonic() + 10
    while not env.store.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    svc.close()
    t.join(10)
    assert answers and answers[0][0] == "deny"
    [a] = env.store.all()
    assert a.status == ApprovalStatus.EXPIRED and a.decided_by == "orchestrator"
    assert [r["data"]["status"] for r in env.records("approval-decision")] == ["expired"]
    assert not env.socket.exists()


def test_no_service_no_approval(tmp_path, short_dir):
    decision, reason = ask_orchestrator(short_dir / "nothing.sock", "Bash", CALL, "r", 1)
    assert decision == "deny" and "cannot be reached" in reason
    assert ask_orchestrator(short_dir / "x.sock", "Bash", {"x": float("nan")}, "r", 1)[0] == "deny"


def test_a_silent_service_is_a_deny_within_the_bound(short_dir):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(short_dir / "mute.sock"))
    server.listen(1)
    try:
        started = time.monotonic()
        decision, reason = ask_orchestrator(short_dir / "mute.sock", "Bash", CALL, "r", 0.3)
        assert decision == "deny" and "no decision within" in reason
        assert time.monotonic() - started < 0.3 + ANSWER_GRACE_S + 1
    finally:
        server.close()


def test_the_console_notifier_shows_the_call_and_how_to_decide(env):
    out = io.StringIO()
    notify = console_notifier(env.store, hint="--state-dir /s", stream=out, interactive=False)
    a = env.store.request("ag-1", "Bash", CALL, GATE_REASON, 60)[0]
    notify(a)
    text = out.getvalue()
    assert f"approval needed [{a.id}] agent ag-1: Bash: npm install left-pad" in text
    assert f"runtime approve {a.id} --state-dir /s" in text and f"runtime deny {a.id} --state-dir /s --reason" in text
    assert GATE_REASON in text


def test_the_client_side_imports_only_the_standard_library():
    probe = ("import sys; import runtime.approvals.service; "
             "print(sorted(m for m in ('pydantic', 'rich', 'tomlkit', 'litellm', 'anyio', 'psutil') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stderr


# -- runtime check --approvals -------------------------------------------------------------------

def ask_policy(root: Path) -> Path:
    """A policy under which `npm` asks and `ls` is allowed."""
    doc = {
        "format": "agent-runtime-policy", "version": 1, "role": "r", "root": str(root), "tools": ["Bash"],
        "protected": [], "gates": [{"atom": "tools::bash-allowlist", "kind": "bash-allowlist", "params": {"rules": [
            {"program": p, "subcommands": [], "option-style": "gnu", "options": {}, "positionals": ["free..."],
             "trailing": None, "env": [], "cwd": "any", "xargs": False, "inline-code": False, "arg-files": False,
             "ask": p == "npm"} for p in ("npm", "ls")]}}],
    }
    doc["hash"] = content_hash(doc)
    path = root.parent / "policy.json"
    path.write_text(json.dumps(doc))
    return path


def hook_input(command: str, cwd: Path) -> str:
    return json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": str(cwd), "tool_use_id": "toolu_1"})


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "wt"
    folder.mkdir()
    return folder.resolve()


def hook_decision(proc) -> dict:
    return json.loads(proc.stdout)["hookSpecificOutput"]


def test_check_without_approvals_still_answers_ask(root):
    proc = run_cli("check", "--policy", str(ask_policy(root)), input=hook_input("npm install x", root))
    assert proc.returncode == 0 and hook_decision(proc)["permissionDecision"] == "ask"


def test_check_approved_from_another_thread_allows(env, root):
    env.service()
    env.decide_when_pending(True, by="alice (runtime approve)")
    proc = run_cli("check", "--policy", str(ask_policy(root)), "--approvals", str(env.socket),
                   input=hook_input("npm install left-pad", root))
    assert proc.returncode == 0, proc.stderr
    out = hook_decision(proc)
    assert out["permissionDecision"] == "allow" and "approved by alice" in out["permissionDecisionReason"]
    [a] = env.store.all()
    assert a.status == ApprovalStatus.APPROVED and a.tool == "Bash" and a.summary == "Bash: npm install left-pad"
    assert [r["data"]["decision"] for r in env.records("approval-decision")] == ["allow"]


def test_check_denied_or_expired_exits_two(env, root):
    env.service(timeout_s=300)
    env.decide_when_pending(False, "not today", by="bob")
    proc = run_cli("check", "--policy", str(ask_policy(root)), "--approvals", str(env.socket),
                   input=hook_input("npm install left-pad", root))
    assert proc.returncode == 2 and hook_decision(proc)["permissionDecision"] == "deny"
    assert "not today" in proc.stderr
    started = time.monotonic()
    proc = run_cli("check", "--policy", str(ask_policy(root)), "--approvals", str(env.socket),
                   "--approval-wait", "1", input=hook_input("npm install right-pad", root))
    assert proc.returncode == 2 and hook_decision(proc)["permissionDecision"] == "deny"
    assert "expired" in proc.stderr and time.monotonic() - started < 1 + ANSWER_GRACE_S + 5
    assert [a.status for a in env.store.all()] == [ApprovalStatus.DENIED, ApprovalStatus.EXPIRED]
    assert [r["data"]["status"] for r in env.records("approval-decision")] == ["denied", "expired"]


def test_the_hook_deadline_never_cuts_a_persons_answer_short(env, root):
    """The gate's own deadline ends with its decision: waiting for a person has its own bound."""
    env.service(timeout_s=300)
    proc = run_cli("check", "--policy", str(ask_policy(root)), "--approvals", str(env.socket),
                   "--approval-wait", "1", input=hook_input("npm install left-pad", root),
                   env={"RUNTIME_HOOK_DEADLINE": "0.3"})
    assert proc.returncode == 2 and "expired" in proc.stderr and "did not decide" not in proc.stderr


def test_check_allows_and_denies_without_asking_anyone(env, root):
    env.service()
    ok = run_cli("check", "--policy", str(ask_policy(root)), "--approvals", str(env.socket), input=hook_input("ls", root))
    no = run_cli("check", "--policy", str(ask_policy(root)), "--approvals", str(env.socket),
                 input=hook_input("ls > x", root))  # a write, and the policy has no write scope
    assert ok.returncode == 0 and no.returncode == 2 and env.store.all() == []


def test_check_with_an_unreachable_socket_denies(root, short_dir):
    proc = run_cli("check", "--policy", str(ask_policy(root)), "--approvals", str(short_dir / "none.sock"),
                   input=hook_input("npm install x", root))
    assert proc.returncode == 2 and "cannot be reached" in proc.stderr


@pytest.mark.parametrize("args", [["--approval-wait", "5"], ["--approvals", "/x.sock", "--approval-wait", "30"],
                                  ["--approvals", "/x.sock", "--approval-wait", "0"],
                                  ["--approvals", "relative.sock"]])
def test_check_refuses_waits_past_the_hook_timeout(root, args):
    proc = run_cli("check", "--policy", str(ask_policy(root)), *args, input=hook_input("npm install x", root))
    assert proc.returncode == 2 and hook_decision(proc)["permissionDecision"] == "deny"


def test_the_hook_wait_stays_below_claude_codes_hook_timeout(tmp_path):
    from runtime.spawn.backends.claude_code.settings import write_settings
    from runtime.tooling.claude import merge_hook

    settings = json.loads(write_settings(tmp_path).read_text())
    [hook] = settings["hooks"]["PreToolUse"][0]["hooks"]
    [installed] = merge_hook({}, "runtime check", "runtime")["hooks"]["PreToolUse"][0]["hooks"]
    assert HOOK_TIMEOUT_S == installed["timeout"] == hook["timeout"]
    assert HOOK_WAIT_MAX_S + ANSWER_GRACE_S + 2 < HOOK_TIMEOUT_S


TASK = """[task]
role = "edit-local"
goal = "g"
[scope]
files-whitelist = ["src/**"]
[verification]
test-command = "pytest -q"
check-commands = ["true"]
[agent]
backend = "{backend}"
{extra}
[agent.limits]
{limits}
[body]
text = "x"
"""


def load(tmp_path: Path, backend: str, limits: str = "", extra: str = ""):
    from runtime.manifests.catalog import Catalog
    from runtime.manifests.task import load_task

    path = tmp_path / f"{backend}.toml"
    path.write_text(TASK.format(backend=backend, limits=limits, extra=extra))
    return load_task(Catalog(REPO), path)


def test_approval_timeout_defaults_and_the_claude_code_cap(tmp_path):
    from runtime.errors import ManifestError

    builtin = load(tmp_path, "builtin", extra='model = "openai/gpt-4.1"')
    assert builtin.agent.limits.approval_timeout_s == 300
    assert load(tmp_path, "builtin", "approval-timeout-s = 900", 'model = "openai/gpt-4.1"').agent.limits.approval_timeout_s == 900
    assert load(tmp_path, "claude-code").agent.limits.approval_timeout_s == HOOK_WAIT_MAX_S
    assert load(tmp_path, "claude-code", "approval-timeout-s = 10").agent.limits.approval_timeout_s == 10
    with pytest.raises(ManifestError, match="at most 25 for the claude-code backend.*30 s"):
        load(tmp_path, "claude-code", "approval-timeout-s = 60")
    with pytest.raises(ManifestError):
        load(tmp_path, "builtin", "approval-timeout-s = 0", 'model = "openai/gpt-4.1"')


def test_the_claude_code_hook_command_asks_the_orchestrator(env, tmp_path, root):
    """The spawn gives the CLI's PreToolUse hook `--approvals SOCK --approval-wait S`; run that command as the CLI would."""
    import shlex

    from runtime.spawn.backends.claude_code import _hook_asks_orchestrator
    from runtime.spawn.backends.claude_code.settings import write_settings

    run_ro = tmp_path / "agent-ro"
    run_ro.mkdir()
    (run_ro / "policy.json").write_text(ask_policy(root).read_text())
    settings = write_settings(run_ro)
    _hook_asks_orchestrator(settings, env.socket, 7)
    [hook] = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"]
    words = shlex.split(hook["command"])
    assert words[-4:] == ["--approvals", str(env.socket), "--approval-wait", "7"] and hook["timeout"] == HOOK_TIMEOUT_S
    env.service(timeout_s=300)
    env.decide_when_pending(True)
    proc = subprocess.run(hook["command"], shell=True, input=hook_input("npm install left-pad", root),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and hook_decision(proc)["permissionDecision"] == "allow", proc.stderr
    [a] = env.store.all()
    assert a.expires - a.created == pytest.approx(7, abs=0.1)


def test_the_interactive_prompt_decides_at_the_terminal(env, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\nn\nwrong file\n"))
    notify = console_notifier(env.store, stream=out, interactive=True)
    first = env.store.request("ag-1", "Bash", CALL, GATE_REASON, 60)[0]
    second = env.store.request("ag-1", "Bash", {"command": "npm ci"}, GATE_REASON, 60)[0]
    notify(first)
    notify(second)
    assert env.store.wait(first.id, 10).status == ApprovalStatus.APPROVED
    done = env.store.wait(second.id, 10)
    assert done.status == ApprovalStatus.DENIED and done.reason == "wrong file" and done.decided_by.endswith("(prompt)")
    assert f"approve [{first.id}]" in out.getvalue()


def test_a_worker_nodes_service_passes_a_checked_request_on_and_records_nothing(tmp_path, short_dir):
    """On a cluster's worker node the orchestrator records and decides: the service there checks the
    request, hands it over (its wait bounded by the service's own), and denies a malformed answer."""
    store = ApprovalStore.for_state(tmp_path / "state")
    sent: list[dict] = []

    def orchestrator(request: dict) -> dict:
        sent.append(request)
        return {"decision": "allow", "reason": "approved by alice (cli)", "id": "0a1b2c3d", "status": "approved"}

    svc = ApprovalService(short_dir / "approvals.sock", "ag-1", store, timeout_s=10, forward=orchestrator).start()
    try:
        assert ask_orchestrator(svc.socket_path, "Bash", {"command": "make deploy"}, "the gate asks", 30)[0] == "allow"
        assert sent == [{"tool": "Bash", "input": {"command": "make deploy"}, "reason": "the gate asks", "timeout_s": 10.0}]
        assert svc.ask({"tool": "Bash", "input": {}, "agent": "ag-2"})["decision"] == "deny"  # never passed on
        assert len(sent) == 1 and store.all() == []
        svc.forward = lambda request: {"decision": "yes please"}
        assert svc.ask({"tool": "Bash", "input": {"command": "ls"}})["decision"] == "deny"
    finally:
        svc.close()


def test_a_person_s_allowing_reaches_the_policy_before_the_answer_goes_back(env):
    """``on_allowed`` runs when a call is allowed, before the agent hears it (a rule written with "always" is
    compiled into the policy its next call is judged by); never on a denial; its failure never denies."""
    seen: list[str] = []

    def on_allowed(approval) -> None:
        seen.append(approval.id)
        raise RuntimeError("a catalog that does not compile")

    svc = ApprovalService(env.socket, "ag-1", env.store, timeout_s=30, audit=env.audit, on_allowed=on_allowed).start()
    env.services.append(svc)
    env.decide_when_pending(True, "always", by="alice (console)")
    decision, _ = ask_orchestrator(env.socket, "Bash", CALL, GATE_REASON, 10)
    assert decision == "allow" and len(seen) == 1 and env.store.get(seen[0]).status == ApprovalStatus.APPROVED
    env.decide_when_pending(False, "no")
    decision, _ = ask_orchestrator(env.socket, "Bash", {"command": "npm install other"}, GATE_REASON, 10)
    assert decision == "deny" and len(seen) == 1
