"""runtime prune: clean up finished runs: their state, worktrees and agent branches.

Only finished runs (ok, rejected, failed, exhausted) whose agent id no live
spawn holds are touched; interrupted and running ones hold work to resume. A
run's `agent/<id>` branch goes when git says it is merged into the branch the
run started from (or it is gone already); unmerged work is kept and listed,
unless `--unmerged` says to delete it too. The audit log is never pruned: it
records the prune. A pruned agent id may be used again.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

from runtime.printable import printable
from runtime.spawn.state import FINAL
from runtime.workspace.git import Git, GitError
from runtime.workspace.locks import holder
from runtime.workspace.tree import remove_tree


def _age_days(record: dict) -> float:
    try:
        updated = time.mktime(time.strptime(record.get("updated", ""), "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    except ValueError:
        return float("inf")
    return (time.time() - updated) / 86400


def run(args) -> int:
    from runtime.audit.log import AuditLog
    from runtime.cli.status import state_dir

    state = state_dir(args)
    git = Git(Path.cwd())
    pruned, kept = [], []
    for record in state.all_runs():
        agent_id = record.get("agent_id")
        if not isinstance(agent_id, str) or record.get("status") not in FINAL or holder(state.locks, agent_id) is not None:
            continue
        if _age_days(record) < args.older_than:
            continue
        branch = f"agent/{agent_id}"
        has_branch = git.branch_exists(branch)
        merged = False
        base_branch = record.get("base_branch")
        if has_branch and base_branch and git.branch_exists(base_branch):
            merged = git.run("merge-base", "--is-ancestor", branch, base_branch, ok=(0, 1)).returncode == 0
        if has_branch and not merged and not args.unmerged:
            kept.append({"agent": agent_id, "branch": branch, "why": f"not merged into {base_branch or 'its base'}"})
            continue
        pruned.append({"agent": agent_id, "status": record.get("label") or record.get("status"),
                       "branch": branch if has_branch else None})
        if args.dry_run:
            continue
        worktree = state.worktree(agent_id)
        if worktree.exists():
            try:
                git.remove_worktree(worktree)
            except (GitError, OSError):
                with contextlib.suppress(OSError):
                    remove_tree(worktree)
        if has_branch:
            git.delete_branch(branch)
        with contextlib.suppress(OSError):
            remove_tree(state.run(agent_id))  # the agent's home is in there: any depth, any mode
    if pruned and not args.dry_run:
        AuditLog(state.audit).append("prune", None, agents=[p["agent"] for p in pruned])
    if args.json:
        print(json.dumps({"pruned": pruned, "kept": kept, "dry_run": args.dry_run}, indent=2))
        return 0
    verb = "would prune" if args.dry_run else "pruned"
    for p in pruned:  # ids and labels from state files: escaped like every line a run wrote
        print(printable(f"{verb} {p['agent']} ({p['status']})" + (f", branch {p['branch']}" if p["branch"] else "")))
    for k in kept:
        print(printable(f"kept {k['agent']}: {k['branch']} is {k['why']} (--unmerged deletes it)"))
    if not pruned and not kept:
        print("nothing to prune")
    return 0
