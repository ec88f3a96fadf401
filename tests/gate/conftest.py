"""Policies compiled from the shipped roles, anchored at a real temporary worktree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.gate.policy import Policy
from runtime.policy.build import build_policy
from tests.conftest import REPO

TASK = '''[task]
role = "{role}"
goal = "Test the gate."
{scope}
[body]
text = "x"
'''
EDIT_SCOPE = '''
[scope]
files-whitelist = ["src/**", "tests/**"]
files-denylist = ["src/pkg/generated/**"]

[verification]
test-command = "pytest -q"
check-commands = ["ruff check src"]
'''


@pytest.fixture
def worktree(tmp_path) -> Path:
    root = tmp_path / "wt"
    for folder in ("src/pkg/generated", "tests", "docs", ".git/hooks"):
        (root / folder).mkdir(parents=True)
    (root / "src/pkg/mod.py").write_text("x = 1\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    os.symlink("/etc", root / "src/pkg/escape")
    os.symlink(root / ".git", root / "src/pkg/gitlink")
    return root.resolve()


@pytest.fixture
def policy_for(worktree, tmp_path):
    def make(role: str = "edit-local") -> Policy:
        scope = EDIT_SCOPE if role.startswith("edit") else ""
        task = tmp_path / f"{role}.toml"
        task.write_text(TASK.format(role=role, scope=scope))
        return Policy(build_policy(REPO, None, task, worktree))
    return make
