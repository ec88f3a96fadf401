"""What a spawn checks before it creates anything (a lock, a worktree, a run).

A mistake found here is the user's to fix and ends the command with one line
and exit 1, leaving no trace; a run that started and then could not finish
would instead hold its agent id.
"""

from __future__ import annotations

import os
import shutil

from runtime.errors import FatalError
from runtime.manifests.task import Task
from runtime.sandbox.env import check_declared


def preflight(task: Task) -> None:
    agent = task.agent
    for name in agent.env:
        if name not in os.environ:
            raise FatalError(f"{task.path}: [agent] env names {name}, which the orchestrator's environment does not set")
        check_declared(name, os.environ[name])
    if agent.backend == "builtin" and agent.script is not None:
        from runtime.models.scripted import load_script

        load_script(agent.script)  # a ManifestError names the script's line
    elif agent.backend == "builtin" and agent.model:
        from runtime.models.llm import model_problem

        problem = model_problem(agent.model, agent.api_base)
        if problem is not None:
            raise FatalError(f"{task.path}: [agent] model: {problem}")
    elif agent.backend == "claude-code":
        from runtime.spawn.anthropic_proxy import upstream_credentials
        from runtime.spawn.claude import cli_launch, find_claude

        cli_launch(find_claude())
        upstream_credentials(os.environ)
    elif agent.backend == "command":
        program = agent.command[0]
        if "/" not in program and shutil.which(program) is None:
            raise FatalError(f"{task.path}: [agent] command runs `{program}`, which is not on PATH")
