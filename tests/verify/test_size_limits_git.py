"""The size checks on real worktrees: evidence gathered from git and the files, the base read from the base
commit's tree, the verdict judged on the change."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from runtime.policy.document import seal
from runtime.verify.gather import Workspace, verify
from runtime.verify.kinds.record import CheckRecord
from runtime.workspace.base_files import Blob, base_blobs, read_blob
from runtime.workspace.git import Git, GitError
from tests.support import user_git, user_repo
from tests.verify.test_size_limits import function, module

SIZE_LIMITS = {"atom": "quality::constructor-pattern", "kind": "size-limits",
               "params": {"max-file-lines": 200, "max-function-lines": 50}}
CHANGE_SIZE = {"atom": "scope::change-size", "kind": "change-size",
               "params": {"max-file-bytes": 4000, "max-change-bytes": 6000}}


async def _no_commands(command: str, timeout_s: float) -> tuple[int, str]:
    raise AssertionError("these checks run no command")


def agent(tmp_path: Path, files: dict[str, str]) -> tuple[Git, Path, str]:
    """(git, worktree, base): a repository holding ``files`` and an agent worktree on it."""
    git = Git(user_repo(tmp_path, files))
    worktree = tmp_path / "wt"
    return git, worktree, git.add_worktree(worktree, "agent/a1")


def checks(git: Git, worktree: Path, base: str, *entries: dict) -> dict[str, CheckRecord]:
    policy = seal(role="test", root=str(worktree), verify=entries)
    records = anyio.run(verify, policy, Workspace(git, worktree, base, None, _no_commands))
    return {r.kind: r for r in records}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_one_line_fix_in_a_1075_line_module_passes(tmp_path):
    git, wt, base = agent(tmp_path, {"src/pkg/core.py": module(1075), "README.md": "# pkg\n"})
    edit(wt / "src/pkg/core.py", "VALUE_700 = 700\n", "VALUE_700 = 701\n")
    result = checks(git, wt, base, SIZE_LIMITS, CHANGE_SIZE)
    assert result["size-limits"].status == "passed", result["size-limits"].feedback
    # the module is over change-size's 4000-byte limit too, and did not grow
    assert os.path.getsize(wt / "src/pkg/core.py") > 4000
    assert result["change-size"].status == "passed", result["change-size"].feedback


def test_a_docstring_fix_beside_an_untouched_110_line_function_passes(tmp_path):
    source = '"""Helpers, wiht a typo."""\n\n\n' + function("convert", 110) + "\n\n" + function("small", 5)
    git, wt, base = agent(tmp_path, {"src/helpers.py": source})
    edit(wt / "src/helpers.py", "wiht", "with")
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "passed", record.feedback


def test_a_module_over_the_limit_takes_new_code_but_not_more_than_the_limit(tmp_path):
    git, wt, base = agent(tmp_path, {"src/x.py": module(1075)})
    with (wt / "src/x.py").open("a") as f:
        f.write(module(15).replace("VALUE_", "EXTRA_"))
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "passed", record.feedback
    with (wt / "src/x.py").open("a") as f:
        f.write(module(186).replace("VALUE_", "MORE_"))
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "rejected"
    assert ("`src/x.py` grew by 201 lines (from 1075 to 1276); at most 200 may be added to one file: put the new code "
            "in a new module") in record.feedback
    assert "split" not in record.feedback


def test_a_new_60_line_function_is_rejected_by_name(tmp_path):
    git, wt, base = agent(tmp_path, {"src/app.py": function("existing", 110)})
    with (wt / "src/app.py").open("a") as f:
        f.write("\n\n" + function("added", 60))
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "rejected"
    assert "`src/app.py`: the new function `added` has 60 lines (limit 50): split it into smaller functions" in record.feedback
    assert "existing" not in record.feedback


def test_a_renamed_module_is_followed_to_its_old_name(tmp_path):
    # git records a move with a small edit as a rename: the module is the one the base had, judged against
    # its old size, not as a new 1075-line file (that would ask for a split of code nobody touched).
    git, wt, base = agent(tmp_path, {"src/old_name.py": module(1075)})
    (wt / "src/old_name.py").rename(wt / "src/new_name.py")
    edit(wt / "src/new_name.py", "VALUE_3 = 3\n", "VALUE_3 = 4\n")
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "passed", record.feedback
    with (wt / "src/new_name.py").open("a") as f:
        f.write(module(201).replace("VALUE_", "EXTRA_"))
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "rejected" and "`src/new_name.py` grew by 201 lines (from 1075 to 1276)" in record.feedback


def test_a_copy_of_a_long_module_is_new(tmp_path):
    git, wt, base = agent(tmp_path, {"src/a.py": module(300)})
    (wt / "src/b.py").write_text((wt / "src/a.py").read_text())
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "rejected" and "`src/b.py` is a new file of 300 lines" in record.feedback
    assert "`src/a.py`" not in record.feedback


def test_a_file_that_replaced_a_symlink_is_new(tmp_path):
    git, wt, base = agent(tmp_path, {"src/real.py": module(300)})
    (wt / "src/link.py").symlink_to("real.py")
    user_git(wt, "add", "-A")
    user_git(wt, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "a link")
    base = git.resolve("agent/a1")
    (wt / "src/link.py").unlink()
    (wt / "src/link.py").write_text(module(300))
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "rejected" and "`src/link.py` is a new file of 300 lines" in record.feedback


def test_the_base_is_read_from_the_commit_not_from_the_agents_tree_or_index(tmp_path):
    git, wt, base = agent(tmp_path, {"src/x.py": module(1075)})
    # The agent's worktree index and HEAD say the module was always 1200 lines: ignored.
    (wt / "src/x.py").write_text(module(1300))
    user_git(wt, "add", "-A")
    user_git(wt, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "rewrite history in the worktree")
    record = checks(git, wt, base, SIZE_LIMITS)["size-limits"]
    assert record.status == "rejected" and "grew by 225 lines (from 1075 to 1300)" in record.feedback


def test_change_size_judges_growth_and_what_the_change_adds(tmp_path):
    git, wt, base = agent(tmp_path, {"data/big.txt": "x" * 5000 + "\n", "src/a.py": "A = 1\n"})
    (wt / "data/big.txt").write_text("y" * 5000 + "\n")
    assert checks(git, wt, base, CHANGE_SIZE)["change-size"].status == "passed"
    (wt / "data/big.txt").write_text("y" * 5001 + "\n")
    record = checks(git, wt, base, CHANGE_SIZE)["change-size"]
    assert record.status == "rejected"
    assert "`data/big.txt` grew from 5001 to 5002 bytes; it was over the limit at the base, so it may not grow" in record.feedback
    (wt / "data/big.txt").write_text("x" * 5000 + "\n")
    (wt / "src/new.bin").write_bytes(b"\0" * 3999)
    (wt / "src/other.bin").write_bytes(b"\0" * 3999)
    record = checks(git, wt, base, CHANGE_SIZE)["change-size"]
    assert record.status == "rejected" and "the change adds 7998 bytes in all, more than 6000" in record.feedback


def test_a_role_without_change_size_gets_its_defaults_judged_on_the_change(tmp_path):
    git, wt, base = agent(tmp_path, {"data/huge.txt": "x" * (11 * 1024 * 1024)})
    with (wt / "data/huge.txt").open("r+") as f:
        f.write("y")
    record = checks(git, wt, base)["change-size"]
    assert record.status == "passed", record.feedback


def test_base_blobs_match_paths_literally_and_only_regular_files(tmp_path):
    root = user_repo(tmp_path, {"*.py": "star\n", "a.py": "a\n", ":(glob)b.py": "magic\n", "dir/c.py": "c\n"})
    os.symlink("a.py", root / "link.py")
    user_git(root, "add", "-A")
    user_git(root, "commit", "-qm", "a link")
    git = Git(root)
    blobs = base_blobs(git, "HEAD", ["*.py", ":(glob)b.py", "link.py", "dir", "dir/c.py", "missing.py"])
    assert sorted(blobs) == ["*.py", ":(glob)b.py", "dir/c.py"]
    assert read_blob(git, blobs["*.py"], 100) == b"star\n"
    assert read_blob(git, blobs["*.py"], 4) is None  # larger than the limit: never read
    with pytest.raises(GitError):
        read_blob(git, Blob("--output=/tmp/x", 1), 100)
