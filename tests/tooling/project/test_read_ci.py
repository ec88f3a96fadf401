"""runtime.tooling.project.read_ci: the small YAML reader, pre-commit hooks and GitHub workflows' `run:` steps."""

import pytest

from runtime.tooling.project.read_ci import Unread, commands_of, keys, read_pre_commit, read_workflows, scalar
from runtime.tooling.project.scan import Scan


def _scan(root, files, reader):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out = Scan(root)
    reader(out)
    return out


@pytest.mark.parametrize(("value", "expected"), [
    ("pytest -q", "pytest -q"),
    ("  pytest -q   ", "pytest -q"),
    ("pytest -q  # the unit tests", "pytest -q"),
    ("pytest#not-a-comment", "pytest#not-a-comment"),  # a comment starts after a space
    ("'pytest -k ''not slow'''  # c", "pytest -k 'not slow'"),
    ("'a # b'", "a # b"),
    ('"pytest -k \'x\'" # c', "pytest -k 'x'"),
    ('"a # b"', "a # b"),
    ("'unterminated", "unterminated"),
    ("", ""),
])
def test_scalar_reads_plain_and_quoted_values_and_drops_comments(value, expected):
    assert scalar(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (r'"pytest -k \"not slow\""', 'pytest -k "not slow"'),  # an escaped quote does not end the value
    (r'"pytest -k \"a # b\"" # c', 'pytest -k "a # b"'),
    (r'"C:\\tools\\x"', "C:\\tools\\x"),
    (r'"a\tb\nc"', "a\tb\nc"),
    (r'"src\/pkg"', "src/pkg"),
    (r'"a\ b"', "a b"),
    (r'"\x41\u00e9\U0001F600"', "A\u00e9\U0001F600"),
    (r'"ends in \\"', "ends in \\"),
])
def test_scalar_reads_double_quoted_escapes_as_yaml_does(value, expected):
    got = scalar(value)
    assert got == expected and not isinstance(got, Unread)


@pytest.mark.parametrize(("value", "text", "why"), [
    (r'"pytest -k \q"', r"pytest -k \q", "uses `\\q`, which is no YAML escape"),
    (r'"bad \x4"', r"bad \x4", "uses `\\x4`, which is no YAML escape"),
    (r'"bell \a"', r"bell \a", "holds a control character (`\\a`), which no command takes"),
    ('"continued \\', "continued \\", "continues on the next line, which init's YAML reader does not follow"),
])
def test_scalar_a_double_quoted_value_it_cannot_read_is_its_text_as_written_and_why(value, text, why):
    got = scalar(value)
    assert isinstance(got, Unread) and (str(got), got.why) == (text, why)


WORKFLOW = """\
name: CI
jobs:
  test:
    steps:
      - run: echo one  # comment
      - name: Several
        run: |
          pytest -q \\
            tests

          # a comment line
          flake8
      - run: >-
          mypy
          src
      - uses: actions/setup-python@v5
        with:
          python-version: '3.12'
    env:
      X: 1
"""


def test_keys_yields_each_key_with_its_line_indentation_and_list_item():
    got = list(keys(WORKFLOW))
    assert got[:4] == [(1, 0, False, "name", "CI"), (2, 0, False, "jobs", ""), (3, 2, False, "test", ""),
                       (4, 4, False, "steps", "")]
    assert (5, 8, True, "run", "echo one") in got  # a list item's key is indented past its dash
    assert (16, 8, True, "uses", "actions/setup-python@v5") in got
    assert (18, 10, False, "python-version", "3.12") in got
    assert got[-2:] == [(19, 4, False, "env", ""), (20, 6, False, "X", "1")]


def test_keys_gives_a_literal_block_its_lines_from_its_first_line():
    (block,) = [(line, value) for line, _i, _item, key, value in keys(WORKFLOW) if key == "run" and "pytest" in value]
    assert block == (8, "pytest -q \\\n  tests\n\n# a comment line\nflake8")


def test_keys_folds_a_folded_block():
    (folded,) = [(line, value) for line, _i, _item, key, value in keys(WORKFLOW) if key == "run" and "mypy" in value]
    assert folded == (14, "mypy src")


def test_keys_reads_a_block_with_indicators_and_a_comment():
    text = "a: |+ # keep\n  one\n  two\nb: x\n"
    assert list(keys(text)) == [(2, 0, False, "a", "one\ntwo"), (4, 0, False, "b", "x")]


def test_keys_skips_what_it_does_not_follow():
    assert list(keys("- plain item\n? complex\n&anchor value\n")) == []


@pytest.mark.parametrize(("script", "expected"), [
    ("pytest -q\nflake8\n", [(0, "pytest -q"), (1, "flake8")]),
    ("pytest -q \\\n  tests \\\n  -x\nmypy\n", [(0, "pytest -q  tests  -x"), (3, "mypy")]),
    ("# setup\n\n  ruff check .  \n", [(2, "ruff check .")]),
    ("", []),
])
def test_commands_of_a_script_one_a_line_with_continuations_joined(script, expected):
    assert commands_of(script) == expected


