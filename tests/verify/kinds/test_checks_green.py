"""checks-green called directly: every check command needs a result, and each must exit 0."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.checks_green import TAIL_LINES_PER_CHECK, CheckRuns, ChecksParams, checks_green
from runtime.verify.kinds.registry import evaluate


def run(commands, *results):
    return checks_green(ChecksParams.read({"commands": commands}), CheckRuns.model_validate({"results": list(results)}))


def res(command, code=0, output=""):
    return {"command": command, "exit-code": code, "output": output}


def test_all_zero_passes_with_the_count():
    result = run(["a", "b"], res("a"), res("b"))
    assert result.status == "passed"
    assert result.evidence == {"checks": 2}
    assert result.feedback == "all 2 check(s) passed"


def test_results_for_commands_not_asked_for_are_ignored():
    assert run(["a"], res("a"), res("other", 1, "boom")).status == "passed"


def test_a_command_with_several_results_passes_only_if_all_exit_zero():
    assert run(["a"], res("a"), res("a", 2, "second run failed")).status == "rejected"
    assert run(["a"], res("a"), res("a")).status == "passed"


def test_the_first_failing_result_of_a_command_is_quoted():
    result = run(["a"], res("a", 3, "first failure"), res("a", 4, "second failure"))
    assert "`a` exited with code 3" in result.feedback
    assert "first failure" in result.feedback and "second failure" not in result.feedback


def test_missing_results_are_an_error_naming_every_one():
    result = run(["a", "b", "c"], res("b"))
    assert result.status == "error"
    assert result.evidence == {"missing": ["a", "c"]}
    assert "`a`, `c`" in result.feedback


def test_the_first_line_names_the_failing_checks_in_parameter_order():
    result = run(["z", "a", "m"], res("m", 1, "m out"), res("a"), res("z", 2, "z out"))
    assert result.status == "rejected"
    assert result.feedback.splitlines()[0].startswith("2 of 3 check(s) failed: `z`, `m`.")
    assert result.evidence == {"checks": 3, "failing": ["z", "m"]}


def test_a_failing_check_that_printed_nothing_says_so():
    result = run(["a"], res("a", 1, "  \n\n"))
    assert "- `a` exited with code 1 and printed nothing" in result.feedback


def test_output_is_quoted_indented():
    result = run(["a"], res("a", 1, "src/x.py:1:1: F401 unused\n"))
    assert "\n    src/x.py:1:1: F401 unused" in result.feedback


def test_a_single_failing_check_quotes_at_most_its_share_of_lines():
    output = "\n".join(f"line {n}" for n in range(100))
    result = run(["a"], res("a", 1, output))
    quoted = [line for line in result.feedback.splitlines() if line.startswith("    line ")]
    assert quoted == [f"    line {n}" for n in range(100 - TAIL_LINES_PER_CHECK, 100)]


def test_many_failing_checks_each_get_at_least_three_lines():
    commands = [f"c{n}" for n in range(20)]
    output = "\n".join(f"out {n}" for n in range(10))
    result = run(commands, *(res(c, 1, output) for c in commands))
    assert result.status == "rejected"
    for command in commands:
        assert f"- `{command}` exited with code 1:" in result.feedback
    # 40 quoted lines shared by 20 checks is 2 each, but every check shows its last 3
    for line in ("    out 7", "    out 8", "    out 9"):
        assert result.feedback.count(line) == 20
    assert "    out 6" not in result.feedback


def test_no_commands_and_no_results_passes():
    assert run([]).status == "passed"


MALFORMED = "cannot check `checks-green`: the evidence is malformed: "


@pytest.mark.parametrize("result,message", [
    ({"exit-code": 0, "output": ""}, "missing required key `command` in `results[0]`"),
    ({"command": "a", "output": ""}, "missing required key `exit-code` in `results[0]`"),
    ({"command": "a", "exit-code": 0}, "missing required key `output` in `results[0]`"),
    ({"command": "a", "exit-code": "1", "output": ""}, "`results[0].exit-code`: Input should be a valid integer"),
    ({"command": "a", "exit-code": False, "output": ""}, "`results[0].exit-code`: Input should be a valid integer"),
])
def test_a_malformed_result_is_an_error_naming_its_index_and_key(result, message):
    outcome = evaluate("checks-green", {"commands": ["a"]}, {"results": [result]})
    assert outcome.status == "error"
    assert outcome.feedback == MALFORMED + message


def test_the_index_of_a_later_malformed_result_is_named():
    outcome = evaluate("checks-green", {"commands": ["a"]}, {"results": [res("a"), {"command": "a", "exit-code": 0}]})
    assert outcome.status == "error"
    assert "missing required key `output` in `results[1]`" in outcome.feedback


def test_missing_commands_parameter_raises():
    with pytest.raises(MalformedInput, match="parameter `commands` is missing"):
        checks_green(ChecksParams.read({}), CheckRuns(results=[]))
