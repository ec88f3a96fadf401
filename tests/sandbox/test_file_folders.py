"""Folders of files a write scope names (`SandboxSpec.file_folders`), with real bubblewrap.

An atomic replace (a temporary file beside the target, renamed over it: Claude Code's Edit and
Write) works on the scope's file; new files may be made in its folder (the gate and verify judge
them); the folders inside it, the rest of the worktree, `.git` and the control files stay read-only.
Each test checks the host afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.policy.document import PolicyDocument, seal
from runtime.sandbox.agent import control_paths, writable_paths
from runtime.sandbox.bwrap import MAX_READ_ONLY_AGAIN, MAX_READ_ONLY_FILES
from tests.sandbox.test_bwrap import sh, spec

# What Claude Code 2.1.332 does for an Edit: a temporary file beside the target, renamed over it.
REPLACE = "printf 'new\\n' > src/calc.py.tmp.7.0123456789ab && mv src/calc.py.tmp.7.0123456789ab src/calc.py"


def refused(result) -> bool:
    """Failed on the mounts (a read-only one, a mount point that cannot be moved or removed), or, for a
    root orchestrator, first on the agent's uid, which owns nothing there."""
    return result.returncode != 0 and any(words in result.stderr for words in (
        "Read-only file system", "Device or resource busy", "Permission denied"))


@pytest.fixture
def worktree(tmp_path) -> Path:
    root = tmp_path / "worktree"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("old\n")
    (root / "src" / "pkg" / "mod.py").write_text("mod\n")
    (root / "docs").mkdir()
    (root / "README.md").write_text("readme\n")
    return root


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def _policy(*globs: str) -> PolicyDocument:
    return seal(role="test", root="/", gates=[{"kind": "write-whitelist", "params": {"globs": list(globs)}}])


def test_the_scope_maps_files_to_their_folders(worktree):
    whole, folders = writable_paths(_policy("src/calc.py", "docs/**", "docs/guide.md", "new/deeper/x.py",
                                            "src/pkg/new.py", "README.md"), worktree)
    assert whole == [worktree / "docs"]
    assert folders == [(worktree / "src", ("calc.py",)), (worktree, ("new", "README.md")),
                       (worktree / "src" / "pkg", ("new.py",))]  # docs/guide.md: docs is writable whole
    link = worktree / "linked"
    link.symlink_to(worktree / "src")
    assert writable_paths(_policy("linked/calc.py", "linked/x/y.py"), worktree) == ([], [])


def test_an_atomic_replace_of_the_scopes_file_works(bwrap, worktree, home):
    whole, folders = writable_paths(_policy("src/calc.py"), worktree)
    sandbox = spec(worktree, home, writable=whole, file_folders=folders, readonly=[worktree / ".git"],
                   control=control_paths(worktree))
    result = sh(sandbox, bwrap, f"{REPLACE} && echo made > src/new.txt")
    assert result.returncode == 0, result.stderr
    assert (worktree / "src" / "calc.py").read_text() == "new\n"
    assert (worktree / "src" / "new.txt").read_text() == "made\n"  # verify judges it: not in the scope
    assert sorted(p.name for p in (worktree / "src").iterdir()) == ["calc.py", "new.txt", "pkg"]


@pytest.mark.parametrize("script", [
    "echo x > src/pkg/planted.py", "echo x >> src/pkg/mod.py", "rm src/pkg/mod.py", "mkdir src/pkg/deeper",
    "mv src/pkg src/moved", "rm -r src/pkg", "echo x > README.md", "echo x > top.txt", "echo x > docs/a.md",
    "echo x >> .git/config", "mkdir .claude/x", "echo {} > .mcp.json", "mkdir .agent-runtime/roles",
])
def test_what_the_scope_does_not_name_stays_read_only(bwrap, worktree, home, script):
    whole, folders = writable_paths(_policy("src/calc.py"), worktree)
    sandbox = spec(worktree, home, writable=whole, file_folders=folders, readonly=[worktree / ".git"],
                   control=control_paths(worktree))
    before = sorted(str(p.relative_to(worktree)) for p in worktree.rglob("*"))
    result = sh(sandbox, bwrap, script)
    assert refused(result), (script, result.stderr)
    assert sorted(str(p.relative_to(worktree)) for p in worktree.rglob("*")) == before
    assert (worktree / "src" / "pkg" / "mod.py").read_text() == "mod\n"
    assert (worktree / ".git" / "config").read_text() == "[core]\n"


def test_a_file_at_the_top_opens_the_top_only(bwrap, worktree, home):
    """`README.md` in the scope: files may be made at the worktree's top, while its folders, `.git` and
    the control files (absent ones as placeholders) stay read-only."""
    whole, folders = writable_paths(_policy("README.md"), worktree)
    assert (whole, folders) == ([], [(worktree, ("README.md",))])
    sandbox = spec(worktree, home, file_folders=folders, readonly=[worktree / ".git"], control=control_paths(worktree))
    replace = "printf 'new\\n' > README.md.tmp.3.abcdefabcdef && mv README.md.tmp.3.abcdefabcdef README.md"
    assert sh(sandbox, bwrap, replace).returncode == 0
    assert (worktree / "README.md").read_text() == "new\n"
    for script in ("echo x > src/calc.py", "echo x > docs/a.md", "echo x >> .git/config", "echo x > .mcp.json",
                   "mkdir .claude/hooks", "rm -r src", "mv docs elsewhere"):
        result = sh(sandbox, bwrap, script)
        assert refused(result), (script, result.stderr)
    assert not (worktree / ".mcp.json").exists() and not (worktree / ".claude").exists()  # placeholders gone
    assert (worktree / "src" / "calc.py").read_text() == "old\n" and (worktree / "docs").is_dir()


