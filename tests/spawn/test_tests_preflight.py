"""A task whose tests verify cannot judge never runs its agent: refused before anything is made, in one line
at the task's place (`runtime.spawn.preflight.preflight_tests`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import load_task
from runtime.spawn.preflight import preflight_tests
from runtime.workspace.git import Git
from tests.conftest import REPO
from tests.support import git

TASK = """[task]
role = "edit-local"
agent-id = "ag-x"
goal = "Fix it."
[scope]
files-whitelist = ["src/**"]
[verification]
{verification}
check-commands = []
[agent]
backend = "command"
command = ["true"]
[body]
text = "Fix it."
"""


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "trunk", str(root))
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "package.json").write_text('{"scripts": {"test": "node --test", "lint": "eslint . | tee out"}}\n')
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def check(repo: Path, verification: str, *, sandboxed: bool = True, state: Path | None = None) -> None:
    path = repo.parent / "task.toml"
    path.write_text(TASK.format(verification=verification))
    task = load_task(Catalog(REPO), path)
    git_ = Git(repo)
    preflight_tests(task, git_, git_.resolve("HEAD"), sandboxed=sandboxed, state=state)


@pytest.mark.parametrize("verification", [
    'test-command = "pytest -q tests"',
    'test-command = "python -m unittest -v"',
    'test-command = "npm test"',  # the base's package.json: node --test
    'test-command = "make test"\ntest-results = "exit-code"',
    'test-command = "pytest -q tests && cat \\"$HOME/ran\\""',
])
def test_a_command_verify_can_judge_passes(repo, verification):
    check(repo, verification)


@pytest.mark.parametrize("verification,line,words", [
    ('test-command = "make test"', 8, "no test runner the runtime can read was found in `make test`"),
    ('test-command = "pytest | tee out"', 8, "it uses `|`"),
    ('test-command = "npm run lint"', 8, "the base's package.json script `lint` (`eslint . | tee out`) cannot be read"),
    ('test-command = "npm run build"', 8, "the script `build`, which the base's package.json does not define"),
    ('test-command = "make test"\ntest-results = "exit-code"\ntest-count-min = 3', 10,
     "`test-count-min` counts tests, which `test-results = \"exit-code\"` does not read"),
])
def test_a_command_verify_cannot_judge_is_refused_at_its_line_saying_what_would_do(repo, verification, line, words):
    with pytest.raises(ManifestError) as caught:
        check(repo, verification)
    assert caught.value.line == line and words in caught.value.message, caught.value
    if "exit-code" not in verification:
        assert 'set `test-results = "exit-code"`' in caught.value.message


def test_hidden_tests_in_a_folder_outside_the_repository_pass(repo, tmp_path):
    hidden = tmp_path / "oracle"
    hidden.mkdir()
    check(repo, f'test-command = "pytest -q tests"\nhidden-tests = "{hidden}"', state=tmp_path / "state")


@pytest.mark.parametrize("where,words", [
    ("missing", "is not a folder"),
    ("repo", "lies in or around the repository"),
    ("state", "lies in or around the state folder"),
    ("/usr/share", "a system folder every sandbox shows"),
    ("runtime", "which every sandbox shows read-only"),
])
def test_hidden_tests_the_agent_could_read_or_that_are_not_there_are_refused(repo, tmp_path, where, words):
    folder = {"missing": tmp_path / "nowhere", "repo": repo / "src", "state": tmp_path / "state" / "oracle",
              "/usr/share": Path("/usr/share"), "runtime": REPO / "manifests"}[where]
    if where == "state":
        folder.mkdir(parents=True)
    with pytest.raises(ManifestError) as caught:
        check(repo, f'test-command = "pytest -q tests"\nhidden-tests = "{folder}"', state=tmp_path / "state")
    assert caught.value.line == 9 and words in caught.value.message, caught.value


def test_hidden_tests_need_the_os_sandbox(repo, tmp_path):
    hidden = tmp_path / "oracle"
    hidden.mkdir()
    with pytest.raises(ManifestError) as caught:
        check(repo, f'test-command = "pytest -q tests"\nhidden-tests = "{hidden}"', sandboxed=False)
    assert "hidden tests need the OS sandbox" in caught.value.message


def test_hidden_tests_may_be_a_revision_of_the_repository_and_a_missing_one_is_refused(repo):
    git(repo, "branch", "oracle")
    check(repo, 'test-command = "pytest -q tests"\nhidden-tests = "oracle"')
    with pytest.raises(ManifestError) as caught:
        check(repo, 'test-command = "pytest -q tests"\nhidden-tests = "no-such-branch"')
    assert "neither an absolute path nor a revision" in caught.value.message
