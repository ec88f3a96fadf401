"""The runtime as a user installs it: the wheel built from this checkout, installed three ways.

- `uv tool install` and `pipx install`, each into throwaway folders (UV_TOOL_DIR and UV_TOOL_BIN_DIR,
  PIPX_HOME and PIPX_BIN_DIR), the command then found on PATH;
- project-local: a venv under the project's `.agent-runtime/venv` made by `uv venv` (which writes a
  `.gitignore` of `*` into it) and filled with `uv pip install`, leaving the project's own venv alone.

The wheel is built once per session (per worker) and each install is made once and shared. The
dependencies come from the package index, as a user's would. Nothing here runs from this checkout:
every command is the installed `runtime`, on a PATH without this environment's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, require
from tests.support import user_repo

FORMS = ("uv-tool", "pipx", "project-local")
# A tiny project with a planted bug and a test command its Makefile names (`runtime init` finds it).
PROJECT = {
    "src/calc.py": "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n",
    "tests/test_calc.py": ("import sys\nimport unittest\n\nsys.path.insert(0, 'src')\nfrom calc import mean  # noqa: E402\n\n\n"
                           "class MeanTest(unittest.TestCase):\n    def test_mean(self):\n"
                           "        self.assertEqual(mean([1, 2, 3]), 2)\n"),
    "Makefile": "test:\n\tpython3 -m unittest discover -s tests -v\n",
}


def tool(name: str) -> str:
    """A program of the dev extra, from this environment (uv, pipx)."""
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    require(path is not None, f"{name} is not installed (the dev extra has it: pip install -e '.[dev]')")
    assert path is not None
    return path


def clean_path() -> str:
    """PATH without this environment's bin folder: the `runtime` found must be the installed one."""
    ours = str(Path(sys.executable).parent)
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != ours)


@dataclass
class Install:
    form: str
    runtime: Path  # the command as the form gives it to a person
    python: Path  # the interpreter of the install's own environment
    tool_env: dict[str, str]  # the tool folders and PATH (with the tools' bin folder, never this environment's)
    project: Path | None = None  # project-local: the repository it was installed into

    def environ(self, **extra: str) -> dict[str, str]:
        """The environment a person's shell would give the command, read now (each test has its own caches)."""
        return {**_base_env(), **self.tool_env, **extra}

    def run(self, *args: str, cwd: Path, input: str | None = None, timeout: float = 300,
            **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.runtime), *args], cwd=cwd, input=input, capture_output=True, text=True,
                              env=self.environ(**extra), timeout=timeout)


def _run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(argv)}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run([tool("uv"), "build", "--wheel", "--quiet", "--out-dir", str(out), str(REPO)], dict(os.environ))
    (built,) = out.glob("agent_role_runtime-*.whl")
    return built


def _base_env() -> dict[str, str]:
    """This environment without its venv and tool settings. HOME stays: uv's and pip's download caches
    live there, and the tool folders are set apart explicitly."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "UV_", "PIPX_"))}
    # A Python is never downloaded: the machine's own serves every form.
    return {**env, "PATH": clean_path(), "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}


def _interpreter() -> str:
    """The machine's Python this environment was made from (the tools' venvs are made from it)."""
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def _install(form: str, wheel: Path, root: Path) -> Install:
    env = _base_env()
    if form in ("uv-tool", "pipx"):
        bin_dir = root / "bin"
        if form == "uv-tool":
            tool_env = {"UV_TOOL_DIR": str(root / "tools"), "UV_TOOL_BIN_DIR": str(bin_dir)}
            argv = [tool("uv"), "tool", "install", "--python", _interpreter(), str(wheel)]
            python = root / "tools/agent-role-runtime/bin/python"
        else:
            tool_env = {"PIPX_HOME": str(root / "pipx"), "PIPX_BIN_DIR": str(bin_dir), "PIPX_MAN_DIR": str(root / "man")}
            argv = [tool("pipx"), "install", "--python", _interpreter(), str(wheel)]
            python = root / "pipx/venvs/agent-role-runtime/bin/python"
        _run(argv, {**env, **tool_env})
        tool_env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
        return Install(form, bin_dir / "runtime", python, tool_env)
    project = user_repo(root, PROJECT)
    # The project's own environment, which the install must leave as it was.
    _run([tool("uv"), "venv", "--quiet", "--python", _interpreter(), str(project / ".venv")], env)
    venv = project / ".agent-runtime/venv"
    _run([tool("uv"), "venv", "--quiet", "--python", _interpreter(), str(venv)], env)
    _run([tool("uv"), "pip", "install", "--quiet", "--python", str(venv), str(wheel)], env)  # as the README says
    return Install(form, venv / "bin/runtime", venv / "bin/python", {}, project)


@pytest.fixture(scope="session")
def installs(wheel, tmp_path_factory):
    """Each form installed once, when a test first asks for it."""
    made: dict[str, Install] = {}

    def get(form: str) -> Install:
        if form not in made:
            made[form] = _install(form, wheel, tmp_path_factory.mktemp(form))
        return made[form]

    return get


@pytest.fixture(params=FORMS)
def installed(request, installs) -> Install:
    return installs(request.param)


@pytest.fixture
def uv_tool(installs) -> Install:
    return installs("uv-tool")


@pytest.fixture
def project(installed, tmp_path) -> Path:
    """The repository a test works in: the one a project-local install lives in, else a fresh one."""
    if installed.project is not None:
        return installed.project
    return user_repo(tmp_path, PROJECT)
