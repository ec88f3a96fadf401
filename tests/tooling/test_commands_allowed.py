"""runtime.tooling.commands_allowed: the gate's answer, in strict mode, for the commands a task is judged by."""

from pathlib import Path

import pytest

from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import PROJECT_FOLDER
from runtime.manifests.role import load_role
from runtime.manifests.task import load_task
from runtime.policy.compile import compile_policy
from runtime.policy.document import STRICT
from runtime.tooling.commands_allowed import Verdict, judge, repository_root, task_command_errors
from tests.conftest import REPO

ASKER = """[role]
name = "asker"
display-name = "asker"
description = "edit-local, and codespell each time a person approves"
use-cases = ["x"]

[capabilities]
extends = "edit-local"

[[params."tools::bash-allowlist".rules]]
program = "codespell"
positionals = ["free..."]
ask = true
"""

TASK = """[task]
role = "asker"
agent-id = "ag-asker"
goal = "Fix it."

[scope]
files-whitelist = ["src/**"]

[verification]
{verification}

[body]
text = "x"
"""


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / PROJECT_FOLDER / "roles").mkdir(parents=True)
    (root / PROJECT_FOLDER / "roles" / "asker.toml").write_text(ASKER)
    (root / "src").mkdir()
    return root


def _task(repo, verification):
    path = repo / "task.toml"
    path.write_text(TASK.format(verification=verification))
    catalog = Catalog(repo / PROJECT_FOLDER)
    return load_task(catalog, path), catalog


def test_the_repository_of_a_project_catalog_is_the_folder_that_holds_it(repo):
    assert repository_root(Catalog(repo / PROJECT_FOLDER)) == (repo / PROJECT_FOLDER).resolve().parent


def test_the_repository_of_a_full_catalog_is_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert repository_root(Catalog(REPO)) == tmp_path.resolve()


def test_judge_answers_for_each_command_in_order(repo):
    catalog = Catalog(repo / PROJECT_FOLDER)
    policy = Policy(compile_policy(load_role(catalog, "asker"), None, repo, catalog, mode=STRICT))
    verdicts = judge(policy, ["pytest -q", "tox -e py311", "codespell src", "pytest -q"], repo)
    # tox: no rule decides it (undecided, asked); codespell: its rule says to ask.
    assert [(v.command, v.verdict, v.undecided) for v in verdicts] == [
        ("pytest -q", "allow", False), ("tox -e py311", "ask", True), ("codespell src", "ask", False),
        ("pytest -q", "allow", False)]
    assert all(isinstance(v, Verdict) and v.reason for v in verdicts)
    assert "`tox`" in verdicts[1].reason


def test_a_task_without_commands_has_nothing_to_judge(tmp_path):
    path = tmp_path / "look.toml"
    path.write_text('[task]\nrole = "explorer"\nagent-id = "ag-look"\ngoal = "Look around."\n\n[body]\ntext = "x"\n')
    catalog = Catalog(REPO)
    task = load_task(catalog, path)
    assert task.fields == {} and task_command_errors(task, catalog, tmp_path) == ([], [])


def test_a_command_a_person_must_approve_is_a_warning_at_its_line_not_an_error(repo):
    task, catalog = _task(repo, 'test-command = "pytest -q"\ncheck-commands = ["flake8 src", "codespell src"]')
    errors, warnings = task_command_errors(task, catalog, repo)
    assert errors == []
    assert warnings == [f"{Path(repo / 'task.toml')}:11: check command `codespell src` needs a person's approval each "
                        "time role `asker` runs it"]


def test_a_refused_test_command_is_an_error_at_its_line_with_the_gate_s_reason(repo):
    task, catalog = _task(repo, 'test-command = "tox -e py311"\ncheck-commands = ["pytest -q"]')
    errors, warnings = task_command_errors(task, catalog, repo)
    assert warnings == []
    (error,) = errors
    assert (error.path, error.line) == (str(repo / "task.toml"), 10)
    assert error.message.startswith("no rule of role `asker` decides the test command `tox -e py311` (strict mode), so "
                                    "its agent could run it only with a person's approval each time: no rule of role "
                                    "`asker` runs `tox`")
