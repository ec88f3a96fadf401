"""command: any program the task names, given the bundle (and a rejected attempt's feedback) on
stdin. It gates itself through ``runtime check`` with the policy in ``RUNTIME_POLICY`` and writes its
report to ``RUNTIME_REPORT_FILE`` (else its stdout is the report)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import FatalError
from runtime.spawn.backends.base import JobModel, ModelAccess, Report

if TYPE_CHECKING:
    from runtime.manifests.catalog import Catalog
    from runtime.manifests.task import Task
    from runtime.spawn.agent_process import AttemptSetup
    from runtime.spawn.pipeline import SpawnRun
    from runtime.spawn.progress import Progress


class CommandBackend:
    name = "command"

    def preflight(self, task: Task, models_here: bool) -> None:
        assert task.agent is not None and task.agent.command
        program = task.agent.command[0]
        if "/" not in program and shutil.which(program) is None:
            raise FatalError(f"{task.path}: [agent] command runs `{program}`, which is not on PATH")

    def model_access(self, run: SpawnRun) -> tuple[ModelAccess | None, Path | None]:
        return None, None  # the program reaches whatever it reaches; the runtime holds no key for it

    def job_model(self, task: Task, catalog: Catalog) -> JobModel | None:
        return None

    def command(self, setup: AttemptSetup, feedback_path: Path | None) -> tuple[list[str], bytes | None, dict[str, str]]:
        from runtime.spawn.agent_process import REPORT_NAME

        agent = setup.task.agent
        assert agent is not None and agent.command
        bundle, policy = setup.run_ro / "bundle.md", setup.run_ro / "policy.json"
        text = bundle.read_text(encoding="utf-8")
        if setup.feedback:
            text += "\n\n---\n\nYour previous attempt was not accepted:\n\n" + setup.feedback + "\n"
        extra = {"RUNTIME_POLICY": str(policy), "RUNTIME_BUNDLE": str(bundle),
                 "RUNTIME_REPORT_FILE": str(setup.home / REPORT_NAME)}
        if setup.approvals_socket is not None:
            extra["RUNTIME_APPROVALS"] = str(setup.approvals_socket)
        return list(agent.command), text.encode(), extra

    def on_line(self, progress: Progress) -> Callable[[str], None] | None:
        return None

    def read_report(self, setup: AttemptSetup) -> Report | None:
        from runtime.spawn.agent_process import read_report

        return Report(*read_report(setup.home, setup.attempt_dir))

    def clean_up(self, setup: AttemptSetup) -> None:
        return None  # the program is the user's: what it leaves is judged as its work