PRE_COMMIT = """\
repos:
  - repo: local
    hooks:
      - id: unit-tests
        name: pytest
        entry: pytest -q
        language: system
        pass_filenames: False
      - id: pylint
        entry: pylint
        language: system
  - repo: https://github.com/psf/black
    rev: 24.1.0
    hooks:
    - id: black
    - id: check-yaml
  - repo: https://github.com/pre-commit/mirrors-mypy
    rev: v1.10.0
    hooks:
      - id: mypy
        args: [--strict]
      - id: eslint
"""


def test_pre_commit_hooks_of_well_known_tools_and_local_hooks_given_no_file_names(tmp_path):
    out = _scan(tmp_path, {".pre-commit-config.yaml": PRE_COMMIT, "pkg/__init__.py": ""}, read_pre_commit)
    assert out.read == [".pre-commit-config.yaml"]
    # pylint's local hook is given file names (pass_filenames defaults to true); check-yaml is no known tool
    assert list(out.hooks) == ["unit-tests", "black", "mypy", "eslint"]
    assert [(r.text, str(r.origin), r.origin.what, r.hint) for r in out.entries] == [
        ("pytest -q", ".pre-commit-config.yaml:6", "pre-commit hook unit-tests", "test"),
        ("black --check .", ".pre-commit-config.yaml:15", "pre-commit hook black", "format"),
        ("mypy pkg", ".pre-commit-config.yaml:20", "pre-commit hook mypy", "type"),  # the packages at the root
        ("eslint .", ".pre-commit-config.yaml:22", "pre-commit hook eslint", "lint"),
    ]
    assert out.hooks["black"] == [out.entries[1]]


def test_pre_commit_without_a_hook_id_or_file_adds_nothing(tmp_path):
    out = _scan(tmp_path, {".pre-commit-config.yaml": "repos:\n  - repo: local\n    hooks:\n      - entry: pytest\n"},
                read_pre_commit)
    assert out.read == [".pre-commit-config.yaml"] and out.entries == [] and out.hooks == {}
    assert _scan(tmp_path / "empty", {"README.md": ""}, read_pre_commit).read == []


def test_workflows_run_lines_at_their_lines_from_every_yml_and_yaml_in_order(tmp_path):
    out = _scan(tmp_path, {
        ".github/workflows/ci.yml": WORKFLOW,
        ".github/workflows/a.yaml": "jobs:\n  x:\n    steps:\n      - run: ''\n      - run: 'tox -e lint'\n",
        ".github/workflows/notes.md": "run: pytest\n",
        ".github/dependabot.yml": "run: pytest\n",
    }, read_workflows)
    assert out.read == [".github/workflows/a.yaml", ".github/workflows/ci.yml"]
    assert [(r.text, str(r.origin), r.origin.what, r.hint, r.dialect) for r in out.entries] == [
        ("tox -e lint", ".github/workflows/a.yaml:5", "workflow step", None, "shell"),
        ("echo one", ".github/workflows/ci.yml:5", "workflow step", None, "shell"),
        ("pytest -q  tests", ".github/workflows/ci.yml:8", "workflow step", None, "shell"),
        ("flake8", ".github/workflows/ci.yml:12", "workflow step", None, "shell"),
        ("mypy src", ".github/workflows/ci.yml:14", "workflow step", None, "shell"),
    ]


def test_workflows_double_quoted_run_values_are_read_with_their_escapes(tmp_path):
    workflow = ('jobs:\n  x:\n    steps:\n      - run: "pytest -k \\"not slow\\""\n'
                '      - run: "flake8\\nmypy src"\n      - run: "pytest \\q"\n')
    out = _scan(tmp_path, {".github/workflows/ci.yml": workflow}, read_workflows)
    assert [(r.text, r.origin.line, r.why) for r in out.entries] == [
        ('pytest -k "not slow"', 4, ""), ("flake8", 5, ""), ("mypy src", 5, ""),  # `\n`: two commands, both of line 5
        ("pytest \\q", 6, "uses `\\q`, which is no YAML escape"),
    ]


def test_pre_commit_entry_it_cannot_read_says_why(tmp_path):
    text = ('repos:\n  - repo: local\n    hooks:\n      - id: tests\n        entry: "pytest \\q"\n'
            '        pass_filenames: false\n')
    out = _scan(tmp_path, {".pre-commit-config.yaml": text}, read_pre_commit)
    assert [(r.text, r.origin.line, r.why) for r in out.entries] == [("pytest \\q", 5, "uses `\\q`, which is no YAML escape")]


def test_no_workflows_folder_reads_nothing(tmp_path):
    assert _scan(tmp_path, {".github/CODEOWNERS": "*\n"}, read_workflows).read == []
