"""dep_js: the views of package.json, npm lock files, and the line set of YAML-like locks."""

from __future__ import annotations

import json

import pytest

from runtime.verify.kinds.dep_js import PACKAGE_JSON_SECTIONS, line_set, package_json, package_lock


def test_package_json_keeps_only_dependency_sections():
    text = json.dumps({
        "name": "web", "version": "1.0.0", "scripts": {"test": "vitest"},
        "dependencies": {"react": "^18"}, "peerDependencies": {"vue": "3"},
        "bundleDependencies": ["left-pad"], "engines": {"node": ">=20"}, "packageManager": "pnpm@9.1.0",
    })
    assert package_json(text) == {
        "dependencies `react`": "^18",
        "peerDependencies `vue`": "3",
        "bundleDependencies `left-pad`": "",
        "engines `node`": ">=20",
        "packageManager": "pnpm@9.1.0",
    }


def test_every_listed_section_is_read():
    data = {section: {"x": "1"} for section in PACKAGE_JSON_SECTIONS}
    assert set(package_json(json.dumps(data))) == {f"{section} `x`" for section in PACKAGE_JSON_SECTIONS}


@pytest.mark.parametrize("text,kind", [("[]", "list"), ('"x"', "str"), ("3", "int"), ("null", "NoneType")])
def test_package_json_must_be_an_object(text, kind):
    with pytest.raises(ValueError) as exc:
        package_json(text)
    assert str(exc.value) == f"the top level should be a JSON object, not {kind}"


def test_package_json_that_is_not_json_is_a_value_error():
    with pytest.raises(ValueError):
        package_json("{not json")


# ---------------------------------------------------------------- package-lock.json

V3 = {
    "name": "web", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
    "packages": {
        "": {"name": "web", "version": "1.0.0", "dependencies": {"zod": "3"}},
        "node_modules/zod": {"version": "3.23.8", "integrity": "sha512-x"},
        "node_modules/a/node_modules/b": {"version": "2.0.0"},
    },
}


def test_package_lock_v3_one_entry_per_install_path():
    assert package_lock(json.dumps(V3)) == {
        "package `(root)`": '{"dependencies":{"zod":"3"}}',
        "package `zod@3.23.8`": '{"integrity":"sha512-x"}',
        "package `a > b@2.0.0`": "{}",
    }


def test_package_lock_ignores_the_projects_identity_and_lock_format():
    other = {**V3, "name": "renamed", "version": "9.9.9", "lockfileVersion": 2, "requires": False}
    other["packages"] = {**V3["packages"], "": {"name": "renamed", "version": "9.9.9", "dependencies": {"zod": "3"}}}
    assert package_lock(json.dumps(other)) == package_lock(json.dumps(V3))


def test_package_lock_keeps_other_top_level_keys():
    view = package_lock(json.dumps({"packages": {}, "overrides": {"semver": "7"}}))
    assert view == {"overrides `semver`": "7"}


def test_package_lock_v1_walks_the_nested_tree():
    v1 = {"lockfileVersion": 1, "dependencies": {
        "a": {"version": "1.0.0", "resolved": "r", "dependencies": {"b": {"version": "2.0.0"}}},
    }}
    assert package_lock(json.dumps(v1)) == {
        "package `a@1.0.0`": '{"resolved":"r"}',
        "package `a > b@2.0.0`": "{}",
    }


@pytest.mark.parametrize("data,message", [
    ({"packages": []}, "`packages` should map install paths to objects"),
    ({"packages": {"node_modules/a": "1"}}, "`packages` should map install paths to objects"),
    ({"dependencies": {"a": "1.0.0"}}, "`dependencies` should map package names to objects"),
    ({"dependencies": []}, "`dependencies` should map package names to objects"),
])
def test_package_lock_of_the_wrong_shape_is_a_value_error(data, message):
    with pytest.raises(ValueError) as exc:
        package_lock(json.dumps(data))
    assert str(exc.value) == message


# ---------------------------------------------------------------- line sets


def test_line_set_strips_lines_and_drops_blanks_and_comments():
    text = "# generated\n\nzod@3:\n  version \"3.23.8\"\n    # indented comment\n"
    assert line_set(text) == {"line `zod@3:`": "", 'line `version "3.23.8"`': ""}


def test_line_set_ignores_order_and_indentation():
    assert line_set("a\n  b\n") == line_set("b\na\n")


def test_line_set_sees_a_changed_line():
    assert line_set('version "1"') != line_set('version "2"')
