"""A runtime installed inside the main checkout (a project-local `.agent-runtime/venv`) stays visible to
its agent where the toolchain shows the worktree at the main checkout's path. End to end:
tests/dist/test_installs.py, whose project-local install spawns in a project with its own .venv."""

from __future__ import annotations

from pathlib import Path

from runtime.sandbox import agent as sandboxing
from runtime.sandbox.toolchain import ToolchainMounts


def test_the_runtime_inside_the_checkout_becomes_a_toolchain_folder_once(monkeypatch, tmp_path):
    repo = tmp_path / "repo"
    venv = repo / ".agent-runtime/venv"
    binds = [venv, venv / "lib/python3.11/site-packages", Path("/usr"), repo / ".venv/lib", tmp_path / "elsewhere"]
    monkeypatch.setattr(sandboxing, "runtime_binds", lambda: binds)
    mounts = ToolchainMounts(repo=repo, folders=((repo / ".venv", ".venv"),))
    got = sandboxing.runtime_in_checkout(mounts)
    # The venv once (its site-packages is inside it); the project's .venv is a toolchain folder already.
    assert got.folders == ((repo / ".venv", ".venv"), (venv, ".agent-runtime/venv"))
    worktree = tmp_path / "wt"
    assert (venv, repo / ".agent-runtime/venv") in got.binds(worktree)  # bound again over the mirror
    assert got.binds(worktree).index((worktree.resolve(), repo)) < got.binds(worktree).index((venv, repo / ".agent-runtime/venv"))


def test_a_runtime_outside_the_checkout_changes_nothing(monkeypatch, tmp_path):
    repo = tmp_path / "repo"
    monkeypatch.setattr(sandboxing, "runtime_binds", lambda: [tmp_path / "tools/venv", Path("/usr"), repo])
    mounts = ToolchainMounts(repo=repo, folders=((repo / ".venv", ".venv"),))
    assert sandboxing.runtime_in_checkout(mounts) is mounts
