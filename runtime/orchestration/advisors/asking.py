"""Asking the planner (for a first plan or a replan) and the reviewer, with the runtime's context.

The planner sees the spawnable roles (what each writes and which task fields
it takes), the repository's files, memory entries relevant to the goal, and
for a replan the completed, remaining and failed subtasks, the gap and the
history. Its plans get the same validation as a plan file; the orchestrator
fills each subtask's `[agent]` table (the planner never chooses how agents
run) from its defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import ManifestError, ManifestErrors
from runtime.manifests.catalog import Catalog
from runtime.manifests.role import load_role
from runtime.models.types import ModelReach
from runtime.orchestration.advisors.planner import (
    PlannerContext,
    ReplanContext,
    ReplanRound,
    RoleInfo,
    SubtaskRecord,
    propose_plan,
)
from runtime.orchestration.advisors.reviewer import CheckResult, MergedSummary, Review, review
from runtime.orchestration.plans.load import Plan, plan_from_json
from runtime.outcomes import OutcomeStatus

if TYPE_CHECKING:  # annotations only: the run takes the replanner and the reviewer, it is not imported by them
    from runtime.lang.jsontypes import JSONDict, JSONList, JSONObject
    from runtime.orchestration.judge import Judgement
    from runtime.orchestration.run import PlanRun
    from runtime.spawn.outcome import Outcome


@dataclass
class AgentDefaults:
    """How the orchestrator runs agents of a planned subtask: an `[agent]` table, and scripts by subtask id."""

    table: JSONObject  # as a plan's `[subtask.agent]` is written
    script_dir: Path | None = None

    def agent_for(self, subtask_id: str) -> JSONDict:
        agent = dict(self.table)
        if self.script_dir is not None:
            script = self.script_dir / f"{subtask_id}.toml"
            if script.is_file():
                agent["script"] = str(script)
        return agent


def agent_defaults(plan: Plan | None, backend: str, model: str | None, api_base: str | None,
                   script_dir: Path | None) -> AgentDefaults:
    """How the agents of subtasks a planner adds will run: as the command line says, or else as the
    plan's first subtask runs (its `[agent]` table, or its task file's), scripts aside."""
    table: JSONDict = {"backend": backend}
    if model:
        table["model"] = model
    if api_base:
        table["api-base"] = api_base
    if not model and plan is not None and plan.subtasks:
        entries = plan.data.get("subtask")
        first = entries[0].get("agent") if isinstance(entries, list) and isinstance(entries[0], dict) else None
        if isinstance(first, dict):
            table = {k: v for k, v in first.items() if k != "script"} or table
        if plan.subtasks[0].file is not None:
            agent = plan.subtasks[0].task.agent
            assert agent is not None, "a plan's subtask has an [agent] table"  # load_plan refuses one without
            table = {"backend": agent.backend, **({"model": agent.model} if agent.model else {}),
                     **({"api-base": agent.api_base} if agent.api_base else {})}
    return AgentDefaults(table, script_dir)


def roles_info(catalog: Catalog) -> list[RoleInfo]:
    out = []
    for name in catalog.role_names():
        role = load_role(catalog, name)
        if not role.spawnable:
            continue
        kinds = {a.gate for a in role.atoms} | {a.verify for a in role.atoms}
        # The task fields the role's atoms take (what a task of this role may set), from the atoms themselves.
        # `scope.control-files` is never a plan's (a person's task file for `runtime spawn` only).
        fields = sorted({spec.task_field for a in role.atoms for spec in a.params.values()
                         if spec.task_field and spec.task_field != "scope.control-files"})
        writes = "write-whitelist" in kinds and "read-only" not in kinds
        out.append(RoleInfo(name, " ".join(role.description.split()), tuple(role.tools), writes, tuple(fields)))
    return out


def with_agents(plan_data: JSONObject, defaults: AgentDefaults) -> JSONDict:
    """A planner's plan with each subtask's `[agent]` table filled from ``defaults`` where it has none."""
    subtasks: JSONList = []
    for sub in _entries(plan_data):
        subtasks.append({**sub, "agent": sub.get("agent", defaults.agent_for(str(sub.get("id"))))})
    return {**plan_data, "subtask": subtasks}


def _entries(plan_data: JSONObject) -> list[JSONObject]:
    """The plan's `[[subtask]]` tables (a planner's plan is made of tables: its reply's schema says so)."""
    found = plan_data.get("subtask", [])
    assert isinstance(found, list) and all(isinstance(sub, dict) for sub in found), "subtasks are tables"
    return found


