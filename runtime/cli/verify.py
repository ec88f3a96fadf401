"""runtime verify TASK --worktree DIR --base REV: the verify step alone, for CI.

Prints a JSON report; exit 0 when every check passed, 2 when a check rejected
the work, 1 when a check could not run (or the input is wrong).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import UsageError
from runtime.manifests.agent import LimitsSection
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.manifests.task import load_task
from runtime.policy.compile import compile_document
from runtime.sandbox.launch import preflight as sandbox_preflight
from runtime.sandbox.toolchain import toolchain_mounts
from runtime.workspace.git import Git

if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    import anyio

    from runtime.spawn.budget import check_limits
    from runtime.spawn.commands import base_runner, scratch_runner
    from runtime.spawn.sandboxing import agent_sandbox
    from runtime.spawn.test_runs import load_hidden, plan_context, plan_runners
    from runtime.verify.gather import Workspace, verify

    catalog = Catalog(Path(find_catalog(args.catalog)))
    task = load_task(catalog, args.task)
    worktree = Path(args.worktree).resolve()
    git = Git(worktree)
    base = git.resolve(args.base)
    policy = compile_document(task.role, task, worktree, catalog)
    if args.report and not Path(args.report).is_file():
        raise UsageError(f"{args.report}: no such report file")
    report = Path(args.report).read_text(encoding="utf-8") if args.report else None
    if not args.no_os_sandbox:
        sandbox_preflight()
    with tempfile.TemporaryDirectory(prefix="runtime-verify-") as tmp:
        home_path = Path(tmp) / "home"
        home_path.mkdir()
        toolchain = toolchain_mounts(catalog.toolchain, git.root) if catalog.toolchain else None
        sandbox = None if args.no_os_sandbox else agent_sandbox(policy, worktree, home_path, [], {}, toolchain=toolchain)
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
            checks = anyio.run(verify, policy, Workspace(git, worktree, base, report, runner, at_base=at_base,
                                                         run_tests=on_work, tests_at_base=on_base))
    statuses = {c.status for c in checks}
    result = {
        "task": str(task.path), "worktree": str(worktree), "base": base,
        "passed": [c.atom for c in checks if c.status == "passed"],
        "failed": [{"capability": c.atom, "kind": c.kind, "reason": c.status, "detail": c.feedback}
                   for c in checks if c.status != "passed"],
    }
    print(json.dumps(result, indent=2))
    if "error" in statuses:
        return 1
    return 2 if "rejected" in statuses else 0
