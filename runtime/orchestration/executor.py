"""Executors run a plan's subtasks: start, stop, collect.

What crosses between the orchestrator and an executor is plain data that
serialises (``to_json``/``from_json``), so an executor may run its jobs in
another process or on another machine: a ``Job`` holds the task as its
manifest text and hash, the catalog by folder and hash, the base as a commit
id; a ``SubtaskResult`` holds the outcome; progress comes back as plain
events. `LocalExecutor` runs each job through the spawn pipeline in this
process (its own worktree, sandbox, gate, verify and local retries), under a
concurrency limit, from that data alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import NotRequired, Protocol, TypedDict

import anyio
import anyio.abc

from runtime.errors import FatalError
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import task_from_manifest
from runtime.outcomes import OutcomeStatus
from runtime.spawn.outcome import Outcome
from runtime.spawn.pipeline import SpawnOptions, spawn_task
from runtime.spawn.progress import Progress


@dataclass(frozen=True)
class Job:
    run_id: str
    subtask_id: str
    agent_id: str  # unique for the run: `<run>.<subtask>`
    task_manifest: str  # the task as a TOML document of its own
    task_path: str  # where its relative paths resolve (the task file, or the plan of an inline task)
    task_digest: str  # sha256 of what it was written in (recorded by spawn; part of generated ids)
    catalog: str  # the catalog's folder
    catalog_digest: str  # `Catalog.digest()`: the executor refuses a catalog that differs
    base: str  # the commit its worktree starts from (the integration so far)
    context: str | None  # outputs of the earlier subtasks it uses
    memory_mb: int = 4096  # the agent's memory limit ([agent.limits] memory-mb): what a cluster reserves for it
    cpus: int | None = None  # the CPUs the agent is pinned to ([agent.limits] cpus): a cluster reserves them (else 1)
    node_labels: dict[str, str] = field(default_factory=dict)  # only a cluster's node carrying them may run it
    unattended: bool = False  # nobody watches the run: what the gate would ask is refused at once

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Job:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class SubtaskResult:
    subtask_id: str
    outcome: Outcome
    # The agent branch as a git bundle on the orchestrator's machine, from an executor whose workers have
    # repositories of their own; the orchestrator imports it (checking it holds the reported commit).
    # None: the work is in the orchestrator's repository already (the local executor).
    bundle: str | None = None

    @property
    def branch(self) -> str | None:
        return self.outcome.branch

    @property
    def commit(self) -> str | None:
        return self.outcome.commit

    @property
    def report(self) -> str | None:
        return self.outcome.attempts[-1].report if self.outcome.attempts else None

    def to_json(self) -> str:
        return json.dumps({"subtask_id": self.subtask_id, "outcome": self.outcome.to_dict(), "bundle": self.bundle},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SubtaskResult:
        data = json.loads(text)
        return cls(data["subtask_id"], Outcome.from_dict(data["outcome"]), data.get("bundle"))


class ProgressNote(TypedDict):
    """A job's progress as plain data: a worker node sends it to the orchestrator as it goes."""

    agent: str
    attempt: int
    state: str  # a `ProgressState`, by its value: plain data, as a worker node sends it
    turns: int
    tool_calls: int
    denials: int
    elapsed_s: float
    cost_usd: float
    writes: list[str]  # every path the agent wrote so far
    node: NotRequired[str | None]  # the cluster node that runs the job (the Ray executor)


# A subtask's progress: (subtask id, its progress).
Listener = Callable[[str, ProgressNote], None]


def progress_event(progress: Progress) -> ProgressNote:
    return {"agent": progress.agent_id, "attempt": progress.attempt, "state": progress.state.value, "turns": progress.turns,
            "tool_calls": progress.tool_calls, "denials": progress.denials, "elapsed_s": round(progress.elapsed_s, 1),
            "cost_usd": progress.cost_usd, "writes": list(progress.writes)}


class Executor(Protocol):
    async def start(self, job: Job) -> str:
        """Begin the job; the handle names it to `stop` and `collect`."""

    async def stop(self, handle: str) -> None:
        """End the job early; its result is then `failed(stopped)`."""

    async def collect(self, handle: str) -> SubtaskResult:
        """Wait for the job's result."""


# What `runtime.orchestration.run` calls to get an executor for a round.
ExecutorFactory = Callable[[anyio.abc.TaskGroup, SpawnOptions, int, Listener | None], Executor]


class LocalExecutor:
    """Spawns in this process, at most `concurrency` at a time, inside the caller's task group."""

    def __init__(self, group: anyio.abc.TaskGroup, options: SpawnOptions, concurrency: int,
                 listener: Listener | None = None) -> None:
        self._group = group
        self._options = options
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._listener = listener
        self._done: dict[str, anyio.Event] = {}
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._results: dict[str, SubtaskResult] = {}
        self._catalogs: dict[tuple[str, str], Catalog] = {}

    async def start(self, job: Job) -> str:
        handle = job.subtask_id
        self._done[handle] = anyio.Event()
        self._scopes[handle] = anyio.CancelScope()
        self._group.start_soon(self._run, job, handle)
        return handle

    async def stop(self, handle: str) -> None:
        self._scopes[handle].cancel()
        await self._done[handle].wait()

    async def collect(self, handle: str) -> SubtaskResult:
        await self._done[handle].wait()
        return self._results[handle]

    def _catalog(self, job: Job) -> Catalog:
        key = (job.catalog, job.catalog_digest)
        if key not in self._catalogs:
            catalog = Catalog(Path(job.catalog))
            if catalog.digest() != job.catalog_digest:
                raise FatalError(f"the catalog at {job.catalog} is not the one the plan was made with (its files differ)")
            self._catalogs[key] = catalog
        return self._catalogs[key]

    async def _run(self, job: Job, handle: str) -> None:
        def seen(progress: Progress) -> None:
            if self._listener is not None:
                self._listener(handle, progress_event(progress))

        options = replace(self._options, context=job.context, listener=seen, base=job.base or self._options.base,
                          subtask=job.subtask_id)
        role = "-"
        try:
            if job.node_labels:  # where it may run is a cluster's to decide: this machine carries no labels
                raise FatalError(f"subtask {job.subtask_id} asks for nodes labelled "
                                 f"{', '.join(f'{k}={v}' for k, v in job.node_labels.items())}: run it with --executor ray")
            with self._scopes[handle]:
                catalog = self._catalog(job)
                task = task_from_manifest(catalog, job.task_manifest, job.task_path, job.task_digest)
                task, role = replace(task, agent_id=job.agent_id), task.role.name
                async with self._limiter:
                    outcome = await spawn_task(task, catalog, options)
            if self._scopes[handle].cancelled_caught:
                outcome = Outcome(OutcomeStatus.FAILED, "stopped", job.agent_id, role, message="stopped by the orchestrator")
        except FatalError as exc:
            outcome = Outcome(OutcomeStatus.FAILED, "runtime", job.agent_id, role, message=str(exc))
        self._results[handle] = SubtaskResult(job.subtask_id, outcome)
        self._done[handle].set()
