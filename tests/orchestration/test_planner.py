"""The planner: strict structured output over real HTTP (fake OpenAI server) and the scripted model."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from typing import Any

import pytest

from runtime.models import llm, scripted
from runtime.models.types import ModelError, ModelReach, ModelRequest
from runtime.orchestration.advisors.planner import (
    PlannerContext,
    ReplanContext,
    ReplanRound,
    RoleInfo,
    SubtaskRecord,
    propose_plan,
    user_prompt,
)
from runtime.orchestration.advisors.replies import PlannerReply, ReviewReply
from tests.fakes.openai_server import FakeOpenAIServer

ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
ROLES = [
    RoleInfo("edit-local", "The default code-writing role.", ["Read", "Write", "Edit", "Bash"], True,
             ["scope.files-whitelist", "scope.files-denylist", "verification.test-command"]),
    RoleInfo("read-only", "Pure inspection agent.", ["Read", "Glob", "Grep"], False),
]
CONTEXT = PlannerContext(roles=ROLES, files=["src/calc/stats.py", "tests/test_stats.py"],
                         memory=["The tests run with `pytest -q tests`."])
GOAL = "Make mean() raise ValueError on an empty list."


def subtask(sid: str = "fix-mean", sequence: int = 1, role: str = "edit-local", uses: list[str] | None = None,
            whitelist: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": sid, "sequence": sequence, "uses": uses or [],
        "task": {"role": role, "goal": f"do {sid}"},
        "scope": {"files-whitelist": whitelist if whitelist is not None else ["src/calc/**"], "files-denylist": None},
        "verification": {"test-command": "pytest -q tests", "test-count-min": None, "check-commands": ["true"]},
        "output": {"report-fields-required": None},
        "body": {"text": f"Instructions for {sid}."},
    }


def plan_reply(*subtasks: dict[str, Any], checks: list[str] | None = None) -> str:
    return json.dumps({"kind": "plan", "questions": None, "plan": {
        "plan": {"goal": GOAL, "success-criteria": ["mean([]) raises ValueError"], "checks": checks},
        "subtask": list(subtasks) or [subtask()],
    }})


QUESTIONS = json.dumps({"kind": "questions", "plan": None,
                        "questions": ["Should mean([]) raise or return 0?", "  "]})


def validate(plan: dict[str, Any]) -> list[str]:
    """A small stand-in for plan.py's semantic validation."""
    errors = []
    roles = {r.name for r in ROLES}
    seen: set[str] = set()
    for n, st in enumerate(plan["subtask"], start=1):
        if not ID.match(st["id"]):
            errors.append(f"subtask {n}: id `{st['id']}` must match ^[a-z0-9][a-z0-9-]{{0,31}}$")
        if st["id"] in seen:
            errors.append(f"subtask {n}: duplicate id `{st['id']}`")
        seen.add(st["id"])
        if st["task"]["role"] not in roles:
            errors.append(f"subtask {n}: unknown role `{st['task']['role']}`")
    return errors


def config(server: FakeOpenAIServer | None = None, **overrides: Any) -> ModelReach:
    fields: dict[str, Any] = dict(model="openai/fake", api_key="sk-fake", timeout_s=5.0, backoff_s=0.01,
                                  max_retries=2, transport_retries=1)
    if server is not None:
        fields["api_base"] = server.url + "/v1"
    fields.update(overrides)
    return ModelReach.planner(**fields)


def walk_objects(schema: Any, defs: dict[str, Any]):
    """Every object schema reachable from ``schema`` (following $ref)."""
    seen: set[int] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        if "$ref" in node:
            stack.append(defs[node["$ref"].split("/")[-1]])
        if node.get("type") == "object":
            yield node
        stack.extend(v for k, v in node.items() if k != "$defs")


@pytest.fixture(autouse=True)
def _fresh_positions():
    scripted.reset()
    yield
    scripted.reset()


# -- the schema -----------------------------------------------------------------------------------

