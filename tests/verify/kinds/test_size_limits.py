"""size-limits called directly: its messages, its input checks, and which files it parses.

The judgement on real changes is tested through ``evaluate`` in tests/verify/test_size_limits.py.
"""

from __future__ import annotations

import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.size_limits import FileTexts, SizeLimitsParams, size_limits


def judge(files, base=None, max_file=10, max_function=4):
    return size_limits(SizeLimitsParams.read({"max-file-lines": max_file, "max-function-lines": max_function}),
                       FileTexts(files=files, base_files=base or {}))


def function(name: str, lines: int) -> str:
    return f"def {name}():\n" + "    x = 1\n" * (lines - 2) + "    return x\n"


def test_within_the_limits_passes_counting_the_files():
    result = judge({"a.py": function("f", 4), "b.txt": "x\n"})
    assert result.status == "passed"
    assert result.evidence == {"files": 2}


def test_a_file_that_grew_by_more_than_the_limit_is_named_with_both_sizes():
    result = judge({"notes.md": "x\n" * 25}, {"notes.md": "x\n" * 14})
    assert result.status == "rejected"
    assert ("`notes.md` grew by 11 lines (from 14 to 25); at most 10 may be added to one file: "
            "put the new code in a new module") in result.feedback


def test_growth_equal_to_the_limit_passes():
    assert judge({"notes.md": "x\n" * 24}, {"notes.md": "x\n" * 14}).status == "passed"


def test_a_new_file_message_asks_for_smaller_modules():
    result = judge({"n.md": "x\n" * 11})
    assert "`n.md` is a new file of 11 lines (limit 10): split it into smaller modules" in result.feedback


def test_a_function_that_grew_by_more_than_the_limit_is_named_with_both_sizes():
    result = judge({"a.py": function("f", 9)}, {"a.py": function("f", 4)}, max_file=0)
    assert result.status == "rejected"
    assert ("`a.py`: function `f` grew by 5 lines (from 4 to 9); at most 4 may be added to one function: "
            "put the new code in a new function") in result.feedback


def test_a_new_function_message_asks_for_smaller_functions():
    result = judge({"a.py": function("g", 5)}, max_file=0)
    assert "`a.py`: the new function `g` has 5 lines (limit 4): split it into smaller functions" in result.feedback


def test_only_python_files_are_parsed():
    assert judge({"a.js": "def broken(:\n", "a.pyi": "def broken(:\n"}).status == "passed"


def test_a_file_that_stopped_parsing_names_the_line():
    result = judge({"a.py": "x = 1\ndef broken(:\n"}, {"a.py": "x = 1\n"})
    assert result.status == "rejected"
    assert "`a.py` does not parse (line 2: " in result.feedback and "fix the syntax" in result.feedback


def test_a_file_that_never_parsed_is_not_judged():
    assert judge({"a.py": "def broken(:\n  pass\n"}, {"a.py": "def broken(:\n"}).status == "passed"


def test_every_violation_is_counted_and_listed():
    result = judge({"a.py": function("f", 5) + function("g", 6), "b.md": "x\n" * 30}, max_file=20)
    assert result.status == "rejected"
    assert result.evidence == {"files": 2, "offenders": 3}
    assert result.feedback.startswith("3 size limit violation(s) in what you changed")


def test_a_copy_of_a_long_base_function_is_new_but_a_move_is_not():
    long = function("f", 9)
    assert judge({"b.py": long, "a.py": "\n"}, {"a.py": long}, max_file=0).status == "passed"
    copied = judge({"b.py": long, "a.py": long}, {"a.py": long}, max_file=0)
    assert copied.status == "rejected" and "`b.py`: the new function `f`" in copied.feedback


def test_base_files_not_among_the_files_are_malformed():
    with pytest.raises(MalformedInput) as exc:
        judge({"a.py": "x\n"}, {"a.py": "x\n", "gone.py": "y\n"})
    assert str(exc.value) == "evidence `base-files` holds `gone.py`, which is not in `files`"


@pytest.mark.parametrize("params,message", [
    ({"max-function-lines": 1}, "parameter `max-file-lines` is missing"),
    ({"max-file-lines": 1, "max-function-lines": "1"}, "parameter `max-function-lines` must be an integer, got str"),
])
def test_bad_parameters_raise(params, message):
    with pytest.raises(MalformedInput) as exc:
        size_limits(SizeLimitsParams.read(params), FileTexts(files={}, base_files={}))
    assert str(exc.value) == message
