"""builtin: the runtime's own agent loop (``python -I -m runtime.agent``), gating each call in-process
and reaching its model through the broker, which alone holds the keys."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import FatalError
from runtime.spawn.backends.base import JobModel, ModelAccess, Report
from runtime.spawn.sockets import socket_folder

if TYPE_CHECKING:
    from runtime.manifests.agent import AgentSpec
    from runtime.manifests.catalog import Catalog
    from runtime.manifests.task import Task
    from runtime.models.broker import Broker, BrokerAnswer, BrokerRequest
    from runtime.models.types import ModelReach
    from runtime.spawn.agent_process import AttemptSetup
    from runtime.spawn.pipeline import SpawnRun
    from runtime.spawn.progress import Progress


class BuiltinBackend:
    name = "builtin"

    def preflight(self, task: Task, models_here: bool) -> None:
        agent = task.agent
        assert agent is not None
        if not models_here:
            return  # the script and the keys are where the calls are made
        if agent.script is not None:
            from runtime.models.scripted import load_script

            load_script(agent.script)  # a ManifestError names the script's line
        elif agent.model:
            from runtime.models.llm import model_problem

            problem = model_problem(agent.model, agent.api_base)
            if problem is not None:
                raise FatalError(f"{task.path}: [agent] model: {problem}")

    def model_access(self, run: SpawnRun) -> tuple[ModelAccess | None, Path | None]:
        from runtime.models.broker import Broker

        folder = socket_folder(run.state.root)
        config = _model_reach(run.agent)
        # Whoever makes the calls, the broker here is the agent's one way to them and keeps its usage.
        remote = run.options.orchestrator
        broker = Broker(folder / "model.sock", run.agent_id, config, complete=remote.complete if remote else None)
        return broker.start(), folder

    def command(self, setup: AttemptSetup, feedback_path: Path | None) -> tuple[list[str], bytes | None, dict[str, str]]:
        agent = setup.task.agent
        assert agent is not None
        bundle, policy = setup.run_ro / "bundle.md", setup.run_ro / "policy.json"
        argv = [sys.executable, "-I", "-m", "runtime.agent", "--bundle", str(bundle), "--policy", str(policy),
                "--broker", str(setup.broker_socket), "--root", str(setup.worktree)]
        if feedback_path is not None:
            argv += ["--feedback", str(feedback_path)]
        if setup.approvals_socket is not None:
            argv += ["--approvals", str(setup.approvals_socket), "--approval-timeout", str(agent.limits.approval_timeout_s)]
        return argv, None, {}

    def on_line(self, progress: Progress) -> Callable[[str], None] | None:
        return progress.builtin_event

    def job_model(self, task: Task, catalog: Catalog) -> JobModel[BrokerRequest, BrokerAnswer] | None:
        from runtime.models.broker import Broker

        agent = task.agent
        assert agent is not None
        self.preflight(task, True)  # the script, or the model and its key, here
        config = _model_reach(agent)
        # Never started: no socket, it answers the lines a worker relays.
        return _BrokerCalls(Broker("/nonexistent/model.sock", task.agent_id, config))

    def read_report(self, setup: AttemptSetup) -> Report | None:
        return None  # the loop's last event carries it

    def clean_up(self, setup: AttemptSetup) -> None:
        return None  # its file tools write in place


def _model_reach(agent: AgentSpec) -> ModelReach:
    """The agent's model as its `[agent]` table names it, reached as its broker reaches it."""
    from runtime.models.types import ModelReach

    return ModelReach(model=agent.model or "", api_base=agent.api_base,
                      script=str(agent.script) if agent.script else None,
                      timeout_s=float(agent.limits.model_timeout_s))


class _BrokerCalls:
    """A cluster job's model calls, made by a broker of the orchestrator's: the worker sends the messages
    and tools, never the model, server or script, which come from the job's task."""

    request_kind = "model"

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def answer(self, payload: BrokerRequest) -> BrokerAnswer:
        # Read as the broker reads a line: the relay carried whatever the worker sent.
        line = json.dumps({"messages": payload.get("messages"), "tools": payload.get("tools")})
        return self._broker.handle_line(line)

    def refused(self, message: str) -> BrokerAnswer:
        return {"ok": False, "error": {"kind": "request", "message": message}}