def test_the_strict_schema_is_sent_as_response_format():
    with FakeOpenAIServer([plan_reply()]) as server:
        outcome = propose_plan(config(server), GOAL, CONTEXT, validate=validate)
        (sent,) = server.chat_requests()
    assert outcome.plan is not None
    rf = sent.response_format
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["strict"] is True and rf["json_schema"]["name"] == "PlannerReply"
    schema = rf["json_schema"]["schema"]
    assert schema["type"] == "object" and "anyOf" not in schema  # the root is one object
    objects = list(walk_objects(schema, schema.get("$defs", {})))
    assert len(objects) >= 8  # reply, plan document, header, subtask, task, scope, verification, output, body
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    text = json.dumps(schema)
    assert '"default"' not in text and "oneOf" not in text and "discriminator" not in text
    assert '"files-whitelist"' in text and '"success-criteria"' in text and '"test-command"' in text
    assert "tools" not in sent.body


def test_the_pydantic_schemas_are_strict_before_any_rewriting():
    """No reliance on the SDK's rewriting: pydantic's own schema already meets the strict rules."""
    for model in (PlannerReply, ReviewReply):
        schema = model.model_json_schema()
        objects = list(walk_objects(schema, schema.get("$defs", {})))
        assert objects
        for obj in objects:
            assert obj["additionalProperties"] is False, obj.get("title")
            assert sorted(obj.get("required", [])) == sorted(obj["properties"]), obj.get("title")
        assert '"default"' not in json.dumps(schema)


def test_to_plan_dict_has_the_toml_shape_without_nulls():
    reply = PlannerReply.model_validate_json(plan_reply(subtask(), subtask("audit", 2, "read-only", ["fix-mean"], [])))
    plan = reply.to_plan_dict()
    assert plan == {
        "plan": {"goal": GOAL, "success-criteria": ["mean([]) raises ValueError"]},
        "subtask": [
            {"id": "fix-mean", "sequence": 1, "uses": [], "task": {"role": "edit-local", "goal": "do fix-mean"},
             "scope": {"files-whitelist": ["src/calc/**"]},
             "verification": {"test-command": "pytest -q tests", "check-commands": ["true"]},
             "body": {"text": "Instructions for fix-mean."}},
            {"id": "audit", "sequence": 2, "uses": ["fix-mean"], "task": {"role": "read-only", "goal": "do audit"},
             "scope": {"files-whitelist": []},
             "verification": {"test-command": "pytest -q tests", "check-commands": ["true"]},
             "body": {"text": "Instructions for audit."}},
        ],
    }
    assert "agent" not in plan["subtask"][0]
    with_checks = PlannerReply.model_validate_json(plan_reply(checks=["pytest -q tests"])).to_plan_dict()
    assert with_checks["plan"]["checks"] == ["pytest -q tests"]


@pytest.mark.parametrize("doc, fragment", [
    ({"kind": "plan", "plan": None, "questions": None}, "plan is null"),
    ({"kind": "questions", "plan": None, "questions": []}, "no question"),
    ({"kind": "questions", "plan": json.loads(plan_reply())["plan"], "questions": ["?"]}, "not both"),
    ({"kind": "plan", "plan": json.loads(plan_reply())["plan"], "questions": None, "extra": 1}, "extra"),
])
def test_the_reply_model_rejects_contradictions(doc, fragment):
    with pytest.raises(ValueError, match=fragment):
        PlannerReply.model_validate_json(json.dumps(doc))


# -- the loop over real HTTP ----------------------------------------------------------------------

def test_a_valid_plan_on_the_first_try():
    with FakeOpenAIServer([plan_reply(checks=["pytest -q tests"])]) as server:
        outcome = propose_plan(config(server), GOAL, CONTEXT, validate=validate)
        (sent,) = server.chat_requests()
    assert outcome.ok and outcome.attempts == 1 and outcome.errors == [] and outcome.questions == []
    assert outcome.plan["subtask"][0]["id"] == "fix-mean"
    assert outcome.plan["plan"]["checks"] == ["pytest -q tests"]
    assert outcome.prompt_tokens == 11 and outcome.completion_tokens == 7
    system, user = sent.body["messages"]
    assert system["role"] == "system" and "You are the planner" in system["content"]
    assert user["role"] == "user" and GOAL in user["content"]
    assert "`edit-local` (writes files; tools: Read, Write, Edit, Bash)" in user["content"]
    assert "`read-only` (does not write files" in user["content"]
    assert "Task fields it accepts: scope.files-whitelist" in user["content"]
    assert "src/calc/stats.py" in user["content"] and "The tests run with `pytest -q tests`." in user["content"]
    assert "replan" not in user["content"].lower()
    assert sent.headers.get("Authorization") == "Bearer sk-fake"


