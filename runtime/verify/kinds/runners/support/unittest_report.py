"""The runtime's unittest launcher: `python -m unittest ARGS` as unittest runs it, with each test's outcome
sent to the orchestrator's socket named in AGENT_RUNTIME_TEST_REPORT (outside the tree, read as it is
written; the variable is removed before any test runs), one JSON object a line, ending with the run's totals.

unittest is imported before the working folder joins sys.path (as `python -m` puts it first), so a
`unittest.py` in the tree cannot stand in for it. Runs inside the sandbox under the project's own
interpreter: standard library only."""

from __future__ import annotations

import json
import os
import socket
import sys
import traceback
import unittest
from typing import Any

_PATH = os.environ.pop("AGENT_RUNTIME_TEST_REPORT", None)
_CHARS = 2000
_DUMPS = json.dumps  # bound now, before any code of the tree can replace it


def _open(path: str | None) -> Any:
    """The orchestrator's socket, as a text stream open for the whole run."""
    if path is None:
        return None
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    channel.connect(path)
    return channel.makefile("w", encoding="utf-8")


_out = _open(_PATH)


def _key(where: str | None) -> str:
    """The run's key, from the file AGENT_RUNTIME_REPORT_KEY names, removed at once (before any code of the tree
    runs): each record carries it and its number, so a record the code under test adds is seen as such."""
    if where is None:
        return ""
    try:
        with open(where, encoding="utf-8") as f:
            key = f.read().strip()
        os.unlink(where)
    except OSError:
        return ""
    return key


_KEY = _key(os.environ.pop("AGENT_RUNTIME_REPORT_KEY", None))
_N = [0]


def _write(record: dict[str, Any]) -> None:
    if _out is not None:
        _out.write(_DUMPS({**record, "k": _KEY, "n": _N[0]}) + "\n")
        _out.flush()
        _N[0] += 1


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
