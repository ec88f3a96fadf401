"""Re-running a task after its orchestrator died, without double commits.

Holding the agent id's lock proves the earlier spawn is gone. A run that had
finished is refused (its branch is kept for inspection: `runtime again ID`
starts a new series of attempts on it, `runtime spawn TASK --afresh` starts it again from the current base and
task file, keeping the old branch under a named ref), unless it
failed before its agent did anything and gave its id back (`id_free`): that
one is started afresh. Under `runtime again` (`SpawnOptions.again`) a finished
run's work is carried on from its branch (`Resume`, with the earlier attempts),
judged against the same base; one already merged is refused.
A run killed while committing or merging is finished from what git says: if
its verified commit is on the branch, it is ok, and merged if the base
contains it; if the base does not and the re-run asks to merge, the merge
phase runs again (`ResumeMerge`: the simulated merge and its checks, then the
merge), so a SIGKILL at any point of `--merge` ends with the commit merged
exactly once. A run stopped by Ctrl-C or SIGTERM (`interrupted`) committed its
work on its branch: the re-run carries on from there (`Resume`). Any other
interrupted run is cleaned (worktree, and the branch when it holds no commit)
and started afresh.

`clean_leftovers` removes, at the start of any spawn, what killed runs of the
same state folder left: the worktrees of runs whose orchestrator is gone (no
live lock holder), git's records of them, and their socket folders.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.audit.records import Afresh, Again, Recovered
from runtime.errors import FatalError
from runtime.outcomes import OutcomeStatus
from runtime.spawn.outcome import Outcome
from runtime.spawn.provenance import attest_merge, attest_work, attested
from runtime.spawn.sockets import clean_stale_socket_folders
from runtime.spawn.state import RunRecord, RunStatus, StateDir
from runtime.workspace.git import Git, GitError
from runtime.workspace.locks import holder
from runtime.workspace.tree import remove_tree

if TYPE_CHECKING:
    from runtime.spawn.pipeline import SpawnSetup


@dataclass(frozen=True)
class Resume:
    """An interrupted run (Ctrl-C, SIGTERM) whose work is on its branch: carry on from there."""

    base: str
    base_branch: str | None
    commit: str | None
    # `runtime again`: the finished run carried on, whose attempts the new series follows.
    again: RunRecord | None = None


@dataclass(frozen=True)
class ResumeMerge:
    """A verified commit of an interrupted run, not yet in the base, to merge now."""

    commit: str
    previous: RunRecord


def _verified_commit(run: SpawnSetup, base: str) -> str | None:
    if not run.git.branch_exists(run.branch):
        return None
    head = run.git.resolve(run.branch)
    if head == base:
        return None
    # Whole lines of the message's trailers, never a substring: a goal or a quoted name elsewhere in the
    # message must not read as a verdict.
    lines = run.git.text("log", "-1", "--format=%B", head).splitlines()
    if f"Agent-Id: {run.agent_id}" in lines and "Verified: yes" in lines and "Verified: no" not in lines:
        return head
    return None


def _merge_commit(run: SpawnSetup, commit: str, base_branch: str | None) -> str | None:
    """The commit of ``base_branch`` that merged ``commit`` (the earliest merge after it), or None."""
    if not base_branch or not run.git.branch_exists(base_branch):
        return None
    if run.git.run("merge-base", "--is-ancestor", commit, base_branch, ok=(0, 1)).returncode != 0:
        return None
    merges = run.git.text("rev-list", "--merges", "--ancestry-path", "--reverse", f"{commit}..{base_branch}")
    return merges.split()[0] if merges else commit


def _again(run: SpawnSetup, previous: RunRecord) -> Resume:
    """A new series of attempts on a finished run's work (`runtime again`): from the head of its branch,
    judged against the same base. Its work merged already is in the base: more of it is a new task."""
    if previous.merged:
        into = f" into {previous.base_branch}" if previous.base_branch else ""
        raise FatalError(f"agent {run.agent_id}'s work was merged{into} ({previous.merged[:12]}): it is done; "
                         "give the next change a task and an agent id of its own")
    if not previous.base or not run.git.branch_exists(run.branch):
        raise FatalError(f"agent {run.agent_id} left no branch to carry on ({run.branch} is gone): give the task "
                         "a new agent id, or `runtime prune --unmerged` to forget the run and spawn it afresh")
    head = run.git.resolve(run.branch)
    worktree = run.state.worktree(run.agent_id)
    if worktree.exists():  # kept with --keep: the new series checks the branch out afresh
        run.git.remove_worktree(worktree)
    run.audit.append(Again(previous=previous.label or previous.status, head=head, series=previous.series + 1,
                           sent_back=bool(run.options.feedback)), run.agent_id)
    return Resume(previous.base, previous.base_branch, None if head == previous.base else head, again=previous)


PREVIOUS_REFS = "refs/agent-runtime/previous"


def _shown(path: Path) -> str:
    """A task file as the person would type it here: relative to the working folder where it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _afresh(run: SpawnSetup, previous: RunRecord) -> None:
    """`runtime spawn TASK --afresh`: a finished run's agent id started again from the current base and the task
    file as it is now (fixed, say, after its own scope or test command rejected the work). Nothing is lost: the
    old branch is kept as `refs/agent-runtime/previous/<id>/<n>` and the old run's folder under
    `previous/<id>.<n>` of the state folder. Work already merged is done: a new change is a new task."""
    if previous.merged:
        into = f" into {previous.base_branch}" if previous.base_branch else ""
        raise FatalError(f"agent {run.agent_id}'s work was merged{into} ({previous.merged[:12]}): it is done; "
                         "give the next change a task and an agent id of its own")
    kept_runs = run.state.root / "previous"
    n = 1
    while (kept_runs / f"{run.agent_id}.{n}").exists() or run.git.run(
            "rev-parse", "--verify", "--quiet", f"{PREVIOUS_REFS}/{run.agent_id}/{n}", ok=(0, 1)).returncode == 0:
        n += 1
    ref = f"{PREVIOUS_REFS}/{run.agent_id}/{n}"
    worktree = run.state.worktree(run.agent_id)
    if worktree.exists():  # kept with --keep
        run.git.remove_worktree(worktree)
    head = None
    if run.git.branch_exists(run.branch):
        head = run.git.resolve(run.branch)
        run.git.run("update-ref", ref, head)
        run.git.delete_branch(run.branch)
    kept_runs.mkdir(parents=True, exist_ok=True)
    folder = run.state.run(run.agent_id)
    if folder.exists():
        folder.rename(kept_runs / f"{run.agent_id}.{n}")
    run.audit.append(Afresh(previous=previous.label or previous.status, kept_ref=ref if head else None, kept_head=head,
                            kept_run=str(kept_runs / f"{run.agent_id}.{n}")), run.agent_id)


