"""python_functions: every function of a file measured under its qualified name, and matched with the base."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.python_functions import Function, Unparsable, base_sizes, functions

SOURCE = '''\
import functools


@functools.cache
def top(x):
    return x


class Parser:
    def parse(self):
        def helper():
            return 1
        return helper()

    class Inner:
        async def run(self):
            pass


if True:
    def guarded():
        pass
'''


def test_functions_are_listed_in_order_with_qualified_names():
    assert [f.name for f in functions("a.py", SOURCE)] == [
        "top", "Parser.parse", "Parser.parse.helper", "Parser.Inner.run", "guarded"]


def test_size_runs_from_the_def_line_to_the_last_line_decorators_excluded():
    sizes = {f.name: f.size for f in functions("a.py", SOURCE)}
    assert sizes == {"top": 2, "Parser.parse": 4, "Parser.parse.helper": 2, "Parser.Inner.run": 2, "guarded": 2}


def test_text_is_the_functions_lines_dedented():
    by_name = {f.name: f for f in functions("a.py", SOURCE)}
    assert by_name["Parser.parse.helper"].text == "def helper():\n    return 1"
    assert by_name["Parser.Inner.run"].text == "async def run(self):\n    pass"


def test_the_same_function_indented_differently_has_the_same_text():
    [flat] = functions("a.py", "def f():\n    return 1\n")
    [method] = functions("b.py", "class C:\n    def f():\n        return 1\n")
    assert flat.text == method.text and flat.name != method.name


def test_a_multiline_signature_counts_its_lines():
    [fn] = functions("a.py", "def f(\n    a,\n    b,\n):\n    return a\n")
    assert fn == Function("f", 5, "def f(\n    a,\n    b,\n):\n    return a")


def test_a_file_without_functions_has_none():
    assert functions("a.py", "") == [] and functions("a.py", "x = 1\nclass A:\n    y = 2\n") == []


@pytest.mark.parametrize("source,where", [
    ("def broken(:\n    pass\n", "line 1: "),
    ("x = 1\nif x\n", "line 2: "),
])
def test_a_syntax_error_is_unparsable_naming_the_line(source, where):
    with pytest.raises(Unparsable) as exc:
        functions("a.py", source)
    assert str(exc.value).startswith(where)


def test_a_nul_byte_is_unparsable():
    with pytest.raises(Unparsable):
        functions("a.py", "x = 1\x00\n")


def test_unparsable_is_a_value_error():
    assert issubclass(Unparsable, ValueError)


# ---------------------------------------------------------------- base_sizes


def fn(name: str, size: int) -> Function:
    return Function(name, size, f"{name}/{size}")


def test_base_sizes_match_by_qualified_name():
    now = [fn("a", 10), fn("C.b", 3), fn("new", 7)]
    before = [fn("C.b", 2), fn("a", 9), fn("b", 50)]
    assert base_sizes(now, before) == [9, 2, None]


def test_base_sizes_match_the_nth_of_a_name_with_the_nth():
    now = [fn("C.prop", 3), fn("C.prop", 8), fn("C.prop", 1)]
    before = [fn("C.prop", 2), fn("C.prop", 5)]
    assert base_sizes(now, before) == [2, 5, None]


def test_base_sizes_of_a_new_file_are_all_none():
    assert base_sizes([fn("a", 1), fn("b", 2)], []) == [None, None]
    assert base_sizes([], [fn("a", 1)]) == []
