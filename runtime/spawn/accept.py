"""Accepting verified work: the commit on the agent branch, and the optional merge.

Only the orchestrator commits, with hooks and fsmonitor disabled. The merge
into the base happens only after the checks pass again on the simulated
merge, and only if the base has not moved since. Unverified work is never
merged: after a rejection or a failure, whatever the agent changed is
committed on its branch marked `Verified: no`, for inspection only.
"""

from __future__ import annotations

import functools
from pathlib import Path

import anyio

from runtime.errors import AgentFailed
from runtime.spawn.commands import tree_runner
from runtime.spawn.outcome import Outcome
from runtime.verify.gather import DEFAULT_CHANGE_SIZE, command_evidence
from runtime.verify.kinds import evaluate
from runtime.workspace.git import GitError, NothingToCommit
from runtime.workspace.safe_files import size_under

COMMAND_KINDS = ("tests-green", "checks-green")


def commit_message(run, verified: bool, outcome: Outcome, label: str | None = None) -> str:
    task = run.task
    checks = outcome.attempts[-1].checks if outcome.attempts else []
    summary = ", ".join(f"{c.atom} {c.status}" for c in checks) or "none"
    title = task.goal.strip().splitlines()[0][:72]
    label = label or outcome.label
    head = run.audit.append("commit-intent", run.agent_id, verified=verified, label=label)["hash"]
    return (
        f"agent {run.agent_id} ({task.role.name}): {title}\n\n"
        f"Task: {task.path}\nTask-Sha256: {task.digest}\nChecks: {summary}\n"
        f"Agent-Id: {run.agent_id}\nRole: {task.role.name}\nVerified: {'yes' if verified else 'no'}\n"
        + ("" if verified else f"Outcome: {label}\n")  # a merge may still fail after a verified commit
        + f"Audit-Head: {head}\n"
    )


async def accept(run, outcome: Outcome) -> None:
    run.save("committing")
    try:
        message = commit_message(run, True, outcome)
        # A resumed run verifies the work its interrupted attempt left on the branch: when this one
        # adds nothing, an empty commit still records the verdict on the branch's head.
        resumed = bool(run.record.get("resumed"))
        outcome.commit = await anyio.to_thread.run_sync(
            functools.partial(run.git.commit_all, run.worktree, message, allow_empty=resumed))
    except NothingToCommit:
        outcome.commit = None  # a read-only role: verified, nothing to commit
    run.audit.append("commit", run.agent_id, commit=outcome.commit, branch=run.branch)
    if run.options.merge:
        if outcome.commit is None:
            outcome.message = "nothing to merge: the agent changed nothing"
            return
        await merge_verified(run, outcome)


async def _merged_checks_pass(run, tree: str, base: str, commit: str) -> list[str]:
    """The task's test and check commands again, on the simulated merge: gathered and judged as verify does."""
    entries = [e for e in run.policy.get("verify", []) if e["kind"] in COMMAND_KINDS]
    failures: list[str] = []
    if not entries:
        return failures
    with tree_runner(run.git, tree, run.home, run.options.use_sandbox, (base, commit), run.toolchain) as run_command:
        for entry in entries:
            evidence = await command_evidence(entry["kind"], entry["params"], run_command)
            result = evaluate(entry["kind"], entry["params"], evidence)
            if not result.ok:
                failures.append(f"{entry['atom']}: {result.feedback}")
    return failures


async def merge_verified(run, outcome: Outcome) -> None:
    if run.base_branch is None:
        raise AgentFailed("merge", "the base is not a branch, so there is nothing to merge into")
    run.save("merging")
    expected = run.git.resolve(run.base_branch)
    simulation = run.git.simulate_merge(expected, run.branch)
    if not simulation.clean:
        outcome.status = "rejected"
        outcome.message = f"merging into {run.base_branch} conflicts in: {', '.join(simulation.conflicts)}"
        return
    failures = await _merged_checks_pass(run, simulation.tree, expected, outcome.commit)
    if failures:
        outcome.status = "rejected"
        outcome.message = "the checks fail on the simulated merge:\n" + "\n".join(failures)
        return
    message = f"Merge agent {run.agent_id} ({run.task.role.name}) into {run.base_branch}\n\nAgent-Id: {run.agent_id}\n"
    try:
        outcome.merged = run.git.merge(run.base_branch, run.branch, message, expected_base=expected)
    except GitError as exc:  # the base moved or its checkout changed meanwhile: an outcome, not a crash
        raise AgentFailed("merge", f"the verified commit {outcome.commit} was not merged: {exc}") from None
    run.audit.append("merge", run.agent_id, into=run.base_branch, commit=outcome.merged)


def _oversized(run) -> list[str]:
    """Files an unaccepted run left that are over its per-file size limit: never committed, even for inspection."""
    params = next((e["params"] for e in run.policy.get("verify", []) if e["kind"] == "change-size"),
                  DEFAULT_CHANGE_SIZE)
    try:
        candidates = run.git.unstaged_files(run.worktree)
    except GitError:
        return []
    return [p for p in candidates if (size_under(run.worktree, p) or 0) > params["max-file-bytes"]]


def keep_for_inspection(run, outcome: Outcome, label: str | None = None) -> None:
    """Commit whatever an unaccepted run changed on its branch (never merged), but oversized files."""
    if not run.worktree or not Path(run.worktree).exists() or outcome.commit:
        return
    left_out = _oversized(run)
    message = commit_message(run, False, outcome, label)
    if left_out:
        message += "Left-Out: " + ", ".join(left_out[:20]) + (" ..." if len(left_out) > 20 else "") + " (too large)\n"
    try:
        outcome.inspection = run.git.commit_all(run.worktree, message, exclude=left_out)
    except (NothingToCommit, GitError):
        return
    run.audit.append("commit", run.agent_id, commit=outcome.inspection, branch=run.branch, verified=False)
