"""runtime verify TASK --worktree DIR --base REV: the verify step alone, for CI.

Prints a JSON report; exit 0 when every check passed, 2 when a check rejected
the work, 1 when a check could not run (or the input is wrong).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import UsageError
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.manifests.task import load_task
from runtime.verify.kinds.result import CheckStatus
from runtime.workspace.git import Git

if TYPE_CHECKING:
    from runtime.cli.settings import Verify


def run(args: Verify) -> int:
    from runtime.verify.tree import verify_tree

    catalog = Catalog(Path(find_catalog(args.catalog)))
    task = load_task(catalog, args.task)
    worktree = Path(args.worktree).resolve()
    base = Git(worktree).resolve(args.base)
    if args.report and not Path(args.report).is_file():
        raise UsageError(f"{args.report}: no such report file")
    report = Path(args.report).read_text(encoding="utf-8") if args.report else None
    checks = verify_tree(catalog, task, worktree, base, report, sandboxed=not args.no_os_sandbox)
    statuses = {c.status for c in checks}
    result = {
        "task": str(task.path), "worktree": str(worktree), "base": base,
        "passed": [c.atom for c in checks if c.status == CheckStatus.PASSED],
        "failed": [{"capability": c.atom, "kind": c.kind, "reason": c.status, "detail": c.feedback}
                   for c in checks if c.status != CheckStatus.PASSED],
    }
    print(json.dumps(result, indent=2))
    if CheckStatus.ERROR in statuses:
        return 1
    return 2 if CheckStatus.REJECTED in statuses else 0