def _stale_worktrees(git: Git) -> bool:
    """Whether git records a linked worktree whose folder is gone (what `worktree prune` clears): read from
    its administrative files, so that a spawn starts no process when there is nothing to prune."""
    admin = git.common_dir / "worktrees"
    try:
        names = os.listdir(admin)
    except OSError:
        return False
    for name in names:
        try:
            gitdir = (admin / name / "gitdir").read_text(encoding="utf-8", errors="surrogateescape").strip()
        except OSError:
            return True  # not as git writes it: let git judge
        if not gitdir or not os.path.lexists(gitdir):
            return True
    return False


def clean_leftovers(state: StateDir, git: Git, current: str) -> list[str]:
    """Remove the worktrees and socket folders of runs whose orchestrator died; returns the agent ids
    whose worktree went. The run of ``current`` is left to `recover` (it holds its lock)."""
    removed = []
    folder = state.root / "worktrees"
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        agent_id = path.name
        if agent_id == current or holder(state.locks, agent_id) is not None:
            continue
        record = state.read(agent_id)
        if record is not None and record.final:
            continue  # a finished run's worktree is there because it was asked for (--keep)
        try:
            git.remove_worktree(path)
        except (GitError, OSError):
            with contextlib.suppress(OSError):
                remove_tree(path)
        removed.append(agent_id)
    if removed or _stale_worktrees(git):
        try:
            git.run("worktree", "prune")
        except GitError:
            pass
    clean_stale_socket_folders(state.root)
    return removed


