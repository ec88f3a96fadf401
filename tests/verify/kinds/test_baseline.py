"""A command failing at the base as well: line matching (baseline), and checks-green and tests-green
judging by what the change adds."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.baseline import as_at_base, new_lines, normalized, take_base
from runtime.verify.kinds.checks_green import checks_green
from runtime.verify.kinds.tests_green import tests_green as judge_tests

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
    assert take_base({}, "evidence", ON) is None
    assert take_base({"base": {"exit-code": 1, "output": "x"}}, "evidence", ON) == (1, "x")
    assert take_base({"base": {"exit-code": 1, "output": "x"}}, "evidence", {}) is None  # an older atom: off
    assert take_base({"base": {"exit-code": 1, "output": "x"}}, "evidence", {"baseline": False}) is None
    with pytest.raises(MalformedInput, match="`base` must be a table"):
        take_base({"base": [1]}, "evidence", ON)
    with pytest.raises(MalformedInput, match="exit-code"):
        take_base({"base": {"exit-code": "1", "output": ""}}, "evidence", ON)
    with pytest.raises(MalformedInput, match="`baseline` must be a boolean"):
        take_base({}, "evidence", {"baseline": "yes"})


# -- checks-green -----------------------------------------------------------------------------------

def _check(code, output, base=None, baseline=True):
    result = {"command": "lint", "exit-code": code, "output": output}
    if base is not None:
        result["base"] = {"exit-code": base[0], "output": base[1]}
    return checks_green({"commands": ["lint"], "baseline": baseline}, {"results": [result]})


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
    with pytest.raises(MalformedInput, match="`base` `output` must be a string"):
        _check(1, "x", (1, 5))


# -- tests-green ------------------------------------------------------------------------------------

NET = "FAILED tests/test_net.py::test_fetch - ConnectionError: no network"
MEAN = "FAILED tests/test_mean.py::test_mean - assert 3 == 2"


def _tests(code, output, base=None, min_count=5, baseline=True):
    evidence = {"exit-code": code, "output": output}
    if base is not None:
        evidence["base"] = {"exit-code": base[0], "output": base[1]}
    return judge_tests({"command": "pytest -q", "min-count": min_count, "baseline": baseline}, evidence)


def test_without_baseline_the_task_s_own_failing_test_is_never_excused():
    """A task whose goal is the failing test_mean: an agent that changed nothing fails as the base does."""
    same = f"{MEAN}\n1 failed, 9 passed in 0.3s\n"
    assert _tests(1, same, (1, same), baseline=False).status == "rejected"
    assert _tests(1, same, (1, same)).status == "passed"  # what `baseline = true` would let through


def test_fewer_failures_than_the_base_all_of_them_its_own_pass():
    result = _tests(1, f"{NET}\n1 failed, 9 passed in 0.3s\n", (1, f"{MEAN}\n{NET}\n2 failed, 8 passed in 0.3s\n"))
    assert result.status == "passed", result.feedback
    assert result.feedback == "9 test(s) passed (5 required); the run fails only as it does at the base (1 failed), nothing new"
    assert result.evidence["as-at-base"] == {"failed": 1, "errors": 0, "exit-code": 1}


def test_the_pass_count_still_has_to_reach_the_minimum():
    result = _tests(1, f"{NET}\n1 failed, 2 passed in 0.3s\n", (1, f"{NET}\n1 failed, 9 passed in 0.3s\n"))
    assert result.status == "rejected" and "Only 2 test(s) passed" in result.feedback


def test_a_new_failure_is_quoted_alone_with_the_count_of_old_ones():
    result = _tests(1, f"{MEAN}\n{NET}\n2 failed, 9 passed in 0.3s\n", (1, f"{NET}\n1 failed, 10 passed in 0.3s\n"))
    assert result.status == "rejected"
    assert f"Failures new since the base (1 of them fail at the base too, and are not this change's to fix):\n    {MEAN}" in result.feedback
    assert "test_fetch" not in result.feedback


def test_the_same_failure_with_another_message_is_new():
    result = _tests(1, "FAILED tests/test_net.py::test_fetch - KeyError: 'x'\n1 failed, 9 passed in 0.3s\n",
                    (1, f"{NET}\n1 failed, 9 passed in 0.3s\n"))
    assert result.status == "rejected"


@pytest.mark.parametrize("output,base", [
    (f"{NET}\n1 failed, 9 passed in 0.3s\n", (2, f"{NET}\n1 failed, 9 passed in 0.3s\n")),  # another exit code
    ("1 failed, 9 passed in 0.3s\n", (1, "1 failed, 9 passed in 0.3s\n")),  # a failure the runner does not name
    (f"{NET}\n1 failed, 9 passed in 0.3s\n", (0, "10 passed in 0.3s\n")),  # green at the base
    ("test result: FAILED. 9 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n",
     (1, f"{NET}\n1 failed, 9 passed in 0.3s\n")),  # another runner
])
def test_what_cannot_be_matched_to_the_base_stays_a_failure(output, base):
    assert _tests(1, output, base).status == "rejected"


def test_a_failure_no_test_names_is_judged_on_the_whole_output():
    """Coverage under its threshold at the base and now: the same output, the same exit code."""
    out = "10 passed in 0.4s\nERROR: Coverage for lines (91.2%) does not meet global threshold (100%)\n"
    assert _tests(1, out, (1, out.replace("91.2", "90.8"))).status == "passed"
    assert _tests(1, out + "Traceback: boom\n", (1, out)).status == "rejected"
