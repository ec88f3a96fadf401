"""runtime.spawn.scratch_writes against real worktrees: new files outside the scope go, nothing else does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.policy.document import PolicyDocument, seal
from runtime.spawn.scratch_writes import scratch_note, throw_away_scratch
from runtime.workspace.git import Git
from tests.support import user_repo


def _policy(*globs: str) -> PolicyDocument:
    return seal(role="test", root="/", gates=[{"kind": "write-whitelist", "params": {"globs": list(globs)}}])


@pytest.fixture
def agent(tmp_path: Path):
    repo = user_repo(tmp_path, {"src/app.py": "x = 1\n", "README.md": "readme\n", "tests/test_app.py": "",
                                ".gitignore": ".coverage\n"})
    git = Git(repo)
    worktree = tmp_path / "wt"
    base = git.add_worktree(worktree, "agent/a1")
    return git, worktree, base


def test_new_files_outside_the_scope_are_deleted_and_named(agent, tmp_path):
    git, wt, base = agent
    (wt / "src/app.py").write_text("x = 2\n")  # in scope: stays
    (wt / "src/new.py").write_text("y = 1\n")  # in scope: stays
    (wt / "file.txt.part").write_text("scratch")  # a doctest's scratch at the top
    (wt / "coverage" / "tmp").mkdir(parents=True)
    (wt / "coverage" / "tmp" / "c8.json").write_text("{}")
    (wt / ".coverage").write_text("ignored")  # ignored by the base: not a change, left alone
    (wt / "README.md").write_text("changed\n")  # a tracked file outside the scope: verify rejects it
    (wt / "tests" / "test_app.py").unlink()  # deleted outside the scope: verify rejects it
    (tmp_path / "outside").mkdir()
    (wt / "link").symlink_to(tmp_path / "outside")  # a new symlink: deleted, never followed
    thrown = throw_away_scratch(git, wt, base, _policy("src/**")).thrown
    assert sorted(thrown) == ["coverage/tmp/c8.json", "file.txt.part", "link"]
    assert not (wt / "file.txt.part").exists() and not (wt / "coverage/tmp/c8.json").exists()
    assert not os.path.lexists(wt / "link") and (tmp_path / "outside").is_dir()
    assert (wt / "src/new.py").exists() and (wt / "src/app.py").read_text() == "x = 2\n"
    assert (wt / ".coverage").exists() and (wt / "README.md").read_text() == "changed\n"
    note = scratch_note(thrown)
    assert note.startswith("Thrown away 3 new file(s) outside your write scope") and "`file.txt.part`" in note


def test_a_file_reached_through_a_symlinked_folder_is_left_alone(agent, tmp_path):
    """Git lists no path through a symlink; and were one listed, deleting never follows it."""
    from runtime.spawn.scratch_writes import _delete
    git, wt, base = agent
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "keep.txt").write_text("host file")
    (wt / "via").symlink_to(tmp_path / "victim")
    assert _delete(wt, "via/keep.txt") is False
    assert (tmp_path / "victim" / "keep.txt").read_text() == "host file"


def test_nothing_is_outside_without_a_write_whitelist(agent):
    git, wt, base = agent
    (wt / "anything.txt").write_text("x")
    assert seal(role="test", root="/").write_globs() is None
    assert throw_away_scratch(git, wt, base, seal(role="test", root="/")).thrown == []
    assert (wt / "anything.txt").exists()


def test_a_scope_of_nothing_throws_every_new_file_away(agent):
    git, wt, base = agent
    (wt / "new.txt").write_text("x")
    assert throw_away_scratch(git, wt, base, _policy()).thrown == ["new.txt"]


def test_a_tree_with_a_nested_repository_is_left_for_verify_to_reject(agent):
    """Listing the changes would clear the nested repository first, and verify would no longer see it."""
    import subprocess
    git, wt, base = agent
    (wt / "vendor").mkdir()
    subprocess.run(["git", "init", "-q", str(wt / "vendor")], check=True)
    (wt / "scratch.txt").write_text("x")
    assert throw_away_scratch(git, wt, base, _policy("src/**")).thrown == []
    assert (wt / "vendor" / ".git").is_dir() and (wt / "scratch.txt").exists()


def test_the_listing_is_handed_to_verify_only_when_nothing_was_deleted(agent):
    """Verify takes the scratch pass's listing instead of walking the tree again, but never a stale one."""
    from runtime.workspace.changes import changed_paths
    git, wt, base = agent
    (wt / "src/app.py").write_text("x = 2\n")
    kept = throw_away_scratch(git, wt, base, _policy("src/**"))
    assert kept.thrown == [] and kept.changes == changed_paths(git, wt, base)
    (wt / "scratch.txt").write_text("x")
    thrown = throw_away_scratch(git, wt, base, _policy("src/**"))
    assert thrown.thrown == ["scratch.txt"] and thrown.changes is None