def test_a_folder_with_too_many_folders_is_not_bound_again_folder_by_folder(bwrap, worktree, home):
    """Past MAX_READ_ONLY_AGAIN folders, bubblewrap's set-up would take seconds: the folder's folders are
    left as its mount has them, writable, as a writable path's are (for a root orchestrator, the agent's
    uid still may not write them: only the folder and the scope's files are granted), and verify judges
    what is written there."""
    for n in range(MAX_READ_ONLY_AGAIN + 1):
        (worktree / "src" / f"d{n:03}").mkdir()
    whole, folders = writable_paths(_policy("src/calc.py"), worktree)
    sandbox = spec(worktree, home, writable=whole, file_folders=folders)
    args = sandbox.args(bwrap)
    bound = [args[i + 1] for i, a in enumerate(args) if a in ("--bind", "--ro-bind")]
    assert str(worktree / "src") in bound and not any(b.startswith(str(worktree / "src") + "/") for b in bound)
    result = sh(sandbox, bwrap, f"{REPLACE} && echo x > docs/a.md")
    assert refused(result) and "docs/a.md" in result.stderr, result.stderr  # the rest of the worktree is not
    assert (worktree / "src" / "calc.py").read_text() == "new\n"
    for n in range(2):  # with pkg, exactly as many as may be bound again
        (worktree / "src" / f"d{n:03}").rmdir()
    args = spec(worktree, home, file_folders=[(worktree / "src", ("calc.py",))]).args(bwrap)
    assert sum(a == "--ro-bind" and args[i + 1].startswith(str(worktree / "src") + "/")
               for i, a in enumerate(args)) == MAX_READ_ONLY_AGAIN


def test_a_writable_folder_inside_a_file_folder_stays_writable(bwrap, worktree, home):
    whole, folders = writable_paths(_policy("src/calc.py", "src/pkg/**"), worktree)
    assert whole == [worktree / "src" / "pkg"] and folders == [(worktree / "src", ("calc.py",))]
    sandbox = spec(worktree, home, writable=whole, file_folders=folders)
    result = sh(sandbox, bwrap, f"{REPLACE} && echo x > src/pkg/new.py && mkdir src/pkg/sub && echo y > src/pkg/sub/z")
    assert result.returncode == 0, result.stderr
    assert (worktree / "src" / "pkg" / "sub" / "z").read_text() == "y\n"


def test_files_beside_the_scopes_file_can_be_neither_changed_nor_removed(bwrap, worktree, home):
    """The other files of a file folder are bound read-only again: a script can make new files there (thrown
    away before verify) but cannot rewrite, delete or rename over the ones already there."""
    (worktree / "src" / "helpers.py").write_text("helpers\n")
    sandbox = spec(worktree, home, file_folders=[(worktree / "src", ("calc.py",))])
    for script in ("echo x > src/helpers.py", "rm src/helpers.py", "echo y > src/n && mv src/n src/helpers.py"):
        result = sh(sandbox, bwrap, script)
        assert refused(result), (script, result.stderr)
    assert sh(sandbox, bwrap, f"{REPLACE} && echo z > src/scratch.txt").returncode == 0
    assert (worktree / "src" / "helpers.py").read_text() == "helpers\n"
    assert (worktree / "src" / "calc.py").read_text() == "new\n" and (worktree / "src" / "scratch.txt").exists()


def test_past_the_file_budget_the_rest_of_the_files_stay_as_the_folder_is(bwrap, worktree, home):
    for n in range(MAX_READ_ONLY_FILES + 5):
        (worktree / "src" / f"m{n:03}.py").write_text("")
    args = spec(worktree, home, file_folders=[(worktree / "src", ("calc.py",))]).args(bwrap)
    again = [args[i + 1] for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1].startswith(str(worktree / "src") + "/")]
    assert sum(p.endswith(".py") for p in again) == MAX_READ_ONLY_FILES
    assert str(worktree / "src" / "calc.py") not in again


def test_the_agents_sandbox_lets_the_worktrees_top_take_new_files(bwrap, worktree, home):
    """Whatever the scope, the top takes scratch (`.coverage`, `coverage/`), its files and folders read-only."""
    from runtime.sandbox.agent import agent_sandbox
    sandbox = agent_sandbox(_policy("src/calc.py"), worktree, home, [], {})
    assert (worktree, ()) in sandbox.file_folders
    result = sh(sandbox, bwrap, "echo c > .coverage && mkdir -p coverage/tmp && echo j > coverage/tmp/1.json")
    assert result.returncode == 0, result.stderr
    for script in ("echo x > README.md", "rm README.md", "echo x > docs/a.md"):
        assert refused(sh(sandbox, bwrap, script)), script
    assert (worktree / "README.md").read_text() == "readme\n" and (worktree / "coverage/tmp/1.json").exists()
