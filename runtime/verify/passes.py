"""A verify pass, built in one place from one typed context.

Every verify the runtime runs is one of two passes:

- ``judge_work``: every check of the policy over a tree of work against its base: an agent's worktree
  after an attempt (`runtime.spawn.attempts`), a tree nobody spawned (`runtime verify`, `init --probe`:
  `runtime.verify.tree`), or a worker's imported commit, whose re-check runs no commands
  (`runtime.orchestration.recheck`);
- ``judge_merge``: the command checks judged again on a merge's tree before it reaches the base
  (`runtime.spawn.accept`).

What a pass needs is named once: `VerifyContext` (the tree, its base, the report, where the pass keeps its
copies and reports) and, for a pass that runs the task's commands, `Running` (the home, toolchain, limits
and variables they run with, the hidden tests, the base runs' cache). The runners over the work's copy and
the base's, and the test plan's runners over both, are made here and nowhere else.

Layout of a pass's ``folder``: ``scratch/`` (the work's copy), ``base/`` (the base's checkout, made only
when a command fails), ``test-reports/`` and ``base-test-reports/`` (the runners' report channels).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import LimitExhausted
from runtime.verify.commands import CommandLog, WorldMaker, base_runner, scratch_runner, tree_runners
from runtime.verify.gather import Review, Workspace, judge_commands, verify
from runtime.verify.kinds.kind import Change
from runtime.verify.kinds.record import CheckRecord
from runtime.verify.kinds.registry import KINDS
from runtime.verify.kinds.result import CheckStatus
from runtime.verify.test_runs import Hidden, plan_context, plan_runners

if TYPE_CHECKING:
    from runtime.manifests.toolchain import Toolchain
    from runtime.policy.document import PolicyDocument
    from runtime.sandbox.bwrap import SandboxSpec
    from runtime.sandbox.scratch import World
    from runtime.sandbox.supervise import Limits
    from runtime.sandbox.toolchain import ToolchainMounts
    from runtime.workspace.git import Git


@dataclass(frozen=True)
class Running:
    """How a pass runs the task's commands: with ``home``, the repository's toolchain (``mounts`` in the
    sandbox, ``toolchain`` as declared: a base run's cache key holds it), under ``limits``, with the task's
    ``declared`` variables; ``hidden``: the task's hidden tests, laid in for the test runs alone; ``cache``:
    the base runs, kept per base commit for every agent and attempt judged against it; ``log``: each
    command's whole output."""

    home: Path
    toolchain: Toolchain
    mounts: ToolchainMounts | None
    limits: Limits
    cache: Path
    declared: Mapping[str, str] = field(default_factory=dict)
    hidden: Hidden | None = None
    log: CommandLog | None = None


@dataclass(frozen=True)
class VerifyContext:
    """One pass over ``tree``, the work, against ``base``, keeping its copies and reports under ``folder``.

    ``running``: how the task's commands run, or None for a pass that runs none (a re-check of imported work:
    what a worker ran is never trusted, and nothing is run again). ``sandbox``: the sandbox they run in (None:
    none). ``world``: the repository's world laid over every copy (`runtime.spawn.world`);
    ``base_results``: a failing command's run on the base, kept across the attempts of one spawn.
    ``changes``: the change listing, when the caller has just made it; ``ignored``: what the ignore rules hide,
    left out of the work's copy; ``clear_nested``: the tree is the runtime's own worktree (a nested repository
    there loses its `.git`); ``review``: the reviewer, for a task that asks for one."""

    git: Git
    base: str
    tree: Path
    folder: Path
    report: str | None = None
    running: Running | None = None
    sandbox: SandboxSpec | None = None
    world: World | None = None
    base_results: dict[str, tuple[int, str]] | None = None
    changes: list[Change] | None = None
    ignored: frozenset[str] = frozenset()
    clear_nested: bool = False
    review: Review | None = None


async def _no_commands(command: str, timeout_s: float) -> tuple[int, str]:
    raise AssertionError("this verify pass runs no commands")  # pragma: no cover: verify(commands=False)


async def judge_work(policy: PolicyDocument, ctx: VerifyContext) -> list[CheckRecord]:
    """Every check of ``policy`` over ``ctx``'s tree, gathered and judged (`runtime.verify.gather.verify`)."""
    if ctx.running is None:
        return await verify(policy, Workspace(ctx.git, ctx.tree, ctx.base, ctx.report, _no_commands,
                                              clear_nested=ctx.clear_nested, changes=ctx.changes), commands=False)
    running = ctx.running
    user = ctx.sandbox.user if ctx.sandbox is not None else None
    ctx.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    with scratch_runner(ctx.tree, ctx.sandbox, running.home, ctx.folder / "scratch", running.mounts, running.limits,
                        running.log, ctx.ignored, running.declared, ctx.world) as runner, \
            base_runner(ctx.git, ctx.base, ctx.tree, ctx.sandbox, running.home, ctx.folder / "base", running.mounts,
                        running.limits, ctx.base_results, running.log, running.declared, ctx.world) as at_base:
        on_work, on_base = plan_runners(runner, at_base, ctx.tree, ctx.folder, ctx.base, user, running.hidden,
                                        plan_context(running.toolchain, running.declared), running.cache)
        return await verify(policy, Workspace(ctx.git, ctx.tree, ctx.base, ctx.report, runner,
                                              clear_nested=ctx.clear_nested, changes=ctx.changes, at_base=at_base,
                                              run_tests=on_work, tests_at_base=on_base, review=ctx.review))


async def judge_merge(policy: PolicyDocument, git: Git, base: str, tree: str, parents: tuple[str, ...],
                      running: Running, folder: Path, *, use_sandbox: bool,
                      world: WorldMaker | None = None) -> list[CheckRecord]:
    """The command checks that hold on a merge (`Kind.on_merge`), judged again on a checkout of the merged
    ``tree`` (of ``parents``) against ``base``, as the work's verify judged them; their records (a limit a
    command went past is its check's rejection)."""
    entries = policy.verify_entries([name for name, kind in KINDS.items() if kind.runs_commands and kind.on_merge])
    if not entries:
        return []
    # The tests, judged per test as verify judged them, need the base's package.json and the hidden tests.
    per_test = any(e.kind == "tests-green" and e.params.get("results", "per-test") == "per-test" for e in entries)
    package_json = git.read_file(base, "package.json") if per_test else None
    records = []
    async with tree_runners(git, tree, base, running.home, use_sandbox, parents, running.mounts, running.limits,
                            running.log, running.declared, world) as runners:
        on_work, on_base = plan_runners(runners.run, runners.at_base, runners.root, folder, base, runners.user,
                                        running.hidden, plan_context(running.toolchain, running.declared),
                                        running.cache) if per_test else (None, None)
        for entry in entries:
            try:
                result = await judge_commands(entry.kind, entry.params, runners.run, runners.at_base, on_work, on_base,
                                              package_json.decode("utf-8", "replace") if package_json else None)
            except LimitExhausted as exc:
                records.append(CheckRecord(entry.atom, entry.kind, CheckStatus.REJECTED,
                                           f"{exc.outcome}({exc.detail}): {exc.message}"))
                continue
            records.append(CheckRecord(entry.atom, entry.kind, result.status, result.feedback, result.tests,
                                       tampering=result.tampering))
    return records


__all__ = ["Running", "VerifyContext", "judge_merge", "judge_work"]
