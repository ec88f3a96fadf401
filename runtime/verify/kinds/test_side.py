"""The two runs of the work's tests: the base's tests on the base's own test side, and the work's new tests
on its own.

A test run is one process: whatever the work adds to the test side (a new test module, a conftest hook, a
package `__init__.py`, a line in a base test file importing a helper, a fixture or data file) runs beside the
base's tests and can steer them. So the base's tests are judged in a run whose test side is byte-for-byte the
base's: every test-side file the work changed or deleted is laid back as the base had it and every one it
added is taken away, for that run alone, against the work's production code. A base test file the task lets
change (`[scope] test-edits`) keeps the work's version there, and its tests are judged as the task's.

The work's new tests (new test files, new tests in a base test file) are judged in a run of their own, on the
work's test side as it stands, without the base's test modules it left unchanged (they ran in the first run;
where the command names one, or the runner compiles a package's tests together, as go's and cargo's do, they
stay). Only the tests the base did not have are judged there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from runtime.verify.kinds.kind import Change, TestSide
from runtime.verify.kinds.runners.plan import TestPlan

# The base's test modules a run of the new tests may leave out: files a runner collects as tests by their name.
MODULE_GLOBS = ("**/test_*.py", "test_*.py", "**/*_test.py", "*_test.py", "**/*.test.*", "*.test.*", "**/*.spec.*",
                "*.spec.*")
_MODULE = re.compile(r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.py|[^/]*\.(?:test|spec)\.[^/]+)$")
_COMPILED_TOGETHER = ("go test", "cargo test")


# The test files a run of the base's tests holds read-only, by their names (beyond this many, none: a mount each).
LOCKED_GLOBS = (*MODULE_GLOBS, "**/conftest.py", "conftest.py", "**/__init__.py")
MAX_LOCKED = 4000


def base_side(changes: Sequence[Change], test: re.Pattern[str] | None, edits: re.Pattern[str] | None,
              base_source: Callable[[str], bytes | None], base_files: Sequence[str] = ()) -> TestSide:
    """The run of the base's tests: the base's test side laid over the work's copy, its test files (of
    ``base_files``: the base's files named like tests, conftests and packages) read-only."""
    files: dict[str, bytes | None] = {}

    def side(path: str | None) -> bool:
        return path is not None and test is not None and test.match(path) is not None and \
            not (edits is not None and edits.match(path))

    for change in changes:
        if change.kind in ("added",) and side(change.path):
            files[change.path] = None
        elif change.kind in ("modified", "deleted", "typechange") and side(change.path):
            files[change.path] = base_source(change.path)
        elif change.kind == "renamed":
            if side(change.path):
                files[change.path] = None
            if change.old_path and side(change.old_path):
                files[change.old_path] = base_source(change.old_path)
        elif side(change.path) and change.kind not in ("deleted",):
            files[change.path] = base_source(change.path)
    locked = [p for p in base_files if side(p) and files.get(p, b"") is not None]
    return TestSide("base-tests", tuple(sorted(files.items())),
                    locked=tuple(sorted(locked)) if len(locked) <= MAX_LOCKED else ())


def new_side(changes: Sequence[Change], test: re.Pattern[str] | None, edits: re.Pattern[str] | None,
             base_modules: Sequence[str], plan: TestPlan) -> TestSide | None:
    """The run of the work's new tests, or None when the work's test side holds nothing new (nothing added or
    changed there but the files the task names, which the first run judged)."""
    if test is None:
        return None
    touched = {c.path for c in changes if c.kind != "deleted"} | {c.old_path for c in changes if c.old_path}
    new = [p for p in touched if p and test.match(p) and not (edits is not None and edits.match(p))
           and any(c.path == p and c.kind != "deleted" for c in changes)]
    if not new:
        return None
    if any(step.runner in _COMPILED_TOGETHER for step in plan.steps):
        return TestSide("new-tests")
    named = {w.strip("./") for step in plan.steps for w in step.command.argv}
    aside = [m for m in base_modules if m not in touched and _MODULE.search(m) and m not in named]
    return TestSide("new-tests", tuple((m, None) for m in sorted(aside)))
