"""plan.toml: schema, loading, whole-plan validation (every error at its line), rendering and saving."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from runtime.errors import ManifestError, ManifestErrors
from runtime.manifests.catalog import Catalog
from runtime.manifests.tomlsrc import TomlSource
from runtime.models.types import ModelReach
from runtime.orchestration.plans.load import (
    inline_digest,
    load_plan,
    plan_checks,
    plan_from_data,
    plan_from_json,
)
from runtime.orchestration.plans.save import PlanExists, render_plan, save_plan
from runtime.orchestration.plans.scopes import globs_overlap
from runtime.tooling.lint import lint
from runtime.tooling.schemas import manifest_schemas, render
from tests.conftest import REPO

CATALOG = Catalog(REPO)

TASK_FILE = '''#:schema ../../schemas/task.schema.json
[task]
role = "edit-local"
agent-id = "ag-fix-mean"
goal = "Fix calc.mean."

[scope]
files-whitelist = ["src/calc/**", "tests/**"]

[verification]
test-command = "pytest -q tests"
check-commands = ["true"]

[agent]
backend = "builtin"
model = "scripted/fix"
script = "fix.script.toml"

[body]
text = "calc.mean divides by one too many; fix it."
'''

PLAN = '''#:schema ../schemas/plan.schema.json
[plan]
goal = "Fix calc.mean and document it."
success-criteria = ["the tests pass", "README documents mean"]
checks = ["pytest -q tests"]
max-dispatches = 2

[plan.planner]
model = "scripted/planner"
script = "planner.script.toml"

[plan.reviewer]
model = "openai/gpt-4.1"
api-base = "http://127.0.0.1:8000/v1"

[[subtask]]
id = "fix-mean"
sequence = 1
file = "tasks/fix-mean.toml"

[[subtask]]
id = "document-mean"
sequence = 2
uses = ["fix-mean"]
[subtask.task]
role = "edit-local"
goal = "Document mean in README.md."
[subtask.scope]
files-whitelist = ["README.md"]
[subtask.verification]
test-command = "pytest -q tests"
check-commands = ["true"]
[subtask.agent]
backend = "builtin"
model = "scripted/doc"
script = "doc.script.toml"
[subtask.body]
text = """
Describe calc.mean in README.md.
"""
'''


def inline(sid: str, seq: int, globs: list[str], *, uses: list[str] | None = None, agent_id: str = "",
           role: str = "edit-local", agent: bool = True) -> str:
    """An inline subtask, appended to PLAN by the tests."""
    text = f'\n[[subtask]]\nid = "{sid}"\nsequence = {seq}\n'
    if uses is not None:
        text += f"uses = {json.dumps(uses)}\n"
    text += f'[subtask.task]\nrole = "{role}"\n'
    if agent_id:
        text += f'agent-id = "{agent_id}"\n'
    text += f'goal = "Do {sid}."\n'
    if globs:
        text += f"[subtask.scope]\nfiles-whitelist = {json.dumps(globs)}\n"
        text += '[subtask.verification]\ntest-command = "pytest -q"\ncheck-commands = ["true"]\n'
    if agent:
        text += '[subtask.agent]\nbackend = "builtin"\nmodel = "scripted/doc"\nscript = "doc.script.toml"\n'
    text += f'[subtask.body]\ntext = "Work on {sid}."\n'
    return text


def lineno(text: str, needle: str, nth: int = 1) -> int:
    """The line of the nth line of ``text`` that contains ``needle``."""
    hits = [n for n, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} occurs {len(hits)} times"
    return hits[nth - 1]


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks/fix-mean.toml").write_text(TASK_FILE)
    for name in ("tasks/fix.script.toml", "doc.script.toml", "planner.script.toml"):
        (tmp_path / name).write_text('[[turn]]\ncontent = "Summary: done."\n')
    return tmp_path


def write(project: Path, text: str, name: str = "plan.toml") -> Path:
    path = project / name
    path.write_text(text, encoding="utf-8")
    return path


def errors(project: Path, text: str) -> list[ManifestError]:
    with pytest.raises(ManifestErrors) as info:
        load_plan(CATALOG, write(project, text))
    return info.value.errors


def only_error(project: Path, text: str) -> ManifestError:
    errs = errors(project, text)
    assert len(errs) == 1, [str(e) for e in errs]
    return errs[0]


# --- a valid plan ----------------------------------------------------------


def test_a_valid_plan_with_inline_and_by_path_subtasks_loads(project):
    path = write(project, PLAN)
    plan = load_plan(CATALOG, path)
    assert plan.path == path and plan.base_dir == project.resolve()
    assert plan.goal == "Fix calc.mean and document it."
    assert plan.success_criteria == ("the tests pass", "README documents mean")
    assert plan_checks(plan) == plan.checks == ("pytest -q tests",)
    assert (plan.max_replans, plan.concurrency, plan.max_dispatches) == (1, 4, 2)
    assert plan.planner == ModelReach.planner("scripted/planner", script=str((project / "planner.script.toml").resolve()),
                                              api_base=None, max_retries=2)
    assert plan.reviewer == ModelReach.reviewer("openai/gpt-4.1", script=None, api_base="http://127.0.0.1:8000/v1")
    assert plan.digest == hashlib.sha256(PLAN.encode()).hexdigest()

    fix, doc = plan.subtasks
    assert (fix.id, fix.sequence, fix.uses, fix.inline) == ("fix-mean", 1, (), False)
    assert fix.file == project / "tasks/fix-mean.toml" and fix.task.path == fix.file
    assert fix.task.agent_id == "ag-fix-mean" and fix.task.role.name == "edit-local"
    assert fix.task.agent.script == (project / "tasks/fix.script.toml").resolve()  # relative to the task file
    assert fix.line == lineno(PLAN, "[[subtask]]", 1)

    assert (doc.id, doc.sequence, doc.uses, doc.inline) == ("document-mean", 2, ("fix-mean",), True)
    assert doc.task.path == path  # an inline task lives in the plan file
    assert doc.task.fields["scope.files-whitelist"] == ["README.md"]
    assert doc.task.body.strip() == "Describe calc.mean in README.md."
    assert doc.task.agent.script == (project / "doc.script.toml").resolve()  # relative to the plan file
    assert doc.task.digest == inline_digest(PLAN, "document-mean")
    assert doc.task.digest == hashlib.sha256(PLAN.encode() + b"\0document-mean").hexdigest()
    assert doc.task.agent_id == f"ag-edit-local-{doc.task.digest[:10]}"
    assert doc.line == lineno(PLAN, "[[subtask]]", 2)
    assert [(q, [s.id for s in group]) for q, group in plan.groups()] == [(1, ["fix-mean"]), (2, ["document-mean"])]
    assert plan.subtask("fix-mean") is fix


def test_defaults_and_a_minimal_plan(project):
    text = '[plan]\ngoal = "g"\nsuccess-criteria = ["c"]\n' + inline("only", 1, ["src/**"])
    plan = load_plan(CATALOG, write(project, text))
    assert (plan.checks, plan.max_replans, plan.concurrency, plan.max_dispatches) == ((), 1, 4, 3)
    assert plan.planner is None and plan.reviewer is None
    assert (plan.executor, plan.ray_address) == ("local", None)


def test_the_plan_may_name_its_executor_and_cluster(project):
    text = PLAN.replace("max-dispatches = 2\n", 'max-dispatches = 2\nexecutor = "ray"\nray-address = "10.0.0.5:6379"\n')
    plan = load_plan(CATALOG, write(project, text))
    assert (plan.executor, plan.ray_address) == ("ray", "10.0.0.5:6379")


@pytest.mark.parametrize("keys, message", [
    ('ray-address = "10.0.0.5:6379"\n', '`ray-address` goes with executor = "ray"'),
    ('executor = "kubernetes"\n', "executor"),
    ('executor = "ray"\nray-address = "no port"\n', "ray-address"),
])
def test_an_executor_it_cannot_use_is_an_error_at_its_line(project, keys, message):
    text = PLAN.replace("max-dispatches = 2\n", "max-dispatches = 2\n" + keys)
    err = only_error(project, text)
    assert message in err.message, err.message
    assert err.line == lineno(text, keys.splitlines()[-1].split(" = ")[0] + " = ")


def test_node_labels_say_where_a_cluster_may_run_a_subtask(project):
    text = PLAN.replace('id = "fix-mean"\n', 'id = "fix-mean"\nnode-labels = {pool = "big", "example.com/zone" = "a-1"}\n', 1)
    plan = load_plan(CATALOG, write(project, text))
    assert plan.subtask("fix-mean").node_labels == {"pool": "big", "example.com/zone": "a-1"}
    assert plan.subtask("document-mean").node_labels == {}


@pytest.mark.parametrize("labels", ['{pool = "in(a,b)"}', '{"bad key!" = "x"}', '{pool = ""}'])
def test_a_node_label_that_is_no_label_is_an_error_at_its_line(project, labels):
    text = PLAN.replace('id = "fix-mean"\n', f'id = "fix-mean"\nnode-labels = {labels}\n', 1)
    err = only_error(project, text)
    assert "is not a label" in err.message and err.line == lineno(text, "node-labels")


def test_inline_errors_from_the_task_loader_name_the_plan_lines(project):
    text = PLAN.replace('files-whitelist = ["README.md"]', 'files-whitelist = ["../README.md"]')
    err = only_error(project, text)
    assert err.path.endswith("plan.toml") and err.line == lineno(text, "../README.md")
    assert "`..` component" in err.message


def test_plan_source_indexes_sub_tables_of_each_subtask():
    src = TomlSource("p.toml", PLAN)
    assert src.line_of(("subtask", 1, "scope", "files-whitelist", 0)) == lineno(PLAN, "README.md\"]")
    assert src.line_of(("subtask", 1, "agent", "script")) == lineno(PLAN, 'script = "doc.script.toml"')
    assert src.line_of(("subtask", 0, "file")) == lineno(PLAN, "file = ")
    assert src.line_of(("plan", "reviewer", "api-base")) == lineno(PLAN, "api-base")


# --- every validation error, at its line -------------------------------------


def test_duplicate_subtask_id(project):
    text = PLAN + inline("fix-mean", 3, ["docs/**"])
    err = only_error(project, text)
    assert err.line == lineno(text, 'id = "fix-mean"', 2)
    first = lineno(text, 'id = "fix-mean"')
    assert err.message == f"subtask id `fix-mean` is already used on line {first}"


def test_both_file_and_inline_task(project):
    text = PLAN.replace('file = "tasks/fix-mean.toml"\n', 'file = "tasks/fix-mean.toml"\n[subtask.body]\ntext = "x"\n')
    err = only_error(project, text)
    assert err.line == lineno(text, "file = ")
    assert "subtask `fix-mean` has both `file` and inline task tables ([subtask.body])" in err.message


def test_neither_file_nor_inline_task(project):
    text = PLAN + '\n[[subtask]]\nid = "empty"\nsequence = 3\n'
    err = only_error(project, text)
    assert err.line == lineno(text, "[[subtask]]", 3)
    assert "subtask `empty` has no task" in err.message


def test_unknown_role_inline(project):
    text = PLAN + inline("audit", 3, [], role="nobody")
    err = only_error(project, text)
    assert err.line == lineno(text, 'role = "nobody"') and "unknown role `nobody`" in err.message


def test_unknown_role_in_a_task_file_names_the_task_files_line(project):
    (project / "tasks/fix-mean.toml").write_text(TASK_FILE.replace('role = "edit-local"', 'role = "nobody"'))
    err = only_error(project, PLAN)
    assert err.path.endswith("fix-mean.toml") and err.line == 3 and "unknown role `nobody`" in err.message


def test_git_ops_is_not_spawnable(project):
    text = PLAN + inline("merge", 3, [], role="git-ops")
    err = only_error(project, text)
    assert err.line == lineno(text, 'role = "git-ops"') and "not spawnable" in err.message


def test_missing_agent_inline(project):
    text = PLAN + inline("noagent", 3, ["docs/**"], agent=False)
    err = only_error(project, text)
    assert err.line == lineno(text, "[[subtask]]", 3)
    assert err.message == "subtask `noagent` has no [subtask.agent] table: say which backend runs it"


def test_missing_agent_in_a_task_file(project):
    start, end = TASK_FILE.index("[agent]"), TASK_FILE.index("[body]")
    (project / "tasks/fix-mean.toml").write_text(TASK_FILE[:start] + TASK_FILE[end:])
    err = only_error(project, PLAN)
    assert err.path.endswith("plan.toml") and err.line == lineno(PLAN, "file = ")
    assert "has no [agent] table" in err.message


def test_missing_task_file(project):
    text = PLAN.replace("tasks/fix-mean.toml", "tasks/nope.toml")
    err = only_error(project, text)
    assert err.line == lineno(text, "file = ") and "task file tasks/nope.toml does not exist" in err.message


def test_duplicate_explicit_agent_id(project):
    text = PLAN + inline("one", 3, ["docs/a.md"], agent_id="ag-same") + inline("two", 3, ["docs/b.md"], agent_id="ag-same")
    err = only_error(project, text)
    assert err.line == lineno(text, 'agent-id = "ag-same"', 2)
    assert err.message.startswith("subtask `two`: agent id `ag-same` is also used by subtask `one`")


def test_an_explicit_agent_id_of_a_task_file_clashing_with_an_inline_one(project):
    text = PLAN + inline("two", 3, ["docs/b.md"], agent_id="ag-fix-mean")
    err = only_error(project, text)
    assert err.line == lineno(text, 'agent-id = "ag-fix-mean"') and "also used by subtask `fix-mean`" in err.message


def test_the_same_task_file_twice_collides_on_its_agent_id(project):
    text = PLAN + '\n[[subtask]]\nid = "again"\nsequence = 3\nfile = "tasks/fix-mean.toml"\n'
    err = only_error(project, text)
    assert err.line == lineno(text, "file = ", 2) and "agent id `ag-fix-mean` is also used by subtask `fix-mean`" in err.message


def test_uses_an_unknown_id(project):
    text = PLAN.replace('uses = ["fix-mean"]', 'uses = ["fix-mean", "nobody"]')
    err = only_error(project, text)
    assert err.line == lineno(text, "uses = ")
    assert err.message.startswith("subtask `document-mean` uses `nobody`, which is not a subtask of this plan")


@pytest.mark.parametrize("seq", [2, 3])
def test_uses_a_same_or_later_sequence(project, seq):
    text = PLAN + inline("later", seq, ["docs/**"])
    text = text.replace('uses = ["fix-mean"]', 'uses = ["fix-mean", "later"]')
    err = only_error(project, text)
    assert err.line == lineno(text, "uses = ")
    assert err.message == (f"subtask `document-mean` (sequence 2) uses `later` (sequence {seq}): "
                           "outputs come only from subtasks with a smaller sequence")


def test_uses_itself_and_twice(project):
    text = PLAN.replace('uses = ["fix-mean"]', 'uses = [\n  "fix-mean",\n  "fix-mean",\n  "document-mean",\n]')
    errs = errors(project, text)
    assert [(e.line, e.message) for e in errs] == [
        (lineno(text, '"fix-mean",', 2), "subtask `document-mean` lists `fix-mean` twice in `uses`"),
        (lineno(text, '"document-mean",'), "subtask `document-mean` uses its own output"),
    ]


def test_two_parallel_writers_are_refused_naming_both(project):
    text = PLAN + inline("api", 3, ["docs/api.md", "src/**"]) + inline("calc", 3, ["src/calc/**"])
    err = only_error(project, text)
    assert err.line == lineno(text, '["src/calc/**"]')
    assert err.message == (
        "subtasks `api` and `calc` both run in sequence 3 and may write the same paths: "
        "`src/**` (of `api`) overlaps `src/calc/**` (of `calc`); give them different sequences or disjoint write scopes"
    )


def test_a_parallel_writer_from_a_task_file_points_at_its_file_line(project):
    text = PLAN + inline("tests-too", 1, ["tests/test_calc.py"])
    err = only_error(project, text)
    assert err.line == lineno(text, '["tests/test_calc.py"]')
    assert "`tests/**` (of `fix-mean`) overlaps `tests/test_calc.py` (of `tests-too`)" in err.message


def test_the_same_globs_in_different_sequences_are_fine(project):
    text = PLAN + inline("a", 3, ["src/**"]) + inline("b", 4, ["src/**"])
    assert [s.id for s in load_plan(CATALOG, write(project, text)).subtasks] == ["fix-mean", "document-mean", "a", "b"]


def test_disjoint_literal_files_in_parallel_are_fine(project):
    text = PLAN + inline("a", 3, ["src/a.py"]) + inline("b", 3, ["src/b.py"]) + inline("c", 3, ["src/ab"])
    assert len(load_plan(CATALOG, write(project, text)).subtasks) == 5


def test_read_only_roles_write_nothing_and_overlap_nobody(project):
    text = PLAN + inline("look", 1, [], role="explorer") + inline("audit", 1, [], role="read-only")
    assert len(load_plan(CATALOG, write(project, text)).subtasks) == 4


def test_denylists_do_not_reduce_overlap(project):
    text = PLAN + inline("a", 3, ["src/**"]) + inline("b", 3, ["src/gen/**"])
    text = text.replace('files-whitelist = ["src/**"]', 'files-whitelist = ["src/**"]\nfiles-denylist = ["src/gen/**"]')
    assert "overlaps" in only_error(project, text).message


@pytest.mark.parametrize("a,b,overlap", [
    ("src/calc/**", "src/**", True),
    ("src/**", "src/calc/**", True),
    ("src/a.py", "src/b.py", False),
    ("src/a", "src/ab", False),
    ("src", "src/a.py", True),  # a literal glob naming a folder covers what is inside it
    ("src/a.py", "src/*.py", True),  # conservative: cut at the first wildcard
    ("src/*/x.py", "src/*/y.py", True),
    ("src/*.py", "docs/*.md", False),
    ("**/*.md", "src/a.py", True),  # a leading wildcard overlaps everything
    ("*", "deep/down/file", True),
    ("[ab]/x", "c/y", True),
    ("./src/a.py", "src/a.py/", True),  # normalised first
    ("README.md", "readme.md", True),  # case-insensitive file systems exist
    ("README.md", "docs/README.md", False),
])
def test_glob_overlap_rule(a, b, overlap):
    assert globs_overlap(a, b) is overlap and globs_overlap(b, a) is overlap


def test_many_errors_are_reported_together_in_line_order(project):
    text = PLAN.replace('goal = "Fix calc.mean and document it."', 'goal = " "')
    text = text.replace('uses = ["fix-mean"]', 'uses = ["ghost"]')
    text += inline("fix-mean", 3, ["docs/**"]) + inline("x", 3, ["docs/x.md"], role="nobody")
    errs = errors(project, text)
    assert [(e.line, e.message.split(":")[0]) for e in errs] == [
        (lineno(text, 'goal = " "'), "the goal is empty"),
        (lineno(text, "uses = "), "subtask `document-mean` uses `ghost`, which is not a subtask of this plan (subtasks"),
        (lineno(text, 'id = "fix-mean"', 2), "subtask id `fix-mean` is already used on line 17"),
        (lineno(text, 'role = "nobody"'), "unknown role `nobody` (roles"),
    ]
    assert all(e.path.endswith("plan.toml") for e in errs)


@pytest.mark.parametrize("old,new,needle,message", [
    ("max-dispatches = 2", "max-dispatches = 2\ncolour = \"red\"", "colour", "unknown key `colour` in `plan`"),
    ('model = "openai/gpt-4.1"', 'model = "openai/gpt-4.1"\ntemperature = 0', "temperature", "unknown key `temperature` in `plan.reviewer`"),
    ('sequence = 1', 'sequence = 1\npriority = 2', "priority", "unknown key `priority` in `subtask[0]`"),
    ('files-whitelist = ["README.md"]', 'files-whitelist = ["README.md"]\nfiles-greylist = []', "greylist",
     "unknown key `files-greylist` in `subtask[1].scope`"),
    ('backend = "builtin"', 'backend = "builtin"\ngpu = true', "gpu", "unknown key `gpu` in `subtask[1].agent`"),
    ("[plan]", 'version = 2\n[plan]', "version", "unknown key `version` (a plan has `[plan]` and `[[subtask]]`)"),
])
def test_unknown_keys_are_errors_at_their_line(project, old, new, needle, message):
    text = PLAN.replace(old, new, 1)
    err = only_error(project, text)
    assert (err.line, err.message) == (lineno(text, needle), message)


@pytest.mark.parametrize("old,new,needle,words", [
    ("max-dispatches = 2", "max-dispatches = 11", "max-dispatches", "less than or equal to 10"),
    ("max-dispatches = 2", "concurrency = 0", "concurrency", "greater than or equal to 1"),
    ("max-dispatches = 2", "max-replans = 6", "max-replans", "less than or equal to 5"),
    ('script = "planner.script.toml"', "max-retries = 9", "max-retries", "less than or equal to 5"),
    ('script = "planner.script.toml"\n', "", 'model = "scripted/planner"', "`script` goes with a `scripted/<name>` model"),
    ('checks = ["pytest -q tests"]', 'checks = ["  "]', "checks", "non-empty shell command"),
    ('success-criteria = ["the tests pass", "README documents mean"]', "success-criteria = []", "success-criteria", "at least 1 item"),
    ('api-base = "http://127.0.0.1:8000/v1"', 'api-base = "ftp://x"', "api-base", "http(s) URL"),
    ('id = "fix-mean"', 'id = "Fix_Mean"', "Fix_Mean", "should match pattern"),
    ("sequence = 1", "sequence = 0", "sequence = 0", "greater than or equal to 1"),
])
def test_plan_fields_are_checked_at_their_line(project, old, new, needle, words):
    text = PLAN.replace(old, new, 1)
    errs = errors(project, text)
    assert any(e.line == lineno(text, needle) and words in e.message for e in errs), [str(e) for e in errs]


def test_a_missing_planner_script_and_toml_syntax(project):
    err = only_error(project, PLAN.replace("planner.script.toml", "gone.toml"))
    assert err.line == lineno(PLAN, "planner.script.toml") and "script file gone.toml does not exist" in err.message
    err = only_error(project, PLAN.replace("sequence = 2", "sequence = = 2"))
    assert err.line == lineno(PLAN, "sequence = 2") and err.message.startswith("invalid TOML")


def test_a_plan_without_subtasks(project):
    err = only_error(project, '[plan]\ngoal = "g"\nsuccess-criteria = ["c"]\n')
    assert err.line == 1 and "at least one `[[subtask]]`" in err.message


# --- render, save, and the planner's JSON ------------------------------------------


def plan_data() -> dict:
    return {
        "plan": {
            "goal": "Corriger calc.mean — « moyenne » ✓",
            "success-criteria": ["the tests pass", "README documents mean"],
            "checks": ["pytest -q tests"],
            "planner": {"model": "scripted/planner", "script": "planner.script.toml", "max-retries": 1},
        },
        "subtask": [
            {"id": "fix-mean", "sequence": 1, "file": "tasks/fix-mean.toml"},
            {
                "id": "document-mean", "sequence": 2, "uses": ["fix-mean"],
                "task": {"role": "edit-local", "goal": "Document mean in README.md."},
                "scope": {"files-whitelist": ["README.md"]},
                "verification": {"test-command": "pytest -q tests", "check-commands": ["true"]},
                "agent": {"backend": "builtin", "model": "scripted/doc", "script": "doc.script.toml",
                          "limits": {"timeout-s": 120}},
                "body": {"text": '\nLine one: "quoted" and """triple""" and a \\ backslash.\n\tTabbed — ünïcödé 🙂\nLast"'},
            },
        ],
    }


def test_render_round_trips_and_loads(project):
    data = plan_data()
    text = render_plan(data)
    assert text.splitlines()[0].startswith("#:schema ")
    assert tomllib.loads(text) == data
    assert text.index("[plan]") < text.index("[plan.planner]") < text.index("[[subtask]]") < text.index("[subtask.task]")
    assert 'text = """' in text  # a body with line breaks stays readable
    plan = plan_from_data(CATALOG, tomllib.loads(text), TomlSource("rendered.toml", text), project)
    assert plan.subtasks[1].task.body == data["subtask"][1]["body"]["text"]
    assert render_plan(plan.data) == text


