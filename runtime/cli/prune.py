"""runtime prune: clean up finished runs: agents' state, worktrees and branches, and plan runs'.

Only finished runs are touched: agents' (ok, rejected, failed, exhausted) whose agent id no live
spawn holds, and plan runs that ended (accepted, rejected, questions); interrupted and running ones
hold work to resume. A branch goes when its work is in the base: its head is an ancestor of the
branch the run started from (a plan's subtasks: the plan run's; a run that started from a commit:
the branch checked out now), or it holds nothing beyond the commit it started from. That covers a
plan's `agent/<run>.<subtask>` branches and its `run/<run-id>` integration branch once the run was
merged with `--merge`. Work that is not in the base is kept and listed, unless `--unmerged` says to
delete it too. The audit log is never pruned: it records the prune. A pruned agent id may be used
again.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.orchestration.report import PLAN_ENDED
from runtime.printable import printable
from runtime.spawn.state import StateDir
from runtime.workspace.git import Git, GitError
from runtime.workspace.locks import holder
from runtime.workspace.tree import remove_tree

if TYPE_CHECKING:
    from runtime.cli.settings import Prune
    from runtime.lang.jsontypes import JSONDict
    from runtime.orchestration.state import RunRow


def _age_days(updated_utc: str) -> float:
    try:
        updated = time.mktime(time.strptime(updated_utc, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    except ValueError:
        return float("inf")
    return (time.time() - updated) / 86400


@dataclass(frozen=True)
class _Plans:
    """The plan runs of the state folder, as prune needs them."""

    runs: list[RunRow]
    base_of_agent: dict[str, str | None]  # a subtask's agent id -> its plan run's base branch

    @classmethod
    def read(cls, state: StateDir) -> _Plans:
        from runtime.orchestration.state import OrchestratorState

        path = state.root / "orchestrator.sqlite"
        if not path.is_file():
            return cls([], {})
        db = OrchestratorState(path)
        try:
            runs = db.runs()
            base_of_agent: dict[str, str | None] = {}
            for row in runs:
                for sub in db.subtasks(row.run_id):
                    if sub.agent_id:
                        base_of_agent[sub.agent_id] = row.base_branch
            return cls(runs, base_of_agent)
        finally:
            db.close()


@dataclass(frozen=True)
class _Pruned:
    """An agent run or a plan run pruned (or that would be, with --dry-run)."""

    kind: str  # "agent" or "plan"
    name: str  # its agent id, or its plan run's id
    status: str
    branch: str | None  # its branch, deleted with it

    def shown(self) -> str:
        return self.name if self.kind == "agent" else f"plan run {self.name}"

    def to_json(self) -> JSONDict:
        return {"kind": self.kind, "agent" if self.kind == "agent" else "run": self.name, "status": self.status,
                "branch": self.branch}


@dataclass(frozen=True)
class _Kept:
    """A finished run kept: its branch holds work that is not in the base."""

    kind: str  # "agent" or "plan"
    name: str
    branch: str
    why: str

    def shown(self) -> str:
        return self.name if self.kind == "agent" else f"plan run {self.name}"

    def to_json(self) -> JSONDict:
        return {"kind": self.kind, "agent" if self.kind == "agent" else "run": self.name, "branch": self.branch,
                "why": self.why}


class _Judge:
    """Whether a branch's work is in the base, by git."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.checked_out = git.current_branch()

    def target(self, *candidates: str | None) -> str | None:
        """The first candidate that is a branch, else the branch checked out now."""
        for name in candidates:
            if name and self.exists(name):
                return name
        return self.checked_out

    def exists(self, branch: str) -> bool:
        try:
            return self.git.branch_exists(branch)
        except GitError:
            return False

    def in_base(self, branch: str, started_from: str | None, target: str | None) -> bool:
        head = self.git.resolve(f"refs/heads/{branch}")
        if started_from and head == started_from:
            return True  # nothing beyond where it started
        if target is None:
            return False
        return self.git.run("merge-base", "--is-ancestor", head, f"refs/heads/{target}", ok=(0, 1)).returncode == 0


def run(args: Prune) -> int:
    from runtime.audit.log import AuditLog
    from runtime.audit.records import Pruned
    from runtime.cli.status import state_dir

    state = state_dir(args.state_dir)
    git = Git(Path.cwd())
    judge = _Judge(git)
    plans = _Plans.read(state)
    pruned: list[_Pruned] = []
    kept: list[_Kept] = []
    for record in state.all_runs():
        agent_id = record.agent_id
        if not record.final or holder(state.locks, agent_id) is not None:
            continue
        if _age_days(record.updated) < args.older_than:
            continue
        branch = f"agent/{agent_id}"
        has_branch = judge.exists(branch)
        target = judge.target(record.base_branch, plans.base_of_agent.get(agent_id))
        if has_branch and not args.unmerged and not judge.in_base(branch, record.base or None, target):
            kept.append(_Kept("agent", agent_id, branch, f"not merged into {target or 'a branch'}"))
            continue
        pruned.append(_Pruned("agent", agent_id, record.label or record.status, branch if has_branch else None))
        if not args.dry_run:
            _remove_agent(state, git, agent_id, branch if has_branch else None)
    for row in plans.runs:
        if row.status not in PLAN_ENDED or _age_days(_utc(row.updated)) < args.older_than:
            continue
        branch = row.integration
        has_branch = bool(branch) and judge.exists(branch)
        target = judge.target(row.base_branch)
        if has_branch and not args.unmerged and not judge.in_base(branch, row.base, target):
            kept.append(_Kept("plan", row.run_id, branch, f"not merged into {target or 'a branch'}"))
            continue
        pruned.append(_Pruned("plan", row.run_id, row.status, branch if has_branch else None))
        if not args.dry_run:
            _remove_plan_run(state, git, row.run_id, branch if has_branch else None)
    if pruned and not args.dry_run:
        AuditLog(state.audit).append(Pruned(agents=tuple(p.name for p in pruned if p.kind == "agent"),
                                            runs=tuple(p.name for p in pruned if p.kind == "plan")))
    if args.json:
        print(json.dumps({"pruned": [p.to_json() for p in pruned], "kept": [k.to_json() for k in kept],
                          "dry_run": args.dry_run}, indent=2))
        return 0
    verb = "would prune" if args.dry_run else "pruned"
    for p in pruned:  # ids and labels from state files: escaped like every line a run wrote
        print(printable(f"{verb} {p.shown()} ({p.status})" + (f", branch {p.branch}" if p.branch else "")))
    for k in kept:
        print(printable(f"kept {k.shown()}: {k.branch} is {k.why} (--unmerged deletes it)"))
    if not pruned and not kept:
        print("nothing to prune")
    return 0


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _remove_agent(state: StateDir, git: Git, agent_id: str, branch: str | None) -> None:
    worktree = state.worktree(agent_id)
    if worktree.exists():
        try:
            git.remove_worktree(worktree)
        except (GitError, OSError):
            with contextlib.suppress(OSError):
                remove_tree(worktree)
    if branch is not None:
        git.delete_branch(branch)
    with contextlib.suppress(OSError):
        remove_tree(state.run(agent_id))  # the agent's home is in there: any depth, any mode


def _remove_plan_run(state: StateDir, git: Git, run_id: str, branch: str | None) -> None:
    from runtime.orchestration.state import OrchestratorState

    if branch is not None:
        git.delete_branch(branch)
    with contextlib.suppress(OSError):
        remove_tree(state.run(run_id))  # its report and the plan checks' home
    db = OrchestratorState(state.root / "orchestrator.sqlite")
    try:
        db.delete_run(run_id)
    finally:
        db.close()
