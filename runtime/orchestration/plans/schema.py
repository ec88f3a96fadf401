"""The schema of ``plan.toml`` (see ``runtime.orchestration.plans.load`` for what loading checks beyond it).

Every key is acted on by someone; the comment beside it says who.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from runtime.manifests.agent import AgentSection
from runtime.manifests.task import BodySection, NetworkSection, OutputSection, ScopeSection, TaskSection, VerificationSection
from runtime.model import Model

SUBTASK_ID = r"^[a-z0-9][a-z0-9-]{0,31}$"
# The tables of a task manifest; written at the subtask level they make an inline task.
TASK_TABLES = ("task", "scope", "verification", "output", "network", "agent", "body")



class ReviewerSection(Model):
    """`[plan.reviewer]`: the model that judges the merged result (fan-in, meta-validation)."""

    model: str = Field(min_length=1)  # litellm model name, or scripted/<name>: the model client of the run
    script: str | None = None  # scripted models only: the playback file, relative to the plan (checked here)
    api_base: str | None = None  # an http(s) model server: the model client of the run


class PlannerSection(ReviewerSection):
    """`[plan.planner]`: the model that writes plans and replans."""

    max_retries: int = Field(default=2, ge=0, le=5)  # the planner loop: invalid plans sent back with their errors


class PlanSection(Model):
    goal: str  # shown to the planner and the reviewer, and in the run report
    success_criteria: list[str] = Field(min_length=1)  # what fan-in judges the merged result against
    checks: list[str] = Field(default_factory=list)  # fan-in: run on the merged tree before any judgement
    max_replans: int = Field(default=1, ge=0, le=5)  # the replan loop: its depth limit
    concurrency: int = Field(default=4, ge=1, le=64)  # fan-out: subtasks running at once
    max_dispatches: int = Field(default=3, ge=1, le=10)  # loop guard: more dispatches of one subtask end failed(loop)
    executor: Literal["local", "ray"] = "local"  # where subtasks run (`--executor` wins): this machine, a Ray cluster
    # the Ray cluster to join (`--ray-address` wins); only with executor = "ray"
    ray_address: str | None = Field(default=None, pattern=r"^(auto|(ray://)?[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5})$")
    planner: PlannerSection | None = None  # `runtime run --goal`: who writes (re)plans
    reviewer: ReviewerSection | None = None  # fan-in: who judges, after the deterministic checks


class SubtaskEntry(Model):
    id: str = Field(pattern=SUBTASK_ID)  # names the subtask in `uses`, events, the report (unique: checked here)
    sequence: int = Field(ge=1)  # fan-out: groups run in increasing order, a group's members in parallel
    uses: list[str] = Field(default_factory=list)  # fan-out: these subtasks' outputs become context (checked here)
    # executor = "ray": only a node carrying all these labels (`ray start --labels`) runs it; the local executor refuses
    node_labels: dict[str, str] = Field(default_factory=dict)
    file: str | None = Field(default=None, min_length=1)  # a task manifest, relative to the plan file
    # ... or the task manifest's tables inline; each is enforced as in a task file (runtime.manifests.task)
    task: TaskSection | None = None
    scope: ScopeSection | None = None
    verification: VerificationSection | None = None
    output: OutputSection | None = None
    network: NetworkSection | None = None
    agent: AgentSection | None = None  # required for a plan's subtask: the spawn pipeline runs it
    body: BodySection | None = None


class PlanFile(Model):
    plan: PlanSection
    subtask: list[SubtaskEntry] = Field(min_length=1)
