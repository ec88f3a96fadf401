"""The repository's toolchain (`.agent-runtime/toolchain.toml`): what the gate lets agents run from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.policy.build import build_policy
from tests.gate.conftest import EDIT_SCOPE, TASK


def _project(tmp_path: Path, toolchain: str) -> Path:
    layer = tmp_path / "repo" / ".agent-runtime"
    layer.mkdir(parents=True)
    (layer / "toolchain.toml").write_text(toolchain)
    return layer


def _policy(tmp_path: Path, worktree: Path, toolchain: str, role: str = "edit-local", scope: str = EDIT_SCOPE) -> Policy:
    layer = _project(tmp_path, toolchain)
    task = tmp_path / "task.toml"
    task.write_text(TASK.format(role=role, scope=scope if role.startswith("edit") else ""))
    return Policy(build_policy(layer, None, task, worktree))


def bash(policy: Policy, command: str, cwd: Path):
    return decide(policy, "Bash", {"command": command}, str(cwd))


PYTHON = '[toolchain]\npresets = ["python"]\n'


@pytest.mark.parametrize("command", [".venv/bin/pytest -q", "./.venv/bin/pytest -q tests", ".venv/bin/python -m pytest -q"])
def test_a_program_of_a_toolchain_folder_runs_by_its_path(tmp_path, worktree, command):
    policy = _policy(tmp_path, worktree, PYTHON)
    d = bash(policy, command, worktree)
    assert d.verdict == "allow", d.reason


def test_by_path_from_a_subfolder_resolves_against_it(tmp_path, worktree):
    policy = _policy(tmp_path, worktree, PYTHON)
    assert bash(policy, "../.venv/bin/pytest -q", worktree / "tests").verdict == "allow"
    d = bash(policy, ".venv/bin/pytest -q", worktree / "tests")  # tests/.venv/bin is no toolchain folder
    assert d.verdict == "ask" and "only the toolchain's folders (.venv/bin)" in d.reason


# A program by a path outside the toolchain's folders is undecided (a script, a program no rule names): asked,
# unless what it is by name is forbidden.
@pytest.mark.parametrize("command, words", [
    ("./script.sh", "by its path"),
    ("src/bin/pytest -q", "only the toolchain's folders"),
    ("/opt/x/pytest -q", "only the toolchain's folders"),
    (".venv/bin/../../src/pytest -q", "only the toolchain's folders"),
    (".venv/bin/bash -c ls", "by its path"),  # a shell by path is never unwrapped
    (".venv/bin/git status", "agents never run git"),  # by path, still judged by name
    (".venv/bin/pip install x", "changes dependencies"),
])
def test_other_paths_are_asked_or_denied(tmp_path, worktree, command, words):
    policy = _policy(tmp_path, worktree, PYTHON)
    d = bash(policy, command, worktree)
    # git and dependency changes are forbidden; a shell by path is never unwrapped, so it is called by name.
    forbidden = words in ("agents never run git", "changes dependencies") or "bash" in command
    assert d.verdict == ("deny" if forbidden else "ask") and words in d.reason, d.reason


def test_a_symlink_to_the_toolchain_folder_is_not_it(tmp_path, worktree):
    (worktree / ".venv/bin").mkdir(parents=True)
    os.symlink(worktree / ".venv/bin", worktree / "src/bin")
    policy = _policy(tmp_path, worktree, PYTHON)
    assert bash(policy, "src/bin/pytest -q", worktree).verdict == "ask"


def test_a_toolchain_folder_replaced_by_a_symlink_is_not_it(tmp_path, worktree):
    (worktree / ".venv").mkdir()
    os.symlink("/tmp", worktree / ".venv/bin")
    policy = _policy(tmp_path, worktree, PYTHON)
    assert bash(policy, ".venv/bin/pytest -q", worktree).verdict == "ask"


def test_without_a_toolchain_nothing_runs_by_path(worktree, policy_for):
    d = bash(policy_for("edit-local"), ".venv/bin/pytest -q", worktree)
    assert d.verdict == "ask" and "no toolchain folder is declared" in d.reason


@pytest.mark.parametrize("command, verdict, words", [
    ("uv run --no-sync pytest -q", "allow", ""),
    ("uv run --no-sync --frozen -- python -m pytest -q", "allow", ""),
    ("uv run pytest -q", "ask", "--no-sync"),
    ("uv run --no-sync --with requests pytest", "deny", "unknown option"),
    ("uv run --no-sync git push", "deny", "git"),
    ("uv run --no-sync pytest --junitxml=/tmp/x", "deny", "/tmp/x"),
    ("uv sync", "deny", "changes dependencies"),
    ("uv pip install requests", "deny", "changes dependencies"),
    ("uv tool run ruff", "ask", "no rule of role `edit-local` runs `uv`"),
])
def test_uv_run_is_judged_as_what_it_runs(worktree, policy_for, command, verdict, words):
    d = bash(policy_for("edit-local"), command, worktree)
    assert d.verdict == verdict and words in d.reason, d.reason


MAKE = '[toolchain]\nmake-targets = ["test", "lint"]\n'


@pytest.mark.parametrize("command, verdict", [
    ("make test", "allow"),
    ("make -s lint", "allow"),
    ("make -j4 -k test", "allow"),
    # What the rule does not declare is undecided: asked of a person, told what it runs.
    ("make install", "ask"),
    ("make -f other.mk test", "ask"),
    ("make -C /tmp test", "ask"),
    ("make SHELL=/tmp/x test", "ask"),
    ("make --eval='x:' test", "ask"),
    ("MAKEFLAGS=-f/tmp/x make test", "ask"),
])
def test_make_targets_become_a_rule(tmp_path, worktree, command, verdict):
    policy = _policy(tmp_path, worktree, MAKE)
    d = bash(policy, command, worktree)
    assert d.verdict == verdict, d.reason


def test_make_is_no_rule_without_targets(worktree, policy_for):
    assert bash(policy_for("edit-local"), "make test", worktree).verdict == "ask"


def test_make_runs_only_from_inside_the_worktree(tmp_path, worktree):
    policy = _policy(tmp_path, worktree, MAKE)
    d = bash(policy, "cd /tmp && make test", worktree)
    assert d.verdict == "deny" and "outside the worktree" in d.reason


def test_a_toolchain_folder_inside_the_write_scope_is_refused(tmp_path, worktree):
    scope = EDIT_SCOPE.replace('["src/**", "tests/**"]', '["**"]')
    with pytest.raises(ManifestError) as info:
        _policy(tmp_path, worktree, PYTHON, scope=scope)
    assert "toolchain folder `.venv` lies inside role `edit-local`'s write scope" in str(info.value)


def test_denying_the_folder_makes_a_wide_scope_fine(tmp_path, worktree):
    scope = EDIT_SCOPE.replace('["src/**", "tests/**"]', '["**"]').replace('["src/pkg/generated/**"]', '[".venv/**"]')
    policy = _policy(tmp_path, worktree, PYTHON, scope=scope)
    assert bash(policy, ".venv/bin/pytest -q", worktree).verdict == "allow"


@pytest.mark.parametrize("text, line, words", [
    ('[toolchain]\npresets = ["pyhton"]\n', 2, "unknown preset `pyhton` (did you mean `python`?) (known: go, node, python, rust, uv)"),
    ('[toolchain]\nfolders = ["/opt/venv"]\n', 2, "relative to its root"),
    ('[toolchain]\nfolders = [".venv", "../other"]\n', 2, "without `..`"),
    ('[toolchain]\nfolders = [".venv"]\npath = ["bin"]\n', 3, "not inside one of the toolchain's folders (.venv)"),
    ('[toolchain]\nmake-targets = ["-f"]\n', 2, "not a make target name"),
    ('[toolchain]\nprograms = ["../uv"]\n', 2, "not a program name"),
    ('[toolchain]\nfolder = [".venv"]\n', 2, "folder"),
])
def test_a_bad_toolchain_is_one_line(tmp_path, worktree, text, line, words):
    with pytest.raises(ManifestError) as info:
        _policy(tmp_path, worktree, text)
    err = info.value
    assert err.path.endswith("toolchain.toml") and err.line == line and words in err.message, str(err)


def test_the_go_preset_binds_what_the_hosts_go_reports(tmp_path, monkeypatch):
    from runtime.manifests.toolchain import PRESETS, Toolchain
    from runtime.sandbox.toolchain import toolchain_mounts

    # A stand-in `go` on PATH answering `go env GOROOT GOMODCACHE` (this machine has no Go).
    bin_dir, goroot, modcache = tmp_path / "bin", tmp_path / "goroot", tmp_path / "mod"
    bin_dir.mkdir()
    goroot.mkdir()
    (bin_dir / "go").write_text(f"#!/bin/sh\necho {goroot}\necho {modcache}\n")
    (bin_dir / "go").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    preset = PRESETS["go"]
    mounts = toolchain_mounts(Toolchain(programs=preset.programs, env=preset.env, probes=("go",), source="t"), tmp_path)
    assert {bin_dir, goroot, modcache} <= set(mounts.expose) and modcache.is_dir()
    assert mounts.env == {"GOPROXY": "off", "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local", "GOCACHE": "/tmp/go-build",
                          "GOROOT": str(goroot), "GOMODCACHE": str(modcache)}
    assert mounts.host_path == (str(bin_dir),)
