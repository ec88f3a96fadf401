"""A command failing at the base as well: line matching (baseline), asking the base for its run, and
checks-green judging by what the change adds."""

from __future__ import annotations

import anyio
import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.baseline import BaseRun, as_at_base, base_of, new_lines, normalized, take_base, wanted
from runtime.verify.kinds.checks_green import CheckRuns, ChecksParams, checks_green
from runtime.verify.kinds.registry import evaluate
from tests.verify.kinds.test_tests_green import FakeGathering

# -- baseline ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("line,expected", [
    ("src/a.py:12:5: E302 expected 2 blank lines", "src/a.py:#:#: E302 expected # blank lines"),
    ("Found 13 errors in 3 files (checked 40 source files)", "Found # errors in # files (checked # source files)"),
    ("1 failed, 12 passed in 0.52s", "# failed, # passed in #"),
    ("ok   example.com/uuid 12ms", "ok   example.com/uuid #"),
    ("  3:1  error  'x' is defined but never used  no-unused-vars", "#:#  error  'x' is defined but never used  no-unused-vars"),
    ("src/app.ts(4,7): error TS2322: Type 'string'", "src/app.ts(#,#): error TS2322: Type 'string'"),
    ("\x1b[31mE501\x1b[0m line too long (101 > 79 characters)", "E501 line too long (# > # characters)"),
    ("sha1 v1.2.3 a1b2", "sha1 v1.2.3 a1b2"),  # a version is no count
])
def test_numbers_on_their_own_are_replaced_and_codes_kept(line, expected):
    assert normalized(line) == expected


def test_a_line_the_base_has_is_not_new_even_when_it_moved():
    assert new_lines("a.py:14:1: E302\nFound 1 error\n", "a.py:9:1: E302\nFound 1 error\n") == []


def test_one_more_of_the_same_warning_is_new():
    base = "a.py:3:1: E302 expected 2 blank lines\n"
    assert new_lines(base + "a.py:30:1: E302 expected 2 blank lines\n", base) == ["a.py:30:1: E302 expected 2 blank lines"]


def test_another_code_at_the_same_place_is_new_and_blank_lines_never_are():
    assert new_lines("a.py:3:1: F401 'os' unused\n\n   \n", "a.py:3:1: F811 'os' redefined\n") == ["a.py:3:1: F401 'os' unused"]


def test_as_at_base_needs_a_failure_the_same_exit_code_and_nothing_new():
    assert as_at_base(1, "w\n", (1, "w\n"))
    assert not as_at_base(0, "", (0, ""))  # nothing failed: nothing to excuse
    assert not as_at_base(2, "w\n", (1, "w\n"))  # a crash where the base warned
    assert not as_at_base(1, "w\nv\n", (1, "w\n"))
    assert not as_at_base(1, "w\n", None)


ON = {"baseline": True}


def test_take_base_reads_an_optional_typed_table_where_the_task_asks_for_it():
    base = BaseRun(exit_code=1, output="x")
    assert take_base(None, wanted(ON)) is None
    assert take_base(base, wanted(ON)) == (1, "x")
    assert take_base(base, wanted({})) is None  # an older atom: off
    assert take_base(base, wanted({"baseline": False})) is None
    with pytest.raises(MalformedInput, match="`baseline` must be a boolean"):
        take_base(None, wanted({"baseline": "yes"}))


@pytest.mark.parametrize("base,where", [
    ([1], "`base-exit`"),
    ({"exit-code": "1", "output": ""}, "`base-exit.exit-code`"),
])
def test_a_base_that_is_no_typed_table_is_malformed_evidence(base, where):
    params = {"command": "make test", "min-count": 1, "baseline": True, "results": "exit-code"}
    evidence = {"plan": {"command": "make test", "source": "", "steps": ["make test"]},
                "work": {"steps": [{"command": "make test", "exit-code": 1, "output": ""}]}, "base-exit": base}
    result = evaluate("tests-green", params, evidence)
    assert result.status == "error"
    assert "the evidence is malformed" in result.feedback and where in result.feedback


def _base_of(params, code, base_answer=(1, "a.py:2: W")):
    fake = FakeGathering(base_commands={"lint": base_answer})
    got = anyio.run(base_of, fake, wanted(params), "lint", code)
    return got, fake.asked


def test_base_of_runs_a_failing_command_on_the_base_where_the_task_asks_for_baseline():
    assert _base_of(ON, 1) == (BaseRun(exit_code=1, output="a.py:2: W"), [("run_at_base", "lint")])


@pytest.mark.parametrize("params,code", [(ON, 0), ({}, 1), ({"baseline": False}, 1)])
def test_base_of_never_asks_the_base_for_a_passing_command_or_without_baseline(params, code):
    assert _base_of(params, code) == (None, [])


def test_base_of_without_a_base_to_run_on_gives_none():
    fake = FakeGathering(base_commands=None)
    assert anyio.run(base_of, fake, wanted(ON), "lint", 1) is None and fake.asked == [("run_at_base", "lint")]


# -- checks-green -----------------------------------------------------------------------------------

def _check(code, output, base=None, baseline=True):
    result = {"command": "lint", "exit-code": code, "output": output}
    if base is not None:
        result["base"] = {"exit-code": base[0], "output": base[1]}
    return checks_green(ChecksParams.read({"commands": ["lint"], "baseline": baseline}),
                        CheckRuns.model_validate({"results": [result]}))


def test_without_baseline_a_check_failing_as_at_the_base_is_rejected_whole():
    result = _check(1, "old.py:20:1: W1\n", (1, "old.py:2:1: W1\n"), baseline=False)
    assert result.status == "rejected" and "at the base" not in result.feedback and "old.py:20:1: W1" in result.feedback


def test_a_check_failing_as_at_the_base_passes_and_says_so():
    result = _check(1, "old.py:20:1: W1\n", (1, "old.py:2:1: W1\n"))
    assert result.status == "passed" and result.evidence == {"checks": 1, "as-at-base": ["lint"]}
    assert "`lint` fail(s) there too, and the change adds nothing" in result.feedback


def test_only_the_new_lines_are_quoted_when_the_base_fails_too():
    result = _check(1, "old.py:2:1: W1\nnew.py:1:1: W2\n", (1, "old.py:2:1: W1\n"))
    assert result.status == "rejected"
    assert "fails at the base too (code 1), so only what the change adds is quoted:\n    new.py:1:1: W2" in result.feedback
    assert "old.py" not in result.feedback


def test_another_exit_code_than_the_base_is_a_failure_even_with_nothing_new():
    result = _check(2, "old.py:2:1: W1\n", (1, "old.py:2:1: W1\n"))
    assert result.status == "rejected"
    assert "exited with code 2; at the base it exited with code 1 and printed nothing new" in result.feedback


def test_a_base_that_passes_leaves_the_whole_failure_quoted():
    result = _check(1, "new.py:1:1: W2\n", (0, ""))
    assert result.status == "rejected" and "at the base" not in result.feedback and "new.py:1:1: W2" in result.feedback


def test_the_base_evidence_is_checked():
    result = evaluate("checks-green", {"commands": ["lint"], "baseline": True}, {"results": [
        {"command": "lint", "exit-code": 1, "output": "x", "base": {"exit-code": 1, "output": 5}}]})
    assert result.status == "error"
    assert "the evidence is malformed" in result.feedback and "`results[0].base.output`" in result.feedback
