"""runtime.tooling.project.rules: the narrowest rule for each found command the parent role refuses, the role's text,
and the gate's judgement of the written role."""

import tomllib

import pytest

from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import PROJECT_FOLDER
from runtime.tooling.project.found import Found, Origin
from runtime.tooling.project.render import ROLE_HEAD, toolchain_text
from runtime.tooling.project.rules import ATOM, PARENT, NewRule, candidate, inherited_rules, project_rules, rule_toml, rules_text

GRAMMARS = {"pytest", "mypy", "npm", "ruff", "cargo", "unittest", "prettier"}
PARENT_RULES = [
    {"program": "pytest", "grammar": "pytest"},
    {"program": "python3", "grammar": "pytest", "subcommands": ["-m pytest", "--version"]},
    {"program": "mypy", "grammar": "mypy"},
    {"program": "npm", "grammar": "npm", "subcommands": ["test", "run lint"]},
    {"program": "prettier", "grammar": "prettier"},
    {"program": "cargo", "grammar": "cargo", "subcommands": ["test", "clippy"]},
    {"program": "tsc", "grammar": "tsc-check", "subcommands": ["--noEmit"]},
]


@pytest.mark.parametrize(("command", "rule"), [
    # a program no grammar describes: exactly the words found
    ("codespell src docs", {"program": "codespell", "subcommands": ["src docs"], "positionals": []}),
    ("pyright", {"program": "pyright", "positionals": []}),
    ("uv run --no-sync codespell src", {"program": "codespell", "subcommands": ["src"], "positionals": []}),
    # a grammar whose parent rules name subcommands: the grammar, with the subcommand added
    ("npm run format", {"program": "npm", "grammar": "npm", "subcommands": ["run format"]}),
    ("npm run format:check -- --log-level warn", {"program": "npm", "grammar": "npm", "subcommands": ["run format:check"]}),
    ("cargo nextest run --workspace", {"program": "cargo", "grammar": "cargo", "subcommands": ["nextest run"]}),
    ("ruff check src", {"program": "ruff", "grammar": "ruff", "subcommands": ["check src"]}),
    ("ruff check ./src", {"program": "ruff", "grammar": "ruff", "subcommands": ["check"]}),  # a path is no subcommand
    ("cargo --locked test", {"program": "cargo", "grammar": "cargo"}),
    ("tsc -p tsconfig.json", {"program": "tsc", "grammar": "tsc-check"}),  # the parent's grammar for the program
    # python -m MODULE: the module's grammar, else exactly that module
    ("python3 -m unittest discover -s tests", {"program": "python3", "grammar": "unittest", "subcommands": ["-m unittest"]}),
    ("python3.12 -m pytest -q", {"program": "python3.12", "grammar": "pytest", "subcommands": ["-m pytest"]}),
    ("python -m doctest README.md", {"program": "python", "subcommands": ["-m doctest README.md"], "positionals": []}),
])
def test_candidate_is_the_narrowest_rule_that_could_allow_the_command(command, rule):
    assert candidate(command, GRAMMARS, PARENT_RULES) == rule


@pytest.mark.parametrize(("command", "why"), [
    ("FOO=1 pytest", "a rule cannot give a program variables its grammar does not list"),
    ("./scripts/check", "it runs a program by its path, which can change between calls"),
    (".venv/bin/pytest", "it runs a program by its path, which can change between calls"),
    ("bash -c pytest", "`bash` runs other commands, and a rule names the commands themselves"),
    ("sudo pytest", "`sudo` runs other commands, and a rule names the commands themselves"),
    ("env CI=1 pytest", "`env` runs other commands, and a rule names the commands themselves"),
    ("xargs -n1 flake8", "`xargs` runs other commands, and a rule names the commands themselves"),
    ("eval pytest", "`eval` runs other commands, and a rule names the commands themselves"),
    ("codespell 'a b'", "an argument holds a space, which a rule's words cannot"),
    ("codespell ''", "an argument holds a space, which a rule's words cannot"),
    ("mypy --install-types src", "the program's grammar refuses these arguments"),
    ("prettier --check .", "the program's grammar refuses these arguments"),
])
def test_candidate_says_why_there_is_no_rule(command, why):
    assert candidate(command, GRAMMARS, PARENT_RULES) == why


def test_candidate_for_a_program_the_parent_declares_inline_without_a_grammar():
    # no grammar to extend: exactly the words found, as for a program no grammar describes
    inline = [{"program": "foo", "subcommands": ["x"], "positionals": []}]
    assert candidate("foo y", set(), inline) == {"program": "foo", "subcommands": ["y"], "positionals": []}
    assert candidate("foo", set(), inline) == {"program": "foo", "positionals": []}
    # an inline rule that takes every subcommand refused the arguments itself: that refusal stands
    declared = [{"program": "foo", "options": {"-v": "flag"}, "positionals": []}]
    assert candidate("foo -x", set(), declared) == "the parent role's rule for the program refuses these arguments"


@pytest.mark.parametrize("command", ["python setup.py test", "python3 -c pass", "node scripts/test.js",
                                     "perl t/run.pl", "python -m ./x", "ruby -Itest test/all.rb"])
def test_candidate_never_allows_code_the_agent_could_change(command):
    why = candidate(command, GRAMMARS, PARENT_RULES)
    assert isinstance(why, str) and "runs a script or code given to it, which can change between calls" in why


def test_rule_toml_is_one_table_of_the_atom_s_rules_with_its_comment():
    rule = {"program": "codespell", "subcommands": ["src", 'with "quotes"'], "positionals": [], "ask": False, "n": 2,
            "options": {"--skip": "free", "-w": "flag"}}
    text = rule_toml(rule, "`codespell src`")
    assert text.startswith("# `codespell src`\n[[params.\"tools::bash-allowlist\".rules]]\n")
    assert tomllib.loads(text) == {"params": {ATOM: {"rules": [rule]}}}
    assert not rule_toml({"program": "x"}).startswith("#")


