"""The orchestrator's own check of work imported from a worker's bundle.

A worker node is not trusted to have verified honestly: its outcome may say `ok` about work it
never checked. Before imported work can be integrated, the orchestrator judges it again, on its
own machine and from git alone: the commit must descend from the base the job started from, and
every check that reads the change rather than running it (write scope, dependency files, sizes,
structure, the report's fields) is evaluated again on a throwaway checkout of the imported commit.
The command checks (tests, check commands) run again as the plan's checks on the merged result.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

from runtime.policy.compile import compile_document
from runtime.verify.kinds.record import CheckRecord
from runtime.verify.kinds.result import CheckStatus
from runtime.verify.passes import VerifyContext, judge_work
from runtime.workspace.git import Git
from runtime.workspace.tree import remove_tree


async def recheck_imported(git: Git, task: Any, catalog: Any, base: str, commit: str,
                           report: str | None) -> list[CheckRecord]:
    """The checks the imported ``commit`` fails (empty: it passes), judged against ``base``."""
    if git.run("merge-base", "--is-ancestor", base, commit, ok=(0, 1)).returncode != 0:
        return [CheckRecord("runtime", "base", CheckStatus.REJECTED,
                            f"the imported commit {commit[:12]} does not start from the job's base {base[:12]}")]
    folder = Path(tempfile.mkdtemp(prefix="runtime-recheck-"))
    worktree = folder / "tree"
    try:
        git.run("worktree", "add", "--quiet", "--detach", str(worktree), commit)
        policy = compile_document(task.role, task, worktree, catalog)
        # What the worker ran is never trusted and nothing is run again: a pass without commands.
        records = await judge_work(policy, VerifyContext(git, base, worktree, folder, report))
    finally:
        with contextlib.suppress(OSError):
            remove_tree(folder)
        git.run("worktree", "prune", ok=None)
    return [r for r in records if r.status != CheckStatus.PASSED]
