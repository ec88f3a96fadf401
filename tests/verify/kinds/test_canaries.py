"""Tamper checks: which base test files are copied, what a check file holds, and what its checks say of a
run. The negations are run for real under pytest (the harness): on code that passes a test, its negation
fails; on code that fails it, its negation passes; a forger that turns failures into passes makes both pass."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from runtime.verify.kinds.canaries import Laid, TamperCheck, plan_checks, violations
from runtime.verify.kinds.runners.plan import plan_tests
from runtime.verify.kinds.runners.results import TestRun
from tests.verify.kinds.runners.harness import run as run_step
from tests.verify.kinds.runners.harness import write
from tests.verify.kinds.test_tests_green import case, step

TESTS = textwrap.dedent('''\
    import pytest

    from calc import add, mean


    def test_add():
        assert add(2, 3) == 5


    def test_mean_of_one():
        assert mean([4.0]) == 4.0


    @pytest.mark.parametrize("values,expected", [([1.0, 3.0], 2.0), ([2.0, 4.0], 3.0)])
    def test_mean_of(values, expected):
        assert mean(values) == expected


    def test_skipped_later():
        pytest.skip("not today")
''')
BUGGY = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) / (len(values) + 1)\n"
FIXED = BUGGY.replace("(len(values) + 1)", "len(values)")
FILE = "tests/test_calc.py"


def base_run(outcome_of_mean: str = "failed") -> TestRun:
    return TestRun(steps=[step(case(f"{FILE}::test_add"), case(f"{FILE}::test_mean_of_one", outcome_of_mean),
                               case(f"{FILE}::test_mean_of[values0-2.0]", outcome_of_mean),
                               case(f"{FILE}::test_mean_of[values1-3.0]", outcome_of_mean),
                               case(f"{FILE}::test_skipped_later", "skipped"))])


def laid(command: str = "pytest -q tests", base: TestRun | None = None) -> Laid:
    return plan_checks(plan_tests(command), base or base_run(), lambda p: TESTS.encode() if p == FILE else None,
                       {FILE}, lambda p: False)


def test_a_check_file_lies_beside_the_original_named_as_its_runner_collects_it():
    made = laid()
    [path] = made.files
    assert path.startswith("tests/test_calc_") and path.endswith(".py") and path != FILE
    kinds = sorted(c.expect for c in made.checks)
    assert kinds.count("fails") == 1 and kinds.count("passes") == 1
    assert kinds.count("as") == 3  # each test the base fails, under the new file's name
    assert kinds.count("opposite") == 3  # test_mean_of_one and both cases of test_mean_of (not test_add: it passes)
    assert all(c.file == path for c in made.checks)


@pytest.mark.parametrize("command", ["pytest -q -k mean tests", "pytest -x tests", "pytest tests/test_calc.py",
                                     "pytest tests/test_calc.py::test_add", "pytest --lf"])
def test_a_command_that_selects_tests_or_stops_early_gets_no_checks_and_says_why(command):
    made = laid(command)
    assert made.files == {} and made.checks == [] and "no tamper check is laid" in made.none


def test_runners_without_checks_say_so():
    base = TestRun(steps=[step(case("src/a.test.js > adds"), runner="jest", command="jest")])
    made = plan_checks(plan_tests("npx jest"), base, lambda p: b"", set(), lambda p: False)
    assert made.files == {} and made.none == "jest runs without tamper checks"


def test_files_the_task_lets_change_are_not_copied():
    made = plan_checks(plan_tests("pytest tests"), base_run(), lambda p: TESTS.encode(), {FILE}, lambda p: p == FILE)
    assert made.files == {}


def _ran(tmp_path: Path, code: str, made: Laid) -> TestRun:
    root = write(tmp_path / "project", {"calc.py": code, FILE: TESTS, "tests/conftest.py":
                                        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent))\n",
                                        **made.files})
    ran = run_step("pytest -q tests", root)
    assert ran.reading is not None and ran.tampered == "", ran
    return TestRun(steps=[step(*ran.reading.tests, exit_code=ran.code)])


@pytest.mark.parametrize("code", [FIXED, BUGGY], ids=["fixed", "buggy"])
def test_an_honest_run_holds_every_check(tmp_path, code):
    made = laid()
    tampered, differing = violations(made.checks, _ran(tmp_path, code, made))
    assert tampered == [] and differing == []


def test_a_forger_that_turns_failures_into_passes_breaks_the_checks(tmp_path):
    made = laid()
    forger = textwrap.dedent('''\
        import _pytest.reports as _r

        _made = _r.TestReport.__init__


        def _passing(self, *args, **kwargs):
            _made(self, *args, **kwargs)
            if self.outcome == "failed":
                self.outcome, self.longrepr = "passed", None


        _r.TestReport.__init__ = _passing
    ''')
    tampered, _ = violations(made.checks, _ran(tmp_path, forger + BUGGY, made))
    assert any("and its negation" in t for t in tampered), tampered


def test_a_forger_that_knows_the_failing_tests_by_name_is_caught_by_their_negations(tmp_path):
    made = laid()
    forger = textwrap.dedent('''\
        import _pytest.reports as _r

        _made = _r.TestReport.__init__


        def _passing(self, *args, **kwargs):
            _made(self, *args, **kwargs)
            if self.outcome == "failed" and "mean" in self.nodeid.rsplit("::", 1)[-1]:
                self.outcome, self.longrepr = "passed", None


        _r.TestReport.__init__ = _passing
    ''')
    tampered, _ = violations(made.checks, _ran(tmp_path, forger + BUGGY, made))
    assert tampered and all("and its negation" in t for t in tampered), tampered


def test_a_forger_that_knows_the_failing_tests_by_their_file_is_caught_by_their_copies(tmp_path):
    made = laid()
    forger = textwrap.dedent('''\
        import _pytest.reports as _r

        _made = _r.TestReport.__init__


        def _passing(self, *args, **kwargs):
            _made(self, *args, **kwargs)
            if self.outcome == "failed" and self.nodeid.startswith("tests/test_calc.py::"):
                self.outcome, self.longrepr = "passed", None


        _r.TestReport.__init__ = _passing
    ''')
    tampered, differing = violations(made.checks, _ran(tmp_path, forger + BUGGY, made))
    assert set(differing) == {f"{FILE}::test_mean_of_one", f"{FILE}::test_mean_of[values0-2.0]",
                              f"{FILE}::test_mean_of[values1-3.0]"}


def test_code_right_only_for_its_first_calls_fails_the_copies(tmp_path):
    made = laid()
    counting = FIXED.replace("    return sum(values) / len(values)\n", '''\
    _calls.append(1)
    return sum(values) / (len(values) if len(_calls) <= 3 else len(values) + 1)


_calls = []
''')
    _, differing = violations(made.checks, _ran(tmp_path, counting, made))
    assert differing


def test_a_check_file_the_runner_did_not_collect_says_nothing():
    checks = [TamperCheck(id="tests/test_x.py::test_a", expect="fails", file="tests/test_x.py")]
    assert violations(checks, TestRun(steps=[step(case(f"{FILE}::test_add"))])) == ([], [])


def test_a_collected_check_file_whose_checks_are_missing_is_tampering():
    checks = [TamperCheck(id="tests/test_x.py::test_a", expect="fails", file="tests/test_x.py"),
              TamperCheck(id="tests/test_x.py::test_add", expect="as", of=f"{FILE}::test_add", file="tests/test_x.py")]
    run = TestRun(steps=[step(case(f"{FILE}::test_add"), case("tests/test_x.py::test_other"))])
    tampered, _ = violations(checks, run)
    assert tampered == ["a test that must fail was reported missing",
                        f"a copy of `{FILE}::test_add` was collected with its file and is missing from the report"]


def test_node_check_files_copy_the_original_and_add_a_failing_and_a_passing_test():
    source = "'use strict'\nconst { test } = require('node:test')\ntest('adds', () => {})\n"
    base = TestRun(steps=[step(case("test/calc.test.js > adds", file="test/calc.test.js"), runner="node --test",
                               command="node --test")])
    made = plan_checks(plan_tests("node --test"), base, lambda p: source.encode(), set(), lambda p: False)
    [(path, text)] = made.files.items()
    assert path.startswith("test/calc_") and path.endswith(".test.js")
    assert text.startswith(source.rstrip()) and "require('node:assert').strictEqual" in text
    assert sorted(c.expect for c in made.checks) == ["fails", "passes"]  # the base fails none of its tests
    assert "{ todo: true }" in text  # the test that must fail leaves the run's exit status the suite's
