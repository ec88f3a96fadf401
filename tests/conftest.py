"""Shared fixtures: the shipped catalog, copies to break, the CLI as a process.

Every test runs with the network closed (loopback only) and a private policy
cache, so no test can reach a real model or leak state into another.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUNTIME = str(Path(sys.executable).with_name("runtime"))
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """Fail any test that tries to reach anything but 127.0.0.1 (models included)."""
    real_connect = socket.socket.connect

    def guarded(sock, address):
        if isinstance(address, tuple) and address[0] not in _LOOPBACK:
            raise AssertionError(f"test tried to reach the network: {address!r}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def _private_state(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RUNTIME_CACHE_DIR", str(tmp_path_factory.mktemp("policy-cache")))
    for var in ("RUNTIME_CATALOG", "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _fresh_warnings():
    """Deprecation warnings are once per process; each test is its own "process" here."""
    from runtime.manifests import catalog

    catalog._WARNED.clear()


def require(available: bool, why: str) -> None:
    """A test that needs a real component fails under CI and skips elsewhere."""
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"required component missing under CI: {why}")
    pytest.skip(why)


@pytest.fixture
def catalog_copy(tmp_path) -> Path:
    """A writable copy of the shipped catalog (capabilities, roles, manifests, schemas, docs)."""
    root = tmp_path / "catalog"
    for name in ("capabilities", "roles", "programs", "manifests", "schemas", "docs"):
        shutil.copytree(REPO / name, root / name)
    return root


def run_cli(*args: str, cwd: Path | str | None = None, input: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the installed `runtime` console script as a real process."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([RUNTIME, *args], cwd=cwd, input=input, capture_output=True, text=True, env=full_env, timeout=120)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# What makes a test slow is what it starts, which its fixtures say: a real sandbox (`bwrap`), a spawned
# agent in a real repository (`spawner`), a plan of several (`orchestra`), a real open-source project
# (`real_repo`), the built wheel and its installs; and the tests that drive the real Claude Code CLI
# (`real_client`) or run commands for real to check the gate (`differential`), and a real browser (`browser`). Anything else is fast,
# wherever it lives, and `make test-fast` runs it. A test that starts such a component without one of
# these fixtures says so itself with `@pytest.mark.slow`.
SLOW_FIXTURES = frozenset({"bwrap", "spawner", "orchestra", "real_repo", "wheel", "installs", "installed", "uv_tool", "arena",
                           "project", "browser"})


# The longest tests, by what they start: a real project's toolchain (a TypeScript check alone takes ten
# seconds), a Ray cluster of three nodes.
LONGEST_FIXTURES = frozenset({"real_repo"})
LONGEST_FILES = frozenset({"test_ray_executor.py", "test_spawn_faults.py"})


def pytest_collection_modifyitems(config, items):
    """Mark the slow tests, so `make test-fast` can leave them out (`make test` runs everything), and run
    the longest first: the suite is bound by two cores, and a minute-long test that starts last keeps
    one of them busy alone at the end while the other has nothing left to take."""
    weight: dict[int, int] = {}
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if (SLOW_FIXTURES & fixtures or item.get_closest_marker("real_client")
                or item.get_closest_marker("differential")):
            item.add_marker(pytest.mark.slow)
            longest = LONGEST_FIXTURES & fixtures or item.path.name in LONGEST_FILES
            weight[id(item)] = 2 if longest else 1
    items.sort(key=lambda item: -weight.get(id(item), 0))  # stable: the order within each weight stays
