"""command: any program the task names, given the bundle (and a rejected attempt's feedback) on
stdin. It gates itself through ``runtime check`` with the policy in ``RUNTIME_POLICY`` and writes its
report to ``RUNTIME_REPORT_FILE`` (else its stdout is the report)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import FatalError
from runtime.spawn.backends.base import JobModel, ModelAccess, Report
from runtime.workspace.safe_files import UnsafeFile, read_under

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

    def job_model(self, task: Task, catalog: Catalog) -> JobModel[Any, Any] | None:
        return None

    def command(self, setup: AttemptSetup, feedback_path: Path | None) -> tuple[list[str], bytes | None, dict[str, str]]:
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
        return Report(*read_report(setup.home, setup.attempt_dir))

    def clean_up(self, setup: AttemptSetup) -> None:
        return None  # the program is the user's: what it leaves is judged as its work


REPORT_NAME = "report.md"  # in the command agent's home, announced as RUNTIME_REPORT_FILE
REPORT_MAX_BYTES = 256 * 1024


def read_report(home: Path, attempt_dir: Path) -> tuple[str | None, str | None]:
    """The command agent's report (its home's report.md, else its stdout), and what was wrong with it.

    The home is the agent's: report.md is opened without following symlinks and must be a regular
    file. A symlink there is refused, never read — its target could be any host file the
    orchestrator can read — and the attempt is rejected with that feedback.
    """
    try:
        data, size = read_under(home, REPORT_NAME, REPORT_MAX_BYTES)
    except FileNotFoundError:
        data, size = read_under(attempt_dir, "stdout.log", REPORT_MAX_BYTES)  # written by the orchestrator
    except UnsafeFile:
        return None, (f"your report file {home / REPORT_NAME} is a symlink or not a regular file, so it was not "
                      "read: write the report as a plain file at $RUNTIME_REPORT_FILE")
    text = data.decode("utf-8", errors="replace")
    if size > len(data):
        text += f"\n[... the report was {size} bytes; the first {len(data)} were read ...]\n"
    return text, None
