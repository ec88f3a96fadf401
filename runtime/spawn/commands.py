"""Running verify commands (tests, checks) inside the agent's sandbox, with a timeout."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from runtime.sandbox.bwrap import SandboxSpec
from runtime.sandbox.env import agent_env
from runtime.sandbox.launch import sandboxed
from runtime.spawn.supervise import Limits, supervise
from runtime.verify.gather import RunCommand

MAX_OUTPUT = 200_000


def command_runner(worktree: Path, sandbox: SandboxSpec | None, home: Path, toolchain=None):
    """An async `(command, timeout_s) -> (exit code, output)` for `runtime.verify.gather`."""

    async def run(command: str, timeout_s: float) -> tuple[int, str]:
        argv = ["/bin/bash", "-c", f"{command} 2>&1"]
        with contextlib.ExitStack() as stack:
            fds: tuple[int, ...] = ()
            if sandbox is not None:
                spec = replace(sandbox, env=dict(sandbox.env))
                argv, fds = stack.enter_context(sandboxed(spec, argv))
                env = spec.env
            else:
                env = agent_env(home, {})
                env = toolchain.host_env(env) if toolchain is not None else env
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="runtime-check-"))
            out, err = Path(tmp) / "out", Path(tmp) / "err"
            result = await supervise(argv, cwd=worktree, env=env, stdin=None, stdout_path=out, stderr_path=err,
                                     limits=Limits(timeout_s=timeout_s, output_bytes=2 * MAX_OUTPUT), pass_fds=fds)
            text = out.read_text(encoding="utf-8", errors="replace")[-MAX_OUTPUT:]
        if result.breach:
            return 124, f"{text}\n[stopped: {result.breach} after {timeout_s:.0f} s]"
        return (result.exit_code if result.exit_code is not None else 1), text

    return run


@contextlib.contextmanager
def tree_runner(git, tree: str, home: Path, use_sandbox: bool, parents: tuple[str, ...] = (),
                toolchain=None) -> Iterator[RunCommand]:
    """A runner of commands on a checkout of ``tree`` (a merge result), each in the sandbox.

    The checkout is a throwaway folder: it is writable, nothing else is, and it
    has no network.
    """
    from runtime.spawn.sandboxing import control_paths, runtime_binds, with_toolchain

    with tempfile.TemporaryDirectory(prefix="runtime-tree-") as tmp:
        with git.checkout_tree(tree, Path(tmp) / "tree", parents=parents) as path:
            path = Path(path)
            sandbox = None
            if use_sandbox:
                sandbox = SandboxSpec(worktree=path, home=home, writable=[path], env=agent_env(home, {}),
                                      readonly=[path / ".git"], control=control_paths(path))
                sandbox.expose(runtime_binds())
                sandbox = with_toolchain(sandbox, toolchain)
            yield command_runner(path, sandbox, home, toolchain)


async def commands_on_tree(git, tree: str, commands: list[str], home: Path, use_sandbox: bool,
                           parents: tuple[str, ...] = (), toolchain=None) -> list[tuple[str, int, str]]:
    """Run ``commands`` on a checkout of ``tree``; (command, exit code, output) for each."""
    results = []
    with tree_runner(git, tree, home, use_sandbox, parents, toolchain) as run:
        for command in commands:
            code, output = await run(command, 900.0)
            results.append((command, code, output))
    return results
