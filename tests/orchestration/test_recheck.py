"""The orchestrator's own re-check of work imported from a worker (runtime.orchestration.recheck), on real git."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import pytest

from runtime.manifests.catalog import Catalog
from runtime.manifests.task import load_task
from runtime.orchestration import recheck
from runtime.orchestration.recheck import recheck_imported
from runtime.workspace.git import Git
from tests.conftest import REPO
from tests.support import git

CATALOG = Catalog(REPO)
REPORT = "Summary: a is 2 now.\nFiles changed: src/a.py\n"
# The test and check commands fail if they ever run: the re-check must run none.
TASK = '''[task]
role = "edit-local"
agent-id = "ag-imported"
goal = "Set a to 2."
[scope]
files-whitelist = ["src/**"]
[verification]
test-command = "false"
check-commands = ["false"]
[agent]
backend = "command"
command = ["true"]
[body]
text = "Set a to 2."
'''


class Repo:
    def __init__(self, root: Path) -> None:
        self.path = root / "repo"
        git(root, "init", "-q", "-b", "trunk", str(self.path))
        self.write({"src/a.py": "a = 1\n", "README.md": "# a\n"})
        git(self.path, "add", "-A")
        git(self.path, "commit", "-qm", "base")
        self.base = git(self.path, "rev-parse", "HEAD")
        self.git = Git(self.path)

    def write(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            (self.path / name).write_text(text)

    def work(self, branch: str, files: dict[str, str], start: str | None = None) -> str:
        """A commit on ``branch`` (from ``start``, default the base) changing ``files``; trunk stays checked out."""
        git(self.path, "checkout", "-q", "-b", branch, start or self.base)
        self.write(files)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-qm", f"work on {branch}")
        commit = git(self.path, "rev-parse", "HEAD")
        git(self.path, "checkout", "-q", "trunk")
        return commit

    def worktrees(self) -> list[str]:
        return [line for line in git(self.path, "worktree", "list", "--porcelain").splitlines()
                if line.startswith("worktree ")]


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One repository for the module: each test works on branches of its own."""
    root = tmp_path_factory.mktemp("recheck")
    (root / "task.toml").write_text(TASK)
    return Repo(root), load_task(CATALOG, root / "task.toml")


@pytest.fixture
def repo(shared, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the throwaway checkouts go
    return shared[0]


@pytest.fixture
def task(shared):
    return shared[1]


def run(repo: Repo, task, commit: str, report: str | None = REPORT, base: str | None = None):
    return anyio.run(recheck_imported, repo.git, task, CATALOG, base or repo.base, commit, report)


def test_work_inside_its_scope_with_its_report_passes_and_no_command_runs(repo, task):
    commit = repo.work("agent/ok", {"src/a.py": "a = 2\n"})
    assert run(repo, task, commit) == []


def test_a_change_outside_the_write_scope_is_rejected_naming_the_path(repo, task):
    commit = repo.work("agent/wide", {"src/a.py": "a = 2\n", "README.md": "# changed\n"})
    records = run(repo, task, commit)
    assert [(r.atom, r.kind, r.status) for r in records] == [("scope::files-whitelist", "scope-whitelist", "rejected")]
    assert "`README.md`" in records[0].feedback and "`src/a.py`" not in records[0].feedback


def test_a_report_without_its_required_fields_is_rejected(repo, task):
    commit = repo.work("agent/quiet", {"src/a.py": "a = 2\n"})
    records = run(repo, task, commit, report="Summary: a is 2 now.\n")  # no `Files changed`
    assert [(r.kind, r.status) for r in records] == [("report-fields", "rejected")]
    assert "missing 1 required field(s)" in records[0].feedback and "`files-changed`" in records[0].feedback


def test_a_commit_that_does_not_start_from_the_jobs_base_is_rejected_before_anything_is_checked_out(repo, task):
    git(repo.path, "commit", "-q", "--allow-empty", "-m", "trunk moved")
    moved = git(repo.path, "rev-parse", "HEAD")
    commit = repo.work("agent/old", {"src/a.py": "a = 2\n"})  # branched from the older base
    records = run(repo, task, commit, base=moved)
    assert [(r.atom, r.kind, r.status) for r in records] == [("runtime", "base", "rejected")]
    assert records[0].feedback == (f"the imported commit {commit[:12]} does not start from the job's base "
                                   f"{moved[:12]}")
    assert len(repo.worktrees()) == 1


def test_the_change_is_judged_against_the_jobs_base(repo, task):
    earlier = repo.work("agent/earlier", {"README.md": "# someone else's change\n"})  # outside this task's scope
    commit = repo.work("agent/later", {"src/a.py": "a = 2\n"}, start=earlier)
    assert run(repo, task, commit, base=earlier) == []


def test_the_throwaway_checkout_is_removed_afterwards(repo, task):
    commit = repo.work("agent/clean", {"src/a.py": "a = 2\n"})
    run(repo, task, commit)
    assert len(repo.worktrees()) == 1
    assert list(Path(tempfile.gettempdir()).iterdir()) == []


def test_the_throwaway_checkout_is_removed_when_the_check_fails_to_run(repo, task, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the policy does not compile")

    monkeypatch.setattr(recheck, "compile_document", broken)
    commit = repo.work("agent/broken", {"src/a.py": "a = 2\n"})
    with pytest.raises(RuntimeError, match="does not compile"):
        run(repo, task, commit)
    assert len(repo.worktrees()) == 1
    assert list(Path(tempfile.gettempdir()).iterdir()) == []
