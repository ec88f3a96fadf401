"""`runtime run --goal`: the planner model over real HTTP (a fake OpenAI-compatible server).

An invalid plan goes back to the planner with its validation errors, a bounded
number of times, then the run fails with those errors (exit 2) and nothing
starts. Questions stop the run with exit 3. A valid plan runs, and
`--save-plan` writes a plan.toml that re-runs without any model.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer
from tests.orchestration.conftest import BASE_BRANCH, FIX_REPORT, FIX_TURN, FIXED, Orchestra, make_repo

GOAL = "Fix calc.mean, which divides by one too many."


def subtask(sid: str = "fix-mean", role: str = "edit-local", whitelist: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": sid, "sequence": 1, "uses": [],
        "task": {"role": role, "goal": "Fix calc.mean, which divides by one too many."},
        "scope": {"files-whitelist": whitelist or ["src/calc/__init__.py"], "files-denylist": None},
        "verification": {"test-command": "pytest -q tests", "test-count-min": 4, "check-commands": ["true"]},
        "output": {"report-fields-required": None},
        "body": {"text": "calc.mean in src/calc/__init__.py divides by len(values) + 1. Make it divide by len(values)."},
    }


def plan_reply(*subtasks: dict[str, Any]) -> str:
    return json.dumps({"kind": "plan", "questions": None, "plan": {
        "plan": {"goal": GOAL, "success-criteria": ["mean is right"], "checks": ["pytest -q tests"]},
        "subtask": list(subtasks) or [subtask()],
    }})


def planner_flags(server: FakeOpenAIServer) -> list[str]:
    return ["--goal", GOAL, "--planner-model", "openai/fake", "--planner-api-base", server.url + "/v1"]


KEY = {"OPENAI_API_KEY": "sk-fake-planner"}


def assert_nothing_started(o: Orchestra) -> None:
    assert o.runs() == []
    assert o.agent_folders() == []
    assert o.branches() == [BASE_BRANCH]
    assert o.sha(BASE_BRANCH) == o.base


def user_messages(request) -> list[str]:
    return [m.get("content") or "" for m in request.body["messages"] if m.get("role") == "user"]


def test_planner_that_keeps_producing_invalid_plans_fails_after_bounded_retries(orchestra: Orchestra):
    o = orchestra
    invalid = plan_reply(subtask(role="no-such-role"))
    with FakeOpenAIServer([invalid] * 6) as server:
        r = o.run(*planner_flags(server), "--planner-retries", "2", env=KEY, timeout=120)
        requests = server.chat_requests()
    assert r.code == 2, r.describe()
    # retries + 1 requests, each with the strict schema as response_format.
    assert len(requests) == 3, [q.outcome for q in requests]
    for request in requests:
        assert request.response_format is not None
        assert request.response_format["type"] == "json_schema"
        assert request.response_format["json_schema"]["strict"] is True
    # The first request carries no rejection; each later one carries the validation errors so far.
    assert not any("rejected" in m for m in user_messages(requests[0]))
    for n, request in enumerate(requests[1:], start=1):
        rejections = [m for m in user_messages(request) if m.startswith("Your plan was rejected")]
        assert len(rejections) == n, user_messages(request)
        assert all("no-such-role" in m for m in rejections)
    # The run fails with those errors, printed; nothing started.
    assert "no valid plan" in r.stderr and "no-such-role" in r.stderr, r.stderr
    assert r.events == []
    assert_nothing_started(o)


def test_planner_questions_stop_the_run_with_exit_3(orchestra: Orchestra):
    o = orchestra
    questions = ["Should mean([]) raise ValueError or return 0?", "May the tests be changed?"]
    reply = json.dumps({"kind": "questions", "plan": None, "questions": questions})
    with FakeOpenAIServer([reply]) as server:
        r = o.run(*planner_flags(server), env=KEY, timeout=120)
        requests = server.chat_requests()
    assert r.code == 3, r.describe()
    assert len(requests) == 1
    for question in questions:
        assert question in r.stdout, r.stdout
    assert r.events == []
    assert_nothing_started(o)


def test_valid_plan_runs_and_the_saved_plan_reruns_without_a_model(orchestra: Orchestra, tmp_path):
    o = orchestra
    scripts = tmp_path / "agent-scripts"
    o.script("fix-mean.toml", [FIX_TURN, FIX_REPORT], folder=scripts)
    saved = tmp_path / "saved" / "plan.toml"
    with FakeOpenAIServer([plan_reply()]) as server:
        r = o.run(*planner_flags(server), "--merge", "--save-plan", saved, "--agent-model", "scripted/x",
                  "--agent-scripts", scripts, env=KEY, timeout=300)
        requests = server.chat_requests()
    assert r.code == 0 and r.status == "accepted", r.describe()
    assert len(requests) == 1  # one plan, no replan
    assert r.label("fix-mean") == "ok"
    assert f"/ {FIXED}" in o.show(BASE_BRANCH, "src/calc/__init__.py")
    first_tree = o.git("rev-parse", f"{BASE_BRANCH}^{{tree}}")

    # The saved plan: a plan.toml whose subtasks carry the [agent] tables the orchestrator filled.
    assert saved.is_file()
    data = tomllib.loads(saved.read_text())
    assert data["plan"]["goal"] == GOAL
    assert [s["id"] for s in data["subtask"]] == ["fix-mean"]
    agent = data["subtask"][0]["agent"]
    assert agent["model"] == "scripted/x" and agent["script"].endswith("fix-mean.toml")

    # It re-runs on a fresh repository with no model at all (the fake server is gone).
    repo2, base2 = make_repo(tmp_path, "repo2")
    state2 = tmp_path / "state2"
    r2 = o.run(saved, "--merge", cwd=repo2, env={"RUNTIME_STATE_DIR": str(state2)}, timeout=300)
    assert r2.code == 0 and r2.status == "accepted", r2.describe()
    assert r2.label("fix-mean") == "ok"
    assert o.git("-C", str(repo2), "rev-parse", f"{BASE_BRANCH}^{{tree}}") == first_tree
    assert o.sha(BASE_BRANCH, repo2) != base2
