"""The test runners the orchestrator can start and read, one module each; the first that recognises a
command runs it (pytest's `-m pytest` before a `python` a later runner might also see)."""

from __future__ import annotations

from runtime.verify.kinds.runners import (
    cargo_test,
    go_test,
    js_jest,
    js_mocha,
    js_tape,
    js_vitest,
    node_test,
    py_pytest,
    py_unittest,
)
from runtime.verify.kinds.runners.base import Runner

RUNNERS: tuple[Runner, ...] = (
    py_pytest.RUNNER,
    py_unittest.RUNNER,
    cargo_test.RUNNER,
    go_test.RUNNER,
    node_test.RUNNER,
    js_jest.RUNNER,
    js_vitest.RUNNER,
    js_mocha.RUNNER,
    js_tape.RUNNER,
)
BY_NAME: dict[str, Runner] = {runner.name: runner for runner in RUNNERS}
# The files each runner's support needs in the read-only folder, by the suffix they take after the random name.
SUPPORT: dict[str, str] = {".py": py_pytest.SUPPORT_FILE, py_unittest.SUFFIX: py_unittest.SUPPORT_FILE,
                           node_test.SUFFIX: node_test.SUPPORT_FILE, "_sealed.py": "sealed_load.py",
                           node_test.SEALED_SUFFIX: node_test.SEALED_FILE}
