"""size-limits judges what the change adds in one place: a new file or function within the limit, an existing one
grown by at most the limit (even one far over it at the base: where code goes is the project's decision), untouched
code never judged, and the feedback never asks to refactor what the change did not touch."""

from __future__ import annotations

from runtime.verify.kinds.registry import evaluate


def judge(files, base, max_file=200, max_function=50):
    return evaluate("size-limits", {"max-file-lines": max_file, "max-function-lines": max_function},
                    {"files": files, "base-files": base})


def function(name: str, lines: int, indent: str = "", step: str = "+=") -> str:
    body = [f"{indent}def {name}(x):"] + [f"{indent}    x {step} {n}" for n in range(lines - 2)] + [f"{indent}    return x"]
    return "\n".join(body) + "\n"


def module(lines: int) -> str:
    return "".join(f"VALUE_{n} = {n}\n" for n in range(lines))


def test_a_one_line_fix_in_a_module_over_the_limit_passes():
    before = module(1075)
    after = before.replace("VALUE_500 = 500\n", "VALUE_500 = 501\n")
    result = judge({"src/big.py": after}, {"src/big.py": before})
    assert result.status == "passed", result.feedback


def test_code_added_to_a_module_far_over_the_limit_passes():
    # more-itertools' more.py (4,656 lines) gains a function beside its kind, its test module (5,735) a test
    before = module(1075)
    after = before + module(15).replace("VALUE_", "EXTRA_")
    result = judge({"src/x.py": after}, {"src/x.py": before})
    assert result.status == "passed", result.feedback


def test_more_than_the_limit_added_to_one_module_is_rejected_without_asking_for_a_split():
    before = module(1075)
    after = before + module(201).replace("VALUE_", "EXTRA_")
    result = judge({"src/x.py": after}, {"src/x.py": before})
    assert result.status == "rejected"
    assert ("`src/x.py` grew by 201 lines (from 1075 to 1276); at most 200 may be added to one file: put the new code "
            "in a new module") in result.feedback
    assert "split" not in result.feedback


def test_a_module_may_shrink_keep_its_size_or_cross_the_limit_by_a_little():
    before = module(300)
    assert judge({"a.py": module(299)}, {"a.py": before}).status == "passed"
    assert judge({"a.py": module(300).replace("= 7", "= 8")}, {"a.py": before}).status == "passed"
    assert judge({"a.py": module(201)}, {"a.py": module(190)}).status == "passed"


def test_a_new_module_over_the_limit_is_rejected():
    result = judge({"src/new.py": module(201)}, {})
    assert result.status == "rejected" and "`src/new.py` is a new file of 201 lines (limit 200)" in result.feedback


def test_a_docstring_fix_beside_an_untouched_long_function_passes():
    long = function("untouched", 110)
    before = '"""The parser, wiht a typo."""\n\n\n' + long
    after = '"""The parser, with a typo fixed."""\n\n\n' + long
    result = judge({"src/parser.py": after}, {"src/parser.py": before})
    assert result.status == "passed", result.feedback


def test_a_fix_inside_a_long_function_that_does_not_grow_it_passes():
    before = function("long", 110)
    after = before.replace("x += 7\n", "x += 8\n")
    assert judge({"a.py": after}, {"a.py": before}).status == "passed"


def test_a_guard_added_inside_a_long_function_passes():
    before = "class Parser:\n" + function("parse", 110, indent="    ")
    after = "class Parser:\n" + function("parse", 112, indent="    ")
    assert judge({"src/parser.py": after}, {"src/parser.py": before}).status == "passed"
    assert judge({"a.py": function("f", 52)}, {"a.py": function("f", 45)}).status == "passed"


def test_more_than_the_limit_added_to_one_function_is_rejected_and_named():
    before = "class Parser:\n" + function("parse", 110, indent="    ")
    after = "class Parser:\n" + function("parse", 161, indent="    ")
    result = judge({"src/parser.py": after}, {"src/parser.py": before})
    assert result.status == "rejected"
    assert ("`src/parser.py`: function `Parser.parse` grew by 51 lines (from 110 to 161); at most 50 may be added to "
            "one function: put the new code in a new function") in result.feedback


def test_a_new_long_function_is_rejected_by_name_beside_an_untouched_long_one():
    before = function("old", 110)
    after = before + "\n\n" + function("added", 60)
    result = judge({"a.py": after}, {"a.py": before})
    assert result.status == "rejected"
    assert "the new function `added` has 60 lines (limit 50)" in result.feedback
    assert "`old`" not in result.feedback


def test_a_long_function_moved_unchanged_is_untouched_but_a_copy_is_new():
    long = function("parse", 80)
    moved = judge({"a.py": "X = 1\n", "b.py": long}, {"a.py": "X = 1\n" + long})
    assert moved.status == "passed", moved.feedback
    # a renamed class keeps its methods' lines: untouched
    renamed = judge({"a.py": "class New:\n" + function("m", 80, indent="    ")},
                    {"a.py": "class Old:\n" + function("m", 80, indent="    ")})
    assert renamed.status == "passed", renamed.feedback
    copied = judge({"a.py": long, "b.py": long}, {"a.py": long})
    assert copied.status == "rejected" and "`b.py`: the new function `parse` has 80 lines" in copied.feedback


def test_functions_of_the_same_name_are_matched_in_order():
    getter = "    @property\n" + function("value", 60, indent="    ")
    setter = "    @value.setter\n" + function("value", 60, indent="    ", step="-=")
    before = "class A:\n" + getter + setter
    grown_setter = "    @value.setter\n" + function("value", 111, indent="    ", step="-=")
    result = judge({"a.py": "class A:\n" + getter + grown_setter}, {"a.py": before})
    assert result.status == "rejected"
    assert "function `A.value` grew by 51 lines (from 60 to 111)" in result.feedback


def test_python_that_stopped_parsing_is_rejected_but_one_that_never_parsed_is_not_judged():
    broken = "def broken(:\n    pass\n"
    assert "does not parse" in judge({"a.py": broken}, {"a.py": "X = 1\n"}).feedback
    assert judge({"a.py": broken}, {}).status == "rejected"
    assert judge({"a.py": broken + "# fixed a comment\n"}, {"a.py": broken}).status == "passed"


def test_base_files_must_be_files_of_the_change():
    result = judge({"a.py": "X = 1\n"}, {"b.py": "X = 1\n"})
    assert result.status == "error" and "`b.py`" in result.feedback
