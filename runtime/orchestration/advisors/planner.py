"""The planner: a model that turns a goal into a plan (or asks questions), with validation fed back.

``propose_plan(config, goal, context, validate=...)``:

1. builds a system prompt (what a plan is, the rules, the JSON shape) and a user prompt (the
   goal, the roles available, the repository's files, remembered facts and, for a replan, the
   completed, remaining and failed subtasks, the gap and the replan history);
2. calls the model with the strict JSON schema of :class:`PlannerReply`
   (``llm.complete_structured``);
3. a reply of kind ``questions`` ends the loop at once: the caller shows them to the user;
4. a plan goes through the caller's ``validate(plan_dict) -> list[str]``; errors go back to the
   model as a new user message ("your plan was rejected: ...") in the same conversation, and
   it tries again, up to ``config.max_retries`` times. Then the outcome is a failure carrying
   the last errors: there is no fallback plan.

A reply that is not JSON or does not fit the schema (possible with providers that do not
enforce strict schemas) is sent back the same way and counts as an attempt; when the last
attempt is such a reply, the ``ModelError(kind="llm")`` is raised, since the model failed rather
than the plan. Transport failures are retried inside the model layer
(``config.transport_retries``) and end as ``ModelError(kind="llm")`` too.

Importing this module imports pydantic (through the schema), never litellm.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from runtime.models import llm
from runtime.models.broker import Usage
from runtime.models.types import ModelReach, ModelReply, one_line
from runtime.orchestration.advisors.replies import PlannerReply

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict, JSONObject

M = TypeVar("M", bound=BaseModel)

MAX_ERRORS_SENT = 30
MAX_REPORT_CHARS = 4000


# -- context --------------------------------------------------------------------------------------
# The planner's model is a ``ModelReach`` (``runtime.models.types``), made by ``ModelReach.planner``:
# ``max_retries`` counts the replies sent back after a rejection (a plan that fails validation, a
# reply that does not fit the schema), ``transport_retries`` the retries of one call on connection
# errors, timeouts, 429 and 5xx; ``agent_id`` keys the scripted model's playback.

@dataclass(frozen=True)
class RoleInfo:
    """A role the planner may give subtasks to."""

    name: str
    description: str
    tools: Sequence[str] = ()
    writes: bool = False
    fields: Sequence[str] = ()  # task fields it accepts ("scope.files-whitelist", ...); empty = not told


@dataclass(frozen=True)
class SubtaskRecord:
    """A subtask of an earlier plan, as a replan (or the reviewer) sees it."""

    id: str
    goal: str
    role: str = ""
    outcome: str = ""  # "ok", "rejected", "failed(verify)", "exhausted(turns)", ... ("" when not run)
    report: str = ""  # its final report, or why it failed


@dataclass(frozen=True)
class ReplanRound:
    """One earlier replan: the plan's goal then, what fell short, what was tried."""

    goal: str
    gap: str
    tried: Sequence[str] = ()  # e.g. the subtask ids and goals of that plan


@dataclass(frozen=True)
class ReplanContext:
    completed: Sequence[SubtaskRecord] = ()
    remaining: Sequence[SubtaskRecord] = ()
    failed: Sequence[SubtaskRecord] = ()
    gap: str = ""
    history: Sequence[ReplanRound] = ()


@dataclass(frozen=True)
class PlannerContext:
    roles: Sequence[RoleInfo]
    files: Sequence[str] = ()  # the repository's files (shown up to max_files)
    memory: Sequence[str] = ()  # entries the caller found relevant
    replan: ReplanContext | None = None
    max_files: int = 400


@dataclass
class PlannerOutcome:
    """A plan (validated), or questions for the user, or the errors of the last rejected plan."""

    plan: JSONDict | None  # the tables of `plan.toml`, `[[subtask]]` agents aside
    questions: list[str]
    errors: list[str]
    attempts: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def ok(self) -> bool:
        return self.plan is not None


# -- the structured turn with send-back (shared with the reviewer) -------------------------------

def structured_call(config: ModelReach, messages: Sequence[JSONObject],
                    schema: type[M]) -> tuple[M | None, ModelReply, llm.StructuredReplyError | None]:
    """One call; ``(parsed, reply, None)``, or ``(None, reply, error)`` for a reply that does not fit
    (whose usage counts all the same)."""
    request = config.request(list(messages))
    try:
        parsed, reply = llm.complete_structured(request, schema, api_key=config.api_key, backoff_s=config.backoff_s)
    except llm.StructuredReplyError as exc:
        return None, exc.reply, exc
    return parsed, reply, None


