"""Install as it really is: from a clone of the repository (the README's first line, until the distribution is
published), and the distribution as the publishing workflow builds it: the sdist, and the wheel built from
that sdist, each carrying what the runtime needs (its catalog) and nothing of the checkout's own caches."""

from __future__ import annotations

import subprocess
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.dist.conftest import _base_env, _interpreter, _run, tool

pytestmark = pytest.mark.slow
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def _clone(tmp_path: Path) -> Path:
    clone = tmp_path / "agent-role-runtime"
    _run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], _base_env())
    return clone


def test_uv_tool_install_from_a_clone_gives_the_command_with_its_catalog(tmp_path):
    clone = _clone(tmp_path)
    env = {**_base_env(), "UV_TOOL_DIR": str(tmp_path / "tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "bin")}
    _run([tool("uv"), "tool", "install", "--python", _interpreter(), str(clone)], env)  # `uv tool install .`
    runtime = tmp_path / "bin" / "runtime"
    env["PATH"] = f"{tmp_path / 'bin'}:{env['PATH']}"
    version = subprocess.run([str(runtime), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path,
                             timeout=60)
    assert version.stdout.strip() == f"runtime {VERSION}", version.stderr
    roles = subprocess.run([str(runtime), "roles", "--json"], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=60)
    assert roles.returncode == 0 and "edit-local" in roles.stdout, roles.stderr


def test_the_publishing_workflow_s_build_an_sdist_and_the_wheel_built_from_it(tmp_path):
    clone = _clone(tmp_path)
    out = tmp_path / "dist"
    _run([tool("uv"), "build", "--out-dir", str(out), str(clone)], _base_env())  # as .github/workflows/publish.yml
    (sdist,) = out.glob("agent_role_runtime-*.tar.gz")
    (wheel,) = out.glob("agent_role_runtime-*.whl")
    assert sdist.name == f"agent_role_runtime-{VERSION}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = f"agent_role_runtime-{VERSION}"
    for needed in ("pyproject.toml", "README.md", "runtime/cli/main.py", "roles/edit-local.toml", "programs",
                   "capabilities", "schemas", "docs/AGENT-ROLES.md", "runtime/console/static/console.js"):
        assert any(n == f"{top}/{needed}" or n.startswith(f"{top}/{needed}/") for n in names), needed
    assert not any("/.venv/" in n or "/.cache/" in n or "__pycache__" in n for n in names)
    with zipfile.ZipFile(wheel) as archive:
        files = archive.namelist()
    assert "runtime/_catalog/roles/edit-local.toml" in files and "runtime/console/static/console.js" in files
    assert "runtime/_catalog/docs/AGENT-ROLES.md" in files and not any(f.startswith("tests/") for f in files)
    workflow = (REPO / ".github/workflows/publish.yml").read_text()
    assert "uv build --out-dir dist" in workflow and "id-token: write" in workflow
    assert "pypa/gh-action-pypi-publish" in workflow and 'tags: ["v*"]' in workflow
