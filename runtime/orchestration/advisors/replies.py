"""The planner's and the reviewer's replies, as pydantic models sent as strict JSON schemas.

``litellm.completion(..., response_format=PlannerReply)`` turns a model class into
``{"type": "json_schema", "json_schema": {"name": ..., "strict": true, "schema": ...}}`` (through
the openai SDK's ``to_strict_json_schema``). A strict schema has rules of its own, and these
models are written to meet them as they are, not to rely on the SDK's rewriting:

- The root is one object (no union at the root): the planner's reply is one object with a
  ``kind`` and both ``plan`` and ``questions``, the one not meant being ``null``.
- Every object forbids unknown keys (``additionalProperties: false``) and every property is
  required, with no default in the schema: an optional value is a nullable type the model must
  write out as ``null``. No field here has a default, so the pydantic model accepts exactly what
  the schema describes.
- No free-form dicts (dynamic keys are not allowed): plan, subtask, task, scope, verification,
  output and body are each a model, with kebab-case aliases for the keys of ``plan.toml``.
- No ``oneOf``/``discriminator``/``const``/``pattern``/``minItems`` keywords (not accepted by every
  provider's strict mode): constraints that are not types (the subtask id's pattern, known
  roles, overlapping scopes, ...) belong to the caller's semantic validation, whose errors go
  back to the model.

``PlannerReply.to_plan_dict()`` gives the plan as the dict of ``plan.toml`` (kebab-case keys,
``[plan]`` and ``[[subtask]]``), with null fields and empty tables left out. The ``[subtask.agent]``
table is never produced here: the orchestrator fills it from its own configuration.

Importing this module imports pydantic, never litellm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONDict


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class StrictModel(BaseModel):
    """Kebab-case keys, unknown keys rejected (``additionalProperties: false``), every key required."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=_kebab, populate_by_name=True)


# -- the planner ----------------------------------------------------------------------------------

class PlanHeader(StrictModel):
    goal: str = Field(description="The goal of the whole plan, in one or two sentences.")
    success_criteria: list[str] = Field(
        description="Checkable statements that are all true once the goal is reached.")
    checks: list[str] | None = Field(
        description="Shell commands run on the merged result of every subtask (e.g. the test suite), or null.")


class SubtaskTask(StrictModel):
    role: str = Field(description="One of the roles you were given.")
    goal: str = Field(description="What this subtask achieves, in one sentence.")


class SubtaskScope(StrictModel):
    files_whitelist: list[str] | None = Field(
        description="Globs of the files this subtask may write (null for a role that does not write).")
    files_denylist: list[str] | None = Field(
        description="Globs inside the whitelist it must not write, or null.")


class SubtaskVerification(StrictModel):
    test_command: str | None = Field(description="The command that must pass after the subtask, or null.")
    test_count_min: int | None = Field(description="The least number of tests it must run, or null.")
    check_commands: list[str] | None = Field(description="Further commands that must pass, or null.")


class SubtaskOutput(StrictModel):
    report_fields_required: list[str] | None = Field(
        description="Fields the agent's final report must contain, or null.")


class SubtaskBody(StrictModel):
    text: str = Field(description="Complete, self-contained instructions: the agent sees nothing else.")


class Subtask(StrictModel):
    id: str = Field(description="Lowercase letters, digits and dashes, starting with a letter or digit, at most 32 characters.")
    sequence: int = Field(description="1 for the first group; subtasks with the same number run in parallel.")
    uses: list[str] = Field(description="Ids of subtasks of earlier sequence numbers whose outputs this one needs.")
    task: SubtaskTask
    scope: SubtaskScope
    verification: SubtaskVerification
    output: SubtaskOutput
    body: SubtaskBody


class PlanDocument(StrictModel):
    """A plan with the keys of ``plan.toml``: ``plan`` (the ``[plan]`` table) and ``subtask``."""

    plan: PlanHeader
    subtask: list[Subtask] = Field(description="The subtasks, in order of their sequence numbers.")

    def to_plan_dict(self) -> JSONDict:
        plan = _prune(self.model_dump(by_alias=True, mode="json"))
        assert isinstance(plan, dict), "a dict stays a dict"
        return plan


class PlannerReply(StrictModel):
    """``{"kind": "plan", "plan": {...}, "questions": null}`` or ``{"kind": "questions", "plan": null, "questions": [...]}``."""

    kind: Literal["plan", "questions"] = Field(
        description='"plan" when you give a plan; "questions" when you need answers from the user first.')
    plan: PlanDocument | None = Field(description='The plan when kind is "plan", else null.')
    questions: list[str] | None = Field(description='The questions when kind is "questions", else null.')

    @model_validator(mode="after")
    def _kind_matches(self) -> PlannerReply:
        if self.kind == "plan":
            if self.plan is None:
                raise ValueError('kind is "plan" but plan is null')
            if self.questions:
                raise ValueError('kind is "plan" but questions are given: give a plan or questions, not both')
        else:
            if not self.questions or not any(q.strip() for q in self.questions):
                raise ValueError('kind is "questions" but no question is given')
            if self.plan is not None:
                raise ValueError('kind is "questions" but a plan is given: give a plan or questions, not both')
        return self

    def to_plan_dict(self) -> JSONDict | None:
        """The plan as the dict of ``plan.toml``, or None for questions."""
        return self.plan.to_plan_dict() if self.plan is not None else None


def _prune(value: JSON) -> JSON:
    """Nulls and tables left empty by them removed (a TOML file has no null)."""
    if isinstance(value, dict):
        out: JSONDict = {}
        for key, item in value.items():
            item = _prune(item)
            if item is None or (isinstance(item, dict) and not item):
                continue
            out[key] = item
        return out
    if isinstance(value, list):
        return [_prune(item) for item in value]
    return value


# -- the reviewer ---------------------------------------------------------------------------------

class ReviewReply(StrictModel):
    """The reviewer's judgement of the merged result against the plan's success criteria."""

    status: Literal["ok", "replan"] = Field(
        description='"ok" when every success criterion is met; "replan" when the result falls short.')
    reason: str = Field(description="Why: for replan, what is missing or wrong (the gap); for ok, one sentence.")
    learn: list[str] = Field(
        description="Durable facts about this repository worth remembering for later runs (may be empty).")
