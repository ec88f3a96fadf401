"""tests-green called directly: exit code, failures and the pass count each decide."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.tests_green import TAIL_LINES
from runtime.verify.kinds.tests_green import tests_green as judge  # not `tests_green`: pytest would collect it


def green(output, exit_code=0, min_count=1, command="pytest -q"):
    return judge({"command": command, "min-count": min_count}, {"exit-code": exit_code, "output": output})


def test_details_carry_every_count():
    result = green("== 1 failed, 3 passed, 2 errors in 1s ==", exit_code=1, min_count=2)
    assert result.evidence == {"runner": "pytest", "passed": 3, "failed": 1, "errors": 2, "exit-code": 1, "min-count": 2}


def test_enough_passes_with_exit_zero_passes_saying_how_many():
    result = green("5 passed in 0.1s", min_count=5)
    assert result.status == "passed"
    assert result.feedback == "5 test(s) passed (5 required)"


def test_every_problem_is_named_in_one_sentence():
    result = green("== 1 failed, 2 errors in 1s ==", exit_code=1, command="make test")
    assert result.status == "rejected"
    assert result.feedback.splitlines()[0] == (
        "The tests are not green: `make test` exited with code 1; 1 test(s) failed; 2 test(s) errored. "
        "Fix the cause and run `make test` again until it passes.")


def test_errors_alone_reject_even_with_exit_zero():
    result = green("== 2 errors in 1s ==", exit_code=0, min_count=0)
    assert result.status == "rejected"
    assert "2 test(s) errored" in result.feedback and "exited" not in result.feedback


def test_failure_lines_are_quoted_before_the_end_of_the_output():
    output = "FAILED t.py::a - x\nlots of noise\n== 1 failed in 1s =="
    result = green(output, exit_code=1)
    assert "Failures:\n    FAILED t.py::a - x" in result.feedback
    assert "lots of noise" not in result.feedback


def test_without_failure_lines_the_end_of_the_output_is_quoted():
    output = "\n".join(f"line {n}" for n in range(100))
    result = green(output, exit_code=2)
    assert "End of the output:\n" in result.feedback
    quoted = [line for line in result.feedback.splitlines() if line.startswith("    line ")]
    assert quoted == [f"    line {n}" for n in range(100 - TAIL_LINES, 100)]


def test_a_command_that_printed_nothing_says_so():
    result = green("", exit_code=127)
    assert result.status == "rejected"
    assert result.feedback.endswith("The command printed nothing.")


@pytest.mark.parametrize("min_count,status", [(0, "passed"), (1, "rejected")])
def test_an_unreadable_count_fails_only_when_tests_are_required(min_count, status):
    result = green("all good", min_count=min_count)
    assert result.status == status
    if status == "rejected":
        assert "could not be read" in result.feedback and f"at least {min_count} must pass" in result.feedback
    else:
        assert result.feedback == "`pytest -q` exited with code 0"


def test_too_few_passes_are_rejected_with_both_numbers():
    result = green("2 passed in 0.1s", min_count=3, command="tox")
    assert result.status == "rejected"
    assert "Only 2 test(s) passed, but at least 3 must run and pass." in result.feedback
    assert "run `tox` again" in result.feedback


def test_zero_required_and_zero_passed_passes():
    assert green("no tests ran in 0.01s", min_count=0).status == "passed"


@pytest.mark.parametrize("params,evidence,message", [
    ({"min-count": 1}, {"exit-code": 0, "output": ""}, "parameter `command` is missing"),
    ({"command": "x", "min-count": "1"}, {"exit-code": 0, "output": ""}, "parameter `min-count` must be an integer, got str"),
    ({"command": "x", "min-count": 1}, {"output": ""}, "evidence `exit-code` is missing"),
    ({"command": "x", "min-count": 1}, {"exit-code": 0, "output": None}, "evidence `output` must be a string, got NoneType"),
])
def test_malformed_input_raises_naming_the_key(params, evidence, message):
    with pytest.raises(MalformedInput) as exc:
        judge(params, evidence)
    assert str(exc.value) == message
