"""Asking the planner and the reviewer (runtime.orchestration.advisors.asking): what they are shown, how a
planned subtask's agent is filled in, and how their answers come back. The models are stand-ins here."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runtime.errors import ManifestErrors
from runtime.manifests.catalog import Catalog
from runtime.manifests.role import load_role
from runtime.models.types import ModelReach
from runtime.orchestration.advisors import asking
from runtime.orchestration.advisors.asking import (
    AgentDefaults,
    Replanner,
    agent_defaults,
    reviewer_for,
    roles_info,
    validator,
    with_agents,
)
from runtime.orchestration.advisors.planner import PlannerOutcome, ReplanRound, SubtaskRecord
from runtime.orchestration.advisors.reviewer import CheckResult, Review
from runtime.orchestration.judge import Judgement
from runtime.orchestration.plans.load import Plan, load_plan
from runtime.workspace.git import Git
from tests.conftest import REPO
from tests.support import git

CATALOG = Catalog(REPO)
AGENT = {"backend": "builtin", "model": "openai/gpt-4.1"}


def planned(*ids: str, role: str = "edit-local", whitelist: str = "src/**") -> dict[str, Any]:
    """A plan as the planner's reply gives it (no `[agent]` tables)."""
    return {
        "plan": {"goal": "Fix calc.", "success-criteria": ["the tests pass"]},
        "subtask": [{"id": sid, "sequence": 1, "task": {"role": role, "goal": f"Do {sid}."},
                     "scope": {"files-whitelist": [f"{whitelist.rstrip('*')}{sid}/**"]},
                     "verification": {"test-command": "pytest -q", "check-commands": ["true"]},
                     "body": {"text": f"Do {sid}."}} for sid in ids],
    }


# -- the agents of planned subtasks ---------------------------------------------------------------

def test_a_planned_subtask_gets_a_copy_of_the_default_agent_table():
    defaults = AgentDefaults(dict(AGENT))
    agent = defaults.agent_for("fix")
    assert agent == AGENT
    agent["model"] = "changed"
    assert defaults.table == AGENT


def test_a_script_named_after_the_subtask_is_given_to_its_agent(tmp_path):
    (tmp_path / "fix.toml").write_text("")
    (tmp_path / "docs.toml").mkdir()  # a folder is no script
    defaults = AgentDefaults({"backend": "builtin", "model": "scripted/p"}, script_dir=tmp_path)
    assert defaults.agent_for("fix")["script"] == str(tmp_path / "fix.toml")
    assert "script" not in defaults.agent_for("docs")
    assert "script" not in defaults.agent_for("other")


@pytest.mark.parametrize("model,api_base,expected", [
    ("openai/gpt-4.1", None, {"backend": "builtin", "model": "openai/gpt-4.1"}),
    ("openai/x", "http://127.0.0.1:8000/v1", {"backend": "builtin", "model": "openai/x",
                                              "api-base": "http://127.0.0.1:8000/v1"}),
    (None, None, {"backend": "builtin"}),
])
def test_without_a_plan_the_command_line_says_how_agents_run(model, api_base, expected, tmp_path):
    defaults = agent_defaults(None, "builtin", model, api_base, tmp_path)
    assert defaults.table == expected and defaults.script_dir == tmp_path


INLINE_PLAN = '''[plan]
goal = "Fix calc."
success-criteria = ["the tests pass"]

[[subtask]]
id = "fix"
sequence = 1
[subtask.task]
role = "edit-local"
goal = "Fix."
[subtask.scope]
files-whitelist = ["src/**"]
[subtask.verification]
test-command = "pytest -q"
check-commands = ["true"]
[subtask.agent]
backend = "builtin"
model = "scripted/fix"
script = "fix.script.toml"
retries = 0
[subtask.body]
text = "Fix."
'''

FILE_PLAN = '''[plan]
goal = "Fix calc."
success-criteria = ["the tests pass"]

[[subtask]]
id = "fix"
sequence = 1
file = "task.toml"
'''

