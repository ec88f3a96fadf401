"""One attempt of one agent: its process, in its sandbox, under its limits.

The backend (``runtime.spawn.backends``) decides what runs inside the sandbox,
how its output becomes progress and where its report is; everything else is
the same for every backend.

A call the gate answers `ask` waits for a person's decision at the orchestrator's
approvals socket (`runtime.approvals.service`), bound read-only into the sandbox
next to the broker's: the builtin loop gets `--approvals SOCK`, the claude-code
hook runs `runtime check ... --approvals SOCK --approval-wait S`, and a command
agent finds the socket in `RUNTIME_APPROVALS` for its own `runtime check` calls.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import FatalError
from runtime.manifests.task import Task
from runtime.policy.document import PolicyDocument
from runtime.sandbox.budget import agent_limits
from runtime.sandbox.bwrap import SandboxSpec
from runtime.sandbox.cpus import pinned
from runtime.sandbox.env import agent_env
from runtime.sandbox.launch import sandboxed
from runtime.sandbox.netrelay import EGRESS_PORT, with_forward
from runtime.sandbox.supervise import ProcessResult, supervise
from runtime.sandbox.toolchain import ToolchainMounts
from runtime.spawn.backends import backend_for
from runtime.spawn.backends.base import ModelAccess
from runtime.spawn.progress import Progress, ProgressState

if TYPE_CHECKING:
    from runtime.models.broker import Usage

# The same tool call, with the same input, this many times in a row: the agent is looping.
LOOP_REPEATS = 3


TRUST_BUNDLE = "egress-trust.pem"  # the system's roots and the run's CA
TRUST_CA = "egress-ca.pem"  # the run's CA alone (for clients that add it to roots of their own)


def trust_env(folder: Path) -> dict[str, str]:
    """Where each usual client reads its trusted roots from, pointed at the run's trust store: Python's ssl and
    OpenSSL (and Go, on Linux), requests, curl, git, pip, cargo; node adds the CA to its own roots."""
    bundle = str(folder / TRUST_BUNDLE)
    return {"SSL_CERT_FILE": bundle, "REQUESTS_CA_BUNDLE": bundle, "CURL_CA_BUNDLE": bundle, "GIT_SSL_CAINFO": bundle,
            "PIP_CERT": bundle, "CARGO_HTTP_CAINFO": bundle, "NODE_EXTRA_CA_CERTS": str(folder / TRUST_CA)}


@dataclass
class AttemptSetup:
    task: Task
    policy: PolicyDocument
    worktree: Path
    run_ro: Path  # bundle.md, policy.json, feedback-N.md: read-only inside the sandbox
    home: Path  # the agent's private home
    attempt_dir: Path  # stdout and stderr of this attempt (outside the sandbox)
    sandbox: SandboxSpec | None  # None: --no-os-sandbox
    broker_socket: Path | None
    feedback: str | None
    progress: Progress
    usage: Callable[[], Usage] | None = None  # the broker's usage totals (turns, tokens, cost)
    approvals_socket: Path | None = None  # the orchestrator's approvals service (None: `ask` is refused)
    report_problem: str | None = None  # set by the attempt: why the report file was refused
    egress_socket: Path | None = None  # the egress proxy (roles that may reach the web), else no way out
    # where the trust store of a proxy that adds credentials lies (TRUST_BUNDLE, TRUST_CA), else None
    egress_trust: Path | None = None
    # The service through which the agent reaches its model (its backend's: `Backend.model_access`), None: none.
    model: ModelAccess | None = None
    toolchain: ToolchainMounts | None = None  # without a sandbox, its folders go on PATH from the main checkout


def declared_env(task: Task) -> dict[str, str]:
    agent = task.agent
    assert agent is not None  # spawn refuses a task without an [agent] table
    missing = [n for n in agent.env if n not in os.environ]
    if missing:
        raise FatalError(f"{task.path}: [agent] env names {', '.join(missing)}, which the orchestrator's environment does not set")
    return {name: os.environ[name] for name in agent.env}


def limit_check(setup: AttemptSetup) -> Callable[[], str | None]:
    assert setup.task.agent is not None  # spawn refuses a task without an [agent] table
    limits, progress = setup.task.agent.limits, setup.progress

    def check() -> str | None:
        usage = setup.usage() if setup.usage else None
        if usage is not None:
            progress.tokens, progress.cost_usd = usage.total_tokens, usage.cost_usd
        turns = max(progress.turns, usage.calls if usage is not None else 0)
        if progress.repeats >= LOOP_REPEATS:
            return "loop"
        if turns > limits.max_turns:
            return "turns"
        if progress.tool_calls > limits.max_tool_calls:
            return "tool-calls"
        if limits.max_tokens is not None and progress.tokens > limits.max_tokens:
            return "tokens"
        if limits.max_cost_usd is not None and progress.cost_usd > limits.max_cost_usd:
            return "cost"
        return None
    return check


async def run_attempt(setup: AttemptSetup) -> ProcessResult:
    setup.attempt_dir.mkdir(parents=True, exist_ok=True)
    feedback_path = None
    if setup.feedback:
        feedback_path = setup.run_ro / f"feedback-{setup.progress.attempt}.md"
        feedback_path.write_text(setup.feedback, encoding="utf-8")
    agent = setup.task.agent
    assert agent is not None  # spawn refuses a task without an [agent] table
    backend = backend_for(agent.backend)
    argv, stdin, extra_env = backend.command(setup, feedback_path)
    if setup.egress_socket is not None:
        # The sandbox's only way out: the proxy, on the sandbox's own loopback through the relay.
        argv = with_forward(argv, EGRESS_PORT, str(setup.egress_socket))
        proxy = f"http://127.0.0.1:{EGRESS_PORT}"
        extra_env = {**extra_env, "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy,
                     "https_proxy": proxy, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        if setup.egress_trust is not None:
            extra_env.update(trust_env(setup.egress_trust))
    if setup.sandbox is not None:
        setup.sandbox.env.update(extra_env)
        env = setup.sandbox.env
    else:
        env = agent_env(setup.home, declared_env(setup.task))
        env = {**(setup.toolchain.host_env(env) if setup.toolchain else env), **extra_env}
    limits = agent.limits
    on_line = backend.on_line(setup.progress)
    setup.progress.state = ProgressState.RUNNING
    setup.progress.changed()
    try:
        with contextlib.ExitStack() as stack:
            fds: tuple[int, ...] = ()
            if setup.sandbox is not None:
                setup.sandbox.tmpfs_mb = limits.memory_mb
                argv, fds = stack.enter_context(sandboxed(setup.sandbox, argv))
            if limits.cpus is not None:
                argv = [*stack.enter_context(pinned(limits.cpus)), *argv]
            outcome = await supervise(
                argv, cwd=setup.worktree, env=env, stdin=stdin,
                stdout_path=setup.attempt_dir / "stdout.log", stderr_path=setup.attempt_dir / "stderr.log",
                limits=agent_limits(limits, setup.policy),
                on_stdout_line=on_line, check=limit_check(setup), pass_fds=fds,
            )
    finally:
        # Also when the agent was stopped (a limit, Ctrl-C): what it leaves is committed for inspection.
        backend.clean_up(setup)
    report = backend.read_report(setup)
    if report is not None:
        setup.progress.report, setup.report_problem = report.text, report.problem
    return outcome


