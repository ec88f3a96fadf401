"""The interface every backend implements (``runtime.spawn.backends``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from runtime.manifests.task import Task
    from runtime.spawn.agent_process import AttemptSetup
    from runtime.spawn.progress import Progress


class Backend(Protocol):
    """What differs between backends, and nothing else."""

    name: str

    def preflight(self, task: Task, models_here: bool) -> None:
        """Check what the backend needs on this machine before anything is created (FatalError: one line).
        ``models_here`` False: the model calls are made elsewhere (see `SpawnOptions.orchestrator`)."""

    def model_access(self, run: Any) -> tuple[Any, Path | None]:
        """Start the service through which the agent reaches its model (the broker, the CLI's proxy), and
        the folder of its socket; ``(None, None)`` when the agent reaches no model through the runtime."""

    def command(self, setup: AttemptSetup, feedback_path: Path | None) -> tuple[list[str], bytes | None, dict[str, str]]:
        """The agent's command line, its stdin, and variables to add to its environment."""

    def on_line(self, progress: Progress) -> Callable[[str], None] | None:
        """A parser of the agent's stdout lines into progress (turns, tool calls, its report), or None."""

    def read_report(self, setup: AttemptSetup) -> None:
        """After the process ended: the report, where the backend finds it other than in its events."""

    def clean_up(self, setup: AttemptSetup) -> None:
        """After the process ended, or was stopped, before anything reads the worktree: remove what the
        agent program itself leaves there and that is never the agent's work."""
