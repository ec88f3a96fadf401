"""dep-stable called directly: which parser reads a path, and what counts as a change."""

from __future__ import annotations

import pytest

from runtime.verify.kinds import dep_cargo_go, dep_js, dep_python
from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.dep_stable import PARSERS_BY_NAME, DependencyFiles, dep_stable, parser_for
from runtime.verify.kinds.registry import evaluate
from runtime.verify.kinds.scope import GlobParams


@pytest.mark.parametrize("path,parser", [
    ("pyproject.toml", dep_python.pyproject),
    ("svc/api/pyproject.toml", dep_python.pyproject),
    ("uv.lock", dep_python.uv_lock),
    ("poetry.lock", dep_python.poetry_lock),
    ("web/package.json", dep_js.package_json),
    ("package-lock.json", dep_js.package_lock),
    ("npm-shrinkwrap.json", dep_js.package_lock),
    ("yarn.lock", dep_js.line_set),
    ("pnpm-lock.yaml", dep_js.line_set),
    ("crates/x/Cargo.toml", dep_cargo_go.cargo_toml),
    ("Cargo.lock", dep_cargo_go.cargo_lock),
    ("go.mod", dep_cargo_go.go_mod),
    ("go.sum", dep_cargo_go.go_sum),
    ("requirements.txt", dep_python.requirements_txt),
    ("requirements-dev.txt", dep_python.requirements_txt),
    ("ci/requirements_lint.txt", dep_python.requirements_txt),
    ("requirements/base.txt", dep_python.requirements_txt),
    ("tools/requirements/dev.txt", dep_python.requirements_txt),
    ("dev.in", dep_python.requirements_txt),
    ("Gemfile", dep_js.line_set),
    ("requirements/sub/base.txt", dep_js.line_set),
    ("requirements/notes.md", dep_js.line_set),
    ("docs/pyproject.toml.orig", dep_js.line_set),
])
def test_parser_for_routes_by_file_name(path, parser):
    assert parser_for(path) is parser


def test_every_named_parser_is_known_by_its_own_name():
    for name, parser in PARSERS_BY_NAME.items():
        assert parser_for(name) is parser


def check(before, after, globs=("**",)):
    return dep_stable(GlobParams.read({"globs": list(globs)}), DependencyFiles(before=before, after=after))


def test_unchanged_files_pass_counting_the_files_in_the_globs():
    result = check({"go.mod": "module x\n", "notes.txt": "a"}, {"go.mod": "module x\n", "notes.txt": "b"},
                   globs=["go.mod", "go.sum"])
    assert result.status == "passed"
    assert result.evidence == {"files": 1}


def test_no_globs_match_nothing():
    result = check({"go.mod": "module x\n"}, {}, globs=[])
    assert result.status == "passed" and result.evidence == {"files": 0}


def test_identical_text_is_not_parsed():
    assert check({"go.mod": "require (\n"}, {"go.mod": "require (\n"}).status == "passed"


def test_created_and_deleted_files_are_changes_counted_and_listed():
    result = check({"go.sum": "a v1 h1:x\n"}, {"go.mod": "module x\n"})
    assert result.status == "rejected"
    assert result.evidence == {"files": 2, "changes": 2}
    assert "- `go.mod` was created\n- `go.sum` was deleted" in result.feedback


def test_each_difference_is_prefixed_with_its_file():
    result = check({"go.mod": "module x\ngo 1.21\n"}, {"go.mod": "module y\ngo 1.22\n"})
    assert result.status == "rejected"
    assert "- `go.mod`: go changed from `1.21` to `1.22`" in result.feedback
    assert "- `go.mod`: module changed from `x` to `y`" in result.feedback
    assert result.evidence["changes"] == 2


def test_a_file_broken_in_the_result_is_one_change_and_the_others_are_still_read():
    result = check({"go.mod": "module x\n", "go.sum": "a v1 h1:x\n"},
                   {"go.mod": "require (\n", "go.sum": "a v1 h1:y\n"})
    assert result.status == "rejected"
    assert "`go.mod` no longer parses (the `require (` block is never closed); restore its syntax" in result.feedback
    assert "`go.sum`: sum `a v1` changed from `h1:x` to `h1:y`" in result.feedback


def test_a_base_file_that_does_not_parse_is_an_error_naming_it():
    result = check({"Cargo.toml": "[dependencies\n"}, {"Cargo.toml": "[dependencies]\n"})
    assert result.status == "error"
    assert result.evidence == {"path": "Cargo.toml"}
    assert result.feedback.startswith("cannot read the base version of `Cargo.toml`: ")


def test_a_reformatted_file_passes():
    assert check({"requirements.txt": "a>=1,<2\nb\n"}, {"requirements.txt": "# deps\nB\na <2, >=1\n"}).status == "passed"


@pytest.mark.parametrize("evidence,message", [
    ({"after": {}}, "missing required key `before`"),
    ({"before": {}, "after": {"a": None}}, "`after.a`: Input should be a valid string"),
])
def test_malformed_evidence_is_an_error(evidence, message):
    result = evaluate("dep-stable", {"globs": ["**"]}, evidence)
    assert result.status == "error"
    assert result.feedback == f"cannot check `dep-stable`: the evidence is malformed: {message}"


def test_missing_globs_parameter_raises():
    with pytest.raises(MalformedInput, match="parameter `globs` is missing"):
        dep_stable(GlobParams.read({}), DependencyFiles(before={}, after={}))
