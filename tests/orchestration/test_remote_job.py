"""A job on a worker node, without Ray: the worker's desk wired straight to the orchestrator's `JobService`.

What Ray only carries is tested here in one process: the orchestrator makes the job's model calls
to the model its own copy of the task names, bounded, whatever the worker sends; a job whose model
cannot be called from the orchestrator is refused before it is sent; a job's progress and model
calls travel through the desk while it runs.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest

from runtime.approvals.store import ApprovalStore
from runtime.audit.log import AuditLog
from runtime.errors import FatalError
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import load_task
from runtime.orchestration.executor import Job, SubtaskResult
from runtime.orchestration.remote_job import JobService, base_bundle, job_task, run_job
from runtime.workspace.git import Git
from tests.conftest import REPO
from tests.spawn.conftest import FIX_TURN, REPORT, TEST_TURN, Spawner

HELLO = [{"role": "user", "content": "hello"}]


def _job(s: Spawner, task_path: Path, catalog: Catalog) -> Job:
    task = load_task(catalog, task_path)
    return Job("run-1", "fix", "run-1.fix", task.manifest, str(task.path), task.digest, str(catalog.root),
               catalog.digest(), s.base, None)


def _service(s: Spawner, task_path: Path) -> JobService:
    catalog = Catalog(REPO)
    return JobService(job_task(_job(s, task_path, catalog), catalog), catalog)


def test_the_orchestrator_calls_the_model_of_its_own_task_whatever_the_worker_asks(spawner: Spawner):
    s = spawner
    service = _service(s, s.task(agent_id="ag-x", script=["first answer", "second answer"]))
    forged = {"messages": HELLO, "tools": [], "model": "openai/gpt-4o", "api_base": "http://evil.example/v1",
              "script": "/etc/passwd", "agent_id": "someone-else"}
    answer = service.answer("model", forged)
    assert answer["ok"] is True and answer["reply"]["content"] == "first answer", answer
    assert service.answer("model", {"messages": HELLO})["reply"]["content"] == "second answer"
    nonsense = service.answer("model", {"messages": "not a list"})
    assert nonsense["ok"] is False and nonsense["error"]["kind"] == "request"
    wrong = service.answer("forward", {"path": "/v1/messages", "body": b"{}", "headers": {}})
    assert wrong["ok"] is False and "never asks the orchestrator for" in wrong["error"]["message"]


def test_a_node_cannot_spend_past_what_the_task_allows(spawner: Spawner):
    s = spawner
    service = _service(s, s.task(agent_id="ag-x", limits={"max-turns": 2}, script=["a"] * 10))
    answers = [service.answer("model", {"messages": HELLO}) for _ in range(service.max_calls + 1)]
    assert service.max_calls == 4  # twice the turns of its one attempt
    assert all(a["ok"] for a in answers[:-1])
    assert answers[-1]["ok"] is False and "all its task allows" in answers[-1]["error"]["message"]


def test_a_job_whose_model_the_orchestrator_cannot_call_is_not_sent(spawner: Spawner, monkeypatch):
    s = spawner
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    task = s.task(agent_id="ag-x", agent={"backend": "builtin", "model": "openai/gpt-4o", "retries": 0})
    with pytest.raises(FatalError, match="OPENAI_API_KEY"):
        _service(s, task)


class _Desk:
    """The worker's desk, answered in this process by the orchestrator's service (what Ray carries)."""

    def __init__(self, service: JobService) -> None:
        self.service, self.asked, self.told = service, [], []

    def ask(self, kind, payload):
        self.asked.append(kind)
        return json.loads(json.dumps(self.service.answer(kind, payload)))  # plain data, as over the wire

    def tell(self, kind, payload):
        self.told.append((kind, json.loads(json.dumps(payload))))


def test_a_worker_runs_the_job_with_the_orchestrator_making_its_model_calls(spawner: Spawner, tmp_path):
    s = spawner
    catalog = Catalog(REPO)
    task_path = s.task(agent_id="ag-x", script=[FIX_TURN, TEST_TURN, REPORT])
    job = _job(s, task_path, catalog)
    desk = _Desk(JobService(job_task(job, catalog), catalog))
    # The worker's copy of the script says nothing useful: the calls are the orchestrator's, from its own copy.
    script = task_path.with_name("ag-x.script.toml")
    theirs = tmp_path / "orchestrators.script.toml"
    theirs.write_text(script.read_text())
    s.write_script(["I did nothing."], name="ag-x.script.toml")
    broker = desk.service._model._broker  # the builtin backend's side of the calls: its broker
    broker.config = dataclasses.replace(broker.config, script=str(theirs))
    bundle = base_bundle(Git(s.repo), s.base, tmp_path).read_bytes()
    remote = run_job(job.to_json(), bundle, True, desk)
    result = SubtaskResult.from_json(remote.result_json)
    assert result.outcome.label == "ok", result.outcome.message
    assert desk.asked == ["model"] * 3
    progress = [p for kind, p in desk.told if kind == "progress"]
    assert progress and max(p["tool_calls"] for p in progress) == 2
    assert remote.bundle is not None


def _ask_in_thread(service: JobService, command: str, answers: list) -> threading.Thread:
    request = {"tool": "Bash", "input": {"command": command}, "reason": "the gate asks", "timeout_s": 30}
    thread = threading.Thread(target=lambda: answers.append(service.answer("approval", request)), daemon=True)
    thread.start()
    return thread


def _pending(store: ApprovalStore) -> list:
    deadline = time.monotonic() + 20
    while not (found := store.pending("run-1.fix")) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_an_approval_a_worker_asks_for_is_decided_at_the_orchestrator(spawner: Spawner, tmp_path):
    """Recorded in the orchestrator's state, decided there with `runtime approve`, audited in its log;
    a request still pending when the job comes back expires."""
    s = spawner
    state = tmp_path / "orchestrator-state"
    state.mkdir()
    catalog = Catalog(REPO)
    job = _job(s, s.task(agent_id="ag-x"), catalog)
    service = JobService(job_task(job, catalog), catalog, state_dir=state, audit=AuditLog(state / "audit.jsonl"))
    store = ApprovalStore.for_state(state)
    answers: list = []
    thread = _ask_in_thread(service, "make deploy", answers)
    (pending,) = _pending(store)
    assert pending.agent == "run-1.fix" and "make deploy" in pending.summary
    approved = s.cli("approve", pending.id, "--state-dir", str(state))
    assert approved.returncode == 0, approved.stderr
    thread.join(20)
    assert answers and answers[0]["decision"] == "allow", answers
    kinds = [json.loads(line)["kind"] for line in (state / "audit.jsonl").read_text().splitlines()]
    assert kinds == ["approval-request", "approval-decision"]

    later: list = []
    thread = _ask_in_thread(service, "make release", later)
    (pending,) = _pending(store)
    service.close()
    thread.join(20)
    assert later and later[0]["decision"] == "deny"
    assert store.get(pending.id).status == "expired"