TASK = '''[task]
role = "edit-local"
goal = "Fix."
[scope]
files-whitelist = ["src/**"]
[verification]
test-command = "pytest -q"
check-commands = ["true"]
[agent]
backend = "builtin"
model = "openai/gpt-4.1"
api-base = "http://127.0.0.1:8000/v1"
retries = 0
[body]
text = "Fix."
'''


@pytest.fixture
def inline_plan(tmp_path) -> Plan:
    (tmp_path / "fix.script.toml").write_text('[[turn]]\ncontent = "done"\n')
    (tmp_path / "plan.toml").write_text(INLINE_PLAN)
    return load_plan(CATALOG, tmp_path / "plan.toml")


def test_without_a_model_agents_run_as_the_plans_first_inline_subtask_without_its_script(inline_plan):
    defaults = agent_defaults(inline_plan, "builtin", None, None, None)
    assert defaults.table == {"backend": "builtin", "model": "scripted/fix", "retries": 0}


def test_without_a_model_agents_run_as_the_task_file_of_the_plans_first_subtask(tmp_path):
    (tmp_path / "task.toml").write_text(TASK)
    (tmp_path / "plan.toml").write_text(FILE_PLAN)
    plan = load_plan(CATALOG, tmp_path / "plan.toml")
    defaults = agent_defaults(plan, "command", None, None, None)
    assert defaults.table == {"backend": "builtin", "model": "openai/gpt-4.1", "api-base": "http://127.0.0.1:8000/v1"}


def test_a_model_on_the_command_line_wins_over_the_plan(inline_plan):
    defaults = agent_defaults(inline_plan, "builtin", "openai/gpt-4.1", None, None)
    assert defaults.table == {"backend": "builtin", "model": "openai/gpt-4.1"}


def test_subtasks_without_an_agent_get_the_defaults_and_others_keep_theirs():
    own = {"backend": "command", "command": ["true"]}
    data = planned("a", "b")
    data["subtask"][1]["agent"] = own
    before = copy.deepcopy(data)
    out = with_agents(data, AgentDefaults(dict(AGENT)))
    assert [s["agent"] for s in out["subtask"]] == [AGENT, own]
    assert out["plan"] == data["plan"]
    assert data == before  # the planner's dict is left as it was


# -- the roles the planner is shown ---------------------------------------------------------------

def test_the_planner_is_shown_the_spawnable_roles_only():
    names = [r.name for r in roles_info(CATALOG)]
    spawnable = [n for n in CATALOG.role_names() if load_role(CATALOG, n).spawnable]
    assert names == spawnable
    assert "session" not in names and "git-ops" not in names


def test_each_role_says_whether_it_writes_what_tools_it_has_and_its_task_fields():
    roles = {r.name: r for r in roles_info(CATALOG)}
    assert roles["edit-local"].writes and not roles["explorer"].writes and not roles["read-only"].writes
    assert roles["edit-local"].tools == tuple(load_role(CATALOG, "edit-local").tools)
    assert "scope.files-whitelist" in roles["edit-local"].fields
    assert "scope.files-whitelist" not in roles["read-only"].fields
    for role in roles.values():
        assert list(role.fields) == sorted(role.fields)
        assert role.description == " ".join(role.description.split()) and role.description


def test_control_files_are_never_a_planned_tasks_field():
    role = load_role(CATALOG, "edit-local")
    assert "scope.control-files" in {s.task_field for a in role.atoms for s in a.params.values()}
    assert all("scope.control-files" not in r.fields for r in roles_info(CATALOG))


# -- validating a planner's plan ------------------------------------------------------------------

def test_a_valid_plan_is_accepted_and_kept_with_its_agents(tmp_path):
    validate, state = validator(CATALOG, tmp_path, AgentDefaults(dict(AGENT)), set())
    assert validate(planned("fix", "docs")) == []
    plan = state["plan"]
    assert [s.id for s in plan.subtasks] == ["fix", "docs"]
    assert all(s.task.agent.model == "openai/gpt-4.1" for s in plan.subtasks)


