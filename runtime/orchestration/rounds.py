"""One round of a plan: its sequence groups in order, each group fanned out in parallel.

Every subtask ends in a typed outcome; none is dropped. A subtask whose inputs
failed is not dispatched (failed(dependency)); one dispatched more often than
the plan allows ends failed(loop); an accepted one is never run again (a
resumed run takes its result from the orchestrator's state).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import groupby
from typing import TYPE_CHECKING

from runtime.orchestration.events import Dispatch, Redispatch, RunEvent, SubtaskEnd
from runtime.orchestration.executor import Executor, Job, SubtaskResult
from runtime.orchestration.state import OrchestratorState, SubtaskStatus
from runtime.outcomes import OutcomeStatus
from runtime.spawn.outcome import Outcome
from runtime.verify.kinds.report_text import normalise, sections

if TYPE_CHECKING:  # annotations only
    from runtime.manifests.catalog import Catalog
    from runtime.orchestration.plans.load import Subtask


@dataclass
class RoundContext:
    run_id: str
    round: int
    state: OrchestratorState
    executor: Executor
    catalog: Catalog
    max_dispatches: int
    results: dict[str, SubtaskResult]  # every subtask of every round so far, by id: the latest outcome
    describe_output: Callable[[str, SubtaskResult], str]
    emit: Callable[[RunEvent], None]  # an event for the orchestrator's listeners
    integrate: Callable[[], Awaitable[str]]  # merge what was accepted so far; returns the new head
    # A result's bundle, into the repository, checked against the base its job started from.
    import_work: Callable[[SubtaskResult, str], Awaitable[SubtaskResult]] | None = None
    base: str = ""  # where the next group's worktrees start: the integration so far (a commit id)
    catalog_digest: str = ""
    round_results: dict[str, SubtaskResult] = field(default_factory=dict)  # this round's own outcomes
    unattended: bool = False  # nobody watches the run: its jobs refuse at once what the gate would ask


def questions_in(report: str | None) -> list[str]:
    """The `Questions` section or field of an ask-via-return agent's report."""
    found = []
    for section in sections(report or ""):
        if normalise(section.title) == "questions":
            for line in (section.inline, *section.body):
                text = line.strip().lstrip("-*0123456789.) ").strip()
                if text and text.lower() not in ("none", "n/a", "-"):
                    found.append(text)
    return found


def agent_id_for(run_id: str, subtask_id: str, dispatch: int) -> str:
    return f"{run_id}.{subtask_id}" if dispatch <= 1 else f"{run_id}.{subtask_id}.{dispatch}"


async def run_round(ctx: RoundContext, subtasks: list[Subtask]) -> None:
    """Each sequence group in order; after a group, its accepted work is integrated so the next
    group's agents start from it."""
    ordered = sorted(subtasks, key=lambda s: s.sequence)
    for _, group in groupby(ordered, key=lambda s: s.sequence):
        handles = []
        for sub in group:
            handle = await _dispatch(ctx, sub)
            if handle is not None:
                handles.append((sub, handle))
        for sub, handle in handles:
            await _collect(ctx, sub, handle)
        ctx.base = await ctx.integrate()


async def _collect(ctx: RoundContext, sub: Subtask, handle: str) -> None:
    """A subtask's result, recorded; one whose node was lost mid-job is dispatched again (a new agent
    id, counted against the plan's max-dispatches)."""
    while True:
        result = await ctx.executor.collect(handle)
        if result.bundle is not None and ctx.import_work is not None:
            result = await ctx.import_work(result, ctx.base)
        _record(ctx, sub, result)
        if result.outcome.status != OutcomeStatus.FAILED or result.outcome.detail != "node":
            return
        ctx.emit(Redispatch(sub.id, result.outcome.agent_id, result.outcome.message))
        again = await _dispatch(ctx, sub)
        if again is None:
            return
        handle = again


async def _dispatch(ctx: RoundContext, sub: Subtask) -> str | None:
    state, run_id = ctx.state, ctx.run_id
    stored = state.subtask(run_id, sub.id)
    if stored is not None and stored.status == OutcomeStatus.OK and stored.outcome_json:
        result = SubtaskResult(sub.id, Outcome.from_dict(json.loads(stored.outcome_json)))
        ctx.results[sub.id] = ctx.round_results[sub.id] = result
        return None  # accepted earlier (a resumed run): never run again
    task = sub.task
    failed_inputs = [u for u in sub.uses if u not in ctx.results or ctx.results[u].outcome.status != OutcomeStatus.OK]
    if failed_inputs:
        _record(ctx, sub, SubtaskResult(sub.id, Outcome(
            OutcomeStatus.FAILED, "dependency", "-", task.role.name,
            message=f"its inputs did not succeed: {', '.join(failed_inputs)}")))
        return None
    interrupted = stored is not None and stored.status == SubtaskStatus.RUNNING
    if stored is None:
        state.put_subtask(run_id, sub.id, round=ctx.round, sequence=sub.sequence, agent_id="", status=SubtaskStatus.PENDING)
    # A run that died mid-subtask resumes the same agent (spawn recovers it); anything else is a new dispatch.
    if interrupted:
        row = state.subtask(run_id, sub.id)
        assert row is not None, f"subtask {sub.id} of run {run_id} has no row"  # read above, never deleted mid-run
        dispatch = row.dispatches
    else:
        dispatch = state.dispatched(run_id, sub.id)
    if dispatch > ctx.max_dispatches:
        _record(ctx, sub, SubtaskResult(sub.id, Outcome(
            OutcomeStatus.FAILED, "loop", "-", task.role.name,
            message=f"dispatched {dispatch} times (the plan allows {ctx.max_dispatches})")))
        return None
    agent_id = stored.agent_id if interrupted and stored is not None and stored.agent_id else agent_id_for(run_id, sub.id, dispatch)
    context = "\n\n".join(ctx.describe_output(u, ctx.results[u]) for u in sub.uses) or None
    state.put_subtask(run_id, sub.id, round=ctx.round, sequence=sub.sequence, agent_id=agent_id, status=SubtaskStatus.RUNNING)
    ctx.emit(Dispatch(sub.id, agent_id, dispatch, ctx.base))
    job = Job(run_id, sub.id, agent_id, task.manifest, str(task.path), task.digest, str(ctx.catalog.root),
              ctx.catalog_digest, ctx.base, context,
              memory_mb=task.agent.limits.memory_mb if task.agent is not None else Job.memory_mb,
              cpus=task.agent.limits.cpus if task.agent is not None else None, node_labels=dict(sub.node_labels),
              unattended=ctx.unattended)
    return await ctx.executor.start(job)


def _record(ctx: RoundContext, sub: Subtask, result: SubtaskResult) -> None:
    ctx.results[sub.id] = result
    ctx.round_results[sub.id] = result
    outcome = result.outcome
    ctx.state.put_subtask(
        ctx.run_id, sub.id, round=ctx.round, sequence=sub.sequence, agent_id=outcome.agent_id, status=outcome.status,
        label=outcome.label, branch=outcome.branch, commit_sha=outcome.commit, report=result.report,
        outcome_json=json.dumps(outcome.to_dict()),
    )
    ctx.emit(SubtaskEnd(sub.id, outcome.label, outcome.commit, outcome.cause() if outcome.status != OutcomeStatus.OK else None))