def rejection(what: str, errors: Sequence[str], fix: str) -> JSONDict:
    """The user message that sends errors back to the model."""
    shown = list(errors[:MAX_ERRORS_SENT])
    if len(errors) > MAX_ERRORS_SENT:
        shown.append(f"... and {len(errors) - MAX_ERRORS_SENT} more")
    lines = "\n".join(f"- {e}" for e in shown)
    return {"role": "user", "content": f"{what}:\n{lines}\n{fix}"}


def schema_rejection(exc: llm.StructuredReplyError) -> list[JSONDict]:
    """The assistant's bad reply and the message sending its schema errors back."""
    return [
        {"role": "assistant", "content": exc.content or ""},
        rejection("Your reply was rejected: it is not a JSON document of the required schema", exc.errors,
                  "Answer again with one JSON object of the required schema, every key present, nothing else."),
    ]


# -- prompts --------------------------------------------------------------------------------------

SYSTEM_PROMPT = """\
You are the planner of a multi-agent coding runtime. You split a goal about one repository into \
subtasks, each done by one sandboxed agent working under a role.

How the subtasks run:
- Each agent sees only its own subtask: its role, its goal, its body text and the outputs of the \
subtasks it lists in `uses`. It does not see the overall goal, the other subtasks or this \
conversation. Write every body so that it stands alone: the files to look at, what to change, \
how to tell it is done.
- Subtasks with the same `sequence` number run in parallel; a higher number starts after every \
lower one has finished. Start at 1.
- An agent may write only the files its `scope.files-whitelist` globs cover (`**` spans folders: \
`src/calc/**`). Two subtasks of the same sequence must never be able to write the same path.
- Every subtask's work is verified on return (its whitelist, its test and check commands), then \
all accepted work is merged, the plan's `checks` run on the merged tree, and the result is judged \
against your `success-criteria`.

Rules:
1. Use only the roles listed in the request, and only roles that write for subtasks that change files.
2. Ids are unique, lowercase letters, digits and dashes, starting with a letter or digit, at most \
32 characters (`fix-mean`).
3. `uses` names only subtasks of a lower sequence number.
4. Set a task field only when the subtask's role accepts it (the request lists the fields each role \
accepts); write null for every field that does not apply, and for tables a role does not use \
write their fields as null.
5. Keep the plan small: the fewest subtasks that reach the goal, split where work can run in \
parallel or where one result feeds the next. Do not add subtasks for work the goal does not ask for.
6. `success-criteria` are statements a reviewer can check on the merged result; `checks` are shell \
commands (for example the test suite) that must pass on it, or null.
7. If the goal is ambiguous in a way that you cannot settle from the repository, and a wrong guess \
would waste the work, do not guess: answer with kind "questions" and the questions for the user \
(plan null). Never plan steps that depend on answers you do not have.

Answer with one JSON object of the required schema, every key present, null where a value does \
not apply, and nothing else. Example:
{"kind": "plan", "questions": null, "plan": {
  "plan": {"goal": "Fix mean() on empty lists", "success-criteria": ["mean([]) raises ValueError", \
"the test suite passes"], "checks": ["pytest -q tests"]},
  "subtask": [{"id": "fix-mean", "sequence": 1, "uses": [],
    "task": {"role": "edit-local", "goal": "Make mean() raise ValueError on an empty list"},
    "scope": {"files-whitelist": ["src/calc/**", "tests/test_stats.py"], "files-denylist": null},
    "verification": {"test-command": "pytest -q tests", "test-count-min": null, "check-commands": null},
    "output": {"report-fields-required": null},
    "body": {"text": "src/calc/stats.py: mean() divides by len(values) and fails with \
ZeroDivisionError on []. Make it raise ValueError('mean of an empty list'), add a test for it \
in tests/test_stats.py, and keep the other tests passing."}}]}}
If your plan is rejected, you get the errors: fix every one and answer with the whole corrected plan.
"""


