"""A repository's own toolchain (its venv, uv) inside the sandbox: real spawns, real bubblewrap."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import RUNTIME, require
from tests.spawn.conftest import SH_FIX, SH_REPORT, git

FIX = f"{SH_FIX}; {SH_REPORT}"

# Only the repository's venv has this module: a check that imports it proves the venv ran it.
ONLY_IN_VENV = "hello_dep"


def _venv(repo: Path, with_uv: bool = False) -> Path:
    venv = repo / ".venv"
    if with_uv:
        subprocess.run([shutil.which("uv", path=os.path.dirname(sys.executable)) or "uv", "venv", "-q", str(venv)],
                       check=True, cwd=repo, env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"})
    else:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / f"{ONLY_IN_VENV}.py").write_text("OK = True\n")
    # pytest comes from the runtime's own environment (the sandbox shows it); the repository's venv
    # finds it through a .pth line, as a venv with pytest installed would.
    (site / "runtime_tests.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # An editable install of the project: its source folder in the main checkout.
    (site / "__editable__.calc.pth").write_text(str(repo / "src") + "\n")
    with (repo / ".gitignore").open("a") as ignore:
        ignore.write(".venv/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore the venv")
    return venv


def _project_catalog(repo: Path, toolchain: str) -> Path:
    layer = repo / ".agent-runtime"
    layer.mkdir()
    (layer / "toolchain.toml").write_text(toolchain)
    return layer


def _spawn(spawner, layer: Path, task: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([RUNTIME, "spawn", "--json", "--catalog", str(layer), str(task)], cwd=spawner.repo,
                          capture_output=True, text=True, env=spawner.full_env(env), timeout=150)


def _listing(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if not p.is_symlink()}


def test_checks_run_with_the_repositorys_venv(spawner):
    venv = _venv(spawner.repo)
    layer = _project_catalog(spawner.repo, '[toolchain]\npresets = ["python"]\n')
    before = _listing(venv)
    task = spawner.task(agent_id="ag-venv", command=FIX, verification={
        "test-command": "python -m pytest -q tests", "test-count-min": 4,
        # By name and by path; `calc` through the editable install finds the agent's fixed code.
        "check-commands": [f"python -c 'import {ONLY_IN_VENV}'", f".venv/bin/python -c 'import {ONLY_IN_VENV}'",
                           "python -c 'import calc; assert calc.mean([1, 3]) == 2, calc.__file__'"]})
    proc = _spawn(spawner, layer, task)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert spawner.show("agent/ag-venv", "src/calc/__init__.py") is not None
    assert ".venv" not in spawner.files_at("agent/ag-venv")  # the mount point is never committed
    assert _listing(venv) == before  # read-only: the venv is as it was


def test_without_the_toolchain_the_venv_is_not_there(spawner):
    _venv(spawner.repo)
    task = spawner.task(agent_id="ag-novenv", command=FIX, verification={
        "test-command": "pytest -q tests", "test-count-min": 4, "check-commands": [f"python3 -c 'import {ONLY_IN_VENV}'"]})
    result = spawner.spawn(task)
    assert result.code == 2 and result.outcome["status"] == "rejected", result.describe()
    assert "ModuleNotFoundError" in str(result.outcome)


def test_uv_run_uses_the_project_environment_without_syncing_it(spawner):
    venv = _venv(spawner.repo, with_uv=True)
    (spawner.repo / "pyproject.toml").write_text('[project]\nname = "calc"\nversion = "0.1"\nrequires-python = ">=3.9"\n'
                                                 'dependencies = ["requests"]\n')  # not installed: a sync would fetch it
    git(spawner.repo, "add", "pyproject.toml")
    git(spawner.repo, "commit", "-q", "-m", "a uv project")
    layer = _project_catalog(spawner.repo, '[toolchain]\npresets = ["uv"]\n')
    before = _listing(venv)
    task = spawner.task(agent_id="ag-uv", command=FIX, verification={
        "test-command": "uv run --no-sync python -m pytest -q tests", "test-count-min": 4,
        "check-commands": [f"uv run python -c 'import {ONLY_IN_VENV}'"]})  # UV_NO_SYNC: no sync even without the flag
    env = {"PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}  # where `uv` is installed
    proc = _spawn(spawner, layer, task, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _listing(venv) == before


def test_a_missing_toolchain_folder_is_one_line_before_anything_is_made(spawner):
    layer = _project_catalog(spawner.repo, '[toolchain]\npresets = ["node"]\n')
    task = spawner.task(agent_id="ag-nonode", command=FIX)
    proc = _spawn(spawner, layer, task)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"error: .agent-runtime/toolchain.toml:2: toolchain folder `node_modules` does not exist in {spawner.repo.resolve()}: "
        "create it (npm ci), or remove it from the toolchain"], proc.stderr
    assert not spawner.state.exists() and spawner.sha("agent/ag-nonode") is None


def test_a_rust_crate_builds_and_tests_with_the_hosts_cargo(spawner):
    cargo = shutil.which("cargo")
    require(cargo is not None, "cargo is not installed")
    (spawner.repo / "Cargo.toml").write_text('[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[lib]\npath = "lib.rs"\n')
    (spawner.repo / "lib.rs").write_text("pub fn mean(v: &[f64]) -> f64 { v.iter().sum::<f64>() / v.len() as f64 }\n"
                                         "#[test]\nfn two() { assert_eq!(mean(&[1.0, 3.0]), 2.0); }\n")
    # Committed, as a crate's lock file should be: cargo would write it, and the worktree is read-only there.
    subprocess.run([cargo, "generate-lockfile", "--offline"], cwd=spawner.repo, check=True, capture_output=True)
    git(spawner.repo, "add", "-A")
    git(spawner.repo, "commit", "-q", "-m", "a crate")
    layer = _project_catalog(spawner.repo, '[toolchain]\npresets = ["rust"]\n')
    task = spawner.task(agent_id="ag-rust", command=FIX, verification={
        "test-command": "pytest -q tests", "test-count-min": 4, "check-commands": ["cargo test -q"]})
    proc = _spawn(spawner, layer, task)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "target" not in {p.split("/")[0] for p in spawner.files_at("agent/ag-rust")}  # built in the sandbox's /tmp


def test_without_a_sandbox_the_main_checkouts_venv_comes_first_on_path(spawner):
    _venv(spawner.repo)
    layer = _project_catalog(spawner.repo, '[toolchain]\npresets = ["python"]\n')
    task = spawner.task(agent_id="ag-venv-host", command=FIX, verification={
        "test-command": "python -m pytest -q tests", "test-count-min": 4,
        "check-commands": [f"python -c 'import {ONLY_IN_VENV}'"]})
    proc = subprocess.run([RUNTIME, "spawn", "--json", "--no-os-sandbox", "--catalog", str(layer), str(task)],
                          cwd=spawner.repo, capture_output=True, text=True, env=spawner.full_env(), timeout=150)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
