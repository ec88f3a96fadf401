"""Running verify commands (tests, checks) inside the agent's sandbox, with a timeout.

A repository's tests and checks run as on their developers' machines: they may
write scratch files anywhere in the tree they run in. In the agent's worktree
they run over a throwaway copy of it (`scratch_runner`, `runtime.sandbox.scratch`)
shown at its path, so nothing they write becomes part of the change or of what
is judged; on a merge result, over a throwaway checkout (`tree_runner`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from runtime.errors import LimitExhausted
from runtime.sandbox.budget import default_check_limits
from runtime.sandbox.bwrap import SandboxSpec
from runtime.sandbox.env import agent_env
from runtime.sandbox.identity import AgentUser
from runtime.sandbox.launch import sandboxed
from runtime.sandbox.limits import RESOURCE_BREACHES
from runtime.sandbox.netrelay import EGRESS_PORT, with_forward
from runtime.sandbox.scratch import Copied, World, lay_over, scratch_copy
from runtime.sandbox.supervise import Limits, supervise
from runtime.sandbox.toolchain import ToolchainMounts
from runtime.verify.gather import RunCommand
from runtime.workspace.git import Git
from runtime.workspace.tree import remove_tree

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from runtime.audit.redact import Redactor

MAX_OUTPUT = 200_000

# Commands that are bash builtins doing nothing (a check a template leaves as `true`): answered without a sandbox.
NO_OPS = frozenset({"true", ":"})


@dataclass(frozen=True)
class Binds:
    """Folders outside the tree one command is given besides its sandbox's own (a test runner's report
    folder, read-write; the runtime's reporters, read-only), files laid over the tree's copy for it alone
    (relative path -> bytes, or None: the file taken away; hidden tests, the base's test side), put back after
    it, those of them the sandbox binds read-only (``locked``: a sealed test's stub), and the home it runs with."""

    rw: tuple[Path, ...] = ()
    ro: tuple[Path, ...] = ()
    overlay: tuple[tuple[str, bytes | None], ...] = ()
    locked: tuple[str, ...] = ()
    home: Path | None = None  # a home the caller made and removes (else the command gets one of its own)


NO_BINDS = Binds()


class Runner(Protocol):
    """A `runtime.verify.gather.RunCommand` that also takes a command's own ``binds``."""

    def __call__(self, command: str, timeout_s: float, /, *, binds: Binds = NO_BINDS) -> Awaitable[tuple[int, str]]: ...


class WorldMaker(Protocol):
    """What lays the repository's world (`runtime.spawn.world.TreeWorld`) in a tree the orchestrator checked
    out itself (a merge it re-checks, a plan's checks), made there the first time."""

    async def laid(self, tree: Path, base: str, sandbox: SandboxSpec | None, home: Path,
                   toolchain: ToolchainMounts | None) -> World: ...

# The exit code of a command that was not run because the tree to run it over could not be copied.
NOT_RUN = 125


@dataclass(frozen=True)
class CommandLog:
    """Where each judged command's output is kept whole, for the person looking into a verdict: one file
    per command, `NN-<where>.log` in the order they ran (`work`, `base`, `merge`). The feedback quotes
    only a part; this is the rest. Written by the orchestrator, never shown raw on its terminal."""

    folder: Path
    redactor: Redactor | None = None  # the run's known secrets out, as in every log of the run

    def write(self, where: str, command: str, code: int, output: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        number = sum(1 for _ in self.folder.glob("*.log")) + 1
        text = f"$ {command}\n[exit {code}]\n{output}"
        text = self.redactor.redact(text) if self.redactor else text
        (self.folder / f"{number:02d}-{where}.log").write_text(text, encoding="utf-8")


def command_runner(worktree: Path, sandbox: SandboxSpec | None, home: Path, toolchain: ToolchainMounts | None = None,
                   scratch: Path | None = None, limits: Limits | None = None, log: CommandLog | None = None,
                   where: str = "work", declared: Mapping[str, str] | None = None, egress: str | None = None) -> Runner:
    """An async `(command, timeout_s) -> (exit code, output)` for `runtime.verify.gather`, running in
    ``worktree``; with ``scratch`` (a copy of it), over the copy: shown at the worktree's path in the
    sandbox, or its working folder without one. Each command is held to ``limits`` (the task's, from
    `runtime.sandbox.budget`; by default a task's defaults), with its own clock, and its output goes to
    ``log`` as ``where``. Without a sandbox, the environment is an agent's with the task's ``declared``
    variables (a sandbox's spec carries its own).

    Each command gets a home of its own, empty, beside ``home`` (the agent's, which stays as the agent
    left it) and removed after it: linters, npm, go and mypy read settings from $HOME
    (`~/.config/ruff/ruff.toml`, `~/.npmrc`'s script-shell, `~/.config/go/env`), and what the agent, or
    a command before, left there must not pass what the project's own configuration refuses.

    ``egress``: an egress proxy's socket (a worktree's setup, `runtime.spawn.world`), reached from inside the
    sandbox through the relay as HTTP_PROXY; without it a sandboxed command has no network at all."""
    limits = limits if limits is not None else default_check_limits()

    async def run(command: str, timeout_s: float, *, binds: Binds = NO_BINDS) -> tuple[int, str]:
        if command.strip() in NO_OPS:
            # bash's builtin, whatever the sandbox or the tree holds: nothing to start a sandbox for
            if log is not None:
                log.write(where, command, 0, "")
            return 0, ""
        argv = ["/bin/bash", "-c", f"{command} 2>&1"]
        if egress is not None and sandbox is not None:
            argv = with_forward(argv, EGRESS_PORT, egress)
        cwd = worktree
        # the steps of one test plan share a home, as the steps of one command would (`binds.home`)
        own_home = binds.home or Path(tempfile.mkdtemp(prefix="check-home-", dir=home.parent))
        try:
            with contextlib.ExitStack() as stack:
                fds: tuple[int, ...] = ()
                if binds.overlay:  # laid first: the sandbox binds some of these files read-only
                    stack.enter_context(_overlaid(scratch or worktree, binds.overlay,
                                                  sandbox.user if sandbox is not None else None))
                if sandbox is not None:
                    proxied = {} if egress is None else {
                        k: f"http://127.0.0.1:{EGRESS_PORT}" for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
                    spec = replace(sandbox, home=own_home, env={**sandbox.env, **proxied, "HOME": str(own_home)}, scratch=scratch,
                                   scratch_readonly=binds.locked if scratch is not None else (),
                                   tmpfs_mb=None if limits.memory_mb is None else int(limits.memory_mb),
                                   extra_binds_rw=[*sandbox.extra_binds_rw, *binds.rw],
                                   extra_binds_ro=[*sandbox.extra_binds_ro, *binds.ro])
                    argv, fds = stack.enter_context(sandboxed(spec, argv))
                    env = spec.env
                else:
                    cwd = scratch or worktree
                    env = agent_env(own_home, declared or {})
                    env = toolchain.host_env(env) if toolchain is not None else env
                tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="runtime-check-"))
                out, err = Path(tmp) / "out", Path(tmp) / "err"
                result = await supervise(argv, cwd=cwd, env=env, stdin=None, stdout_path=out, stderr_path=err,
                                         limits=replace(limits, timeout_s=timeout_s, output_bytes=2 * MAX_OUTPUT),
                                         pass_fds=fds)
                text = out.read_text(encoding="utf-8", errors="replace")[-MAX_OUTPUT:]
        finally:
            if binds.home is None:
                await anyio.to_thread.run_sync(remove_tree, own_home)
        if log is not None:
            log.write(where, command, result.exit_code if result.exit_code is not None else -1,
                      text + (f"\n[stopped: {result.breach}]" if result.breach else ""))
        if result.breach in RESOURCE_BREACHES:
            # The agent's code ran its checks past what the run may spend: the run is exhausted, as it
            # would be had the agent run the same command itself.
            raise LimitExhausted(result.breach, f"`{command}` was stopped: "
                                 f"{_stopped(result.breach, limits, timeout_s, result.duration_s)}")
        if result.breach:
            return 124, f"{text}\n[stopped: {_stopped(result.breach, limits, timeout_s, result.duration_s)}]"
        return (result.exit_code if result.exit_code is not None else 1), text

    return run


@contextlib.contextmanager
def _overlaid(tree: Path, files: tuple[tuple[str, bytes | None], ...], user: AgentUser | None) -> Iterator[None]:
    """``files`` laid over ``tree`` (a throwaway copy or checkout) for one command, each replacing whatever
    stood at its path (None: only taking it away), its folders made as needed (owned by ``user``); never
    through a symlink the tree holds. Afterwards the tree is as it was: what was replaced or taken away is
    put back, what was made is removed."""
    saved: list[tuple[str, bytes | None]] = []
    made: list[str] = []
    try:
        for rel, data in files:
            parts = rel.split("/")
            fd = os.open(tree, _DIR)
            try:
                for n, part in enumerate(parts[:-1]):
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                        made.append("/".join(parts[:n + 1]))
                        if user is not None:
                            os.chown(part, user.uid, user.gid, dir_fd=fd, follow_symlinks=False)
                    inner = os.open(part, _DIR, dir_fd=fd)  # a symlink here fails (O_NOFOLLOW)
                    os.close(fd)
                    fd = inner
                name = parts[-1]
                old = None
                with contextlib.suppress(OSError):
                    with os.fdopen(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd), "rb") as f:
                        old = f.read()
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    os.unlink(name, dir_fd=fd)
                saved.append((rel, old))
                if data is None:
                    continue
                out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
                with os.fdopen(out, "wb") as f:
                    f.write(data)
                if user is not None:
                    os.chown(name, user.uid, user.gid, dir_fd=fd, follow_symlinks=False)
            finally:
                os.close(fd)
        yield
    finally:
        for rel, old in reversed(saved):
            with contextlib.suppress(OSError):
                remove_tree(tree / rel)
                if old is not None:
                    (tree / rel).write_bytes(old)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                remove_tree(tree / folder)


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _stopped(breach: str, limits: Limits, timeout_s: float, duration_s: float) -> str:
    """Why a command was stopped, in words a person or a model can act on."""
    if breach == "timeout":
        return f"timeout after {timeout_s:.0f} s"
    bound: str = {"processes": f"{limits.max_processes} processes and threads",
             "memory": f"{limits.memory_mb:.0f} MiB of memory (tmpfs included)" if limits.memory_mb else "its memory",
             "disk": f"{limits.disk_mb:.0f} MiB written to disk" if limits.disk_mb else "its disk"}.get(breach, breach)
    return f"it went past the limit of {bound} after {duration_s:.1f} s"


@contextlib.contextmanager
def scratch_runner(worktree: Path, sandbox: SandboxSpec | None, home: Path, folder: Path,
                   toolchain: ToolchainMounts | None = None, limits: Limits | None = None,
                   log: CommandLog | None = None, leave_out: frozenset[str] = frozenset(),
                   declared: Mapping[str, str] | None = None, world: World | None = None) -> Iterator[Runner]:
    """A runner of verify's commands over a throwaway copy of ``worktree``, made in ``folder`` (removed
    first if an orchestrator that died left it) at the first command and removed when the block ends.

    One copy serves the commands of one verify, as one checkout serves a merge's: the first command's
    scratch files are there for the next, as on a developer's machine, and none reaches the worktree.
    A copy that could not be made whole (a folder too deep or unreadable, which verify rejects anyway)
    runs nothing: each command's result says why.
    """
    copy = folder / "tree"
    made: list[Copied] = []

    async def run(command: str, timeout_s: float, *, binds: Binds = NO_BINDS) -> tuple[int, str]:
        if not made:
            user = sandbox.user if sandbox is not None else None
            made.append(await anyio.to_thread.run_sync(_fresh_copy, worktree, folder, copy, user, leave_out, world))
        missing = made[0].missing
        if missing:
            path, why = missing[0]
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            return NOT_RUN, (f"`{command}` was not run: the worktree could not be copied for the checks to run over: "
                             f"{path}: {why}{more}")
        return await command_runner(worktree, sandbox, home, toolchain, scratch=copy, limits=limits, log=log,
                                    declared=declared)(command, timeout_s, binds=binds)

    try:
        yield run
    finally:
        remove_tree(folder)


def _fresh_copy(worktree: Path, folder: Path, copy: Path, user: AgentUser | None,
                leave_out: frozenset[str] = frozenset(), world: World | None = None) -> Copied:
    try:
        remove_tree(folder)
        folder.mkdir(mode=0o700, parents=True)
        copied = scratch_copy(worktree, copy, user, leave_out)
        if world is not None and not copied.missing:  # the world as setup left it, never as the agent did
            copied.missing += lay_over(world.folder, world.entries, copy, user).missing
        return copied
    except OSError as exc:  # a full disk, a tree that moved: nothing ran, so nothing passed
        return Copied(missing=[(".", exc.strerror or str(exc))])


@contextlib.contextmanager
def base_runner(git: Git, base: str, shown_at: Path, sandbox: SandboxSpec | None, home: Path, folder: Path,
                toolchain: ToolchainMounts | None = None, limits: Limits | None = None,
                cache: dict[str, tuple[int, str]] | None = None, log: CommandLog | None = None,
                declared: Mapping[str, str] | None = None, world: World | None = None) -> Iterator[Runner]:
    """A runner of the same commands on the base: over a copy of a checkout of ``base`` (made in ``folder`` at
    the first command, removed when the block ends), shown at ``shown_at`` as the work's own copy is, in the
    same sandbox, so both outputs name the same paths and can be compared line by line
    (`runtime.verify.kinds.baseline`). Made only when a command fails, which a clean repository never does.
    ``cache`` keeps each command's result: the base does not change, so a retry's verify reruns nothing."""
    made: list[Path] = []

    async def run(command: str, timeout_s: float, *, binds: Binds = NO_BINDS) -> tuple[int, str]:
        if cache is not None and command in cache and binds == NO_BINDS:
            return cache[command]
        if not made:
            user = sandbox.user if sandbox is not None else None
            copied = await anyio.to_thread.run_sync(_base_copy, stack, git, base, folder, user, world)
            if copied.missing:
                return NOT_RUN, f"`{command}` was not run on the base: its checkout could not be copied: {copied.missing[0]}"
            made.append(folder / "tree")
        code, output = await command_runner(shown_at, sandbox, home, toolchain, scratch=made[0], limits=limits,
                                            log=log, where="base", declared=declared)(command, timeout_s, binds=binds)
        result = code, output.replace(str(made[0]), str(shown_at))  # without a sandbox it ran at the copy's path
        if cache is not None and binds == NO_BINDS:
            cache[command] = result
        return result

    with contextlib.ExitStack() as stack:
        try:
            yield run
        finally:
            stack.close()  # the checkout's worktree entry first, then the folder
            remove_tree(folder)


def _base_copy(stack: contextlib.ExitStack, git: Git, base: str, folder: Path, user: AgentUser | None,
               world: World | None = None) -> Copied:
    remove_tree(folder)  # an orchestrator that died left it
    folder.mkdir(mode=0o700, parents=True)
    checkout = stack.enter_context(git.checkout_tree(base, folder / "checkout"))
    copied = scratch_copy(checkout, folder / "tree", user)
    if world is not None and not copied.missing:
        copied.missing += lay_over(world.folder, world.entries, folder / "tree", user).missing
    return copied


@contextlib.contextmanager
def _tree_sandbox(git: Git, tree: str, home: Path, use_sandbox: bool, parents: tuple[str, ...],
                  toolchain: ToolchainMounts | None, declared: Mapping[str, str] | None = None,
                  prepare: Callable[[Path], None] | None = None) -> Iterator[tuple[Path, SandboxSpec | None]]:
    from runtime.sandbox.agent import control_paths, runtime_binds, with_toolchain

    with tempfile.TemporaryDirectory(prefix="runtime-tree-") as tmp:
        with git.checkout_tree(tree, Path(tmp) / "tree", parents=parents) as path:
            path = Path(path)
            if prepare is not None:
                prepare(path)
            sandbox = None
            if use_sandbox:
                sandbox = SandboxSpec(worktree=path, home=home, writable=[path], env=agent_env(home, declared or {}),
                                      readonly=[path / ".git"], control=control_paths(path))
                sandbox.expose(runtime_binds())
                sandbox = with_toolchain(sandbox, toolchain)
            yield path, sandbox


@contextlib.contextmanager
def tree_runner(git: Git, tree: str, home: Path, use_sandbox: bool, parents: tuple[str, ...] = (),
                toolchain: ToolchainMounts | None = None, limits: Limits | None = None,
                log: CommandLog | None = None, prepare: Callable[[Path], None] | None = None,
                ) -> Iterator[RunCommand]:
    """A runner of commands on a checkout of ``tree`` (a merge result), each in the sandbox; with
    ``prepare``, the checkout handed to it first.

    The checkout is a throwaway folder: it is writable, nothing else is, and it
    has no network.
    """
    with _tree_sandbox(git, tree, home, use_sandbox, parents, toolchain, prepare=prepare) as (path, sandbox):
        yield command_runner(path, sandbox, home, toolchain, limits=limits, log=log, where="merge")


@dataclass(frozen=True)
class TreeRunners:
    """The runners of a merge's re-check: on the checkout of the merged tree (at ``root``), and on the base
    shown at the same path; ``user``: who they run as."""

    run: Runner
    at_base: Runner
    root: Path
    user: AgentUser | None


@contextlib.asynccontextmanager
async def tree_runners(git: Git, tree: str, base: str, home: Path, use_sandbox: bool, parents: tuple[str, ...] = (),
                       toolchain: ToolchainMounts | None = None, limits: Limits | None = None,
                       log: CommandLog | None = None, declared: Mapping[str, str] | None = None,
                       world: WorldMaker | None = None) -> AsyncIterator[TreeRunners]:
    """`tree_runner`'s runner, and a `base_runner` of ``base`` shown at the same checkout's path; with the
    task's ``declared`` variables, as its verify had them; with ``world``, the repository's world laid in the
    checkout first (and over the base's copy), as in every tree verify runs over."""
    with _tree_sandbox(git, tree, home, use_sandbox, parents, toolchain, declared) as (path, sandbox), \
            tempfile.TemporaryDirectory(prefix="runtime-base-") as tmp:
        laid = await world.laid(path, tree, sandbox, home, toolchain) if world is not None else None
        with base_runner(git, base, path, sandbox, home, Path(tmp) / "base", toolchain, limits, log=log,
                         declared=declared, world=laid) as at_base:
            yield TreeRunners(command_runner(path, sandbox, home, toolchain, limits=limits, log=log, where="merge",
                                             declared=declared), at_base, path, sandbox.user if sandbox else None)


async def commands_on_tree(git: Git, tree: str, commands: list[str], home: Path, use_sandbox: bool,
                           parents: tuple[str, ...] = (), toolchain: ToolchainMounts | None = None,
                           world: WorldMaker | None = None) -> list[tuple[str, int, str]]:
    """Run ``commands`` on a checkout of ``tree`` (with the repository's ``world`` laid in it first); (command,
    exit code, output) for each, each held to the limits a task gets by default (a plan's checks belong to no
    one task). A plan's checks say what its goal needs, which the base is expected to fail: they are judged
    by their exit code alone."""
    results = []
    with _tree_sandbox(git, tree, home, use_sandbox, parents, toolchain) as (path, sandbox):
        if world is not None:
            await world.laid(path, tree, sandbox, home, toolchain)
        run = command_runner(path, sandbox, home, toolchain, where="merge")
        for command in commands:
            try:
                code, output = await run(command, 900.0)
            except LimitExhausted as exc:
                code, output = 124, exc.message
            results.append((command, code, output))
    return results
