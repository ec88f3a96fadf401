"""The shared accessors of the verify kinds: checked input, bounded listings and quoting."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.base import (
    MAX_LISTED,
    MalformedInput,
    compile_globs,
    listing,
    quoted,
    tail,
    take_int,
    take_str,
    take_str_list,
    take_str_map,
    take_table_list,
)


def test_malformed_input_is_a_value_error():
    assert issubclass(MalformedInput, ValueError)


# ---------------------------------------------------------------- accessors


@pytest.mark.parametrize("take,value", [
    (take_str, "pytest -q"),
    (take_str, ""),
    (take_int, 0),
    (take_int, -3),
    (take_str_list, []),
    (take_str_list, ["a", "b"]),
    (take_table_list, []),
    (take_table_list, [{"command": "x"}, {}]),
    (take_str_map, {}),
    (take_str_map, {"src/a.py": "text"}),
])
def test_an_accessor_returns_a_value_of_its_type_unchanged(take, value):
    assert take({"key": value}, "key", "evidence") is value


@pytest.mark.parametrize("take", [take_str, take_int, take_str_list, take_table_list, take_str_map])
def test_a_missing_key_is_malformed_and_named(take):
    with pytest.raises(MalformedInput) as exc:
        take({"other": 1}, "exit-code", "evidence")
    assert str(exc.value) == "evidence `exit-code` is missing"


@pytest.mark.parametrize("take", [take_str, take_int, take_str_list, take_table_list, take_str_map])
@pytest.mark.parametrize("data", [["exit-code"], "exit-code", None, 3])
def test_input_that_is_not_a_table_is_malformed(take, data):
    with pytest.raises(MalformedInput) as exc:
        take(data, "exit-code", "parameter")
    assert f"the parameter must be a table, got {type(data).__name__}" == str(exc.value)


@pytest.mark.parametrize("value,got", [(1, "int"), (None, "NoneType"), (["a"], "list"), (b"x", "bytes")])
def test_take_str_refuses_other_types_naming_key_and_type(value, got):
    with pytest.raises(MalformedInput) as exc:
        take_str({"command": value}, "command", "parameter")
    assert str(exc.value) == f"parameter `command` must be a string, got {got}"


@pytest.mark.parametrize("value,got", [(True, "bool"), (False, "bool"), ("0", "str"), (1.0, "float"), (None, "NoneType")])
def test_take_int_refuses_booleans_and_non_integers(value, got):
    with pytest.raises(MalformedInput) as exc:
        take_int({"min-count": value}, "min-count", "parameter")
    assert str(exc.value) == f"parameter `min-count` must be an integer, got {got}"


@pytest.mark.parametrize("value", ["a.py", ("a.py",), ["a.py", 1], [None], {"a.py": "x"}])
def test_take_str_list_refuses_anything_but_a_list_of_strings(value):
    with pytest.raises(MalformedInput) as exc:
        take_str_list({"changed": value}, "changed", "evidence")
    assert str(exc.value) == "evidence `changed` must be a list of strings"


@pytest.mark.parametrize("value", [{"command": "x"}, ["ruff check ."], [{"command": "x"}, None], "x"])
def test_take_table_list_refuses_anything_but_a_list_of_tables(value):
    with pytest.raises(MalformedInput) as exc:
        take_table_list({"results": value}, "results", "evidence")
    assert str(exc.value) == "evidence `results` must be a list of tables"


@pytest.mark.parametrize("value", [["a.py"], {"a.py": None}, {"a.py": 3}, {1: "x"}, "a.py"])
def test_take_str_map_refuses_anything_but_strings_keyed_by_string(value):
    with pytest.raises(MalformedInput) as exc:
        take_str_map({"files": value}, "files", "evidence")
    assert str(exc.value) == "evidence `files` must be a table of strings keyed by path"


# ---------------------------------------------------------------- globs


def test_compile_globs_of_nothing_matches_nothing():
    assert compile_globs([]) is None


@pytest.mark.parametrize("path,matches", [
    ("src/a.py", True),
    ("src/pkg/deep/b.py", True),
    ("README.md", True),
    ("docs/README.md", False),
    ("tests/test_a.py", True),
    ("tests/sub/test_a.py", False),
    ("setup.cfg", False),
])
def test_compile_globs_matches_whole_paths(path, matches):
    pattern = compile_globs(["src/**", "README.md", "tests/*.py"])
    assert pattern is not None
    assert bool(pattern.match(path)) is matches


@pytest.mark.parametrize("glob,named", [("/abs/**", "absolute"), ("src/../x", ".."), ("a**b", "`**`")])
def test_compile_globs_turns_a_bad_glob_into_malformed_input_naming_the_parameter(glob, named):
    with pytest.raises(MalformedInput) as exc:
        compile_globs(["src/**", glob])
    message = str(exc.value)
    assert message.startswith("parameter `globs`: ")
    assert glob in message and named in message


# ---------------------------------------------------------------- listing, tail, quoted


def test_listing_makes_one_markdown_item_per_entry():
    assert listing(["`a`", "`b`"]) == "- `a`\n- `b`"
    assert listing([]) == ""


def test_listing_at_the_limit_says_nothing_more():
    items = [str(n) for n in range(MAX_LISTED)]
    assert listing(items).splitlines() == [f"- {n}" for n in range(MAX_LISTED)]


@pytest.mark.parametrize("count,limit,more", [(21, 20, 1), (100, 20, 80), (5, 2, 3), (3, 0, 3)])
def test_listing_cuts_a_long_list_and_counts_the_rest(count, limit, more):
    lines = listing([f"item{n}" for n in range(count)], limit=limit).splitlines()
    assert lines[:-1] == [f"- item{n}" for n in range(limit)]
    assert lines[-1] == f"- ... and {more} more"


@pytest.mark.parametrize("text,limit,expected", [
    ("a\nb\nc\nd\n", 2, ["c", "d"]),
    ("a\nb\n\n\n  \n", 1, ["b"]),
    ("a\nb", 10, ["a", "b"]),
    ("", 5, []),
    ("  \n\n\t\n", 5, []),
    ("a\n\nb\n", 3, ["a", "", "b"]),
])
def test_tail_keeps_the_last_lines_without_trailing_blanks(text, limit, expected):
    assert tail(text, limit) == expected


def test_quoted_indents_every_line_by_four_spaces():
    assert quoted(["E501 line too long", "", "  nested"]) == "    E501 line too long\n    \n      nested"
    assert quoted([]) == ""
