"""Fixtures for the tests that run each test runner for real: the toolchains they need, and the JavaScript
runners' npm packages, installed once per machine at pinned versions into `<repo>/.cache/js-runners/`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from tests.conftest import REPO

# The JavaScript runners the tests run, at the versions they were proved with.
JS_PACKAGES = ("mocha@10.8.2", "tape@5.10.2", "jest@29.7.0", "vitest@2.1.9")
JS_CACHE = REPO / ".cache" / "js-runners"
_STAMP = JS_CACHE / (".installed-" + "+".join(p.replace("/", "_") for p in JS_PACKAGES))
INSTALL_TIMEOUT_S = 600


def missing(why: str) -> None:
    """What a test that needs a missing component does: fail under CI, skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"required under CI: {why}")
    pytest.skip(why)


def need(program: str) -> str:
    """The path of ``program``, which the test needs (see ``missing``)."""
    found = shutil.which(program)
    if found is None:
        missing(f"`{program}` is not on PATH")
    assert found is not None
    return found


@pytest.fixture(scope="session")
def js_runners() -> Path:
    """The `node_modules` folder holding mocha, tape, jest and vitest at the pinned versions, installed by
    the first test that needs it (under a lock: several xdist workers may ask at once) and kept, keyed by
    the versions, for every later run."""
    need("node")
    npm = need("npm")
    JS_CACHE.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(JS_CACHE) + ".lock", timeout=INSTALL_TIMEOUT_S + 60):
        if not _STAMP.exists():
            if JS_CACHE.exists():
                shutil.rmtree(JS_CACHE)
            JS_CACHE.mkdir()
            (JS_CACHE / "package.json").write_text('{"name": "js-runners", "private": true}\n')
            try:
                done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--save-exact", "--loglevel=error",
                                       *JS_PACKAGES], cwd=JS_CACHE, capture_output=True, text=True,
                                      timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                missing(f"`npm install {' '.join(JS_PACKAGES)}` took more than {INSTALL_TIMEOUT_S} s")
            if done.returncode != 0:
                missing(f"`npm install {' '.join(JS_PACKAGES)}` failed ({done.returncode}): "
                        f"{(done.stderr or done.stdout)[-2000:]}")
            _STAMP.touch()
    return JS_CACHE / "node_modules"


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
