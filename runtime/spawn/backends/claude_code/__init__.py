"""claude-code: the real Claude Code CLI in the sandbox, its PreToolUse hook `runtime check`, its
model calls through the orchestrator's proxy, which alone holds the key (``runtime.spawn.backends.claude_code.settings``)."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.spawn.backends.base import JobModel, ModelAccess, Report

if TYPE_CHECKING:
    from runtime.manifests.catalog import Catalog
    from runtime.manifests.task import Task
    from runtime.spawn.agent_process import AttemptSetup
    from runtime.spawn.backends.claude_code.proxy import AnthropicProxy, ForwardAnswer, ForwardCall
    from runtime.spawn.pipeline import SpawnRun
    from runtime.spawn.progress import Progress


class ClaudeCodeBackend:
    name = "claude-code"

    def preflight(self, task: Task, models_here: bool) -> None:
        from runtime.spawn.backends.claude_code.cli import cli_launch, find_claude, require_fail_closed
        from runtime.spawn.backends.claude_code.proxy import upstream_credentials

        cli = find_claude()
        cli_launch(cli)
        # The settings it gets block a call whose hook fails; an older CLI would run that call.
        require_fail_closed(cli)
        if models_here:
            upstream_credentials(os.environ)

    def model_access(self, run: SpawnRun) -> tuple[ModelAccess | None, Path | None]:
        from runtime.spawn.backends.claude_code.settings import start_claude_proxy

        return start_claude_proxy(run)

    def job_model(self, task: Task, catalog: Catalog) -> JobModel[ForwardCall, ForwardAnswer] | None:
        from runtime.policy.compile import compile_document
        from runtime.spawn.backends.claude_code.proxy import DEFAULT_UPSTREAM, AnthropicProxy, upstream_credentials

        agent = task.agent
        assert agent is not None
        policy = compile_document(task.role, task, Path(task.path).parent, catalog)
        # Never started: no socket, it forwards the requests a worker relays, with the orchestrator's key.
        return _ProxyCalls(AnthropicProxy("/nonexistent/api.sock", agent.api_base or DEFAULT_UPSTREAM,
                                          upstream_credentials(os.environ), egress=policy.egress_domains()))

    def command(self, setup: AttemptSetup, feedback_path: Path | None) -> tuple[list[str], bytes | None, dict[str, str]]:
        from runtime.spawn.backends.claude_code.settings import claude_command

        agent = setup.task.agent
        assert agent is not None
        argv, stdin, extra = claude_command(setup, feedback_path)
        if setup.approvals_socket is not None:
            _hook_asks_orchestrator(setup.run_ro / "claude-settings.json", setup.approvals_socket,
                                    agent.limits.approval_timeout_s)
        else:  # a run nobody watches: the hook refuses what it would ask, at once
            _hook_tail(setup.run_ro / "claude-settings.json", "--unattended")
        return argv, stdin, extra

    def on_line(self, progress: Progress) -> Callable[[str], None] | None:
        from runtime.spawn.backends.claude_code.settings import stream_event

        return lambda line: stream_event(progress, line)

    def read_report(self, setup: AttemptSetup) -> Report | None:
        return None  # the stream's result event carries it

    def clean_up(self, setup: AttemptSetup) -> None:
        from runtime.spawn.backends.claude_code.settings import remove_staging_files, written_files

        remove_staging_files(setup.worktree, written_files(setup.progress))


def _hook_asks_orchestrator(settings: Path, socket_path: Path, wait_s: int) -> None:
    """Give the CLI's PreToolUse hook (`runtime check --policy P`) the approvals socket.

    ``wait_s`` was capped below Claude Code's hook timeout when the task was loaded
    (`runtime.manifests.agent`); `runtime check` refuses a longer wait anyway.
    """
    _hook_tail(settings, shlex.join(["--approvals", str(socket_path), "--approval-wait", str(wait_s)]))


def _hook_tail(settings: Path, tail: str) -> None:
    """Add ``tail`` to the CLI's PreToolUse hook commands (written afresh for every attempt)."""
    doc = json.loads(settings.read_text(encoding="utf-8"))
    for entry in doc["hooks"]["PreToolUse"]:
        for hook in entry["hooks"]:
            hook["command"] = f"{hook['command']} {tail}"
    settings.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


class _ProxyCalls:
    """A cluster job's Messages API requests, forwarded by a proxy of the orchestrator's: checked here
    against the same allowlists as on the worker, and sent with the key only the orchestrator holds."""

    request_kind = "forward"

    def __init__(self, proxy: AnthropicProxy) -> None:
        self._proxy = proxy

    def answer(self, payload: ForwardCall) -> ForwardAnswer:
        try:
            answer = self._proxy.fetch(str(payload.get("path")), bytes(payload.get("body") or b""),
                                       dict(payload.get("headers") or {}))
        except Exception as exc:  # noqa: BLE001 - unreachable upstream or a malformed request: an answer
            return {"error": f"the upstream model API is unreachable: {type(exc).__name__}: {exc}"}
        return {"status": answer.status, "reason": answer.reason, "headers": answer.headers, "body": answer.body}

    def refused(self, message: str) -> ForwardAnswer:
        return {"error": message}