def recover(run: SpawnSetup) -> Outcome | ResumeMerge | Resume | None:
    previous = run.state.read(run.agent_id)
    if previous is None:
        if run.git.branch_exists(run.branch):
            raise FatalError(f"agent id {run.agent_id} is in use: branch {run.branch} exists; pick another agent id")
        return None
    status = previous.status
    if status == RunStatus.INTERRUPTED and run.git.branch_exists(run.branch) and previous.base:
        worktree = run.state.worktree(run.agent_id)
        if worktree.exists():
            run.git.remove_worktree(worktree)
        run.audit.append(Recovered(finished=False, resumed="interrupted", work=previous.work), run.agent_id)
        return Resume(previous.base, previous.base_branch, previous.work)
    if previous.final and run.options.again and not previous.id_free:
        return _again(run, previous)
    if previous.final and run.options.afresh and not previous.id_free:
        _afresh(run, previous)
        return None
    if previous.final and previous.id_free:
        # It failed before its agent did anything and left nothing: started afresh, its old folder cleared.
        with contextlib.suppress(OSError):
            remove_tree(run.state.run(run.agent_id))
    elif previous.final:
        kept = f"its branch {run.branch} is kept" if run.git.branch_exists(run.branch) else "nothing of it is kept"
        raise FatalError(f"agent {run.agent_id} already ran ({previous.label or status}) and {kept}: "
                         f"`runtime spawn {shlex.quote(_shown(run.task.path))} --afresh` starts it again from the current base and "
                         f"the task file as it is now (the old branch kept as {PREVIOUS_REFS}/{run.agent_id}/N); "
                         f"`runtime again {run.agent_id}` starts a new series of attempts on its work, as first spawned")
    base = previous.base
    commit = _verified_commit(run, base) if status in (RunStatus.COMMITTING, RunStatus.MERGING) else None
    if commit is not None:
        if not attested(run, commit):  # stopped between the commit and its attestation
            trailers = run.git.text("log", "-1", "--format=%(trailers:key=Audit-Head,valueonly)", commit).split()
            attest_work(run, commit, base, previous.attempts, trailers[-1] if trailers else "")
        merged = _merge_commit(run, commit, previous.base_branch)
        if merged is not None and merged != commit and previous.base_branch and not attested(run, merged):
            parents, _, message = run.git.text("log", "-1", "--format=%P%n%B", merged).partition("\n")
            if f"Agent-Id: {run.agent_id}" in message.splitlines():  # the orchestrator's merge, not a person's
                attest_merge(run, merged, commit, previous.base_branch, parents.split(), ())
        if merged is None and run.options.merge and previous.base_branch:
            run.audit.append(Recovered(finished=False, resumed="merge", commit=commit), run.agent_id)
            return ResumeMerge(commit, previous)
        outcome = Outcome(OutcomeStatus.OK, None, run.agent_id, previous.role, base=base, branch=run.branch,
                          commit=commit, merged=merged, message="finished after an interrupted run; nothing was committed twice")
        run.state.write(previous.with_(status=outcome.status, label=outcome.label, commit=commit, merged=merged,
                                       message=outcome.message))
        run.audit.append(Recovered(finished=True, commit=commit), run.agent_id)
        return outcome
    worktree = run.state.worktree(run.agent_id)
    if worktree.exists():
        try:
            run.git.remove_worktree(worktree)
        except (GitError, OSError):
            with contextlib.suppress(OSError):
                remove_tree(worktree)
    if run.git.branch_exists(run.branch):
        if run.git.resolve(run.branch) != base:
            raise FatalError(f"interrupted run of {run.agent_id} left commits on {run.branch}; inspect and delete the branch")
        run.git.delete_branch(run.branch)
    run.audit.append(Recovered(finished=False, previous=status), run.agent_id)
    return None
