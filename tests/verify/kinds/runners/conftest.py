"""Fixtures for the tests that run each test runner for real: the toolchains they need, and the JavaScript
runners' npm packages, installed once per machine at pinned versions into `<repo>/.cache/js-runners/`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.js_runners import js_runners, missing, need


@pytest.fixture(scope="session", name="js_runners")
def _js_runners() -> Path:
    """The `node_modules` folder holding the JavaScript runners (`tests.js_runners`)."""
    return js_runners()


@pytest.fixture
def python_env() -> dict[str, str]:
    """The suite's own interpreter first on PATH, so `python`, `pytest` and `python -m unittest` are its
    (pytest-xdist included)."""
    return {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}", "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.fixture(scope="session")
def _go_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("go-cache")


@pytest.fixture
def go_env(tmp_path: Path, _go_cache: Path) -> dict[str, str]:
    """go with its caches, module path and home in the test's folders, modules as go.mod says, and no
    network (the projects have no dependencies)."""
    need("go")
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "GOCACHE": str(_go_cache), "GOPATH": str(tmp_path / "gopath"), "GOFLAGS": "-mod=mod",
            "GOPROXY": "off", "GOTOOLCHAIN": "local", "GOTELEMETRY": "off", "CGO_ENABLED": "0"}


@pytest.fixture(scope="session")
def _cargo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cargo-home")


@pytest.fixture
def cargo_env(tmp_path: Path, _cargo_home: Path) -> dict[str, str]:
    """cargo offline with a fresh CARGO_HOME (the crates have no dependencies, so no registry is read) and the
    test's own target folder; rustup's toolchains stay where rustup keeps them (RUSTUP_HOME, from HOME)."""
    path = os.environ.get("PATH", "")
    rustup_bin = Path.home() / ".cargo" / "bin"
    if shutil.which("cargo") is None and (rustup_bin / "cargo").exists():
        path = f"{rustup_bin}:{path}"  # rustup's cargo, as `make test` puts it on PATH
    if shutil.which("cargo", path=path) is None:
        missing("`cargo` is not on PATH")
    return {"PATH": path, "CARGO_HOME": str(_cargo_home), "CARGO_TARGET_DIR": str(tmp_path / "target"),
            "CARGO_NET_OFFLINE": "true", "RUST_BACKTRACE": "0", "CARGO_TERM_COLOR": "never"}


@pytest.fixture
def node_env() -> dict[str, str]:
    need("node")
    return {}


def link_js_runners(root: Path, node_modules: Path) -> Path:
    """``root`` with a `node_modules` that is the shared install of the JavaScript runners."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "node_modules").symlink_to(node_modules, target_is_directory=True)
    return root
