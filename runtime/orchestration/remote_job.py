"""One job on a worker node that has no repository of its own: the spawn pipeline in a private checkout.

What arrives is plain data: the `Job` (as JSON) and the base commit as a git bundle. The worker
makes a throwaway repository from the bundle, runs the job through the same pipeline as a local
run (its own worktree, bubblewrap sandbox, gate, verify and local retries) with a state folder of
its own, and returns the outcome, its audit records and the verified agent branch as a bundle
that holds only what the base does not. The orchestrator's repository is never touched here: it
imports the bundle and checks it again (a worker is not trusted to have verified honestly).

Keys stay with the orchestrator. A worker has none: its agent's broker (or the Claude Code CLI's
proxy) hands each model call over a `Desk`, the worker's one way back to the orchestrator, where a
`JobService` for the job makes it with the orchestrator's keys, to the model, server and script the
job's own task names (the worker sends messages, never a model). Progress goes back the same way.

Nothing here imports ray: the Ray executor wraps `run_job` as a remote function and carries the
desk's messages, and this module runs the same without it (which is how its tests and a worker's
own logs can reproduce a job).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, overload

import anyio

from runtime.audit.log import records
from runtime.errors import FatalError
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import Task, task_from_manifest
from runtime.models.types import ModelError, ModelReply, ModelRequest
from runtime.outcomes import OutcomeStatus
from runtime.spawn.backends import backend_for
from runtime.spawn.outcome import Outcome
from runtime.spawn.pipeline import SpawnOptions, spawn_task
from runtime.spawn.remote import Forwarded
from runtime.workspace.git import Git, GitError

if TYPE_CHECKING:
    from runtime.approvals.service import ApprovalAnswer, ApprovalAsk, ApprovalService
    from runtime.audit.log import AuditLog
    from runtime.audit.records import AuditEntry
    from runtime.models.broker import BrokerAnswer, BrokerRequest
    from runtime.orchestration.executor import ProgressNote
    from runtime.spawn.backends.claude_code.proxy import ForwardAnswer, ForwardCall

BASE_REF = "refs/runtime-export/base"  # the one ref a base bundle holds


@dataclass(frozen=True)
class RemoteResult:
    """What a worker sends back: all plain data (the bundle as bytes, None when there is no commit)."""

    result_json: str  # `SubtaskResult.to_json()`, without a bundle path (the orchestrator writes one)
    bundle: bytes | None
    audit: list[AuditEntry]  # the worker's audit records, in order, for the orchestrator's one log


def base_bundle(git: Git, commit: str, folder: Path) -> Path:
    """The base commit as a bundle (everything it needs): what a worker builds its checkout from."""
    path = folder / f"base-{commit[:12]}.bundle"
    if not path.exists():
        ref = f"{BASE_REF}-{commit[:12]}"
        git.run("update-ref", ref, commit)
        try:
            tmp = path.with_suffix(".tmp")
            git.run("bundle", "create", "--quiet", str(tmp), ref)
            tmp.replace(path)
        finally:
            git.run("update-ref", "-d", ref, ok=None)
    return path


# What travels over a desk is plain data, in each kind's own wire format: Ray carries it as it is. The
# orchestrator checks what it is sent (a worker is not trusted): the backend's `JobModel` the model calls
# and forwarded requests, an approvals service the approvals.
DeskAsk: TypeAlias = "BrokerRequest | ForwardCall | ApprovalAsk"
DeskAnswer: TypeAlias = "BrokerAnswer | ForwardAnswer | ApprovalAnswer"


class Desk(Protocol):
    """A worker's way back to the orchestrator, for one job. `ask` raises OSError when the
    orchestrator cannot be reached."""

    @overload
    def ask(self, kind: Literal["model"], payload: BrokerRequest) -> BrokerAnswer:
        """A request the orchestrator answers: ``model`` (a builtin agent's call), ``forward`` (a
        request of the Claude Code CLI), ``approval`` (a call the gate asks a person about)."""

    @overload
    def ask(self, kind: Literal["forward"], payload: ForwardCall) -> ForwardAnswer: ...

    @overload
    def ask(self, kind: Literal["approval"], payload: ApprovalAsk) -> ApprovalAnswer: ...

    def tell(self, kind: Literal["progress"], payload: ProgressNote) -> None:
        """News that needs no answer: ``progress`` (the job's progress event)."""


class _DeskOrchestrator:
    """`RemoteOrchestrator` over a desk: the worker's side of what the orchestrator does for the job."""

    def __init__(self, desk: Desk) -> None:
        self._desk = desk

    def complete(self, request: ModelRequest) -> ModelReply:
        try:
            answer = self._desk.ask("model", {"messages": request.messages, "tools": request.tools})
        except OSError as exc:
            raise ModelError(f"the orchestrator, which makes this agent's model calls, is unreachable: {exc}",
                             kind="broker") from None
        if answer.get("ok") is True:
            return ModelReply.from_dict(answer.get("reply"))
        raise ModelError.from_dict(answer.get("error"))

    def forward(self, path: str, body: bytes, headers: dict[str, str]) -> Forwarded:
        answer = self._desk.ask("forward", {"path": path, "body": body, "headers": headers})
        if "error" in answer:
            raise OSError(str(answer["error"]))
        return Forwarded(int(answer["status"]), str(answer["reason"]),
                         [(str(n), str(v)) for n, v in answer["headers"]], bytes(answer["body"]))

    def approve(self, request: ApprovalAsk) -> ApprovalAnswer:
        try:
            return self._desk.ask("approval", request)
        except OSError as exc:
            return {"decision": "deny", "reason": f"the orchestrator cannot be reached ({exc}); the call is denied",
                    "id": None, "status": None}


class JobService:
    """The orchestrator's side of a desk, for one job: its model calls, made with the keys only the
    orchestrator holds, to the model, server and script that the job's own task names; and its
    approvals, recorded in the orchestrator's state (`runtime approve` decides them there), shown
    on its terminal and audited in its log.

    A worker node is not trusted with keys, nor to choose where a call goes: it sends the
    conversation (or the CLI's request, checked again here against the same allowlists). The
    calls are bounded here too (`max_calls`), so a node that lies about its agent's turns cannot
    spend past what the task allows. Raises FatalError, at construction, when the model cannot be
    called from here (unknown provider, missing key, no script): the job is then not sent.
    """

    def __init__(self, task: Task, catalog: Catalog, *, state_dir: Path | None = None, audit: AuditLog | None = None) -> None:
        agent = task.agent
        assert agent is not None
        self.agent_id = task.agent_id
        self._task, self._state_dir, self._audit = task, state_dir, audit
        self._approvals: ApprovalService | None = None
        self.calls = 0
        # Every attempt's turns, twice over (the CLI also counts tokens): the node's own limits are tighter.
        self.max_calls = 2 * agent.limits.max_turns * (agent.retries + 1)
        # The backend's own side of its worker's model calls: a broker (builtin), a proxy (claude-code), none.
        self._model = backend_for(agent.backend).job_model(task, catalog)

    def answer(self, kind: str, payload: DeskAsk) -> DeskAnswer:
        """The answer to one request of the job's worker (never raises: a bad request is an answer)."""
        if kind == "approval":
            return self._approve(payload)
        self.calls += 1
        if self._model is not None and kind == self._model.request_kind:
            # The backend's own form, both ways (`JobModel`): carried here, read by its worker's relay.
            answer: DeskAnswer
            if self.calls > self.max_calls:
                answer = self._model.refused(f"{self.agent_id} has made {self.max_calls} model calls, all its task allows")
            else:
                answer = self._model.answer(payload)
            return answer
        return {"ok": False, "error": {"kind": "request", "message": f"{self.agent_id} asks for `{kind}`, which "
                                       "its backend never asks the orchestrator for"}}


    def _approve(self, payload: DeskAsk) -> ApprovalAnswer:
        from runtime.approvals.service import ApprovalService, console_notifier
        from runtime.approvals.store import ApprovalStore

        if self._state_dir is None:
            return {"decision": "deny", "reason": "this orchestrator takes no approvals; the call is denied",
                    "id": None, "status": None}
        if self._approvals is None:
            agent = self._task.agent
            assert agent is not None
            store = ApprovalStore.for_state(self._state_dir)
            hint = f"--state-dir {self._state_dir}"
            # Never started: no socket; it checks, records, shows and waits as for a local agent.
            self._approvals = ApprovalService("/nonexistent/approvals.sock", self.agent_id, store,
                                              timeout_s=agent.limits.approval_timeout_s, audit=self._audit,
                                              on_pending=console_notifier(store, hint=hint))
        return self._approvals.handle_line(json.dumps(payload))

    def close(self) -> None:
        """The job is back: a request of its still pending expires."""
        if self._approvals is not None:
            self._approvals.close()


def job_task(job: Any, catalog: Catalog) -> Task:
    """The job's task, as the orchestrator and its worker both read it from the job's data."""
    if catalog.digest() != job.catalog_digest:
        raise FatalError(f"the catalog at {job.catalog} on this node is not the one the plan was made with "
                         "(its files differ): install the same runtime and catalog on every node")
    task = task_from_manifest(catalog, job.task_manifest, job.task_path, job.task_digest)
    return replace(task, agent_id=job.agent_id)


def run_job(job_json: str, base: bytes, use_sandbox: bool = True, desk: Desk | None = None) -> RemoteResult:
    """Run one job in a private checkout made from ``base`` (a bundle); see the module's text.
    Without a desk, the agent's model calls are made here (with this machine's keys)."""
    from runtime.orchestration.executor import Job, SubtaskResult, progress_event

    job = Job.from_json(job_json)
    folder = Path(tempfile.mkdtemp(prefix="runtime-job-"))
    try:
        repo = folder / "repo"
        repo.mkdir()
        bundle = folder / "base.bundle"
        bundle.write_bytes(base)
        git = _init(repo)
        git.run("fetch", "--quiet", "--no-tags", str(bundle), "+refs/*:refs/runtime-base/*")
        git.run("update-ref", "refs/heads/base", job.base)
        git.run("checkout", "--quiet", "base")
        state = folder / "state"
        options = SpawnOptions(repo=repo, base=job.base, use_sandbox=use_sandbox, state_dir=state,
                               catalog=job.catalog, context=job.context, unattended=job.unattended)
        if desk is not None:
            told = desk  # bound for the closure (mypy: desk is not None here)
            options = replace(options, orchestrator=_DeskOrchestrator(desk),
                              listener=lambda progress: told.tell("progress", progress_event(progress)))
        outcome = anyio.run(_spawn, job, options)
        out: bytes | None = None
        if outcome.status == OutcomeStatus.OK and outcome.commit and outcome.branch:
            path = folder / "agent.bundle"
            git.run("bundle", "create", "--quiet", str(path), f"refs/heads/{outcome.branch}", f"^{job.base}")
            out = path.read_bytes()
        # The worker's checkout and its inspection commit go with it; the outcome's message says what happened.
        outcome = replace(outcome, worktree=None, inspection=None)
        return RemoteResult(SubtaskResult(job.subtask_id, outcome).to_json(), out, _audit(state))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _init(repo: Path) -> Git:
    import subprocess

    subprocess.run(["git", "init", "--quiet", str(repo)], check=True, capture_output=True)
    return Git(repo)


async def _spawn(job: Any, options: SpawnOptions) -> Outcome:
    role = "-"
    try:
        catalog = Catalog(Path(job.catalog))
        task = job_task(job, catalog)
        role = task.role.name
        return await spawn_task(task, catalog, options)
    except (FatalError, GitError) as exc:
        return Outcome(OutcomeStatus.FAILED, "runtime", job.agent_id, role, message=str(exc))


def _audit(state: Path) -> list[AuditEntry]:
    return list(records(state / "audit.jsonl"))
