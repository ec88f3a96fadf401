"""Executors run a plan's subtasks: start, observe, stop, collect.

The planner and the validators only see this interface, so a backend on a
distributed engine can later replace local processes. `LocalExecutor` runs
each subtask through the spawn pipeline in this process (its own worktree,
sandbox, gate, verify and local retries), under a concurrency limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import anyio

from runtime.errors import FatalError
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import Task
from runtime.spawn.outcome import Outcome
from runtime.spawn.pipeline import SpawnOptions, spawn_task
from runtime.spawn.progress import Progress


@dataclass
class Job:
    run_id: str
    subtask_id: str
    task: Task  # its agent id already made unique for the run
    catalog: Catalog
    context: str | None  # outputs of the earlier subtasks it uses
    base: str | None = None  # the revision its worktree starts from (the integration so far)


@dataclass
class SubtaskResult:
    subtask_id: str
    outcome: Outcome

    @property
    def branch(self) -> str | None:
        return self.outcome.branch

    @property
    def commit(self) -> str | None:
        return self.outcome.commit

    @property
    def report(self) -> str | None:
        return self.outcome.attempts[-1].report if self.outcome.attempts else None


class Executor(Protocol):
    async def start(self, job: Job) -> str: ...
    def observe(self, handle: str) -> Progress | None: ...
    async def stop(self, handle: str) -> None: ...
    async def collect(self, handle: str) -> SubtaskResult: ...


class LocalExecutor:
    """Spawns in this process, at most `concurrency` at a time, inside the caller's task group."""

    def __init__(self, group: anyio.abc.TaskGroup, options: SpawnOptions, concurrency: int,
                 listener: Callable[[str, Progress], None] | None = None) -> None:
        self._group = group
        self._options = options
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._listener = listener
        self._progress: dict[str, Progress] = {}
        self._done: dict[str, anyio.Event] = {}
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._results: dict[str, SubtaskResult] = {}

    async def start(self, job: Job) -> str:
        handle = job.subtask_id
        self._done[handle] = anyio.Event()
        self._scopes[handle] = anyio.CancelScope()
        self._group.start_soon(self._run, job, handle)
        return handle

    def observe(self, handle: str) -> Progress | None:
        return self._progress.get(handle)

    async def stop(self, handle: str) -> None:
        self._scopes[handle].cancel()
        await self._done[handle].wait()

    async def collect(self, handle: str) -> SubtaskResult:
        await self._done[handle].wait()
        return self._results[handle]

    async def _run(self, job: Job, handle: str) -> None:
        def seen(progress: Progress) -> None:
            self._progress[handle] = progress
            if self._listener is not None:
                self._listener(handle, progress)

        options = replace(self._options, context=job.context, listener=seen, base=job.base or self._options.base)
        task = job.task
        try:
            with self._scopes[handle]:
                async with self._limiter:
                    outcome = await spawn_task(task, job.catalog, options)
            if self._scopes[handle].cancelled_caught:
                outcome = Outcome("failed", "stopped", task.agent_id, task.role.name, message="stopped by the orchestrator")
        except FatalError as exc:
            outcome = Outcome("failed", "runtime", task.agent_id, task.role.name, message=str(exc))
        self._results[handle] = SubtaskResult(job.subtask_id, outcome)
        self._done[handle].set()
