"""Verify alone, over a tree nobody spawned: `runtime verify` in CI, and `runtime init --probe` on the base.

The same checks as a spawn's verify, in the same sandbox (or none), under the task's limits (or a task's
defaults when it has no `[agent]` table): the work in ``worktree`` against ``base``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from runtime.manifests.agent import LimitsSection
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import Task
from runtime.policy.compile import compile_document
from runtime.sandbox.launch import preflight as sandbox_preflight
from runtime.sandbox.toolchain import toolchain_mounts
from runtime.verify.kinds.record import CheckRecord
from runtime.workspace.git import Git


def verify_tree(catalog: Catalog, task: Task, worktree: Path, base: str, report: str | None, *,
                sandboxed: bool, repo: Path | None = None) -> list[CheckRecord]:
    """``repo``: the checkout whose toolchain folders (its .venv, node_modules) the sandbox shows, when the
    tree is a worktree of it (default: the tree's own)."""
    import anyio

    from runtime.sandbox.agent import agent_sandbox
    from runtime.sandbox.budget import check_limits
    from runtime.verify.passes import Running, VerifyContext, judge_work
    from runtime.verify.test_runs import load_hidden

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
        running = Running(home_path, catalog.toolchain, toolchain, check_limits(limits, policy), Path(tmp) / "base-tests",
                          hidden=load_hidden(git, task))
        context = VerifyContext(git, base, worktree, Path(tmp), report, running=running, sandbox=sandbox)
        return anyio.run(judge_work, policy, context)