def test_an_invalid_plan_then_a_valid_one():
    bad = plan_reply(subtask("Fix_Mean"), subtask("doc", role="writer", whitelist=["docs/**"]))
    with FakeOpenAIServer([bad, plan_reply()]) as server:
        outcome = propose_plan(config(server), GOAL, CONTEXT, validate=validate)
        first, second = server.chat_requests()
    assert outcome.ok and outcome.attempts == 2 and outcome.errors == []
    messages = second.body["messages"]
    assert messages[:2] == first.body["messages"]
    assert messages[2] == {"role": "assistant", "content": bad}
    rejected = messages[3]
    assert rejected["role"] == "user" and rejected["content"].startswith("Your plan was rejected:")
    assert "- subtask 1: id `Fix_Mean` must match" in rejected["content"]
    assert "- subtask 2: unknown role `writer`" in rejected["content"]
    assert second.response_format == first.response_format


def test_a_planner_that_keeps_producing_invalid_plans_fails_with_the_errors():
    bad = plan_reply(subtask("x"), subtask("x"))
    with FakeOpenAIServer([bad] * 10) as server:
        outcome = propose_plan(config(server, max_retries=2), GOAL, CONTEXT, validate=validate)
        requests = server.chat_requests()
    assert not outcome.ok and outcome.plan is None
    assert outcome.attempts == 3 and len(requests) == 3  # max_retries + 1, then stop: no fallback
    assert outcome.errors == ["subtask 2: duplicate id `x`"]
    assert outcome.questions == []
    assert sum(m["content"].startswith("Your plan was rejected") for m in requests[-1].body["messages"]
               if m["role"] == "user") == 2
    assert outcome.prompt_tokens == 33


def test_questions_end_the_loop_at_once():
    calls = []
    with FakeOpenAIServer([QUESTIONS, plan_reply()]) as server:
        outcome = propose_plan(config(server), GOAL, CONTEXT, validate=lambda p: calls.append(p) or [])
        assert len(server.chat_requests()) == 1
    assert outcome.plan is None and outcome.errors == [] and outcome.attempts == 1
    assert outcome.questions == ["Should mean([]) raise or return 0?"]
    assert calls == []


def test_questions_after_a_rejected_plan():
    with FakeOpenAIServer([plan_reply(subtask("BAD")), QUESTIONS]) as server:
        outcome = propose_plan(config(server), GOAL, CONTEXT, validate=validate)
    assert outcome.questions and outcome.attempts == 2 and outcome.plan is None


@pytest.mark.parametrize("content, fragment", [
    ("Sure! Here is the plan: step 1 ...", "not valid JSON"),
    (json.dumps({"kind": "plan", "questions": None}), "plan: missing key"),
    (json.dumps({"kind": "maybe", "plan": None, "questions": None}), "kind: Input should be 'plan' or 'questions'"),
    (json.dumps({"kind": "plan", "plan": {"plan": {"goal": "g"}, "subtask": []}, "questions": None}),
     "plan.plan.success-criteria: missing key"),
])
def test_a_reply_that_does_not_fit_the_schema_is_a_model_error(content, fragment):
    with FakeOpenAIServer([content]) as server:
        with pytest.raises(ModelError) as info:
            propose_plan(config(server, max_retries=0), GOAL, CONTEXT, validate=validate)
        assert len(server.chat_requests()) == 1
    err = info.value
    assert err.kind == "llm" and "\n" not in str(err)
    assert "does not fit PlannerReply" in str(err) and fragment in str(err)
    assert "planner attempt 1 of 1" in str(err)


def test_a_reply_that_does_not_fit_is_sent_back_then_a_plan():
    with FakeOpenAIServer(["not json at all", plan_reply()]) as server:
        outcome = propose_plan(config(server), GOAL, CONTEXT, validate=validate)
        second = server.chat_requests()[1]
    assert outcome.ok and outcome.attempts == 2
    assistant, rejected = second.body["messages"][2:]
    assert assistant == {"role": "assistant", "content": "not json at all"}
    assert rejected["content"].startswith("Your reply was rejected: it is not a JSON document of the required schema")
    assert "not valid JSON" in rejected["content"]


def test_replies_that_never_fit_end_in_a_model_error_after_the_retries():
    with FakeOpenAIServer(["nope"] * 5) as server:
        with pytest.raises(ModelError, match="planner attempt 3 of 3"):
            propose_plan(config(server, max_retries=2), GOAL, CONTEXT, validate=validate)
        assert len(server.chat_requests()) == 3


