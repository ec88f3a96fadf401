"""Accepting verified work: the commit on the agent branch, and the optional merge.

Only the orchestrator commits, with hooks and fsmonitor disabled. The merge
into the base happens only after the checks pass again on the simulated
merge, and only if the base has not moved since. Unverified work is never
merged: after a rejection or a failure, whatever the agent changed is
committed on its branch marked `Verified: no`, for inspection only.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from runtime.audit.records import ApprovalDecided, ApprovalRequested, CommitIntent, Committed, MergedIn
from runtime.manifests.control import control_name
from runtime.outcomes import OutcomeStatus
from runtime.spawn.outcome import Acceptance, Attempt, Verdict
from runtime.spawn.provenance import attest_merge, attest_work
from runtime.spawn.state import RunStatus
from runtime.spawn.world import tree_world
from runtime.verify.commands import CommandLog
from runtime.verify.gather import DEFAULT_CHANGE_SIZE
from runtime.verify.kinds.change_size import ChangeSizeParams
from runtime.verify.kinds.record import CheckRecord
from runtime.verify.kinds.result import CheckStatus
from runtime.verify.passes import judge_merge
from runtime.verify.test_runs import load_hidden
from runtime.workspace import hazards
from runtime.workspace.git import GitError, NothingToCommit
from runtime.workspace.safe_files import size_under

if TYPE_CHECKING:
    from runtime.approvals.store import Approval
    from runtime.spawn.pipeline import SpawnRun


def last_checks(attempts: Sequence[Attempt]) -> list[tuple[str, CheckStatus]]:
    """(atom, status) of the last attempt's checks."""
    return [(c.atom, c.status) for c in attempts[-1].checks] if attempts else []


def verdict_trailers(attempts: Sequence[Attempt]) -> str:
    """What the last attempt's verdict on the tests rests on, as commit trailers: the base's test files the
    task let the work change first (a reviewer reads them first), then which tests ran against which base."""
    if not attempts:
        return ""
    out = ""
    edits = sorted({path for c in attempts[-1].checks for path in c.test_edits})
    if edits:
        out += "Test-Edits: " + ", ".join(_quoted(p) for p in edits[:20]) + (" ..." if len(edits) > 20 else "") + "\n"
    for check in attempts[-1].checks:
        if check.tests is not None:
            out += f"Tests: {' '.join(check.tests.trailer().split())}\n"
            if check.tests.base_run:
                out += f"Tests-Base-Run: {check.tests.base_run}{' (cached)' if check.tests.base_cached else ''}\n"
    return out


def commit_message(run: SpawnRun, verified: bool, checks: list[tuple[str, CheckStatus]], label: str,
                   attempts: Sequence[Attempt] = (), head: str | None = None) -> str:
    """The commit's message; ``head``: the audit record of the intent to commit (else written here)."""
    task = run.task
    summary = ", ".join(f"{atom} {status}" for atom, status in checks) or "none"
    title = task.goal.strip().splitlines()[0][:72]
    head = head or run.audit.append(CommitIntent(verified=verified, label=label), run.agent_id).hash
    return (
        f"agent {run.agent_id} ({task.role.name}): {title}\n\n"
        f"Task: {task.path}\nTask-Sha256: {task.digest}\nChecks: {summary}\n" + verdict_trailers(attempts) +
        f"Agent-Id: {run.agent_id}\nRole: {task.role.name}\nVerified: {'yes' if verified else 'no'}\n"
        + ("" if verified else f"Outcome: {label}\n")  # a merge may still fail after a verified commit
        + f"Audit-Head: {head}\n"
    )


async def accept(run: SpawnRun, verdict: Verdict) -> Acceptance:
    """Commit verified work on the agent branch, and with --merge merge it; what happened, as a value."""
    run.save(RunStatus.COMMITTING)
    commit: str | None
    head = run.audit.append(CommitIntent(verified=True, label=OutcomeStatus.OK), run.agent_id).hash
    try:
        message = commit_message(run, True, last_checks(verdict.attempts), OutcomeStatus.OK, verdict.attempts, head)
        # A resumed run verifies the work its interrupted attempt left on the branch: when this one
        # adds nothing, an empty commit still records the verdict on the branch's head.
        resumed = run.resumed is not None
        commit = await anyio.to_thread.run_sync(
            functools.partial(run.git.commit_all, run.worktree, message, allow_empty=resumed))
    except NothingToCommit:
        commit = None  # a read-only role: verified, nothing to commit
    if commit is not None:
        # signed and noted before anything says it was committed: a run stopped in between attests it on recovery
        since = run.audit_from if run.resumed is None else 0
        await anyio.to_thread.run_sync(attest_work, run, commit, run.base, verdict.attempts, head, since)
    run.audit.append(Committed(commit=commit, branch=run.branch), run.agent_id)
    if not run.options.merge:
        return Acceptance(commit)
    if commit is None:
        return Acceptance(None, message="nothing to merge: the agent changed nothing")
    return await merge_verified(run, commit)