def test_subtask_ids_accepted_earlier_in_the_run_must_not_come_again(tmp_path):
    validate, state = validator(CATALOG, tmp_path, AgentDefaults(dict(AGENT)), {"fix", "docs", "old"})
    assert validate(planned("fix", "new", "docs")) == [
        "subtask ids already accepted in this run: docs, fix; choose new ids"]
    assert state == {}


def test_an_invalid_plan_gives_every_error_as_a_line_and_keeps_the_last_good_plan(tmp_path):
    validate, state = validator(CATALOG, tmp_path, AgentDefaults(dict(AGENT)), set())
    assert validate(planned("good")) == []
    good = state["plan"]
    errors = validate(planned("a", "b", role="no-such-role") | {"plan": {"goal": "g", "success-criteria": []}})
    assert len(errors) >= 2
    assert any("no-such-role" in e for e in errors) and any("success-criteria" in e for e in errors)
    assert all(e.startswith("<planner plan>:") for e in errors)
    assert state["plan"] is good


# -- a run as the advisors see it -----------------------------------------------------------------

def sub(sid: str, goal: str | None = None, role: str = "edit-local"):
    return SimpleNamespace(id=sid, task=SimpleNamespace(goal=goal or f"Do {sid}.", role=SimpleNamespace(name=role)))


def done(label: str, report: str | None = None, message: str = ""):
    return SimpleNamespace(outcome=SimpleNamespace(status=label.partition("(")[0], label=label, message=message),
                           report=report)


def plan_run(**extra: Any):
    rounds = [[sub("fix"), sub("docs", role="edit-shared")], [sub("tests"), sub("later")]]
    results = {"fix": done("ok", "Summary: fixed."), "docs": done("failed(verify)", None, "tests failed"),
               "tests": done("rejected", "r" * 3000)}
    plan = SimpleNamespace(goal="Fix calc.", success_criteria=("the tests pass", "docs say so"))
    return SimpleNamespace(rounds=rounds, results=results, plan=plan, **extra)


class FakePlanner:
    """`propose_plan`: records what it was asked, and answers with ``plan`` (validated) or ``questions``."""

    def __init__(self, plan: dict[str, Any] | None = None, questions: list[str] = (), errors: list[str] = ()):
        self.plan, self.questions, self.errors = plan, list(questions), list(errors)
        self.calls: list[tuple] = []

    def __call__(self, config, goal, context, *, validate):
        self.calls.append((config, goal, context))
        if self.plan is not None:
            problems = validate(self.plan)
            if problems:
                return PlannerOutcome(None, [], problems, 1)
        return PlannerOutcome(self.plan, self.questions, self.errors, 1)


def replanner(tmp_path: Path) -> Replanner:
    return Replanner(CATALOG, tmp_path, ModelReach.planner("scripted/p"), AgentDefaults(dict(AGENT)),
                     roles_info(CATALOG)[:1], ["src/calc.py"], ["a memory"])


def test_a_replan_is_asked_with_the_completed_failed_and_remaining_subtasks_and_the_gap(tmp_path, monkeypatch):
    fake = FakePlanner(planned("retry-docs"))
    monkeypatch.setattr(asking, "propose_plan", fake)
    ask = replanner(tmp_path)
    plan = ask(plan_run(), Judgement("replan", "the docs are missing"))
    assert isinstance(plan, Plan) and [s.id for s in plan.subtasks] == ["retry-docs"]
    (config, goal, context), = fake.calls
    assert config is ask.config and goal == "Fix calc."
    assert (context.roles, context.files, context.memory) == (ask.roles, ["src/calc.py"], ["a memory"])
    replan = context.replan
    assert replan.completed == [SubtaskRecord("fix", "Do fix.", "edit-local", "ok", "Summary: fixed.")]
    assert replan.failed == [SubtaskRecord("docs", "Do docs.", "edit-shared", "failed(verify)", "tests failed"),
                             SubtaskRecord("tests", "Do tests.", "edit-local", "rejected", "r" * 2000)]
    assert replan.remaining == [SubtaskRecord("later", "Do later.", "edit-local")]
    assert (replan.gap, replan.history) == ("the docs are missing", ())


