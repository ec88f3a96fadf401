"""`--executor ray`: each subtask as a Ray task on some node of an existing cluster.

The only module that imports ray (lazily, when a run asks for it). Git stays with the
orchestrator: a job crosses the wire as its plain-data `Job` and its base commit as a git bundle
(through Ray's object store); the worker runs it in a private checkout through the same spawn
pipeline (`runtime.orchestration.remote_job`) and sends back the outcome, its audit records and the
verified agent branch as a bundle. The orchestrator writes the bundle under its state folder, where
`run` imports it and checks the work again before anything is integrated. No key, path of the
orchestrator's state or handle of its repository is in a task's arguments.

Keys stay here too. A worker's agent makes its model calls through the orchestrator: the job's
desk (`remote_job.Desk`) is a small Ray actor holding no key, a mailbox between the workers and
this process. A worker asks it; the orchestrator, which alone holds the keys, takes the question,
has the job's `JobService` answer it, and answers through the actor. Progress comes back the same
way, as the job goes, not only when it ends.

A node that dies mid-job (its raylet or worker killed) ends the job `failed(node)`; the round
dispatches it again within the plan's `max-dispatches`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import anyio
import anyio.abc

from runtime.audit.log import AuditLog
from runtime.audit.records import Worker
from runtime.errors import FatalError
from runtime.manifests.catalog import Catalog
from runtime.orchestration.executor import Executor, ExecutorFactory, Job, Listener, ProgressNote, SubtaskResult
from runtime.orchestration.remote_job import (
    DeskAnswer,
    DeskAsk,
    JobService,
    RemoteResult,
    base_bundle,
    job_task,
    run_job,
)
from runtime.outcomes import OutcomeStatus
from runtime.spawn.outcome import Outcome
from runtime.spawn.pipeline import SpawnOptions
from runtime.spawn.progress import ProgressState
from runtime.workspace.git import Git, GitError

if TYPE_CHECKING:
    from ray import ObjectRef

    from runtime.approvals.service import ApprovalAnswer, ApprovalAsk
    from runtime.lang.jsontypes import JSONObject
    from runtime.models.broker import BrokerAnswer, BrokerRequest
    from runtime.spawn.backends.claude_code.proxy import ForwardAnswer, ForwardCall

DEFAULT_ADDRESS = "auto"  # a cluster already running on this machine (`ray start --head`)


def connect(address: str | None) -> str:
    """Join the cluster at ``address``, or say in one line why not (before a run creates anything).
    Returns the address joined."""
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")  # Ray's core logs its warnings to our stderr
    import ray

    address = address or os.environ.get("RAY_ADDRESS") or DEFAULT_ADDRESS
    if ray.is_initialized():
        return address
    if address != DEFAULT_ADDRESS:
        _reachable(address)  # ray.init waits a long while for an address nothing listens on
    try:
        # Never a cluster of our own: one started here would inherit this process's environment,
        # model keys included. A laptop starts one with `ray start --head` first.
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, include_dashboard=False)
    except Exception as exc:  # ray raises ConnectionError, RuntimeError or its own kinds
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise FatalError(f"cannot reach the Ray cluster at {address}: {first} "
                         "(start one with `ray start --head`, or pass --ray-address HOST:PORT)") from None
    _cluster_messages_to_stderr()
    return address


def _cluster_messages_to_stderr() -> None:
    """Ray prints the cluster's errors (a raylet that died, with its last log lines) to stdout, which
    is the `--json` event stream: send everything it prints to stderr instead. Ray has no setting for
    this, so its printer is wrapped; the Ray tests check that stdout stays JSON when a node dies."""
    import sys

    from ray._private import worker

    printer = getattr(worker, "print_worker_logs", None)
    if printer is None or not hasattr(worker, "print_to_stdstream"):
        return

    def to_stderr(data: JSONObject, ignore_prefix: bool) -> None:  # Ray's record of a batch of a worker's lines
        printer(data, sys.stderr, ignore_prefix)

    worker.print_to_stdstream = to_stderr


def _reachable(address: str) -> None:
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=5):
            pass
    except (OSError, ValueError) as exc:
        raise FatalError(f"cannot reach the Ray cluster at {address}: {exc} "
                         "(start one with `ray start --head`, or pass --ray-address HOST:PORT)") from None


def _remote_run(job_json: str, base: bytes, use_sandbox: bool, desk: Any, agent_id: str) -> tuple[RemoteResult, str]:
    import ray

    return run_job(job_json, base, use_sandbox, _DeskClient(desk, agent_id)), ray.get_runtime_context().get_node_id()


class _DeskClient:
    """A worker's `remote_job.Desk`: the job's questions and news, as calls of the desk actor."""

    def __init__(self, desk: Any, agent_id: str) -> None:
        self._desk, self._agent = desk, agent_id

    @overload
    def ask(self, kind: Literal["model"], payload: BrokerRequest) -> BrokerAnswer: ...

    @overload
    def ask(self, kind: Literal["forward"], payload: ForwardCall) -> ForwardAnswer: ...

    @overload
    def ask(self, kind: Literal["approval"], payload: ApprovalAsk) -> ApprovalAnswer: ...

    def ask(self, kind: str, payload: DeskAsk) -> DeskAnswer:
        import ray

        try:
            answer: DeskAnswer = ray.get(self._desk.ask.remote(self._agent, kind, payload))
        except ray.exceptions.RayError as exc:
            raise OSError(f"the orchestrator's desk is gone ({type(exc).__name__})") from None
        return answer

    def tell(self, kind: Literal["progress"], payload: ProgressNote) -> None:
        import ray

        try:
            note: ProgressNote = {**payload, "node": ray.get_runtime_context().get_node_id()}
            self._desk.tell.remote(self._agent, kind, note)
        except Exception:  # noqa: BLE001 - news lost is no reason to stop the agent
            pass


@dataclass(frozen=True)
class _Asked:
    """A worker's request, waiting at the desk for the orchestrator's answer (by its number)."""

    number: int
    agent: str
    kind: str
    payload: DeskAsk


@dataclass(frozen=True)
class _Told:
    """A worker's news for the orchestrator."""

    agent: str
    kind: str
    payload: ProgressNote


