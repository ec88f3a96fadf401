"""Reading the JSON report jest writes (`--json`), which vitest's json reporter writes in the same form: a
file per entry of `testResults`, each with its `assertionResults`; and, for the runners that stop whole when
a test file does not load (mocha, tape), the file node names in what it printed as it ended."""

from __future__ import annotations

import json
import re
from typing import Any

from runtime.verify.kinds.runners.base import Reading, cut, relative
from runtime.verify.kinds.runners.results import TestCase

SEPARATOR = " > "
# where node's report of an uncaught error names a file: `/tree/test/x.js:3` (a syntax error's first line, a stack's
# frame `(/tree/test/x.js:3:9)`, an ES module's `file:///tree/test/x.mjs:3`)
_SOURCE = re.compile(r"(?:file://)?(/[^\s:()'\"]+\.[cm]?[jt]sx?):\d+")
LOAD_FAILURE_LINES = 30
_STATUS = {"passed": "passed", "failed": "failed", "pending": "skipped", "todo": "skipped", "skipped": "skipped",
           "disabled": "skipped", "focused": "passed"}


def read_jest_form(data: bytes, root: str, config: str) -> Reading:
    try:
        report = json.loads(data.decode("utf-8", errors="replace"))
    except ValueError:
        return Reading(problem="the report is not JSON")
    if not isinstance(report, dict) or not isinstance(report.get("testResults"), list):
        return Reading(problem="the report has no `testResults` list")
    tests: list[TestCase] = []
    seen: dict[str, int] = {}
    for suite in report["testResults"]:
        if not isinstance(suite, dict):
            return Reading(problem="an entry of `testResults` is not an object")
        file = relative(_str(suite.get("name") or suite.get("testFilePath")), root)
        cases = suite.get("assertionResults") or suite.get("testResults") or []
        if not isinstance(cases, list):  # never None: `or []`
            return Reading(problem=f"the results of {file} are not a list")
        for case in cases:
            if not isinstance(case, dict):
                continue
            ancestors = case.get("ancestorTitles")
            ancestors = ancestors if isinstance(ancestors, list) else []
            names = [_str(a) for a in ancestors] + [_str(case.get("title"))]
            test_id = SEPARATOR.join([file, *names])
            seen[test_id] = seen.get(test_id, 0) + 1
            if seen[test_id] > 1:
                test_id += f" #{seen[test_id]}"
            outcome = _STATUS.get(_str(case.get("status")), "error")
            messages = case.get("failureMessages")
            messages = messages if isinstance(messages, list) else []
            tests.append(TestCase(id=test_id, outcome=outcome, file=file,  # type: ignore[arg-type]
                                  message=cut("\n".join(_str(m) for m in messages))))
        if not cases and _str(suite.get("status")) == "failed":
            # a file that did not run at all (a syntax error, an import that failed)
            tests.append(TestCase(id=file or "(a test file)", outcome="error", file=file,
                                  message=cut(_str(suite.get("message") or suite.get("failureMessage")))))
    complete = report.get("wasInterrupted") is not True
    return Reading(tests, complete, config)


def load_failure(output: str, root: str, after: str = "") -> TestCase | None:
    """The test file that ended the run as it loaded, from what node printed (after the first ``after``, when
    given): the first file of the tree (outside `node_modules`) it names, as an error case of its own; None when
    it names none. Read only when the runner did not finish, so what a test prints can only add a failure."""
    if after:
        at = output.find(after)
        if at < 0:
            return None
        output = output[at:]
    for m in _SOURCE.finditer(output):
        file = relative(m.group(1), root)
        if file.startswith("/") or "node_modules/" in file:
            continue
        start = output.rfind("\n", 0, m.start()) + 1
        said = "\n".join(output[start:].splitlines()[:LOAD_FAILURE_LINES])
        return TestCase(id=file, outcome="error", file=file, message=cut(said))
    return None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