def test_each_replan_is_remembered_for_the_next(tmp_path, monkeypatch):
    fake = FakePlanner(planned("retry"))
    monkeypatch.setattr(asking, "propose_plan", fake)
    ask = replanner(tmp_path)
    ask(plan_run(), Judgement("replan", "first gap"))
    ask(plan_run(), Judgement("replan", "second gap"))
    first = ReplanRound("Fix calc.", "first gap", ("fix: Do fix.", "docs: Do docs.", "tests: Do tests."))
    assert fake.calls[1][2].replan.history == (first,)
    assert ask.history == [first, ReplanRound("Fix calc.", "second gap", first.tried)]


def test_a_replan_may_not_reuse_a_completed_subtasks_id(tmp_path, monkeypatch):
    monkeypatch.setattr(asking, "propose_plan", FakePlanner(planned("fix")))
    with pytest.raises(ManifestErrors) as info:
        replanner(tmp_path)(plan_run(), Judgement("replan", "gap"))
    assert [(e.path, e.line, e.message) for e in info.value.errors] == [
        ("<replan>", 1, "subtask ids already accepted in this run: fix; choose new ids")]


def test_a_failed_subtasks_id_may_be_planned_again(tmp_path, monkeypatch):
    monkeypatch.setattr(asking, "propose_plan", FakePlanner(planned("docs")))
    plan = replanner(tmp_path)(plan_run(), Judgement("replan", "gap"))
    assert [s.id for s in plan.subtasks] == ["docs"]


def test_the_planners_questions_come_back_as_a_list(tmp_path, monkeypatch):
    monkeypatch.setattr(asking, "propose_plan", FakePlanner(questions=["Raise or return 0?"]))
    assert replanner(tmp_path)(plan_run(), Judgement("replan", "gap")) == ["Raise or return 0?"]


def test_no_valid_plan_and_no_errors_is_still_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(asking, "propose_plan", FakePlanner())
    with pytest.raises(ManifestErrors, match="the planner produced no valid plan"):
        replanner(tmp_path)(plan_run(), Judgement("replan", "gap"))


# -- the reviewer ---------------------------------------------------------------------------------

def test_the_reviewer_sees_every_report_the_changed_files_and_the_checks(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "trunk", str(repo))
    (repo / "a.py").write_text("a = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "integration")
    (repo / "a.py").write_text("a = 2\n")
    (repo / "new file.md").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "merged")

    seen: list[tuple] = []

    def fake_review(config, goal, criteria, summary):
        seen.append((config, goal, criteria, summary))
        return Review("ok", "fine")

    monkeypatch.setattr(asking, "review", fake_review)
    config = ModelReach.reviewer("scripted/r")
    ask = reviewer_for(config)
    run = plan_run(git=Git(repo), integration="integration", base=base)
    verdict = ask(run, [("pytest -q", 0, "3 passed"), ("ruff check", 1, "x" * 2500 + "END")])
    assert verdict == Review("ok", "fine")
    (got_config, goal, criteria, summary), = seen
    assert (got_config, goal, criteria) == (config, "Fix calc.", ["the tests pass", "docs say so"])
    assert [(r.id, r.outcome) for r in summary.reports] == [
        ("fix", "ok"), ("docs", "failed(verify)"), ("tests", "rejected")]  # `later` never ran
    assert sorted(summary.changed_files) == ["a.py", "new file.md"]
    assert summary.checks == [CheckResult("pytest -q", True, "3 passed", 0),
                              CheckResult("ruff check", False, ("x" * 2500 + "END")[-2000:], 1)]