def validator(catalog: Catalog, base_dir: Path, defaults: AgentDefaults,
              taken: set[str]) -> tuple[Callable[[JSONObject], list[str]], dict[str, Plan]]:
    """`validate(plan_dict) -> error lines` for the planner loop; remembers the last good plan."""
    state: dict[str, Plan] = {}

    def validate(plan_data: JSONObject) -> list[str]:
        ids = [str(s.get("id")) for s in _entries(plan_data)]
        clash = sorted(set(ids) & taken)
        if clash:
            return [f"subtask ids already accepted in this run: {', '.join(clash)}; choose new ids"]
        try:
            state["plan"] = plan_from_json(catalog, with_agents(plan_data, defaults), base_dir)
        except ManifestErrors as exc:
            return [str(e) for e in exc.errors]
        except ManifestError as exc:
            return [str(exc)]
        return []

    return validate, state


def _records(run: PlanRun, ids: set[str], outcome_filter: Callable[[Outcome | None], bool]) -> list[SubtaskRecord]:
    """The subtasks of ``ids`` whose latest outcome (None: not run) ``outcome_filter`` takes."""
    out = []
    for round_ in run.rounds:
        for sub in round_:
            result = run.results.get(sub.id)
            label = result.outcome.label if result else ""
            if sub.id in ids and outcome_filter(result.outcome if result else None):
                report = (result.report if result and result.report else (result.outcome.message if result else "")) or ""
                out.append(SubtaskRecord(sub.id, sub.task.goal, sub.task.role.name, label, report[:2000]))
    return out


@dataclass
class Replanner:
    catalog: Catalog
    base_dir: Path
    config: ModelReach
    defaults: AgentDefaults
    roles: list[RoleInfo]
    files: list[str]
    memory: list[str]
    history: list[ReplanRound] = field(default_factory=list)

    def __call__(self, run: PlanRun, verdict: Judgement) -> Plan | list[str]:
        ids = {s.id for round_ in run.rounds for s in round_}
        completed = _records(run, ids, lambda outcome: outcome is not None and outcome.status == OutcomeStatus.OK)
        failed = _records(run, ids, lambda outcome: outcome is not None and outcome.status != OutcomeStatus.OK)
        remaining = [SubtaskRecord(s.id, s.task.goal, s.task.role.name) for round_ in run.rounds for s in round_
                     if s.id not in run.results]
        context = PlannerContext(self.roles, self.files, self.memory,
                                 ReplanContext(completed, remaining, failed, verdict.reason, tuple(self.history)))
        validate, state = validator(self.catalog, self.base_dir, self.defaults, {r.id for r in completed})
        outcome = propose_plan(self.config, run.plan.goal, context, validate=validate)
        self.history.append(ReplanRound(run.plan.goal, verdict.reason, tuple(f"{s.id}: {s.goal}" for s in completed + failed)))
        if outcome.questions:
            return list(outcome.questions)
        if outcome.plan is None:
            raise ManifestErrors([ManifestError("<replan>", 1, e) for e in outcome.errors] or
                                 [ManifestError("<replan>", 1, "the planner produced no valid plan")])
        return state["plan"]


def reviewer_for(config: ModelReach) -> Callable[[PlanRun, list[tuple[str, int, str]]], Review]:
    def ask(run: PlanRun, checks: list[tuple[str, int, str]]) -> Review:
        ids = {s.id for round_ in run.rounds for s in round_}
        reports = _records(run, ids, lambda outcome: outcome is not None)
        head = run.git.resolve(run.integration)
        files = [p for p in run.git.text("diff", "--name-only", "-z", run.base, head).split("\0") if p]
        summary = MergedSummary(reports, files, [CheckResult(c, code == 0, out[-2000:], code) for c, code, out in checks])
        return review(config, run.plan.goal, list(run.plan.success_criteria), summary)
    return ask
