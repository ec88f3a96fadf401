"""What the attestation tests share: a repository with a person's first commit."""

from __future__ import annotations

from pathlib import Path

from tests.support import git


def person_repo(tmp_path: Path) -> Path:
    """``tmp_path/repo`` on `trunk`, with one commit of a person's (no trailer of the runtime's)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "a person's commit")
    return repo
