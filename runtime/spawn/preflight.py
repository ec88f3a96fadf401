"""What a spawn checks before it creates anything (a lock, a worktree, a run).

A mistake found here is the user's to fix and ends the command with one line
and exit 1, leaving no trace; a run that started and then could not finish
would instead hold its agent id.
"""

from __future__ import annotations

import os

from runtime.errors import FatalError
from runtime.manifests.task import Task
from runtime.sandbox.cpus import check_cpus
from runtime.sandbox.env import check_declared
from runtime.spawn.backends import backend_for


def preflight(task: Task, *, models_here: bool = True) -> None:
    """``models_here`` False: another machine makes the agent's model calls (the orchestrator of a
    cluster run, which checked the model and its keys before it sent the job), so they are not
    looked for here."""
    agent = task.agent
    assert agent is not None  # spawn refuses a task without an [agent] table before this
    for name in agent.env:
        if name not in os.environ:
            raise FatalError(f"{task.path}: [agent] env names {name}, which the orchestrator's environment does not set")
        check_declared(name, os.environ[name])
    if agent.limits.cpus is not None:
        check_cpus(agent.limits.cpus, str(task.path))
    backend_for(agent.backend).preflight(task, models_here)
