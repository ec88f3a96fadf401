"""runner_output.read_counts: pass and failure counts from each runner's own summary."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.runner_output import RunCounts, read_counts


def counts(output: str) -> tuple[str, int | None, int, int]:
    c = read_counts(output)
    return c.runner, c.passed, c.failed, c.errors


# ---------------------------------------------------------------- pytest


@pytest.mark.parametrize("output,expected", [
    ("===== 12 passed, 1 skipped in 0.31s =====", ("pytest", 12, 0, 0)),
    ("4 passed in 0.12s", ("pytest", 4, 0, 0)),
    ("== 1 failed, 11 passed, 1 error in 0.42s ==", ("pytest", 11, 1, 1)),
    ("== 2 errors in 0.10s ==", ("pytest", 0, 0, 2)),
    ("== 3 passed, 2 warnings in 1.05s (0:00:01) ==", ("pytest", 3, 0, 0)),
    ("== 5 passed, 1 xfailed, 1 xpassed, 2 deselected, 1 rerun in 2.00 seconds ==", ("pytest", 5, 0, 0)),
    ("no tests ran in 0.01s", ("pytest", 0, 0, 0)),
])
def test_pytest_summary(output, expected):
    assert counts(output) == expected


def test_pytest_the_last_summary_decides():
    assert counts("== 1 failed in 1s ==\nrerun:\n== 3 passed in 1.0s ==") == ("pytest", 3, 0, 0)


def test_pytest_failure_lines_are_the_short_summary_lines():
    output = "FAILED tests/a.py::t - boom\nERROR tests/b.py::u\n  FAILED indented is not\n== 1 failed, 1 error in 1s =="
    assert read_counts(output).failure_lines == ["FAILED tests/a.py::t - boom", "ERROR tests/b.py::u"]


def test_colour_codes_are_removed_before_reading():
    assert counts("\x1b[32m== \x1b[1m7 passed\x1b[0m in 1.00s ==\x1b[0m") == ("pytest", 7, 0, 0)


def test_windows_line_endings_are_read():
    assert counts("collected 2 items\r\n\r\n2 passed in 0.1s\r\n") == ("pytest", 2, 0, 0)


# ---------------------------------------------------------------- cargo


def test_cargo_sums_every_test_result_line():
    output = ("test result: ok. 3 passed; 0 failed; 0 ignored\n"
              "test result: FAILED. 1 passed; 2 failed; 0 ignored\n"
              "test result: ok. 0 passed; 0 failed; 0 ignored\n")
    assert counts(output) == ("cargo test", 4, 2, 0)


def test_cargo_takes_precedence_over_a_pytest_like_line():
    output = "test result: ok. 2 passed; 0 failed;\n9 passed in 1.0s\n"
    assert counts(output) == ("cargo test", 2, 0, 0)


def test_cargo_failure_lines_are_failed_tests_and_panics():
    output = ("test a::b ... ok\ntest a::c ... FAILED\nthread 'a::c' panicked at src/lib.rs:1:1:\n"
              "test result: FAILED. 1 passed; 1 failed;\n")
    assert read_counts(output).failure_lines == ["test a::c ... FAILED", "thread 'a::c' panicked at src/lib.rs:1:1:"]


# ---------------------------------------------------------------- go


def test_go_verbose_counts_top_level_passes_not_subtests():
    output = ("=== RUN   TestA\n=== RUN   TestA/x\n--- PASS: TestA (0.00s)\n    --- PASS: TestA/x (0.00s)\n"
              "=== RUN   TestB\n--- PASS: TestB (0.00s)\nPASS\nok  \tex.com/p\t0.01s\n")
    assert counts(output) == ("go test", 2, 0, 0)


def test_go_verbose_failures_are_top_level_fail_lines():
    output = ("=== RUN   TestA\n    a_test.go:3: bad\n    --- FAIL: TestA/sub (0.00s)\n--- FAIL: TestA (0.00s)\n"
              "FAIL\nFAIL\tex.com/p\t0.01s\n")
    c = read_counts(output)
    assert (c.runner, c.passed, c.failed) == ("go test", 0, 1)
    assert c.failure_lines == ["--- FAIL: TestA/sub (0.00s)", "--- FAIL: TestA (0.00s)", "FAIL\tex.com/p\t0.01s"]


def test_go_quiet_has_no_count_but_counts_failed_packages():
    output = "ok  \tex.com/a\t0.01s\nok  \tex.com/b\t(cached)\n?   \tex.com/c\t[no test files]\nFAIL\tex.com/d\t0.2s\n"
    assert counts(output) == ("go test", None, 1, 0)
    assert counts("ok  \tex.com/a\t0.01s\n") == ("go test", None, 0, 0)


def test_go_panic_is_a_failure_line():
    output = "=== RUN   TestA\npanic: runtime error: index out of range\nFAIL\tex.com/p\t0.01s\n"
    assert "panic: runtime error: index out of range" in read_counts(output).failure_lines


# ---------------------------------------------------------------- unittest


@pytest.mark.parametrize("output,expected", [
    ("Ran 4 tests in 0.002s\n\nOK\n", ("unittest", 4, 0, 0)),
    ("Ran 1 test in 0.001s\n\nOK\n", ("unittest", 1, 0, 0)),
    ("Ran 4 tests in 0.002s\n\nOK (skipped=1)\n", ("unittest", 3, 0, 0)),
    ("Ran 10 tests in 0.1s\n\nFAILED (failures=2, errors=1, skipped=3)\n", ("unittest", 4, 2, 1)),
    ("Ran 5 tests in 0.1s\n\nOK (expected failures=1)\n", ("unittest", 4, 0, 0)),
])
def test_unittest_summary(output, expected):
    assert counts(output) == expected


def test_unittest_failure_lines():
    output = "FAIL: test_a (m.T.test_a)\nERROR: test_b (m.T.test_b)\nRan 2 tests in 0s\n\nFAILED (failures=1, errors=1)\n"
    assert read_counts(output).failure_lines == ["FAIL: test_a (m.T.test_a)", "ERROR: test_b (m.T.test_b)"]


# ---------------------------------------------------------------- node --test


def test_node_tap_totals():
    output = "not ok 2 - b\n1..3\n# tests 3\n# pass 1\n# fail 1\n# cancelled 1\n"
    c = read_counts(output)
    assert (c.runner, c.passed, c.failed) == ("node --test", 1, 2)
    assert c.failure_lines == ["not ok 2 - b"]


def test_node_spec_reporter_totals():
    output = "\u2716 broken thing (1ms)\n\u2139 tests 2\n\u2139 pass 1\n\u2139 fail 1\n"
    c = read_counts(output)
    assert (c.runner, c.passed, c.failed) == ("node --test", 1, 1)
    assert c.failure_lines == ["\u2716 broken thing (1ms)"]


def test_node_needs_both_tests_and_pass_totals():
    assert read_counts("# tests 3\n").runner != "node --test"


# ---------------------------------------------------------------- generic and unknown


@pytest.mark.parametrize("output,expected", [
    ("Tests:       12 passed, 12 total", ("generic", 12, 0, 0)),
    ("  5 passing (20ms)\n  2 failing", ("generic", 5, 2, 0)),
    ("3 tests failed", ("generic", None, 3, 0)),
    ("1 PASSED\n2 passed", ("generic", 2, 0, 0)),
])
def test_generic_counts(output, expected):
    assert counts(output) == expected


@pytest.mark.parametrize("output", ["", "all good!", "Compiling...\nDone."])
def test_unreadable_output_is_unknown(output):
    assert read_counts(output) == RunCounts("unknown", None)
