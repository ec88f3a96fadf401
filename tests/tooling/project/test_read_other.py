"""runtime.tooling.project.read_other: the Makefile, package.json's scripts, Cargo.toml and go.mod."""

import json

import pytest

from runtime.errors import ManifestError
from runtime.tooling.project.read_other import make_targets, read_cargo, read_go, read_makefile, read_package_json
from runtime.tooling.project.scan import Scan


def _scan(root, files, reader):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out = Scan(root)
    reader(out)
    return out


def _rows(raws):
    return [(r.text, str(r.origin), r.origin.what, r.hint) for r in raws]


@pytest.mark.parametrize(("makefile", "targets"), [
    ("lint:\n\truff check .\ntest: lint\n\tpytest\n", ["lint", "test"]),  # in the Makefile's order
    (".PHONY: test lint\ntest:\n\tpytest\n", ["test"]),
    ("test:: a\ntest:: b\n", ["test"]),  # once
    ("fmt:=black\nCHECK ?= 1\ncheck = 2\n", []),  # assignments, not targets
    ("  test: indented\n\ttest: in a recipe\n", []),
    ("deploy:\n\t./ship\nrelease:\n", []),  # only the common targets
    ("format-check: ; black --check .\ntypecheck:\n", ["format-check", "typecheck"]),
])
def test_make_targets_are_the_common_targets_a_makefile_defines(makefile, targets):
    assert make_targets(makefile) == targets


MAKEFILE = """\
PYTHON ?= python3
SRC := src tests  # what is checked
OPTS = -q
RUNNER = $(PYTHON) -m pytest
.PHONY: test lint

test: build
\t@$(PYTHON) -m pytest ${OPTS} $(SRC)
\t-$(RUNNER) again
\t$(UNSET) x

# a comment between recipe lines
\t+flake8 $(SRC)
lint:
\t# a recipe comment
\truff check .

deploy:
\t./ship
check: lint test
format:
FOO = bar
\tblack .
"""


def test_makefile_recipes_of_the_common_targets_with_variables_substituted(tmp_path):
    out = _scan(tmp_path, {"Makefile": MAKEFILE}, read_makefile)
    assert out.read == ["Makefile"]
    assert list(out.make_targets) == ["test", "lint", "check", "format"]
    assert _rows(out.make_targets["test"]) == [
        ("python3 -m pytest -q src tests", "Makefile:8", "make test", "test"),  # `@` dropped, both forms of $()
        ("$(RUNNER) again", "Makefile:9", "make test", "test"),  # a value that holds `$` is left as it is
        ("$(UNSET) x", "Makefile:10", "make test", "test"),
        ("flake8 src tests", "Makefile:13", "make test", "test"),  # past a blank line and a comment
    ]
    assert _rows(out.make_targets["lint"]) == [("ruff check .", "Makefile:16", "make lint", "lint")]
    # a target whose work is its prerequisites runs nothing of its own; a recipe ends at the next line of make's
    assert out.make_targets["check"] == [] and out.make_targets["format"] == []
    assert out.entries == [*out.make_targets["test"], *out.make_targets["lint"]]


PACKAGE = {
    "name": "probe",
    "scripts": {
        "test": "jest",
        "lint": "eslint .",
        "lint:check": "eslint --max-warnings 0 .",
        "format": "prettier --write .",
        "typecheck": "tsc --noEmit",
        "build": "tsc",
        "deploy": "node deploy.js",
        "check": 3,
    },
}


def test_package_json_known_scripts_become_npm_commands_at_their_lines(tmp_path):
    out = _scan(tmp_path, {"package.json": json.dumps(PACKAGE, indent=2)}, read_package_json)
    assert out.read == ["package.json"]
    assert "check" not in out.npm_scripts and out.npm_scripts["deploy"] == "node deploy.js"  # strings only, all kept
    assert _rows(out.entries) == [
        ("npm test", "package.json:4", "script test", "test"),
        ("npm run lint", "package.json:5", "script lint", "lint"),
        ("npm run lint:check", "package.json:6", "script lint:check", "lint"),
        ("npm run typecheck", "package.json:8", "script typecheck", "type"),
        ("npm run format", "package.json:7", "script format", "format"),
    ]