@pytest.mark.parametrize("body", ["a\r\nb", "\n\nleading", "ends with quotes\"\"", "x" * 300, "\x01\x7f", "tab\there", ""])
def test_awkward_strings_round_trip(body):
    data = {"plan": {"goal": body}, "subtask": [{"id": "a", "sequence": 1, "body": {"text": body}, "uses": [body]}]}
    assert tomllib.loads(render_plan(data)) == data


def test_render_leaves_out_nulls_and_refuses_them_in_arrays():
    data = plan_data()
    data["plan"]["reviewer"] = None
    data["subtask"][0]["uses"] = []
    expected = plan_data()
    expected["subtask"][0]["uses"] = []
    assert tomllib.loads(render_plan(data)) == expected
    data["subtask"][0]["uses"] = ["a", None]
    with pytest.raises(ValueError, match=r"subtask\[0\].uses\[1\]"):
        render_plan(data)


def test_save_round_trips_through_load_plan(project):
    path = save_plan(project / "saved.toml", plan_data())
    assert tomllib.loads(path.read_text(encoding="utf-8")) == plan_data()
    plan = load_plan(CATALOG, path)
    assert plan.goal == "Corriger calc.mean — « moyenne » ✓" and [s.id for s in plan.subtasks] == ["fix-mean", "document-mean"]
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_save_refuses_to_overwrite_unless_asked(project):
    path = project / "plan.toml"
    path.write_text("keep me\n")
    with pytest.raises(PlanExists, match="already exists"):
        save_plan(path, plan_data())
    assert path.read_text() == "keep me\n"
    assert [p.name for p in project.iterdir() if p.name.startswith(".")] == []
    save_plan(path, plan_data(), overwrite=True)
    assert tomllib.loads(path.read_text(encoding="utf-8")) == plan_data()