def test_transport_failures_are_retried_inside_one_attempt():
    with FakeOpenAIServer([plan_reply()]) as server:
        server.fail_next(1, 500)
        outcome = propose_plan(config(server, transport_retries=1), GOAL, CONTEXT, validate=validate)
        outcomes = [r.outcome for r in server.chat_requests()]
    assert outcome.ok and outcome.attempts == 1 and outcomes == ["failed:500", "turn"]


def test_an_unreachable_planner_is_a_model_error():
    with FakeOpenAIServer([plan_reply()]) as server:
        server.fail_next(5, 503)
        with pytest.raises(ModelError) as info:
            propose_plan(config(server, transport_retries=1), GOAL, CONTEXT, validate=validate)
    assert info.value.kind == "llm" and "503" in str(info.value) and "attempt 2 of 2" in str(info.value)


# -- complete_structured itself -------------------------------------------------------------------

def structured_request(server: FakeOpenAIServer, **overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = dict(model="openai/fake", messages=[{"role": "user", "content": "review"}],
                                  api_base=server.url + "/v1", timeout_s=5.0, max_retries=2)
    fields.update(overrides)
    return ModelRequest(**fields)


def test_complete_structured_parses_and_returns_the_reply():
    content = json.dumps({"status": "ok", "reason": "fine", "learn": []})
    with FakeOpenAIServer([content]) as server:
        parsed, reply = llm.complete_structured(structured_request(server), ReviewReply, api_key="k")
        (sent,) = server.chat_requests()
    assert parsed == ReviewReply(status="ok", reason="fine", learn=[])
    assert reply.content == content and reply.prompt_tokens == 11
    assert sent.response_format["json_schema"]["name"] == "ReviewReply"


def test_complete_structured_does_not_retry_a_validation_failure():
    with FakeOpenAIServer(['{"status": "ok"}', "unused"]) as server:
        with pytest.raises(llm.StructuredReplyError) as info:
            llm.complete_structured(structured_request(server, max_retries=3), ReviewReply, api_key="k")
        assert len(server.chat_requests()) == 1
    err = info.value
    assert isinstance(err, ModelError) and err.kind == "llm"
    assert err.errors == ["reason: missing key (every key is required: write null where the schema allows it)",
                          "learn: missing key (every key is required: write null where the schema allows it)"]
    assert err.content == '{"status": "ok"}' and err.reply.prompt_tokens == 11


def test_complete_structured_unwraps_one_code_fence_and_rejects_tool_calls():
    fenced = "```json\n" + json.dumps({"status": "replan", "reason": "r", "learn": ["x"]}) + "\n```"
    with FakeOpenAIServer([fenced, [{"name": "Bash", "input": {"command": "ls"}}]]) as server:
        parsed, _ = llm.complete_structured(structured_request(server), ReviewReply, api_key="k")
        assert parsed.status == "replan" and parsed.learn == ["x"]
        with pytest.raises(llm.StructuredReplyError, match="the reply has tool calls"):
            llm.complete_structured(structured_request(server), ReviewReply, api_key="k")


def test_complete_structured_retries_transport_errors():
    with FakeOpenAIServer([json.dumps({"status": "ok", "reason": "", "learn": []})]) as server:
        server.fail_next(2, 429)
        parsed, _ = llm.complete_structured(structured_request(server), ReviewReply, api_key="k", backoff_s=0.01,
                                            sleep=lambda s: None)
        assert len(server.chat_requests()) == 3
    assert parsed.status == "ok"


# -- replans and prompts --------------------------------------------------------------------------

def test_a_replan_request_carries_completed_remaining_failed_gap_and_history():
    replan = ReplanContext(
        completed=[SubtaskRecord("fix-mean", "Fix mean()", "edit-local", "ok", "Summary: fixed mean.")],
        remaining=[SubtaskRecord("docs", "Document mean()", "edit-local")],
        failed=[SubtaskRecord("fix-median", "Fix median()", "edit-local", "failed(verify)",
                              "tests failed:\n```\nAssertionError\n```")],
        gap="median([]) still raises ZeroDivisionError",
        history=[ReplanRound("Fix the stats module", "tests failed in median", ["fix-median: rewrite median"])],
    )
    context = PlannerContext(roles=ROLES, files=CONTEXT.files, replan=replan)
    with FakeOpenAIServer([plan_reply()]) as server:
        outcome = propose_plan(config(server), GOAL, context, validate=validate)
        text = server.chat_requests()[0].body["messages"][1]["content"]
    assert outcome.ok
    assert "# This is a replan" in text
    assert "## The gap\n\nmedian([]) still raises ZeroDivisionError" in text
    completed = text.index("## Completed subtasks")
    failed = text.index("## Failed subtasks")
    remaining = text.index("## Remaining subtasks")
    history = text.index("## Earlier replans")
    assert completed < failed < remaining < history
    assert "- `fix-mean` (edit-local): Fix mean() — outcome: ok" in text[completed:failed]
    assert "- `fix-median` (edit-local): Fix median() — outcome: failed(verify)" in text[failed:remaining]
    assert "````\ntests failed:\n```\nAssertionError\n```\n````" in text  # the report fenced, fence longer
    assert "- `docs` (edit-local): Document mean()" in text[remaining:history]
    assert "1. goal: Fix the stats module; fell short: tests failed in median" in text[history:]
    assert "tried: fix-median: rewrite median" in text[history:]


def test_the_file_list_is_truncated():
    files = [f"src/m{n:04d}.py" for n in range(1000)]
    text = user_prompt(GOAL, PlannerContext(roles=ROLES, files=files, max_files=50))
    assert "(the first 50 of 1000 files)" in text
    assert "src/m0049.py" in text and "src/m0050.py" not in text
    assert "(no file list given)" in user_prompt(GOAL, PlannerContext(roles=ROLES))


# -- the scripted model ---------------------------------------------------------------------------

def toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of ASCII text is a TOML basic string


def test_the_planner_through_the_scripted_model(tmp_path):
    script = tmp_path / "planner.script.toml"
    turns = [plan_reply(subtask("Bad Id")), "not json", QUESTIONS, plan_reply()]
    script.write_text("".join(f"[[turn]]\ncontent = {toml_string(t)}\n\n" for t in turns))
    cfg = ModelReach.planner(model="scripted/planner", script=str(script), agent_id="planner-test", max_retries=3)
    outcome = propose_plan(cfg, GOAL, CONTEXT, validate=validate)
    assert outcome.questions == ["Should mean([]) raise or return 0?"] and outcome.attempts == 3
    assert outcome.cost_usd == 0.0 and outcome.prompt_tokens > 0
    # the next call continues the playback: the valid plan
    again = propose_plan(cfg, GOAL, CONTEXT, validate=validate)
    assert again.ok and again.attempts == 1 and again.plan["subtask"][0]["id"] == "fix-mean"


def test_the_scripted_planner_with_a_literal_string_turn(tmp_path):
    script = tmp_path / "p.toml"
    script.write_text(f"[[turn]]\ncontent = '{plan_reply()}'\n")
    cfg = ModelReach.planner(model="scripted/p", script=str(script), agent_id="planner-lit")
    outcome = propose_plan(cfg, GOAL, CONTEXT, validate=validate)
    assert outcome.ok and copy.deepcopy(outcome.plan)["subtask"][0]["task"]["role"] == "edit-local"


def test_a_used_up_script_is_a_model_error(tmp_path):
    script = tmp_path / "p.toml"
    script.write_text(f"[[turn]]\ncontent = {toml_string(QUESTIONS)}\n")
    cfg = ModelReach.planner(model="scripted/p", script=str(script), agent_id="planner-used", max_retries=1)
    assert propose_plan(cfg, GOAL, CONTEXT, validate=validate).questions
    with pytest.raises(ModelError, match="not valid JSON"):  # "the script is used up" is plain text
        propose_plan(cfg, GOAL, CONTEXT, validate=validate)


# -- import cost ----------------------------------------------------------------------------------

def test_importing_planner_reviewer_and_schema_does_not_import_litellm():
    code = (
        "import sys\n"
        "import runtime.orchestration.advisors.replies, runtime.orchestration.advisors.planner, runtime.orchestration.advisors.reviewer\n"
        "from runtime.orchestration.advisors.planner import propose_plan\n"
        "from runtime.orchestration.advisors.reviewer import review\n"
        "print(sorted(m for m in ('litellm', 'openai', 'httpx') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