def test_rules_text_restates_the_parent_s_rules_only_for_programs_given_new_ones():
    new = [NewRule("npm run format", {"program": "npm", "grammar": "npm", "subcommands": ["run format"]}),
           NewRule("codespell src", {"program": "codespell", "subcommands": ["src"], "positionals": []}),
           NewRule("npm run fmt:check", {"program": "npm", "grammar": "npm", "subcommands": ["run fmt:check"]})]
    text = rules_text(PARENT_RULES, new)
    rules = tomllib.loads(text)["params"][ATOM]["rules"]
    assert rules == [PARENT_RULES[3], new[0].rule, new[2].rule, new[1].rule]  # program by program
    assert f"# {PARENT}'s rules for `npm`, restated" in text and f"{PARENT}'s rules for `codespell`" not in text
    assert "# `npm run fmt:check`\n" in text
    assert rules_text(PARENT_RULES, []) == ""


PROJECT_ROLE = """[role]
name = "child"
display-name = "child"
description = "edit-local with its own pytest rule"
use-cases = ["x"]

[capabilities]
extends = "edit-local"

[[params."tools::bash-allowlist".rules]]
program = "pytest"
subcommands = ["-q"]
positionals = []

[[params."tools::bash-allowlist".rules]]
program = "codespell"
positionals = []
"""


def test_inherited_rules_are_the_role_s_as_written_a_child_s_replacing_its_parent_s_per_program(tmp_path):
    layer = tmp_path / PROJECT_FOLDER
    (layer / "roles").mkdir(parents=True)
    (layer / "roles" / "child.toml").write_text(PROJECT_ROLE)
    catalog = Catalog(layer)
    parent = inherited_rules(catalog, PARENT)
    child = inherited_rules(catalog, "child")
    assert {"program": "pytest", "grammar": "pytest"} in parent and all(r["program"] != "codespell" for r in parent)
    assert [r for r in child if r["program"] == "pytest"] == [{"program": "pytest", "subcommands": ["-q"], "positionals": []}]
    assert child[-2:] == [{"program": "pytest", "subcommands": ["-q"], "positionals": []},
                          {"program": "codespell", "positionals": []}]
    assert [r for r in child if r["program"] not in ("pytest", "codespell")] == [
        r for r in parent if r["program"] != "pytest"]


def _found(command, kind="lint"):
    return Found(command, kind, Origin("Makefile", 3, "make lint"), command)


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """One run of project_rules over commands that take each way through it."""
    root = tmp_path_factory.mktemp("repo")
    commands = ["pytest -q", "codespell src", "FOO=1 pytest", "cargo nextest run --frobnicate", "npm run format",
                "python3 -m zz_checker --strict"]
    text, outcomes = project_rules(root, toolchain_text(root), ROLE_HEAD, [_found(c) for c in commands])
    return text, {o.found.command: o for o in outcomes}, commands


def test_project_rules_keeps_the_found_order(judged):
    _text, outcomes, commands = judged
    assert list(outcomes) == commands


def test_what_edit_local_allows_needs_no_rule(judged):
    text, outcomes, _ = judged
    assert (outcomes["pytest -q"].status, outcomes["pytest -q"].rule, outcomes["pytest -q"].reason) == ("edit-local", None, "")
    assert "# `pytest -q`" not in text


def test_a_refused_command_with_no_candidate_says_the_gate_s_reason_and_why_no_rule(judged):
    text, outcomes, _ = judged
    outcome = outcomes["FOO=1 pytest"]
    assert outcome.status == "refused" and outcome.rule is None
    assert outcome.reason.endswith("(no rule added: a rule cannot give a program variables its grammar does not list)")
    assert "`FOO`" in outcome.reason  # the gate's own reason comes first


def test_a_rule_that_does_not_get_its_command_allowed_is_dropped(judged):
    text, outcomes, _ = judged
    outcome = outcomes["cargo nextest run --frobnicate"]
    assert outcome.status == "refused" and outcome.rule is None and "no rule added" not in outcome.reason
    assert "nextest" not in text.split(ROLE_HEAD, 1)[1] and "program = \"cargo\"" not in text


def test_new_rules_allow_their_commands_and_are_written_into_the_role(judged):
    text, outcomes, _ = judged
    assert text.startswith(ROLE_HEAD)
    for command in ("codespell src", "npm run format", "python3 -m zz_checker --strict"):
        assert outcomes[command].status == "rule" and f"# `{command}`\n" in text
    assert outcomes["codespell src"].rule == {"program": "codespell", "subcommands": ["src"], "positionals": []}
    assert outcomes["python3 -m zz_checker --strict"].rule == {
        "program": "python3", "subcommands": ["-m zz_checker --strict"], "positionals": []}
    role = tomllib.loads(text)
    assert role["capabilities"] == {"extends": PARENT}
    programs = [r["program"] for r in role["params"][ATOM]["rules"]]
    assert programs.count("codespell") == 1 and "cargo" not in programs
    assert programs.count("npm") > 1 and programs.count("python3") > 1  # the parent's rules restated


def test_a_role_that_needs_no_rule_is_its_head(tmp_path):
    text, outcomes = project_rules(tmp_path, toolchain_text(tmp_path), ROLE_HEAD,
                                   [_found("pytest -q", "test"), _found("flake8 src")])
    assert text == ROLE_HEAD and [o.status for o in outcomes] == ["edit-local", "edit-local"]