class _Desk:
    """The mailbox between the workers and the orchestrator (a Ray actor; it holds no key).

    Ray cannot call the driver, so the orchestrator calls `take`, which waits for the next
    questions; a worker's `ask` waits until the orchestrator `answer`s it. `wake` ends a `take`
    with nothing, so the orchestrator can stop taking when no job of its is out.
    """

    def __init__(self) -> None:
        import asyncio

        self._queue: asyncio.Queue[_Asked | _Told | None] = asyncio.Queue()
        self._waiting: dict[int, asyncio.Future[DeskAnswer]] = {}
        self._next = 0

    async def ask(self, agent: str, kind: str, payload: DeskAsk) -> DeskAnswer:
        import asyncio

        self._next += 1
        future: asyncio.Future[DeskAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        self._queue.put_nowait(_Asked(self._next, agent, kind, payload))
        return await future

    async def tell(self, agent: str, kind: str, payload: ProgressNote) -> None:
        self._queue.put_nowait(_Told(agent, kind, payload))

    async def take(self) -> list[_Asked | _Told]:
        items = [await self._queue.get()]
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        return [item for item in items if item is not None]

    async def answer(self, number: int, reply: DeskAnswer) -> None:
        future = self._waiting.pop(number, None)
        if future is not None and not future.done():
            future.set_result(reply)

    async def wake(self) -> None:
        self._queue.put_nowait(None)


class RayExecutor:
    """Jobs as Ray tasks, at most `concurrency` in flight, collected inside the caller's task group."""

    def __init__(self, group: anyio.abc.TaskGroup, options: SpawnOptions, concurrency: int,
                 listener: Listener | None = None) -> None:
        import ray

        if options.state_dir is None:
            raise FatalError("the Ray executor needs the run's state folder")
        self._ray = ray
        # One CPU each, spread over the nodes (agents, their sandboxes and their tests are CPU-bound);
        # never retried by Ray itself: a lost node is the round's to re-dispatch, counted.
        self._remote = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(_remote_run)
        self._group, self._options, self._listener = group, options, listener
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._git = Git(options.repo)
        self._folder = Path(options.state_dir) / "ray"
        self._folder.mkdir(parents=True, exist_ok=True)
        self._audit = AuditLog(Path(options.state_dir) / "audit.jsonl")
        self._refs: dict[str, ObjectRef[tuple[RemoteResult, str]]] = {}
        self._bundling = _AsyncLock()
        self._stopped: set[str] = set()
        self._done: dict[str, anyio.Event] = {}
        self._results: dict[str, SubtaskResult] = {}
        self._services: dict[str, tuple[Job, JobService]] = {}  # agent id -> its job, while it is out
        self._catalogs: dict[str, Catalog] = {}
        self._desk: Any = None
        self._taking = False

    async def start(self, job: Job) -> str:
        handle = job.agent_id  # unique per dispatch: a re-dispatched subtask gets a handle of its own
        self._done[handle] = anyio.Event()
        self._group.start_soon(self._run, job, handle)
        return handle

    async def stop(self, handle: str) -> None:
        self._stopped.add(handle)
        ref = self._refs.get(handle)
        if ref is not None:
            self._ray.cancel(ref, force=True)
        await self._done[handle].wait()

    async def collect(self, handle: str) -> SubtaskResult:
        await self._done[handle].wait()
        return self._results[handle]

    async def _run(self, job: Job, handle: str) -> None:
        try:
            async with self._limiter:
                self._results[handle] = await self._dispatch(job, handle)
        except (FatalError, GitError, OSError) as exc:
            self._results[handle] = _failed(job, "runtime", f"the job could not be sent or read back: {exc}")
        except BaseException:
            self._results[handle] = _failed(job, "runtime", "the orchestrator stopped while the job ran")
            raise
        finally:
            self._done[handle].set()

    async def _dispatch(self, job: Job, handle: str) -> SubtaskResult:
        ray = self._ray
        if handle in self._stopped:
            return _failed(job, "stopped", "stopped by the orchestrator")
        refusal = _infeasible(job, [_Node.of(n) for n in ray.nodes() if n.get("Alive")])
        if refusal is not None:  # Ray would wait for such a node for ever: refused now, with the figures to act on
            return _failed(job, "runtime", refusal)
        try:
            service = await anyio.to_thread.run_sync(self._service, job)
        except FatalError as exc:  # its model cannot be called from here: not sent
            return _failed(job, "runtime", str(exc))
        async with self._bundling:  # jobs of one group share their base's bundle: made once
            path = await anyio.to_thread.run_sync(base_bundle, self._git, job.base, self._folder)
        base = ray.put(path.read_bytes())
        self._services[job.agent_id] = (job, service)
        self._start_taking()
        # Scheduled where the agent's declared memory limit fits (its supervisor enforces it on the node).
        placement = {"label_selector": dict(job.node_labels)} if job.node_labels else {}
        ref = self._remote.options(memory=job.memory_mb * 1024 * 1024, num_cpus=job.cpus or 1, **placement).remote(
            job.to_json(), base, self._options.use_sandbox, self._desk, job.agent_id)
        self._refs[handle] = ref
        self._event(job, ProgressState.DISPATCHED, None)
        try:
            remote, node = await anyio.to_thread.run_sync(ray.get, ref, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            ray.cancel(ref, force=True)  # Ctrl-C or a stop: the remote job goes too
            raise
        except ray.exceptions.TaskCancelledError:
            return _failed(job, "stopped", "stopped by the orchestrator")
        except ray.exceptions.RayTaskError as exc:  # the job itself raised: a fault of the runtime there
            return _failed(job, "runtime", f"the job failed on its node: {_first_line(exc)}")
        except ray.exceptions.RayError as exc:
            # Anything else is the cluster's: a node, raylet or worker gone, an object lost.
            if handle in self._stopped:
                return _failed(job, "stopped", "stopped by the orchestrator")
            return _failed(job, "node", f"its node or worker was lost mid-job ({type(exc).__name__})")
        finally:
            self._refs.pop(handle, None)
            self._services.pop(job.agent_id, None)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(service.close)
            if not self._services and self._desk is not None:
                with contextlib.suppress(ray.exceptions.RayError):
                    self._desk.wake.remote()  # the desk's `take` returns: nothing is out to ask
        result = SubtaskResult.from_json(remote.result_json)
        for entry in remote.audit:
            self._audit.append(entry.record, entry.agent, worker=Worker(node=node, seq=entry.seq, time=entry.time))
        self._event(job, ProgressState.RETURNED, node)
        if remote.bundle is None:
            return result
        bundle = self._folder / f"{job.agent_id}.bundle"
        bundle.write_bytes(remote.bundle)
        return SubtaskResult(result.subtask_id, result.outcome, str(bundle))

    def _service(self, job: Job) -> JobService:
        catalog = self._catalogs.get(job.catalog)
        if catalog is None:
            catalog = self._catalogs[job.catalog] = Catalog(Path(job.catalog))
        return JobService(job_task(job, catalog), catalog, state_dir=self._options.state_dir, audit=self._audit)

    def _start_taking(self) -> None:
        """Take the workers' questions while a job is out (one taker; it stops when the last job is back)."""
        if self._desk is None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            # No CPU: a mailbox. On the orchestrator's own node, so no worker node's loss takes it down,
            # and owned by this process, so it goes when the orchestrator does.
            here = NodeAffinitySchedulingStrategy(self._ray.get_runtime_context().get_node_id(), soft=False)
            desk: Any = self._ray.remote(_Desk)
            self._desk = desk.options(num_cpus=0, max_restarts=0, scheduling_strategy=here).remote()
        if not self._taking:
            self._taking = True
            self._group.start_soon(self._take)

    async def _take(self) -> None:
        desk = self._desk
        try:
            while self._services:
                for item in await desk.take.remote():
                    self._group.start_soon(self._reply, desk, item)
        except self._ray.exceptions.RayError:
            # The desk is gone (its node with it): the jobs out now lose their way back and fail on their
            # own; the next dispatch makes a new desk. Never the run's end.
            if self._desk is desk:
                self._desk = None
        finally:
            self._taking = False

    async def _reply(self, desk: Any, item: _Asked | _Told) -> None:
        job, service = self._services.get(item.agent, (None, None))
        if isinstance(item, _Told):
            if item.kind == "progress" and job is not None and self._listener is not None:
                self._listener(job.subtask_id, {**item.payload, "agent": item.agent})
            return
        if service is None:
            reply: DeskAnswer = {"ok": False, "error": {"kind": "request",
                                                        "message": f"no job of this run is out as {item.agent}"}}
        else:
            reply = await anyio.to_thread.run_sync(service.answer, item.kind, item.payload)
        try:
            desk.answer.remote(item.number, reply)
        except self._ray.exceptions.RayError:
            pass  # the desk is gone; the asker fails on its own (see _take)

    def _event(self, job: Job, state: ProgressState, node: str | None) -> None:
        if self._listener is not None:
            self._listener(job.subtask_id, {"agent": job.agent_id, "attempt": 0, "state": state.value, "turns": 0,
                                            "tool_calls": 0, "denials": 0, "elapsed_s": 0.0, "cost_usd": 0.0,
                                            "writes": [], "node": node})


class _AsyncLock:
    """anyio.Lock, made lazily: an executor may be built outside the event loop that uses it."""

    def __init__(self) -> None:
        self._lock: anyio.Lock | None = None

    async def __aenter__(self) -> None:
        if self._lock is None:
            self._lock = anyio.Lock()
        await self._lock.acquire()

    async def __aexit__(self, *exc: object) -> None:
        assert self._lock is not None
        self._lock.release()


@dataclass(frozen=True)
class _Node:
    """What a live node of the cluster offers a job, read from its entry of `ray.nodes()`."""

    labels: dict[str, str]
    memory: float  # bytes
    cpus: float

    @classmethod
    def of(cls, node: JSONObject) -> _Node:
        labels, resources = node.get("Labels"), node.get("Resources")
        offered = resources if isinstance(resources, dict) else {}
        memory, cpus = offered.get("memory", 0), offered.get("CPU", 0)
        return cls({str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
                   memory if isinstance(memory, int | float) else 0, cpus if isinstance(cpus, int | float) else 0)


def _infeasible(job: Job, nodes: list[_Node]) -> str | None:
    """Why no live node of the cluster can ever run the job, or None."""
    mib = 1024 * 1024
    if job.node_labels:
        wanted = job.node_labels.items()
        nodes = [n for n in nodes if wanted <= n.labels.items()]
        if not nodes:
            shown = ", ".join(f"{k}={v}" for k, v in job.node_labels.items())
            return (f"no node of the cluster carries the labels {shown} (`ray start --labels` on a node gives them); "
                    "change the subtask's node-labels or label a node")
    if not any(n.memory >= job.memory_mb * mib for n in nodes):
        largest = max((n.memory for n in nodes), default=0)
        return (f"no node of the cluster can reserve the agent's memory-mb = {job.memory_mb} (the largest offers "
                f"{int(largest // mib)} MiB); lower [agent.limits] memory-mb or add a larger node")
    cpus = job.cpus or 1
    if not any(n.cpus >= cpus for n in nodes):
        most = max((n.cpus for n in nodes), default=0)
        return (f"no node of the cluster offers the agent's cpus = {cpus} (the most is {int(most)}); "
                "lower [agent.limits] cpus or add a larger node")
    if not any(n.memory >= job.memory_mb * mib and n.cpus >= cpus for n in nodes):
        return (f"no node of the cluster offers both the agent's memory-mb = {job.memory_mb} and cpus = {cpus}")
    return None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:500]


def _failed(job: Job, detail: str, message: str) -> SubtaskResult:
    return SubtaskResult(job.subtask_id, Outcome(OutcomeStatus.FAILED, detail, job.agent_id, "-", message=message))


def ray_executor(address: str | None) -> ExecutorFactory:
    """The factory `RunOptions.executor` takes: joins the cluster once, then a RayExecutor per round."""
    connect(address)

    def factory(group: anyio.abc.TaskGroup, options: SpawnOptions, concurrency: int,
                listener: Listener | None = None) -> Executor:
        return RayExecutor(group, options, concurrency, listener)
    return factory
