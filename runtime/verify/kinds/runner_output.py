"""Reading pass and failure counts from a test runner's output, for tests-green.

Recognised, in this order (the first that matches decides):

- cargo test: every ``test result: ok. N passed; M failed; ...`` line, summed
  (one per test binary and doc-test run);
- pytest: the last summary line, ``==== 12 passed, 1 skipped in 0.31s ====``
  or quiet ``12 passed in 0.12s``, with its failed and error counts;
- go test: with ``-v`` (``=== RUN`` lines) the top-level ``--- PASS:`` lines
  are the count (subtests, indented, are not counted: a table of cases is one
  test function); without ``-v`` go prints only one ``ok``/``FAIL`` line per
  package, so the count is unknown (``None``) and only failures are read;
- unittest: ``Ran N tests`` with ``OK`` or ``FAILED (failures=F, errors=E)``;
- node's test runner (``node --test``): its closing ``# tests N``, ``# pass N``,
  ``# fail N`` and ``# cancelled N`` (``ℹ`` instead of ``#`` with the spec
  reporter), a cancelled test counted as failed;
- anything else: the last ``N passed``/``N passing`` and ``N failed``/``N failing``
  (jest, mocha and the like).

Colour escape codes are removed first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CARGO_RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed;", re.M)
_CARGO_FAILURE = re.compile(r"^(?:test \S+ \.\.\. FAILED|thread '.*' panicked at .*)$", re.M)
_PYTEST_WORD = r"(?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)"
_PYTEST_SUMMARY = re.compile(rf"^=*[ \t]*((?:\d+ {_PYTEST_WORD}(?:, )?)+|no tests ran) in [\d.]+[ \t]*s(?:econds)?\b.*$", re.M)
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?)\b")
_PYTEST_FAILURE = re.compile(r"^(?:FAILED|ERROR) \S.*$", re.M)
_GO_RUN = re.compile(r"^=== RUN ", re.M)
_GO_PASS = re.compile(r"^--- PASS: ", re.M)
_GO_FAIL = re.compile(r"^--- FAIL: ", re.M)
_GO_PACKAGE = re.compile(r"^(?:ok|FAIL|\?)[ \t]+\S+[ \t]+(?:[\d.]+s|\(cached\)|\[.*\])", re.M)
_GO_FAILED_PACKAGE = re.compile(r"^FAIL[ \t]+\S+[ \t]+(?:[\d.]+s|\[.*\])", re.M)
_GO_FAILURE = re.compile(r"^[ \t]*--- FAIL: .*$|^panic: .*$|^FAIL[ \t]+\S+[ \t]+.*$", re.M)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ", re.M)
_UNITTEST_OUTCOME = re.compile(r"^(?:OK|FAILED) \((.*)\)[ \t]*$", re.M)
_UNITTEST_FAILURE = re.compile(r"^(?:FAIL|ERROR): \S.*$", re.M)
_NODE_TOTALS = re.compile(r"^(?:#|\u2139)[ \t]+(tests|pass|fail|cancelled)[ \t]+(\d+)[ \t]*$", re.M)
_NODE_FAILURE = re.compile(r"^[ \t]*(?:not ok \d+ - .*|\u2716 .*)$", re.M)
_GENERIC_PASSED = re.compile(r"(\d+)[ \t]+(?:tests?[ \t]+)?(?:passed|passing)\b", re.I)
_GENERIC_FAILED = re.compile(r"(\d+)[ \t]+(?:tests?[ \t]+)?(?:failed|failing)\b", re.I)


@dataclass(frozen=True)
class RunCounts:
    runner: str
    passed: int | None  # None: the output does not say
    failed: int = 0
    errors: int = 0
    failure_lines: list[str] = field(default_factory=list)


def read_counts(output: str) -> RunCounts:
    text = ANSI.sub("", output).replace("\r\n", "\n")
    for reader in (_cargo, _pytest, _go, _unittest, _node, _generic):
        count = reader(text)
        if count is not None:
            return count
    return RunCounts("unknown", None)


def _cargo(text: str) -> RunCounts | None:
    results = _CARGO_RESULT.findall(text)
    if not results:
        return None
    return RunCounts(
        "cargo test", sum(int(p) for p, _ in results), sum(int(f) for _, f in results),
        failure_lines=_CARGO_FAILURE.findall(text),
    )


def _pytest(text: str) -> RunCounts | None:
    summaries = _PYTEST_SUMMARY.findall(text)
    if not summaries:
        return None
    counts = {"passed": 0, "failed": 0, "errors": 0}
    for number, word in _PYTEST_COUNT.findall(summaries[-1]):
        counts["errors" if word.startswith("error") else word] += int(number)
    return RunCounts("pytest", counts["passed"], counts["failed"], counts["errors"], _PYTEST_FAILURE.findall(text))


def _go(text: str) -> RunCounts | None:
    verbose = bool(_GO_RUN.search(text))
    if not verbose and not _GO_PACKAGE.search(text):
        return None
    top_level_failures = len(_GO_FAIL.findall(text))
    failed = top_level_failures or len(_GO_FAILED_PACKAGE.findall(text))
    passed = len(_GO_PASS.findall(text)) if verbose else None
    return RunCounts("go test", passed, failed, failure_lines=[line.strip() for line in _GO_FAILURE.findall(text)])


def _unittest(text: str) -> RunCounts | None:
    ran = _UNITTEST_RAN.findall(text)
    if not ran:
        return None
    outcome = dict.fromkeys(("failures", "errors", "skipped", "expected failures"), 0)
    for summary in _UNITTEST_OUTCOME.findall(text)[-1:]:
        for part in summary.split(","):
            key, _, value = part.strip().partition("=")
            if key in outcome and value.isdigit():
                outcome[key] = int(value)
    passed = int(ran[-1]) - outcome["failures"] - outcome["errors"] - outcome["skipped"] - outcome["expected failures"]
    return RunCounts("unittest", passed, outcome["failures"], outcome["errors"], _UNITTEST_FAILURE.findall(text))


def _node(text: str) -> RunCounts | None:
    totals: dict[str, int] = {}
    for name, number in _NODE_TOTALS.findall(text):
        totals[name] = int(number)  # the last of each: the closing summary
    if "tests" not in totals or "pass" not in totals:
        return None
    failed = totals.get("fail", 0) + totals.get("cancelled", 0)
    return RunCounts("node --test", totals["pass"], failed, failure_lines=[line.strip() for line in _NODE_FAILURE.findall(text)])


def _generic(text: str) -> RunCounts | None:
    passes = _GENERIC_PASSED.findall(text)
    failures = _GENERIC_FAILED.findall(text)
    if not passes and not failures:
        return None
    return RunCounts("generic", int(passes[-1]) if passes else None, int(failures[-1]) if failures else 0)
