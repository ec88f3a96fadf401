"""The JavaScript test runners' npm packages, installed once per machine at pinned versions into
`<repo>/.cache/js-runners/` (under a lock: several xdist workers may ask at once), for the suites that run
them for real (`tests/verify/kinds/runners/`, `tests/gaming/`)."""

from __future__ import annotations

import os
import shutil
import subprocess
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


def js_runners() -> Path:
    """The `node_modules` folder holding mocha, tape, jest and vitest at the pinned versions, installed by
    the first test that needs it and kept, keyed by the versions, for every later run."""
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
