"""Fan-in: accepted branches merged into the run's integration branch, in sequence order.

Merges are recorded in the orchestrator's state as they happen, so a resumed
run never merges a branch twice. A branch that conflicts with what is already
integrated is left out and reported as part of the gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.attest.statement import Predicate, merge_predicate
from runtime.attest.store import attest_all, signed_all
from runtime.orchestration.events import MergeCommitted, MergeConflict
from runtime.orchestration.state import OrchestratorState
from runtime.workspace.git import Git


@dataclass
class Integration:
    merged: dict[str, str] = field(default_factory=dict)  # subtask id -> merge commit
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # subtask id -> conflicting paths


def ensure_integration_branch(git: Git, name: str, base: str) -> None:
    with git.mutex:
        if not git.branch_exists(name):
            git.run("branch", name, base)


def integrate(git: Git, state: OrchestratorState, run_id: str, branch: str, accepted: list[tuple[str, str, str]]) -> Integration:
    """Merge each (subtask id, agent branch, commit) into ``branch``, skipping those already merged."""
    out = Integration(merged=dict(state.merges(run_id)))
    merges: list[tuple[str, str, Predicate]] = []
    try:
        _merge_each(git, state, run_id, branch, accepted, out, merges)
    finally:  # the merges' attestations: signed by one ssh-keygen, kept in one notes commit
        attest_all(git, signed_all(git, merges), None)
    return out


def _merge_each(git: Git, state: OrchestratorState, run_id: str, branch: str, accepted: list[tuple[str, str, str]],
                out: Integration, merges: list[tuple[str, str, Predicate]]) -> None:
    for subtask_id, agent_branch, commit in accepted:
        if subtask_id in out.merged:
            continue
        head = git.resolve(branch)
        if is_ancestor(git, commit, head):
            # Merged before the orchestrator died, not yet recorded: record it, never merge twice.
            merged = existing_merge(git, head, commit) or head
            state.record_merge(run_id, subtask_id, commit, merged)
            out.merged[subtask_id] = merged
            continue
        simulation = git.simulate_merge(head, agent_branch)
        if not simulation.clean:
            out.conflicts[subtask_id] = list(simulation.conflicts)
            state.event(run_id, MergeConflict(subtask_id, tuple(simulation.conflicts)))
            continue
        message = f"Integrate {subtask_id} into {branch}\n\nRun: {run_id}\nSubtask: {subtask_id}\nCommit: {commit}\n"
        merged = git.merge(branch, agent_branch, message, expected_base=head)
        merges.append((merged, f"refs/heads/{branch}", merge_predicate(branch, commit, [head, commit], run_id=run_id,
                                                                       subtask=subtask_id)))
        state.record_merge(run_id, subtask_id, commit, merged)
        state.event(run_id, MergeCommitted(subtask_id, merged))
        out.merged[subtask_id] = merged


def is_ancestor(git: Git, commit: str, head: str) -> bool:
    return git.run("merge-base", "--is-ancestor", commit, head, ok=(0, 1)).returncode == 0


def existing_merge(git: Git, head: str, commit: str) -> str | None:
    """The merge commit reachable from ``head`` that has ``commit`` as a parent, if any."""
    for line in git.text("rev-list", "--merges", "--parents", head).splitlines():
        sha, *parents = line.split()
        if commit in parents:
            return sha
    return None


def changed_files(git: Git, base: str, head: str) -> list[str]:
    text = git.text("diff", "--name-only", "-z", base, head)
    return [p for p in text.split("\0") if p]
