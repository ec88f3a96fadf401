"""runtime.tooling.project.found: the kind a holder's name suggests, the kind and family of a translated command."""

import pytest

from runtime.tooling.project.found import KINDS, PROGRAMS, Origin, classify, hint_of


@pytest.mark.parametrize(("name", "kind"), [
    ("py311", "test"), ("pypy3", "test"), ("py", "test"), ("unit", "test"), ("tests", "test"), ("integration", "test"),
    ("cov", "test"), ("coverage", "test"), ("test:unit", "test"),
    ("lint", "lint"), ("linters", "lint"), ("flake8", "lint"), ("pylint", "lint"), ("style", "lint"), ("check", "lint"),
    ("codespell", "lint"), ("docs-lint", "lint"), ("QUALITY", "lint"),
    ("typing", "type"), ("types", "type"), ("type-check", "type"), ("typecheck", "type"), ("mypy", "type"),
    ("test:types", "type"), ("test:tsd", "type"),
    ("format", "format"), ("fmt", "format"), ("fmt:check", "format"), ("style-check", "format"), ("black", "format"),
    # The first kind whose words the name holds: type, then format, then lint, then test.
    ("check-format", "format"), ("lint-py311", "lint"), ("mypy-lint", "type"),
    ("docs", None), ("build", None), ("deploy", None), ("release", None), ("pytest", None), ("contest", None),
])
def test_hint_of_names_the_kind_a_holder_s_name_suggests(name, kind):
    assert hint_of(name) == kind


@pytest.mark.parametrize(("words", "expected"), [
    (["pytest", "-q"], ("test", "pytest")),
    (["py.test"], ("test", "pytest")),  # one family however it is spelled
    (["python3", "-m", "pytest", "-x"], ("test", "pytest")),
    (["python3.12", "-m", "mypy", "src"], ("type", "mypy")),
    (["FOO=1", "BAR=2", "flake8", "src"], ("lint", "flake8")),  # variables first
    (["uv", "run", "--no-sync", "black", "--check", "."], ("format", "black")),
    (["coverage", "run", "-m", "pytest"], ("test", "pytest")),
    (["coverage", "run", "-m", "mymodule"], (None, "")),
    (["coverage", "run", "setup.py"], ("test", "coverage run")),
    (["coverage", "report"], (None, "")),
    (["cargo", "--locked", "test"], ("test", "cargo test")),  # the first word that is no option
    (["cargo", "build"], (None, "")),
    (["ruff"], (None, "")),
    (["ruff", "format", "--check"], ("format", "ruff format")),
    (["go", "vet", "./..."], ("lint", "go vet")),
    (["golangci-lint", "run"], ("lint", "golangci-lint run")),
    (["npm", "test"], ("test", "npm test")),
    (["npm", "t"], ("test", "npm test")),
    (["npm", "run", "test"], ("test", "npm run test")),
    (["npm", "run-script", "typecheck"], ("type", "npm run typecheck")),
    (["npm", "run", "lint:check"], ("lint", "npm run lint:check")),
    (["npm", "run", "deploy"], (None, "")),
    (["npm", "install"], (None, "")),
    (["sphinx-build", "docs"], (None, "")),
    (["FOO=1"], (None, "")),
    ([], (None, "")),
])
def test_classify_gives_the_kind_and_family_of_a_translated_command(words, expected):
    assert classify(words) == expected


def test_every_kind_programs_name_is_one_of_the_four():
    kinds = {k for v in PROGRAMS.values() for k in (v.values() if isinstance(v, dict) else [v])}
    assert kinds <= set(KINDS) and KINDS[0] == "test"  # tests first: a task's test command is chosen first


@pytest.mark.parametrize(("origin", "text", "described"), [
    (Origin("tox.ini", 8, "tox env lint"), "tox.ini:8", "tox.ini:8 (tox env lint)"),
    (Origin("Makefile", 3), "Makefile:3", "Makefile:3"),
])
def test_an_origin_is_file_and_line_and_describes_what_holds_it(origin, text, described):
    assert str(origin) == text and origin.describe() == described
