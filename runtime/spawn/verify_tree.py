"""Verify alone, over a tree nobody spawned: `runtime verify` in CI, and `runtime init --probe` on the base.

The same checks as a spawn's verify, in the same sandbox (or none), under the task's limits (or a task's
defaults when it has no `[agent]` table): the work in ``worktree`` against ``base``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from runtime.checks.record import CheckRecord
from runtime.manifests.agent import LimitsSection
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import Task
from runtime.policy.compile import compile_document
from runtime.sandbox.launch import preflight as sandbox_preflight
from runtime.sandbox.toolchain import toolchain_mounts
from runtime.workspace.git import Git


def verify_tree(catalog: Catalog, task: Task, worktree: Path, base: str, report: str | None, *,
                sandboxed: bool, repo: Path | None = None) -> list[CheckRecord]:
    """``repo``: the checkout whose toolchain folders (its .venv, node_modules) the sandbox shows, when the
    tree is a worktree of it (default: the tree's own)."""
    import anyio

    from runtime.spawn.budget import check_limits
    from runtime.spawn.commands import base_runner, scratch_runner
    from runtime.spawn.sandboxing import agent_sandbox
    from runtime.spawn.test_runs import load_hidden, plan_context, plan_runners
    from runtime.verify.gather import Workspace, verify

    worktree = worktree.resolve()
    git = Git(worktree)
    base = git.resolve(base)
    policy = compile_document(task.role, task, worktree, catalog)
    if sandboxed:
        sandbox_preflight()
    with tempfile.TemporaryDirectory(prefix="runtime-verify-") as tmp:
        home_path = Path(tmp) / "home"
        home_path.mkdir()
        toolchain = toolchain_mounts(catalog.toolchain, repo or git.root) if catalog.toolchain else None
        sandbox = agent_sandbox(policy, worktree, home_path, [], {}, toolchain=toolchain) if sandboxed else None
        # The checks run under the task's [agent] limits, or a task's defaults: [agent] is for spawning, and
        # verify in CI needs none.
        limits = task.agent.limits if task.agent is not None else LimitsSection()
        held = check_limits(limits, policy)
        with scratch_runner(worktree, sandbox, home_path, Path(tmp) / "scratch", toolchain, held) as runner, \
                base_runner(git, base, worktree, sandbox, home_path, Path(tmp) / "base", toolchain, held) as at_base:
            user = sandbox.user if sandbox is not None else None
            hidden = load_hidden(git, task)
            on_work, on_base = plan_runners(runner, at_base, worktree, Path(tmp), base, user, hidden,
                                            plan_context(catalog.toolchain, {}), Path(tmp) / "base-tests")
            return anyio.run(verify, policy, Workspace(git, worktree, base, report, runner, at_base=at_base,
                                                       run_tests=on_work, tests_at_base=on_base))
