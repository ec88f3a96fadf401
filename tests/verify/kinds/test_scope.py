"""scope-whitelist, scope-denylist, no-changes, called directly, and the unsafe-path rule they share."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.kind import NoParams
from runtime.verify.kinds.registry import evaluate
from runtime.verify.kinds.scope import ChangedPaths, GlobParams, no_changes, scope_denylist, scope_whitelist, unsafe_reason


@pytest.mark.parametrize("path,reason", [
    ("", "an empty path"),
    ("/etc/passwd", "an absolute path"),
    ("C:/Windows/x", "an absolute path"),
    ("c:relative", "an absolute path"),
    ("..", "a path leaving the worktree (`..`)"),
    ("src/../../etc", "a path leaving the worktree (`..`)"),
    ("a/..", "a path leaving the worktree (`..`)"),
    (".git", "git's own files (`.git`)"),
    (".git/config", "git's own files (`.git`)"),
    ("sub/.GIT/hooks/x", "git's own files (`.git`)"),
    ("vendor/lib/.Git", "git's own files (`.git`)"),
])
def test_unsafe_reason_names_why(path, reason):
    assert unsafe_reason(path) == reason


@pytest.mark.parametrize("path", [
    "src/a.py", "README.md", ".gitignore", ".github/workflows/ci.yml", "a..b/c", "...", "x/.gitkeep", "src/git/x",
    "./src/a.py", "1:2",
])
def test_unsafe_reason_leaves_ordinary_paths_alone(path):
    assert unsafe_reason(path) is None


def test_whitelist_passes_with_the_count_of_changes():
    result = scope_whitelist(GlobParams.read({"globs": ["src/**"]}), ChangedPaths(changed=["src/a.py", "src/b/c.py"]))
    assert result.status == "passed"
    assert result.evidence == {"changed": 2}
    assert "all 2 changed path(s)" in result.feedback


def test_whitelist_lists_unsafe_paths_before_paths_outside():
    result = scope_whitelist(GlobParams.read({"globs": ["src/**"]}), ChangedPaths(changed=["docs/x.md", "src/../y", "src/ok.py"]))
    assert result.status == "rejected"
    assert result.evidence == {"changed": 3, "offending": 2}
    items = [line for line in result.feedback.splitlines() if line.startswith("- ")]
    assert items == ["- `src/../y`: a path leaving the worktree (`..`)", "- `docs/x.md`"]
    assert "You may change only: `src/**`." in result.feedback


def test_whitelist_without_globs_says_nothing_is_allowed():
    result = scope_whitelist(GlobParams.read({"globs": []}), ChangedPaths(changed=["a.py"]))
    assert result.status == "rejected"
    assert "nothing (this task allows no changes)" in result.feedback


def test_denylist_names_the_denied_globs_and_paths():
    result = scope_denylist(GlobParams.read({"globs": ["*.lock", "migrations/**"]}), ChangedPaths(changed=["uv.lock", "src/a.py"]))
    assert result.status == "rejected"
    assert "(denied: `*.lock`, `migrations/**`)" in result.feedback
    assert "- `uv.lock`" in result.feedback and "src/a.py" not in result.feedback
    assert result.evidence == {"changed": 2, "offending": 1}


def test_denylist_reports_an_unsafe_path_once_even_when_a_glob_matches_it():
    result = scope_denylist(GlobParams.read({"globs": ["**"]}), ChangedPaths(changed=[".git/config"]))
    assert result.status == "rejected"
    assert result.evidence["offending"] == 1
    assert result.feedback.count(".git/config") == 1


def test_denylist_passes_with_the_count_of_changes():
    result = scope_denylist(GlobParams.read({"globs": ["secrets/**"]}), ChangedPaths(changed=["src/a.py"]))
    assert result.status == "passed" and result.evidence == {"changed": 1}


def test_no_changes_ignores_parameters_and_counts_the_changes():
    assert no_changes(NoParams.read({"anything": 1}), ChangedPaths(changed=[])).evidence == {"changed": 0}
    result = no_changes(NoParams.read({}), ChangedPaths(changed=["a", "b", "c"]))
    assert result.status == "rejected"
    assert result.evidence == {"changed": 3}
    assert "3 path(s) changed" in result.feedback


@pytest.mark.parametrize("evaluator", [scope_whitelist, scope_denylist])
def test_scope_kinds_raise_malformed_input_for_missing_globs(evaluator):
    with pytest.raises(MalformedInput, match="parameter `globs` is missing"):
        evaluator(GlobParams.read({}), ChangedPaths(changed=[]))


@pytest.mark.parametrize("kind", ["scope-whitelist", "scope-denylist", "no-changes"])
@pytest.mark.parametrize("changed", ["a.py", [1]])
def test_scope_kinds_find_bad_changed_malformed(kind, changed):
    result = evaluate(kind, {"globs": []}, {"changed": changed})
    assert result.status == "error"
    assert f"cannot check `{kind}`: the evidence is malformed: `changed" in result.feedback


def test_a_bad_glob_raises_malformed_input():
    with pytest.raises(MalformedInput, match="/abs"):
        scope_whitelist(GlobParams.read({"globs": ["/abs/**"]}), ChangedPaths(changed=[]))
