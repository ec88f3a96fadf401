"""Running verify commands (tests, checks) inside the agent's sandbox, with a timeout."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from runtime.sandbox.bwrap import SandboxSpec
from runtime.sandbox.env import agent_env
from runtime.spawn.supervise import Limits, supervise

MAX_OUTPUT = 200_000


def command_runner(worktree: Path, sandbox: SandboxSpec | None, home: Path):
    """An async `(command, timeout_s) -> (exit code, output)` for `runtime.verify.gather`."""

    async def run(command: str, timeout_s: float) -> tuple[int, str]:
        argv = ["/bin/bash", "-c", f"{command} 2>&1"]
        if sandbox is not None:
            spec = replace(sandbox, env=dict(sandbox.env))
            argv = spec.args() + argv
            env = spec.env
        else:
            env = agent_env(home, {})
        with tempfile.TemporaryDirectory(prefix="runtime-check-") as tmp:
            out, err = Path(tmp) / "out", Path(tmp) / "err"
            result = await supervise(argv, cwd=worktree, env=env, stdin=None, stdout_path=out, stderr_path=err,
                                     limits=Limits(timeout_s=timeout_s))
            text = out.read_text(encoding="utf-8", errors="replace")[-MAX_OUTPUT:]
        if result.breach:
            return 124, f"{text}\n[stopped: {result.breach} after {timeout_s:.0f} s]"
        return (result.exit_code if result.exit_code is not None else 1), text

    return run
