"""Re-running a task after its orchestrator died, without double commits.

Holding the agent id's lock proves the earlier spawn is gone. A run that had
finished is refused (its branch is kept for inspection: use a new agent id).
A run killed while committing or merging is finished from what git says: if
its verified commit is on the branch, it is ok (and merged, if the base
contains it). Any other interrupted run is cleaned (worktree, and the branch
when it holds no commit) and started afresh.
"""

from __future__ import annotations

import shutil

from runtime.errors import FatalError
from runtime.spawn.outcome import Outcome
from runtime.spawn.state import FINAL
from runtime.workspace.git import GitError


def _verified_commit(run, base: str) -> str | None:
    if not run.git.branch_exists(run.branch):
        return None
    head = run.git.resolve(run.branch)
    if head == base:
        return None
    body = run.git.text("log", "-1", "--format=%B", head)
    if f"Agent-Id: {run.agent_id}" in body and "Verified: yes" in body:
        return head
    return None


def _is_merged(run, commit: str, base_branch: str | None) -> bool:
    if not base_branch or not run.git.branch_exists(base_branch):
        return False
    proc = run.git.run("merge-base", "--is-ancestor", commit, base_branch, ok=(0, 1))
    return proc.returncode == 0


def recover(run) -> Outcome | None:
    previous = run.state.read(run.agent_id)
    if previous is None:
        if run.git.branch_exists(run.branch):
            raise FatalError(f"agent id {run.agent_id} is in use: branch {run.branch} exists; pick another agent id")
        return None
    status = previous.get("status")
    if status in FINAL:
        raise FatalError(f"agent {run.agent_id} already ran ({previous.get('label', status)}); "
                         f"its branch {run.branch} is kept for inspection: use a new agent id")
    base = previous.get("base") or ""
    commit = _verified_commit(run, base) if status in ("committing", "merging") else None
    if commit is not None:
        merged = commit if _is_merged(run, commit, previous.get("base_branch")) else None
        outcome = Outcome("ok", None, run.agent_id, previous.get("role", ""), base=base, branch=run.branch,
                          commit=commit, merged=merged, message="finished after an interrupted run; nothing was committed twice")
        run.record = previous
        run.save("ok", label="ok", commit=commit, merged=merged, message=outcome.message)
        run.audit.append("recover", run.agent_id, finished=True, commit=commit)
        return outcome
    worktree = run.state.worktree(run.agent_id)
    if worktree.exists():
        try:
            run.git.remove_worktree(worktree)
        except GitError:
            shutil.rmtree(worktree, ignore_errors=True)
    if run.git.branch_exists(run.branch):
        if run.git.resolve(run.branch) != base:
            raise FatalError(f"interrupted run of {run.agent_id} left commits on {run.branch}; inspect and delete the branch")
        run.git.delete_branch(run.branch)
    run.audit.append("recover", run.agent_id, finished=False, previous=status)
    return None
