"""`runtime run`: plan, fan out, validate, merge, judge, and replan when the whole falls short.

A run has an integration branch `run/<run-id>` from the base. Each round runs
its subtasks (see `rounds`), merges the accepted branches into the integration
branch in sequence order, runs the plan-level checks on the merged tree and
judges the result (`judge`). Within range: accepted (merged into the base with
`--merge`), and only then written to memory. Out of range: a replan request
to the planner, up to the plan's `max-replans`; then the run stops and reports
what was and was not achieved. Every step is in the orchestrator's state, so
`--resume` continues a run that was killed.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from runtime.attest.statement import CheckFacts, merge_predicate
from runtime.attest.store import attest
from runtime.errors import FatalError, UsageError
from runtime.orchestration.events import (
    Accepted,
    AgentProgress,
    Imported,
    ImportRefused,
    Integrated,
    Judged,
    Merged,
    PlanCheck,
    Replan,
    RunEnd,
    RunEvent,
    RunStart,
    SharedPath,
)
from runtime.orchestration.executor import ExecutorFactory, Listener, LocalExecutor, ProgressNote, SubtaskResult
from runtime.orchestration.fanin import changed_files, ensure_integration_branch, existing_merge, integrate, is_ancestor
from runtime.orchestration.judge import Judgement, JudgementStatus, judge
from runtime.orchestration.recheck import recheck_imported
from runtime.orchestration.report import PLAN_ENDED, PlanStatus, ReplanNote, RunReport, SubtaskLine, render
from runtime.orchestration.rounds import RoundContext, questions_in, run_round
from runtime.orchestration.state import OrchestratorState, plan_lock_name
from runtime.outcomes import OutcomeStatus
from runtime.sandbox.toolchain import toolchain_mounts
from runtime.spawn.pipeline import SpawnOptions
from runtime.spawn.state import default_state_dir
from runtime.verify.commands import commands_on_tree
from runtime.workspace.git import Git, GitError
from runtime.workspace.locks import acquire

if TYPE_CHECKING:  # annotations only: the plan loader is imported where it is used
    from runtime.lang.jsontypes import JSONObject
    from runtime.manifests.catalog import Catalog
    from runtime.orchestration.plans.load import Plan, Subtask


@dataclass
class RunOptions:
    repo: Path = field(default_factory=Path.cwd)
    merge: bool = False
    use_sandbox: bool = True
    state_dir: Path | None = None
    catalog: str | None = None
    resume: ResumedRun | None = None  # the killed run to continue, as `resumed_run` read it
    on_event: Callable[[str, RunEvent], None] | None = None  # (run id, event), as each happens
    replanner: Callable[..., Any] | None = None  # (run, judgement, results) -> Plan | list[str] questions | None
    reviewer: Callable[..., Any] | None = None  # (run, checks) -> Review
    remember: Callable[..., Any] | None = None  # (run, verdict): the meta-validation's memory writes
    executor: ExecutorFactory = LocalExecutor  # what runs the subtasks
    unattended: bool = False  # nobody watches: every agent refuses at once what the gate would ask a person


@dataclass(frozen=True)
class ResumedRun:
    """A killed run's record, read once for `--resume`: where it branched, its integration branch,
    and its latest plan (the replanned one, if any) with the replans already spent."""

    run_id: str
    base: str
    base_branch: str | None
    integration: str
    plan_data: JSONObject
    plan_path: str | None
    replans: int

    def plan(self, catalog: Catalog, root: Path) -> Plan:
        from runtime.orchestration.plans.load import plan_from_json

        return plan_from_json(catalog, self.plan_data, Path(self.plan_path).parent if self.plan_path else root)


def resumed_run(state_dir: Path, run_id: str) -> ResumedRun:
    """The run ``run_id`` as `--resume` continues it; an unknown or ended run is one clear line."""
    state = OrchestratorState(state_dir / "orchestrator.sqlite")
    try:
        record = state.run(run_id)
    finally:
        state.close()
    if record is None:
        raise UsageError(f"no run {run_id} in {state_dir}")
    if record.status in PLAN_ENDED:
        raise FatalError(f"run {run_id} already ended ({record.status}); nothing to resume")
    return ResumedRun(run_id, record.base, record.base_branch, record.integration, record.plan, record.plan_path,
                      record.replans)


@dataclass
class PlanRun:
    run_id: str
    plan: Plan
    git: Git
    state: OrchestratorState
    state_dir: Path
    base: str
    base_branch: str | None
    integration: str
    options: RunOptions
    report: RunReport = None  # type: ignore[assignment]
    results: dict[str, SubtaskResult] = field(default_factory=dict)  # latest outcome by subtask id
    rounds: list[list[Subtask]] = field(default_factory=list)
    round_results: list[dict[str, SubtaskResult]] = field(default_factory=list)  # each round's own outcomes
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # subtask id -> paths that would not merge

    def emit(self, event: RunEvent) -> None:
        self.state.event(self.run_id, event)
        if self.options.on_event is not None:
            self.options.on_event(self.run_id, event)


def _describe(run: PlanRun) -> Callable[[str, SubtaskResult], str]:
    def describe(subtask_id: str, result: SubtaskResult) -> str:
        files = changed_files(run.git, run.base, result.commit) if result.commit else []
        report = (result.report or "(no report)").strip()
        return (f"### {subtask_id} ({result.outcome.label})\n\nChanged files: {', '.join(files) or 'none'}\n\n"
                f"Report:\n\n{report}")
    return describe


def _listener(run: PlanRun) -> Listener:
    seen_writes: dict[str, int] = {}

    def listener(handle: str, event: ProgressNote) -> None:
        writes = event["writes"]
        run.emit(AgentProgress(handle, event["agent"], event["attempt"], event["state"], event["turns"], event["tool_calls"],
                          event["denials"], event["elapsed_s"], event["cost_usd"], event.get("node")))
        sub = next((s for round_ in run.rounds for s in round_ if s.id == handle), None)
        if sub is not None and sub.task.role.escalation == "orchestrator-notify":
            for path in writes[seen_writes.get(handle, 0):]:
                run.emit(SharedPath(handle, event["agent"], path))
            seen_writes[handle] = len(writes)
    return listener


async def _round(run: PlanRun, subtasks: list[Subtask], number: int, catalog: Catalog) -> None:
    run.rounds.append(subtasks)
    spawn_options = SpawnOptions(repo=run.git.root, base=run.base, use_sandbox=run.options.use_sandbox,
                                 state_dir=run.state_dir, catalog=run.options.catalog,
                                 unattended=run.options.unattended)

    async def integrate_so_far() -> str:
        await anyio.to_thread.run_sync(_integrate, run)
        return run.git.resolve(run.integration)

    async with anyio.create_task_group() as group:
        executor = run.options.executor(group, spawn_options, run.plan.concurrency, _listener(run))
        ctx = RoundContext(run.run_id, number, run.state, executor, catalog, run.plan.max_dispatches, run.results,
                           _describe(run), run.emit, integrate_so_far, _importer(run, catalog),
                           run.git.resolve(run.integration), catalog_digest=catalog.digest(),
                           unattended=run.options.unattended)
        run.round_results.append(ctx.round_results)
        await run_round(ctx, subtasks)


def _importer(run: PlanRun, catalog: Catalog) -> Callable[[SubtaskResult, str], Awaitable[SubtaskResult]]:
    async def import_work(result: SubtaskResult, base: str) -> SubtaskResult:
        """A worker's verified branch, from its bundle into this repository: only the reported commit is
        taken, a bundle that does not hold it rejects the subtask's work, and what was imported is
        checked again here (`recheck`) before it can be integrated."""
        outcome = result.outcome
        try:
            if outcome.branch is None or outcome.commit is None:
                raise GitError(["bundle"], "the result names no branch or commit for its bundle")
            if result.bundle is None:  # never: a round imports only the results that have a bundle
                raise GitError(["bundle"], "the result has no bundle to import")
            await anyio.to_thread.run_sync(run.git.import_bundle, result.bundle, outcome.branch, outcome.commit)
        except GitError as exc:
            run.emit(ImportRefused(result.subtask_id, str(exc)))
            return _refused(result, f"its work could not be imported from the worker's bundle: {exc}")
        sub = next(s for round_ in run.rounds for s in round_ if s.id == result.subtask_id)
        failed = await recheck_imported(run.git, sub.task, catalog, base, outcome.commit, result.report)
        if failed:
            reasons = "; ".join(f"{r.atom} ({r.kind}): {r.feedback.strip()[:400]}" for r in failed)
            run.emit(ImportRefused(result.subtask_id, reasons))
            return _refused(result, f"the orchestrator's re-check of the imported work failed: {reasons}")
        run.emit(Imported(result.subtask_id, outcome.commit))
        return replace(result, bundle=None)
    return import_work


def _refused(result: SubtaskResult, message: str) -> SubtaskResult:
    refused = replace(result.outcome, status=OutcomeStatus.REJECTED, detail=None, commit=None, merged=None, message=message)
    return replace(result, outcome=refused, bundle=None)


def _integrate(run: PlanRun) -> dict[str, list[str]]:
    order = [s for round_ in run.rounds for s in sorted(round_, key=lambda s: s.sequence)]
    accepted: list[tuple[str, str, str]] = []
    for s in order:
        result = run.results.get(s.id)
        if result is not None and result.outcome.status == OutcomeStatus.OK and result.commit:
            # An accepted outcome's commit is on its agent branch: it names that branch.
            accepted.append((s.id, cast(str, result.branch), result.commit))
    done = run.state.merges(run.run_id)
    integration = integrate(run.git, run.state, run.run_id, run.integration, accepted)
    for sid, merged in integration.merged.items():
        if sid not in done:
            run.emit(Integrated(sid, merged))
    run.conflicts.update(integration.conflicts)
    return integration.conflicts


async def _plan_checks(run: PlanRun, catalog: Catalog) -> list[tuple[str, int, str]]:
    head = run.git.resolve(run.integration)
    checks = []
    if run.plan.checks:
        home = run.state_dir / "runs" / run.run_id / "checks-home"
        home.mkdir(parents=True, exist_ok=True)
        caches = run.state_dir / "caches" if run.options.use_sandbox else None
        toolchain = toolchain_mounts(catalog.toolchain, run.git.root, caches) if catalog.toolchain else None
        world = None
        if catalog.toolchain.worktree:
            from runtime.audit.log import AuditLog
            from runtime.sandbox.budget import default_check_limits
            from runtime.spawn.world import TreeWorld

            world = TreeWorld(run.git, catalog.toolchain.worktree, run.state_dir, catalog.toolchain.env,
                              default_check_limits(), home.parent / "checks-setup", AuditLog(run.state_dir / "audit.jsonl"))
        checks = await commands_on_tree(run.git, head, list(run.plan.checks), home, run.options.use_sandbox,
                                        toolchain=toolchain, world=world)
        for command, code, _ in checks:
            run.emit(PlanCheck(command, code))
    return checks


def _lines(run: PlanRun) -> list[SubtaskLine]:
    merges = run.state.merges(run.run_id)
    lines = []
    for number, round_ in enumerate(run.rounds):
        for sub in sorted(round_, key=lambda s: s.sequence):
            result = run.round_results[number].get(sub.id)
            if result is None:
                continue
            o = result.outcome
            last = o.attempts[-1] if o.attempts else None
            lines.append(SubtaskLine(
                sub.id, number, sub.sequence, sub.task.role.name, o.agent_id, o.label, len(o.attempts),
                sum(a.denials for a in o.attempts), sum(a.tokens for a in o.attempts), sum(a.cost_usd for a in o.attempts),
                o.commit, merges.get(sub.id), [(c.atom, c.status) for c in (last.checks if last else [])],
                questions_in(result.report) if sub.task.role.escalation == "ask-via-return" else [], o.message,
                o.cause(), sorted({t for c in (last.checks if last else []) for t in c.test_edits}),
                next((c.tests.trailer() for c in (last.checks if last else []) if c.tests is not None), ""),
            ))
    return lines


def _start(plan: Plan, options: RunOptions) -> PlanRun:
    git = Git(options.repo)
    state_dir = Path(options.state_dir or default_state_dir(git.root)).resolve()
    state = OrchestratorState(state_dir / "orchestrator.sqlite")
    resumed = options.resume
    if resumed is not None:
        run = PlanRun(resumed.run_id, plan, git, state, state_dir, resumed.base, resumed.base_branch,
                      resumed.integration, options)
    else:
        run_id = "r" + secrets.token_hex(4)
        base = git.resolve("HEAD")
        run = PlanRun(run_id, plan, git, state, state_dir, base, git.current_branch(), f"run/{run_id}", options)
        state.create_run(run_id, str(plan.path) if plan.path else None, plan.data, base, run.base_branch, run.integration)
    ensure_integration_branch(git, run.integration, run.base)
    run.report = RunReport(run.run_id, plan.goal, PlanStatus.FAILED, "", base=run.base, integration=run.integration)
    return run


async def run_plan(plan: Plan, catalog: Catalog, options: RunOptions) -> RunReport:
    """Run a validated plan to an accepted, rejected or failed end; the report says which and why."""
    catalog.notify.check()
    run = _start(plan, options)
    # Held while the run goes on: the kernel drops it when the orchestrator dies however it dies, so
    # `runtime status` tells a running plan from one whose orchestrator is gone (and a second
    # `--resume` of a live run is refused).
    lock = acquire(run.state_dir, plan_lock_name(run.run_id))
    run.emit(RunStart(plan.goal, run.base, run.integration))
    # A resumed run continues with the latest plan (the replanned one, if any) and its replan count.
    subtasks, number = list(plan.subtasks), options.resume.replans if options.resume else 0
    run.report.replans = [ReplanNote(e.reason, e.gap) for e in run.state.events_of(run.run_id, Replan)]
    reviewer = options.reviewer
    try:
        while True:
            await _round(run, subtasks, number, catalog)
            checks = await _plan_checks(run, catalog)
            conflicts = {sid: paths for sid, paths in run.conflicts.items()
                         if run.results.get(sid) and run.results[sid].outcome.status == OutcomeStatus.OK}
            run.report.checks = [(c, code) for c, code, _ in checks]
            latest = {s.id: run.results[s.id].outcome for round_ in run.rounds for s in round_ if s.id in run.results}
            # A subtask a later round re-dispatched counts by its latest outcome.
            outcomes = {sid: outcome.label for sid, outcome in latest.items()}
            causes = {sid: outcome.cause() for sid, outcome in latest.items() if outcome.status != OutcomeStatus.OK}
            review = (lambda checks=checks: reviewer(run, checks)) if reviewer else None
            verdict = judge(outcomes, conflicts, checks, review, causes)
            run.emit(Judged(verdict.status, verdict.reason))
            if verdict.status == JudgementStatus.OK:
                _accept(run, verdict)
                break
            if number >= plan.max_replans or options.replanner is None:
                run.report.status, run.report.reason = PlanStatus.REJECTED, verdict.reason
                break
            replanned = options.replanner(run, verdict)
            run.report.replans.append(ReplanNote(verdict.reason, tuple(verdict.gap)))
            if isinstance(replanned, list):
                run.state.update_run(run.run_id, replans=len(run.report.replans))
                run.report.status, run.report.reason = PlanStatus.QUESTIONS, "the planner needs answers"
                run.report.questions = replanned
                break
            # Stored for --resume: the run's own [plan] table, the replanned subtasks.
            run.state.update_run(run.run_id, replans=len(run.report.replans),
                                 plan={**replanned.data, "plan": run.plan.data["plan"]})
            run.emit(Replan(verdict.reason, tuple(verdict.gap), tuple(s.id for s in replanned.subtasks)))
            subtasks, number = list(replanned.subtasks), number + 1
    finally:
        run.report.subtasks = _lines(run)
        run.report.questions += [q for line in run.report.subtasks for q in line.questions]
        path = run.state_dir / "runs" / run.run_id / "report.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(run.report), encoding="utf-8")
        run.report.path = str(path)
        run.state.update_run(run.run_id, status=run.report.status, detail=run.report.reason[:2000])
        run.emit(RunEnd(run.report.status, str(path)))
        run.state.close()
        lock.release()
        if catalog.notify.wants("plan-finished"):
            from runtime.audit.log import AuditLog
            from runtime.spawn.notify import Notifier

            notifier = Notifier(catalog.notify, run.state_dir, AuditLog(run.state_dir / "audit.jsonl"))
            notifier.send("plan-finished", run=run.run_id, status=run.report.status, report=str(path))
            notifier.wait(2.0)  # the run's last act: its end audited where the command is quick
    return run.report



def _accept(run: PlanRun, verdict: Judgement) -> None:
    run.report.status, run.report.reason = PlanStatus.ACCEPTED, verdict.reason
    if run.options.merge:
        if run.base_branch is None:
            raise FatalError("the run started on a detached HEAD: there is no base branch to merge into")
        head = run.git.resolve(run.base_branch)
        integration_head = run.git.resolve(run.integration)
        if head != run.base and is_ancestor(run.git, integration_head, head):
            # Merged before the orchestrator died (a resumed run): merged once, not twice.
            run.report.merged_into_base = existing_merge(run.git, head, integration_head) or head
        elif head != run.base:
            run.report.status = PlanStatus.REJECTED
            run.report.reason = f"{run.base_branch} moved during the run; the integration branch {run.integration} is kept"
            return
        else:
            run.report.merged_into_base = run.git.merge(
                run.base_branch, run.integration, f"Merge run {run.run_id}: {run.plan.goal}\n\nRun: {run.run_id}\n", expected_base=head)
            # the plan's checks ran on the integration branch's head, which is what this merge brings
            checks = [CheckFacts(atom=f"plan: {command}", kind="command", status="passed" if code == 0 else "failed")
                      for command, code in run.report.checks]
            attest(run.git, run.report.merged_into_base, f"refs/heads/{run.base_branch}",
                   merge_predicate(run.base_branch, integration_head, [head, integration_head], checks, run_id=run.run_id),
                   run.state_dir / "runs" / run.run_id)
        run.emit(Merged(run.base_branch, run.report.merged_into_base))
    if run.options.remember is not None:
        run.options.remember(run, verdict)  # memory is written here, on acceptance, and nowhere else
    run.emit(Accepted(tuple(verdict.learn)))