async def _merged_checks(run: SpawnRun, tree: str, base: str, commit: str) -> list[CheckRecord]:
    """The task's test and check commands again, on the simulated merge: gathered and judged as verify does
    (`runtime.verify.passes.judge_merge`)."""
    hidden = await anyio.to_thread.run_sync(load_hidden, run.git, run.task)
    log = CommandLog(run.state.run(run.agent_id) / "merge-commands", run.audit.redactor)
    return await judge_merge(run.policy, run.git, base, tree, (base, commit), run.verify_running(hidden, log),
                             run.state.run(run.agent_id) / "merge", use_sandbox=run.options.use_sandbox,
                             world=tree_world(run, "merge-setup"))


def merge_failures(records: Sequence[CheckRecord]) -> list[str]:
    """What fails of the checks run again on a simulated merge, one line per check."""
    return [f"{r.atom}: {r.feedback}" for r in records if r.status != CheckStatus.PASSED]


async def merge_verified(run: SpawnRun, commit: str) -> Acceptance:
    """Merge the verified ``commit`` into the base branch, after its checks pass again on the simulated merge."""
    if run.base_branch is None:
        return Acceptance(commit, failure=(OutcomeStatus.FAILED, "merge",
                                           "the base is not a branch, so there is nothing to merge into"))
    run.save(RunStatus.MERGING)
    expected = run.git.resolve(run.base_branch)
    simulation = run.git.simulate_merge(expected, run.branch)
    if not simulation.clean or simulation.tree is None:
        return Acceptance(commit, refused=f"merging into {run.base_branch} conflicts in: {', '.join(simulation.conflicts)}")
    rechecked = await _merged_checks(run, simulation.tree, expected, commit)
    failures = merge_failures(rechecked)
    if failures:
        return Acceptance(commit, refused="the checks fail on the simulated merge:\n" + "\n".join(failures))
    control = changed_control_files(run, commit)
    if control and run.options.unattended:
        return Acceptance(commit, failure=(OutcomeStatus.FAILED, "merge", f"the verified commit {commit} changes control files "
                                           f"({', '.join(control)}) and was not merged: that needs a person's approval, "
                                           f"and nobody approves in this run (--unattended); it stays on {run.branch}"))
    if control:
        decision = await anyio.to_thread.run_sync(_approve_control_change, run, commit, control)
        if not decision.allowed:
            why = decision.reason or decision.status
            return Acceptance(commit, failure=(OutcomeStatus.FAILED, "merge", f"the verified commit {commit} changes control files "
                                               f"({', '.join(control)}) and was not merged: no approval ({why}); it "
                                               f"stays on {run.branch}"))
    message = f"Merge agent {run.agent_id} ({run.task.role.name}) into {run.base_branch}\n\nAgent-Id: {run.agent_id}\n"
    try:
        merged = run.git.merge(run.base_branch, run.branch, message, expected_base=expected)
    except GitError as exc:  # the base moved or its checkout changed meanwhile: an outcome, not a crash
        return Acceptance(commit, failure=(OutcomeStatus.FAILED, "merge", f"the verified commit {commit} was not merged: {exc}"))
    await anyio.to_thread.run_sync(attest_merge, run, merged, commit, run.base_branch, (expected, commit), rechecked)
    run.audit.append(MergedIn(into=run.base_branch, commit=merged), run.agent_id)
    return Acceptance(commit, merged)


def changed_control_files(run: SpawnRun, commit: str) -> list[str]:
    """The control files (`.claude`, `.agent-runtime`, ...) ``commit`` changes against the run's base: only a
    task's `control-files` could let them through verify, and they are merged only after an approval."""
    names = [p for p in run.git.text("diff", "--name-only", "--no-renames", "-z", run.base, commit).split("\0") if p]
    return [p for p in names if control_name(p) is not None]