def test_package_json_npm_init_s_placeholder_test_is_no_test(tmp_path):
    scripts = {"test": 'echo "Error: no test specified" && exit 1', "lint": "eslint ."}
    out = _scan(tmp_path, {"package.json": json.dumps({"scripts": scripts})}, read_package_json)
    assert [r.text for r in out.entries] == ["npm run lint"] and "test" in out.npm_scripts


@pytest.mark.parametrize("text", ['{"name": "x"}', '{"scripts": ["test"]}', "[1, 2]"])
def test_package_json_without_a_scripts_table_declares_nothing(tmp_path, text):
    out = _scan(tmp_path, {"package.json": text}, read_package_json)
    assert out.read == ["package.json"] and out.entries == [] and out.npm_scripts == {}


def test_package_json_that_is_not_json_is_an_error_at_its_line(tmp_path):
    with pytest.raises(ManifestError) as exc:
        _scan(tmp_path, {"package.json": '{\n  "name": "x",\n  "scripts": {,}\n}\n'}, read_package_json)
    assert (exc.value.path, exc.value.line) == ("package.json", 3) and exc.value.message.startswith("not JSON: ")


@pytest.mark.parametrize(("files", "expected"), [
    ({"Cargo.toml": '# a crate\n[package]\nname = "x"\n'},
     [("cargo test", "Cargo.toml:2", "a cargo package", "test"), ("cargo clippy", "Cargo.toml:2", "a cargo package", "lint")]),
    ({"Cargo.toml": '[workspace]\nmembers = ["a", "b"]\n'},
     [("cargo test", "Cargo.toml:1", "a cargo workspace", "test"),
      ("cargo clippy", "Cargo.toml:1", "a cargo workspace", "lint")]),
    ({"Cargo.toml": '[package]\nname = "x"\n', ".rustfmt.toml": "edition = '2021'\n"},
     [("cargo test", "Cargo.toml:1", "a cargo package", "test"), ("cargo clippy", "Cargo.toml:1", "a cargo package", "lint"),
      ("cargo fmt --check", ".rustfmt.toml:1", "rustfmt's configuration", "format")]),
    ({"Cargo.toml": '[package]\nname = "x"\n', "rustfmt.toml": "", ".rustfmt.toml": ""},
     [("cargo test", "Cargo.toml:1", "a cargo package", "test"), ("cargo clippy", "Cargo.toml:1", "a cargo package", "lint"),
      ("cargo fmt --check", "rustfmt.toml:1", "rustfmt's configuration", "format")]),  # once
])
def test_cargo_tests_and_clippy_and_rustfmt_s_check_only_where_configured(tmp_path, files, expected):
    assert _rows(_scan(tmp_path, files, read_cargo).entries) == expected


def test_cargo_toml_that_is_not_toml_is_an_error(tmp_path):
    with pytest.raises(ManifestError, match=r"^Cargo.toml:2: not TOML"):
        _scan(tmp_path, {"Cargo.toml": "[package]\nname = \n"}, read_cargo)


def test_go_module_tests_and_vet_at_the_module_line(tmp_path):
    out = _scan(tmp_path, {"go.mod": "// the probe\nmodule example.com/probe\n\ngo 1.21\n"}, read_go)
    assert _rows(out.entries) == [("go test ./...", "go.mod:2", "a go module", "test"),
                                  ("go vet ./...", "go.mod:2", "a go module", "lint")]


@pytest.mark.parametrize("text", ["", "go 1.21\n", "// module example.com/x\n"])
def test_go_mod_naming_no_module_is_an_error(tmp_path, text):
    with pytest.raises(ManifestError, match=r"^go.mod:1: names no module"):
        _scan(tmp_path, {"go.mod": text}, read_go)


@pytest.mark.parametrize("reader", [read_makefile, read_package_json, read_cargo, read_go])
def test_each_reader_reads_nothing_where_its_file_is_not(tmp_path, reader):
    out = _scan(tmp_path, {"README.md": ""}, reader)
    assert out.read == [] and out.entries == []
