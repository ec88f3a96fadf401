"""The interface every backend implements (``runtime.spawn.backends``): one folder per backend.

What differs between backends is here, typed, and nothing else: what a backend needs on the
machine, how its agent reaches its model (a service the orchestrator starts beside the agent, and on
a cluster the orchestrator's side of it, `JobModel`), its command line, how its output becomes
progress, where its report is, and what its program leaves that is never the agent's work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from runtime.manifests.catalog import Catalog
    from runtime.manifests.task import Task
    from runtime.models.broker import Usage
    from runtime.spawn.agent_process import AttemptSetup
    from runtime.spawn.pipeline import SpawnRun
    from runtime.spawn.progress import Progress


class ModelAccess(Protocol):
    """The agent's way to its model (the broker, the CLI's proxy): a service on a Unix socket that alone
    holds the keys, keeps the agent's usage and is closed when the run ends."""

    socket_path: Path

    def usage(self) -> Usage: ...

    def close(self) -> None: ...


Call = TypeVar("Call", contravariant=True)
Answer = TypeVar("Answer", covariant=True)


class JobModel(Protocol[Call, Answer]):
    """The orchestrator's side of a cluster job's model calls (`runtime.orchestration.remote_job`): it
    answers the requests of one kind that the job's worker relays, with the orchestrator's keys, to the
    model the job's own task names. ``Call`` and ``Answer`` are the backend's own forms of a relayed
    request and its answer; the relay carries them without reading them."""

    request_kind: str  # what the worker's relay asks for: "model" (the broker) or "forward" (the proxy)

    def answer(self, payload: Call) -> Answer:
        """The answer to one relayed request (never raises: a failure is an answer)."""
        ...

    def refused(self, message: str) -> Answer:
        """The answer to a request refused before it was made (the job's calls are spent), in the
        relay's own form."""
        ...


@dataclass(frozen=True)
class Report:
    """An agent's report as its backend found it after the run, and why it was refused (None: it was not)."""

    text: str | None
    problem: str | None = None


class Backend(Protocol):
    name: str

    def preflight(self, task: Task, models_here: bool) -> None:
        """Check what the backend needs on this machine before anything is created (FatalError: one line).
        ``models_here`` False: the model calls are made elsewhere (see `SpawnOptions.orchestrator`)."""

    def model_access(self, run: SpawnRun) -> tuple[ModelAccess | None, Path | None]:
        """Start the service through which the agent reaches its model, and the folder of its socket;
        ``(None, None)`` when the agent reaches no model through the runtime."""

    def job_model(self, task: Task, catalog: Catalog) -> JobModel[Any, Any] | None:
        """On the orchestrator, for a cluster job of ``task``: what makes its worker's model calls (None:
        the backend relays none). Raises FatalError when the model cannot be called from here."""

    def command(self, setup: AttemptSetup, feedback_path: Path | None) -> tuple[list[str], bytes | None, dict[str, str]]:
        """The agent's command line, its stdin, and variables to add to its environment."""

    def on_line(self, progress: Progress) -> Callable[[str], None] | None:
        """A parser of the agent's stdout lines into progress (turns, tool calls, its report), or None."""

    def read_report(self, setup: AttemptSetup) -> Report | None:
        """After the process ended: the report, where the backend finds it other than in its events (None)."""

    def clean_up(self, setup: AttemptSetup) -> None:
        """After the process ended, or was stopped, before anything reads the worktree: remove what the
        agent program itself leaves there and that is never the agent's work."""