def _approve_control_change(run: SpawnRun, commit: str, paths: list[str]) -> Approval:
    """Ask a person (`runtime approve`, or the terminal's prompt) before control files reach the base;
    the request expires, as a denial, after the task's approval timeout."""
    from runtime.approvals.service import console_notifier
    from runtime.approvals.store import ApprovalStatus, ApprovalStore, iso

    store = ApprovalStore.for_state(run.state.root)
    timeout = run.agent.limits.approval_timeout_s
    reason = (f"the verified work changes control files ({', '.join(paths)}), which rule later runs: it is merged "
              f"into {run.base_branch} only if a person approves")
    approval, new = store.request(run.agent_id, "merge", {"branch": run.branch, "commit": commit, "control-files": paths},
                                  reason, timeout, redactor=run.audit.redactor)
    run.audit.append(ApprovalRequested(id=approval.id, tool="merge", input_hash=approval.input_hash,
                                       summary=approval.summary, gate_reason=approval.gate_reason,
                                       expires_at=iso(approval.expires), new=new), run.agent_id)
    if new:
        explicit = run.options.state_dir or os.environ.get("RUNTIME_STATE_DIR")
        hint = shlex.join(["--state-dir", str(run.state.root)]) if explicit else ""
        console_notifier(store, hint=hint)(approval)
    final = store.wait(approval.id, timeout)
    if final.status == ApprovalStatus.PENDING:
        final = store.expire(approval.id, "no decision before the approval timeout") or final
    run.audit.append(ApprovalDecided(id=final.id, tool="merge", input_hash=final.input_hash, status=final.status,
                                     decision="allow" if final.allowed else "deny", by=final.decided_by,
                                     reason=final.reason, decided_at=iso(final.decided)), run.agent_id)
    return final


def _left_out(run: SpawnRun, fenced: list[str]) -> list[tuple[str, str]]:
    """(path, why) of what an unaccepted run's inspection commit leaves out: nested repositories and
    folders git cannot hold (``fenced``), files over the per-file limit, and, taken in path order, each file
    that would carry the total past the change limit (a smaller one after it may still fit). The commit
    stores at most the change limit; what it leaves out is listed."""
    limits = ChangeSizeParams.read(next((e.params for e in run.policy.verify_entries(("change-size",))),
                                        DEFAULT_CHANGE_SIZE))
    out = [(path, "nested repository or unreadable folder") for path in fenced]
    try:
        candidates = run.git.unstaged_files(run.worktree)
    except GitError:
        return out
    total = 0
    for path in sorted(candidates):
        if any(path == f or path.startswith(f + "/") for f in fenced):
            continue
        size = size_under(run.worktree, path) or 0
        if size > limits.max_file_bytes:
            out.append((path, "too large"))
        elif total + size > limits.max_change_bytes:
            out.append((path, "over the change limit"))
        else:
            total += size
    return out


def _quoted(path: str) -> str:
    """A path as one JSON string: a name holding a newline cannot add a line (a trailer) to the message."""
    return json.dumps(path)


def keep_for_inspection(run: SpawnRun, checks: list[tuple[str, CheckStatus]], label: str) -> str | None:
    """Commit whatever an unaccepted run changed on its branch (never merged), up to its change limit and
    never a nested repository; the commit, or None when there was nothing to keep."""
    if not run.worktree or not Path(run.worktree).exists():
        return None
    try:
        fenced = [h.path for h in hazards.clear(run.worktree)]
    except OSError:
        return None  # a tree that cannot even be walked is not committed
    left_out = _left_out(run, fenced)
    message = commit_message(run, False, checks, label)
    if left_out:
        shown = ", ".join(f"{_quoted(path)} ({why})" for path, why in left_out[:20])
        message += f"Left-Out: {shown}" + (f" and {len(left_out) - 20} more" if len(left_out) > 20 else "") + "\n"
    try:
        inspection: str = run.git.commit_all(run.worktree, message, exclude=[path for path, _ in left_out])
    except (NothingToCommit, GitError):
        return None
    run.audit.append(Committed(commit=inspection, branch=run.branch, verified=False), run.agent_id)
    return inspection
