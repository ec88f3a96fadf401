"""The runtime's unittest launcher: `python -m unittest ARGS` as unittest runs it, with each test's outcome
written to the report file the orchestrator named in AGENT_RUNTIME_TEST_REPORT (outside the tree; the
variable is removed before any test runs), one JSON object a line, ending with the run's totals.

unittest is imported before the working folder joins sys.path (as `python -m` puts it first), so a
`unittest.py` in the tree cannot stand in for it. Runs inside the sandbox under the project's own
interpreter: standard library only."""

from __future__ import annotations

import json
import os
import sys
import traceback
import unittest
from typing import Any

_PATH = os.environ.pop("AGENT_RUNTIME_TEST_REPORT", None)
_CHARS = 2000
_out = open(_PATH, "a", encoding="utf-8") if _PATH else None  # open for the whole run


def _write(record: dict[str, Any]) -> None:
    if _out is not None:
        _out.write(json.dumps(record) + "\n")
        _out.flush()


def _text(err: Any) -> str:
    return "".join(traceback.format_exception(*err))


class _Result(unittest.TextTestResult):
    def _record(self, test: Any, outcome: str, message: str = "") -> None:
        _write({"event": "report", "id": test.id(), "outcome": outcome, "message": message[:_CHARS]})

    def addSuccess(self, test: Any) -> None:
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test: Any, err: Any) -> None:
        super().addFailure(test, err)
        self._record(test, "failed", _text(err))

    def addError(self, test: Any, err: Any) -> None:
        super().addError(test, err)
        self._record(test, "error", _text(err))

    def addSkip(self, test: Any, reason: str) -> None:
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)

    def addExpectedFailure(self, test: Any, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._record(test, "xfailed")

    def addUnexpectedSuccess(self, test: Any) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "xpassed")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._record(test, "failed" if failed else "error", _text(err))


class _Runner(unittest.TextTestRunner):
    resultclass = _Result  # type: ignore[assignment]  # typeshed types it as a callable; a class is one


def main() -> None:
    sys.argv[0] = "python -m unittest"
    sys.path[0] = os.getcwd()  # as `python -m` has it: the working folder first, this folder gone
    program = None
    try:
        program = unittest.main(module=None, testRunner=_Runner, exit=False)
    finally:
        result = program.result if program is not None else None
        if result is not None:
            _write({"event": "finish", "ran": result.testsRun, "successful": result.wasSuccessful()})
    if _out is not None:
        _out.close()
    assert result is not None
    if sys.version_info >= (3, 12) and not result.testsRun and not result.skipped:
        sys.exit(5)  # unittest's own "no tests ran" from 3.12
    sys.exit(not result.wasSuccessful())


if __name__ == "__main__":
    main()
