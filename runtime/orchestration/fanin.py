"""Fan-in: accepted branches merged into the run's integration branch, in sequence order.

Merges are recorded in the orchestrator's state as they happen, so a resumed
run never merges a branch twice. A branch that conflicts with what is already
integrated is left out and reported as part of the gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    for subtask_id, agent_branch, commit in accepted:
        if subtask_id in out.merged:
            continue
        head = git.resolve(branch)
        simulation = git.simulate_merge(head, agent_branch)
        if not simulation.clean:
            out.conflicts[subtask_id] = list(simulation.conflicts)
            state.event(run_id, "merge-conflict", {"subtask": subtask_id, "paths": simulation.conflicts})
            continue
        message = f"Integrate {subtask_id} into {branch}\n\nRun: {run_id}\nSubtask: {subtask_id}\nCommit: {commit}\n"
        merged = git.merge(branch, agent_branch, message, expected_base=head)
        state.record_merge(run_id, subtask_id, commit, merged)
        state.event(run_id, "merge", {"subtask": subtask_id, "commit": merged})
        out.merged[subtask_id] = merged
    return out


def changed_files(git: Git, base: str, head: str) -> list[str]:
    text = git.text("diff", "--name-only", "-z", base, head)
    return [p for p in text.split("\0") if p]
