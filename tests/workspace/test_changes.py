"""runtime.workspace.changes against real worktrees: every kind of change an agent can make."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from runtime.workspace.changes import Change, WorkspaceMissing, changed_paths
from runtime.workspace.git import Git
from runtime.workspace.hazards import KINDS, NestedRepositories
from tests.support import user_git, user_repo

ODD_NAME = "we ird\nname-ü ✓.txt"


sh = user_git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return user_repo(tmp_path, {
        "src/app.py": "x = 1\n",
        "src/util.py": "def util():\n    return 1\n",
        "docs/guide.md": "".join(f"guide line {i}\n" for i in range(20)),
        "old.txt": "to be deleted\n",
        ".gitignore": "*.log\n",
    })


@pytest.fixture
def agent(repo, tmp_path):
    """(git, worktree, base) for a fresh agent worktree."""
    git = Git(repo)
    worktree = tmp_path / "wt"
    base = git.add_worktree(worktree, "agent/a1")
    return git, worktree, base


def by_path(changes: list[Change]) -> dict[str, Change]:
    return {c.path: c for c in changes}


def test_no_changes(agent):
    assert changed_paths(*agent) == []


def test_every_kind_of_change(agent):
    git, wt, base = agent
    (wt / "src" / "app.py").write_text("x = 2\n")
    (wt / "new" / "deep" / "er").mkdir(parents=True)
    (wt / "new" / "deep" / "er" / "file.py").write_text("new = True\n")
    (wt / "old.txt").unlink()
    (wt / "docs" / "guide.md").rename(wt / "docs" / "manual.md")
    (wt / "src" / "util.py").unlink()
    (wt / "src" / "util.py").symlink_to("app.py")
    (wt / ODD_NAME).write_text("odd\n")

    changes = changed_paths(git, wt, base)
    assert by_path(changes) == {
        "docs/manual.md": Change("docs/manual.md", "renamed", old_path="docs/guide.md"),
        "new/deep/er/file.py": Change("new/deep/er/file.py", "added"),
        "old.txt": Change("old.txt", "deleted"),
        "src/app.py": Change("src/app.py", "modified"),
        "src/util.py": Change("src/util.py", "typechange", symlink_target="app.py", escapes=False),
        ODD_NAME: Change(ODD_NAME, "added"),
    }
    assert sh(wt, "status", "--porcelain", "--untracked-files=all").count("??") == 3  # the real index is untouched


def test_committed_changes_on_the_branch_count_too(agent):
    git, wt, base = agent
    (wt / "committed.txt").write_text("c\n")
    git.commit_all(wt, "first attempt")
    (wt / "later.txt").write_text("l\n")
    assert [c.path for c in changed_paths(git, wt, base)] == ["committed.txt", "later.txt"]


def test_edits_hidden_from_status_by_index_flags_are_found(agent):
    git, wt, base = agent
    sh(wt, "update-index", "--assume-unchanged", "src/app.py")
    sh(wt, "update-index", "--skip-worktree", "src/util.py")
    (wt / "src" / "app.py").write_text("x = 666\n")
    (wt / "src" / "util.py").write_text("evil = 1\n")
    assert sh(wt, "status", "--porcelain") == ""  # plain status sees nothing
    assert [c.path for c in changed_paths(git, wt, base)] == ["src/app.py", "src/util.py"]


def test_symlinks_out_of_the_worktree_or_into_git_escape(agent, repo):
    git, wt, base = agent
    (wt / "etc").symlink_to("/etc")
    (wt / "dot-git").symlink_to(".git")
    (wt / "hooks").symlink_to(repo / ".git" / "hooks")
    (wt / "up").symlink_to("src/../../..")
    (wt / "chain").symlink_to("etc")
    (wt / "inside").symlink_to("src/app.py")
    (wt / "dangling").symlink_to("src/nowhere")
    changes = by_path(changed_paths(git, wt, base))
    assert changes["etc"] == Change("etc", "added", symlink_target="/etc", escapes=True)
    assert changes["dot-git"].escapes and changes["dot-git"].symlink_target == ".git"
    assert changes["hooks"].escapes and changes["up"].escapes and changes["chain"].escapes
    assert not changes["inside"].escapes and changes["inside"].symlink_target == "src/app.py"
    assert not changes["dangling"].escapes


def test_nested_repository_is_reported_and_escapes(agent):
    git, wt, base = agent
    nested = wt / "src" / "vendor"
    sh(wt, "init", "-q", "-b", "x", str(nested))
    (nested / "hidden.py").write_text("hidden = 1\n")
    sh(nested, "-c", "user.name=n", "-c", "user.email=n@n", "add", "-A")
    sh(nested, "-c", "user.name=n", "-c", "user.email=n@n", "commit", "-qm", "n")
    sh(wt, "init", "-q", "-b", "x", str(wt / "empty"))  # no commit: git add would fail on it
    (wt / "empty" / "hidden.py").write_text("hidden = 2\n")
    with pytest.raises(NestedRepositories) as refused:  # before any git command reads the tree
        changed_paths(git, wt, base)
    assert refused.value.paths == ["empty", "src/vendor"]
    reason = KINDS["nested-repository"]
    assert changed_paths(git, wt, base, clear_nested=True) == [
        Change("empty", "added", escapes=True, reason=reason), Change("src/vendor", "added", escapes=True, reason=reason)]
    # Their `.git` went before git looked; their files stay, for the rejection to name.
    assert not (nested / ".git").exists() and not (wt / "empty" / ".git").exists()
    assert (nested / "hidden.py").exists()


def test_ignored_files_are_not_changes(agent):
    git, wt, base = agent
    (wt / "debug.log").write_text("noise\n")
    (wt / "src" / "deep.log").write_text("noise\n")
    assert changed_paths(git, wt, base) == []


def test_gitignore_trick_is_reported(agent):
    git, wt, base = agent
    (wt / ".gitignore").write_text("*.log\nsecret.txt\n")
    (wt / "secret.txt").write_text("exfiltrated\n")
    (wt / "debug.log").write_text("noise\n")
    assert [c.path for c in changed_paths(git, wt, base)] == [".gitignore", "debug.log", "secret.txt"]


def test_self_ignoring_gitignore_in_a_new_folder_is_reported(agent):
    git, wt, base = agent
    (wt / "stash").mkdir()
    (wt / "stash" / ".gitignore").write_text("*\n")
    (wt / "stash" / "payload.py").write_text("import os\n")
    (wt / "root.log").write_text("outside the new rule's folder\n")
    assert sh(wt, "status", "--porcelain") == ""  # invisible to plain status
    assert [c.path for c in changed_paths(git, wt, base)] == ["stash/.gitignore", "stash/payload.py"]


def test_a_self_ignoring_cache_in_a_folder_the_base_ignores_is_not_a_change(agent):
    git, wt, base = agent
    (wt / ".gitignore").write_text("*.log\n.pytest_cache/\n")
    git.commit_all(wt, "ignore pytest's cache")  # the base of this test's check
    cache = wt / ".pytest_cache"
    (cache / "v" / "cache").mkdir(parents=True)
    (cache / ".gitignore").write_text("# Created by pytest automatically.\n*\n")  # what pytest writes
    (cache / "v" / "cache" / "lastfailed").write_text("{}\n")
    (wt / "stash").mkdir()
    (wt / "stash" / ".gitignore").write_text("*\n")
    (wt / "stash" / "payload.py").write_text("import os\n")
    head = sh(wt, "rev-parse", "HEAD")
    assert [c.path for c in changed_paths(git, wt, head)] == ["stash/.gitignore", "stash/payload.py"]


def test_a_nested_gitignore_reveals_only_its_own_folder(agent):
    git, wt, base = agent
    (wt / "docs" / ".gitignore").write_text("draft.md\n")
    (wt / "docs" / "draft.md").write_text("hidden\n")
    (wt / "docs" / "build.log").write_text("ignored by the base rules, under the changed rule\n")
    (wt / "top.log").write_text("ignored by the base rules, elsewhere\n")
    assert [c.path for c in changed_paths(git, wt, base)] == ["docs/.gitignore", "docs/build.log", "docs/draft.md"]


def test_info_exclude_written_after_the_worktree_was_made_reveals_ignored_files(agent, repo):
    git, wt, base = agent
    time.sleep(0.01)
    (repo / ".git" / "info" / "exclude").write_text("secret.txt\n")
    (wt / "secret.txt").write_text("exfiltrated\n")
    (wt / "debug.log").write_text("noise\n")
    assert [c.path for c in changed_paths(git, wt, base)] == ["debug.log", "secret.txt"]


def test_rewritten_or_replaced_git_link_is_reported(agent, tmp_path):
    git, wt, base = agent
    other = tmp_path / "other"
    sh(tmp_path, "init", "-q", "-b", "x", str(other))
    (wt / ".git").write_text(f"gitdir: {other / '.git'}\n")
    (wt / "x.txt").write_text("x\n")
    changes = changed_paths(git, wt, base)  # still read through git's own records
    assert changes == [Change("x.txt", "added"), Change(".git", "modified", escapes=True)]

    (wt / ".git").unlink()
    (wt / ".git").mkdir()
    assert changed_paths(git, wt, base)[-1] == Change(".git", "typechange", escapes=True)


def test_missing_worktree_or_git_link_is_a_workspace_error(agent, repo):
    git, wt, base = agent
    (wt / ".git").unlink()
    with pytest.raises(WorkspaceMissing, match="link"):
        changed_paths(git, wt, base)
    subprocess.run(["rm", "-rf", str(wt)], check=True)
    with pytest.raises(WorkspaceMissing, match="gone") as info:
        changed_paths(git, wt, base)
    assert info.value.kind == "workspace"
    with pytest.raises(WorkspaceMissing, match="not a worktree"):
        changed_paths(git, repo / "src", base)


def test_paths_through_an_any_case_git_folder_are_reported_not_fatal(agent):
    git, wt, base = agent
    for folder in (".GIT", "src/.Git"):
        (wt / folder).mkdir()
        (wt / folder / "config").write_text("[core]\n")
    (wt / ".gitignore").write_text("*.log\nhidden/\n")
    (wt / "hidden" / ".GIT").mkdir(parents=True)
    (wt / "hidden" / ".GIT" / "x.log").write_text("x\n")  # revealed by the .gitignore edit
    (wt / "ok.txt").write_text("fine\n")
    assert changed_paths(git, wt, base) == [
        Change(".GIT/config", "added", escapes=True),
        Change(".gitignore", "modified"),
        Change("hidden/.GIT/x.log", "added", escapes=True),
        Change("ok.txt", "added"),
        Change("src/.Git/config", "added", escapes=True),
    ]
