import os

import pytest

from runtime.gate.paths import PathError, holder_reason, protected_reason, relative_to, resolve


def test_resolve_follows_symlinks_and_collapses_dotdot(worktree):
    root = str(worktree)
    assert resolve("src/pkg/mod.py", root) == f"{root}/src/pkg/mod.py"
    assert resolve(f"{root}/src/../src/pkg/mod.py", root) == f"{root}/src/pkg/mod.py"
    assert resolve("src/pkg/escape/passwd", root) == "/etc/passwd"
    assert resolve("src/pkg/escape/new/dir/file", root) == "/etc/new/dir/file"
    assert resolve("src/pkg/gitlink/config", root) == f"{root}/.git/config"
    assert resolve("src/new/deeper/file.py", root) == f"{root}/src/new/deeper/file.py"
    assert resolve("src/pkg/../../../x", root) == os.path.realpath(f"{root}/../x")


def test_resolve_matches_realpath_on_many_shapes(worktree):
    root = str(worktree)
    for path in ["src", "src/", "./src//pkg/./mod.py", "/", "/tmp", "src/pkg/escape", "src/pkg/gitlink/",
                 "src/pkg/../pkg/escape", "nope/nope/nope", f"{root}/src/pkg"]:
        assert resolve(path, root) == os.path.realpath(os.path.join(root, path)), path


@pytest.mark.parametrize("bad", ["", "a\x00b", None, 3, ["x"]])
def test_resolve_rejects_what_is_not_a_path(worktree, bad):
    with pytest.raises(PathError):
        resolve(bad, str(worktree))


def test_relative_to_compares_components():
    assert relative_to("/w/src/a.py", "/w") == "src/a.py"
    assert relative_to("/w", "/w") == ""
    assert relative_to("/w_evil/a.py", "/w") is None
    assert relative_to("/etc/passwd", "/w") is None
    assert relative_to("/etc/passwd", "/") == "etc/passwd"


@pytest.mark.parametrize("path", ["/w/.git/config", "/w/sub/.git/hooks/x", "/w/.GIT/config", "/w/.git./hooks",
                                  "/w/.claude/settings.json", "/w/.Claude/x", "/w/.git", "/proc/self/mem", "/sys/x", "/dev/sda",
                                  "/w/.agent-runtime/roles/edit-local.toml", "/w/.AGENT-RUNTIME/toolchain.toml",
                                  "/w/vendor/.agent-runtime. /x", "/w/.gitmodules", "/w/sub/.GitModules",
                                  "/w/.mcp.json", "/w/.MCP.JSON."])
def test_protected_paths(path):
    assert protected_reason(path, ()) is not None


@pytest.mark.parametrize("path", ["/w/.gitignore", "/w/.github/workflows/ci.yml", "/w/src/git/x.py", "/dev/null",
                                  "/w/.gitattributes", "/w/agent-runtime/x", "/w/.claudex/y", "/w/mcp.json",
                                  "/w/.mcp.jsonl"])
def test_ordinary_paths_are_not_protected(path):
    assert protected_reason(path, ()) is None


def test_runtime_files_are_protected():
    assert protected_reason("/cat/roles/x.toml", ("/cat/roles",)) is not None
    assert protected_reason("/cat/roles_x/y", ("/cat/roles",)) is None


def test_a_task_may_open_the_control_files_it_names_but_never_git():
    exempt = ("/w/.claude/settings.json", "/w/.agent-runtime/roles")
    assert protected_reason("/w/.claude/settings.json", (), exempt) is None
    assert protected_reason("/w/.agent-runtime/roles/x.toml", (), exempt) is None
    assert protected_reason("/w/.claude/agents/x.md", (), exempt) is not None
    assert protected_reason("/w/.agent-runtime/toolchain.toml", (), exempt) is not None
    assert protected_reason("/w/.git/config", (), ("/w/.git",)) is not None


def test_only_names_below_the_worktree_are_control_names():
    """A worktree inside a `.claude` folder (Claude Code puts its own there) is not all control files."""
    root = "/repo/.claude/worktrees/feature"
    assert protected_reason(f"{root}/src/app.py", (), (), root) is None
    assert protected_reason(f"{root}/.claude/settings.json", (), (), root) is not None
    assert protected_reason("/elsewhere/.claude/x", (), (), root) is not None  # outside: judged whole


def test_dotdot_is_refused_after_a_symlink_or_a_missing_name(worktree):
    root = str(worktree)
    (worktree / "src/pkg/sub/inner").mkdir(parents=True)
    os.symlink("sub/inner", worktree / "src/pkg/deep")
    assert resolve("src/pkg/sub/inner/../../../x", root) == f"{root}/src/x"
    assert resolve("src/pkg/../pkg/deep/x", root) == f"{root}/src/pkg/sub/inner/x"  # the symlink is not undone
    for bad, why in [("src/pkg/deep/../x", "symlink `deep`"), ("src/pkg/escape/../x", "symlink `escape`"),
                     (".git/index.lock/../../x", "`index.lock`, which does not exist"),
                     ("src/pkg/mod.py/../x", "not a folder"), ("src/new/../../.git/x", "`new`")]:
        with pytest.raises(PathError, match=why):
            resolve(bad, root)


@pytest.mark.parametrize("bad", ["a/" * 2100, "x" * 300, "src/" + "y" * 256 + "/z"])
def test_paths_past_the_kernel_s_limits_are_refused(worktree, bad):
    with pytest.raises(PathError, match="longer than"):
        resolve(bad, str(worktree))


def test_folders_holding_the_worktree_or_the_catalog_are_never_written_whole():
    assert holder_reason("/w", ("/cat/roles",), "/w") is not None
    assert holder_reason("/", ("/cat/roles",), "/w") is not None
    assert holder_reason("/cat", ("/cat/roles",), "/w") is not None
    assert holder_reason("/cat/roles", ("/cat/roles",), "/w") is None  # protected_reason's own case
    assert holder_reason("/w/src", ("/cat/roles",), "/w") is None
    assert holder_reason("/cat_x", ("/cat/roles",), "/w") is None
