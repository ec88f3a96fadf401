"""A verify pass built from its context (`runtime.verify.passes`), over real git trees: a pass without
`Running` runs nothing and judges what it reads; a pass with it runs the task's commands over a copy of the
work kept in the pass's folder, never in the tree, and judges them."""

from __future__ import annotations

from pathlib import Path

import anyio

from runtime.manifests.toolchain import Toolchain
from runtime.policy.document import seal
from runtime.sandbox.budget import default_check_limits
from runtime.verify.passes import Running, VerifyContext, judge_work
from runtime.workspace.git import Git
from tests.support import user_repo

SCOPE = {"atom": "scope::files-whitelist", "kind": "scope-whitelist", "params": {"globs": ["src/**"]}}


def checks(*commands: str) -> dict:
    return {"atom": "quality::check-green", "kind": "checks-green", "params": {"commands": list(commands)}}


def worktree(tmp_path: Path) -> tuple[Git, Path, str]:
    git = Git(user_repo(tmp_path, {"src/a.py": "A = 1\n", "README.md": "# a\n"}))
    tree = tmp_path / "wt"
    base = git.add_worktree(tree, "agent/a1")
    (tree / "src" / "a.py").write_text("A = 2\n")
    return git, tree, base


def running(tmp_path: Path) -> Running:
    home = tmp_path / "home"
    home.mkdir()
    return Running(home, Toolchain(), None, default_check_limits(), tmp_path / "base-tests")


def test_a_pass_without_running_judges_what_it_reads_and_leaves_the_commands_out(tmp_path):
    git, tree, base = worktree(tmp_path)
    policy = seal(role="test", root=str(tree), verify=[SCOPE, checks("touch ran")])
    records = anyio.run(judge_work, policy, VerifyContext(git, base, tree, tmp_path / "pass"))
    assert {r.kind: r.status for r in records} == {"scope-whitelist": "passed", "change-size": "passed"}
    assert not (tree / "ran").exists() and not (tmp_path / "pass").exists()


def test_a_pass_with_running_runs_the_commands_over_a_copy_in_its_folder(tmp_path):
    git, tree, base = worktree(tmp_path)
    policy = seal(role="test", root=str(tree), verify=[SCOPE, checks("touch ran && test \"$(cat src/a.py)\" = 'A = 2'")])
    context = VerifyContext(git, base, tree, tmp_path / "pass", running=running(tmp_path))
    records = {r.kind: r for r in anyio.run(judge_work, policy, context)}
    assert records["checks-green"].status == "passed", records["checks-green"].feedback
    assert not (tree / "ran").exists()  # the command ran over the copy, and the copy is gone
    assert not (tmp_path / "pass" / "scratch").exists()


def test_a_command_that_fails_is_judged_by_the_pass(tmp_path):
    git, tree, base = worktree(tmp_path)
    policy = seal(role="test", root=str(tree), verify=[checks("grep -q 'A = 3' src/a.py")])
    context = VerifyContext(git, base, tree, tmp_path / "pass", running=running(tmp_path))
    records = {r.kind: r for r in anyio.run(judge_work, policy, context)}
    assert records["checks-green"].status == "rejected"
    assert "grep -q 'A = 3' src/a.py" in records["checks-green"].feedback
