"""dep_view: the canonical flat view of dependency data, and the differences between two views."""

from __future__ import annotations

import datetime

import pytest

from runtime.verify.kinds.dep_view import SHOWN_VALUE_CHARS, add_entries, canonical, differences, table, toml_lock

# ---------------------------------------------------------------- canonical


def test_canonical_keeps_a_string_as_it_is():
    assert canonical(" ^1.0 ") == " ^1.0 "


@pytest.mark.parametrize("a,b", [
    ({"version": "1", "features": ["b", "a"]}, {"features": ["a", "b"], "version": "1"}),
    ([{"x": 1}, {"y": 2}], [{"y": 2}, {"x": 1}]),
    ({"n": [[2, 1], [0]]}, {"n": [[0], [1, 2]]}),
])
def test_canonical_ignores_key_and_list_order(a, b):
    assert canonical(a) == canonical(b)


def test_canonical_is_compact_json():
    assert canonical({"b": [2, 1], "a": "é"}) == '{"a":"é","b":[1,2]}'
    assert canonical(3) == "3" and canonical(True) == "true" and canonical(None) == "null"


def test_canonical_writes_toml_dates_as_text():
    assert canonical({"at": datetime.date(2024, 7, 4)}) == '{"at":"2024-07-04"}'


def test_canonical_tells_different_values_apart():
    assert canonical({"version": "1"}) != canonical({"version": "2"})
    assert canonical(["a"]) != canonical(["a", "a"])


# ---------------------------------------------------------------- table


def test_table_returns_the_table_or_an_empty_one():
    assert table({"deps": {"a": "1"}}, "deps") == {"a": "1"}
    assert table({}, "deps") == {}


def test_table_refuses_a_value_that_is_not_a_table():
    with pytest.raises(ValueError, match="`deps` should be a table, not list"):
        table({"deps": ["a"]}, "deps")


def test_table_refuses_a_holder_that_is_not_a_table():
    with pytest.raises(ValueError, match="expected a table holding `deps`, found str"):
        table("text", "deps")  # type: ignore[arg-type]


# ---------------------------------------------------------------- add_entries


def test_add_entries_of_a_table_is_one_entry_per_key():
    view: dict[str, str] = {}
    add_entries(view, "dependencies", {"serde": {"version": "1", "features": ["derive"]}, "anyhow": "1"})
    assert view == {"dependencies `serde`": '{"features":["derive"],"version":"1"}', "dependencies `anyhow`": "1"}


def test_add_entries_names_keys_through_the_given_function():
    view: dict[str, str] = {}
    add_entries(view, "deps", {"Foo_Bar": "1"}, name=str.lower)
    assert view == {"deps `foo_bar`": "1"}


def test_add_entries_of_a_list_is_one_presence_entry_per_item():
    view: dict[str, str] = {}
    add_entries(view, "bundled", ["b", {"x": 1}])
    assert view == {"bundled `b`": "", 'bundled `{"x":1}`': ""}


def test_add_entries_of_a_scalar_is_the_section_itself():
    view: dict[str, str] = {}
    add_entries(view, "packageManager", "pnpm@9")
    add_entries(view, "version", 3)
    assert view == {"packageManager": "pnpm@9", "version": "3"}


# ---------------------------------------------------------------- toml_lock

LOCK = '''
version = 1
[metadata]
content-hash = "abc"
python = "^3.11"

[[package]]
name = "Foo"
version = "1.0"
source = "pypi"
description = "text"

[[package]]
name = "foo"
version = "1.0"
source = "git"
'''


def test_toml_lock_labels_packages_by_name_and_version_and_joins_duplicates():
    view = toml_lock(LOCK, {"version", "metadata.content-hash", "package.description"}, str.lower)
    assert view == {
        "package `foo@1.0`": '{"source":"git"} | {"source":"pypi"}',
        "metadata `python`": "^3.11",
    }


def test_toml_lock_keeps_what_is_not_noise():
    view = toml_lock(LOCK, set())
    assert view["version"] == "1"
    assert view["metadata `content-hash`"] == "abc" and view["metadata `python`"] == "^3.11"
    assert view["package `Foo@1.0`"] == '{"description":"text","source":"pypi"}'


def test_toml_lock_a_package_without_a_version_is_labelled_with_a_question_mark():
    assert toml_lock('[[package]]\nname = "x"\n', set()) == {"package `x@?`": "{}"}


@pytest.mark.parametrize("text", ['package = "x"\n', '[[package]]\nversion = "1"\n', "package = [1]\n"])
def test_toml_lock_refuses_packages_without_names(text):
    with pytest.raises(ValueError, match="`package` should be a list of tables with a `name`"):
        toml_lock(text, set())


def test_toml_lock_refuses_broken_toml_as_a_value_error():
    with pytest.raises(ValueError):
        toml_lock("[[package]\n", set())


# ---------------------------------------------------------------- differences


def test_equal_views_have_no_differences():
    assert differences({"a `x`": "1"}, {"a `x`": "1"}) == []


def test_differences_name_added_removed_and_changed_entries_in_label_order():
    before = {"deps `b`": "1", "deps `c`": "1", "line `x`": ""}
    after = {"deps `a`": "2", "deps `c`": "3", "line `y`": ""}
    assert differences(before, after) == [
        "deps `a` was added (`2`)",
        "deps `b` was removed",
        "deps `c` changed from `1` to `3`",
        "line `x` was removed",
        "line `y` was added",
    ]


def test_differences_cut_long_values():
    long = "h" * 200
    [line] = differences({"p": "short"}, {"p": long})
    shown = line.split("to `")[1].rstrip("`")
    assert len(shown) == SHOWN_VALUE_CHARS and shown.endswith("...")