def fence(text: str) -> str:
    """``text`` in a Markdown fence longer than any backtick run inside it (reports are untrusted)."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    bar = "`" * max(3, longest + 1)
    return f"{bar}\n{text.rstrip()}\n{bar}"


def _clip(text: str, limit: int = MAX_REPORT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


def _records(title: str, records: Sequence[SubtaskRecord], empty: str) -> list[str]:
    out = [f"## {title}", ""]
    if not records:
        return out + [empty, ""]
    for rec in records:
        head = f"- `{rec.id}`" + (f" ({rec.role})" if rec.role else "") + f": {rec.goal}"
        if rec.outcome:
            head += f" — outcome: {rec.outcome}"
        out.append(head)
        if rec.report.strip():
            out.append(fence(_clip(rec.report)))
    return out + [""]


def user_prompt(goal: str, context: PlannerContext) -> str:
    lines = ["# Goal", "", goal.strip(), "", "# Roles you can use", ""]
    for role in context.roles:
        kind = "writes files" if role.writes else "does not write files"
        tools = ", ".join(role.tools) if role.tools else "none"
        lines.append(f"- `{role.name}` ({kind}; tools: {tools}): {one_line(role.description, 600)}")
        if role.fields:
            lines.append(f"  Task fields it accepts: {', '.join(role.fields)}; write null for the others.")
    lines.append("")
    files = list(context.files)
    shown = files[: max(0, context.max_files)]
    lines += ["# Files in the repository", ""]
    if shown:
        if len(files) > len(shown):
            lines.append(f"(the first {len(shown)} of {len(files)} files)")
        lines += shown
    else:
        lines.append("(no file list given)")
    lines.append("")
    if context.memory:
        lines += ["# Remembered from earlier runs", ""]
        lines += [f"- {one_line(entry, 600)}" for entry in context.memory]
        lines.append("")
    replan = context.replan
    if replan is not None:
        lines += ["# This is a replan", "",
                  "An earlier plan for this goal fell short. Plan only the work still needed to reach "
                  "the goal: the completed subtasks' work is already merged, do not redo it; do not "
                  "repeat an approach that already failed.", ""]
        lines += ["## The gap", "", replan.gap.strip() or "(not stated)", ""]
        lines += _records("Completed subtasks", replan.completed, "(none)")
        lines += _records("Failed subtasks", replan.failed, "(none)")
        lines += _records("Remaining subtasks (planned, never run)", replan.remaining, "(none)")
        if replan.history:
            lines += ["## Earlier replans", ""]
            for n, round_ in enumerate(replan.history, start=1):
                lines.append(f"{n}. goal: {one_line(round_.goal, 400)}; fell short: {one_line(round_.gap, 600)}")
                if round_.tried:
                    lines.append(f"   tried: {'; '.join(one_line(t, 200) for t in round_.tried)}")
            lines.append("")
    lines.append("Answer with the plan (or your questions) as one JSON object of the required schema.")
    return "\n".join(lines)


# -- the loop -------------------------------------------------------------------------------------

def propose_plan(config: ModelReach, goal: str, context: PlannerContext, *,
                 validate: Callable[[JSONObject], Sequence[str]]) -> PlannerOutcome:
    """Ask the planner for a plan until ``validate`` accepts one, questions come, or retries run out.

    Raises ``ModelError(kind="llm")`` when the model cannot be reached, or when its last reply
    did not fit the schema.
    """
    messages: list[JSONDict] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_prompt(goal, context)},
    ]
    usage = Usage()
    attempts = 1 + max(0, config.max_retries)
    errors: list[str] = []
    for attempt in range(1, attempts + 1):
        parsed, reply, bad = structured_call(config, messages, PlannerReply)
        usage = usage.plus(reply)
        if bad is not None:
            if attempt == attempts:
                raise llm.StructuredReplyError(f"{bad.message} (planner attempt {attempt} of {attempts})",
                                               errors=bad.errors, content=bad.content, reply=bad.reply)
            messages += schema_rejection(bad)
            continue
        assert parsed is not None
        if parsed.kind == "questions":
            questions = [q.strip() for q in parsed.questions or [] if q.strip()]
            return _outcome(None, questions, [], attempt, usage)
        plan = parsed.to_plan_dict()
        assert plan is not None
        errors = [one_line(e, 500) for e in validate(plan)]
        if not errors:
            return _outcome(plan, [], [], attempt, usage)
        messages += [
            {"role": "assistant", "content": reply.content or json.dumps(parsed.model_dump(by_alias=True))},
            rejection("Your plan was rejected", errors,
                      "Fix every error and answer with the whole corrected plan (or questions, if you need "
                      "answers from the user)."),
        ]
    return _outcome(None, [], errors, attempts, usage)


def _outcome(plan: JSONDict | None, questions: list[str], errors: list[str], attempts: int,
             usage: Usage) -> PlannerOutcome:
    return PlannerOutcome(plan, questions, errors, attempts, usage.prompt_tokens, usage.completion_tokens,
                          usage.cost_usd)