def test_a_planners_json_is_validated_with_lines_of_its_rendering(project):
    data = plan_data()
    data["subtask"][1]["uses"] = ["nobody"]
    with pytest.raises(ManifestErrors) as info:
        plan_from_json(CATALOG, data, project, display="planner-reply.toml")
    (err,) = info.value.errors
    assert err.path == "planner-reply.toml" and err.line == lineno(render_plan(data), "uses = ")
    plan = plan_from_json(CATALOG, plan_data(), project)
    assert plan.path is None and plan.subtasks[1].task.path == project / "plan.toml"
    assert plan.subtasks[1].task.agent.script == (project / "doc.script.toml").resolve()


# --- lint and schema -----------------------------------------------------------


def test_lint_recognises_plan_files(project):
    write(project, PLAN)
    report = lint(CATALOG, [project])
    assert report.errors == [] and report.plans == 1 and report.tasks == 1  # tasks/fix-mean.toml; scripts are skipped
    write(project, PLAN.replace('uses = ["fix-mean"]', 'uses = ["ghost"]'), "broken-plan.toml")
    report = lint(CATALOG, [project])
    assert report.plans == 2
    assert [(Path(e.path).name, e.line) for e in report.errors] == [("broken-plan.toml", lineno(PLAN, "uses = "))]


def test_the_plan_schema_is_written_and_committed():
    schema = manifest_schemas()["plan.schema.json"]
    assert schema["$id"].endswith("/plan.schema.json") and schema["title"] == "plan.toml"
    assert set(schema["properties"]) == {"plan", "subtask"} and schema["additionalProperties"] is False
    subtask = schema["$defs"]["SubtaskEntry"]["properties"]
    assert {"id", "sequence", "uses", "file", "task", "scope", "verification", "output", "network", "agent", "node-labels",
            "body"} == set(subtask)
    assert (REPO / "schemas/plan.schema.json").read_text() == render(schema)
