"""runtime.tooling.migrate_rules: shell rules of the denylist form rewritten as argument grammars, on the document."""

import tomllib

import pytest

from runtime.errors import ManifestError
from runtime.tooling.migrate_rules import ATOM, RuleChange, migrate_rules

GRAMMARS = {"pytest", "unittest", "mypy", "ls"}
HEADER = f'[[params."{ATOM}".rules]]\n'


def _rules(text):
    return tomllib.loads(text)["params"][ATOM]["rules"]


@pytest.mark.parametrize("text", [
    '[role]\nname = "x"\n',
    f'[params."{ATOM}"]\nmax = 3\n',
    f'[params."{ATOM}"]\nrules = []\n',
    HEADER + 'program = "pytest"\ngrammar = "pytest"\n',
    HEADER + 'program = "codespell"\npositionals = []\n',
    HEADER + 'program = "frob"\noptions = { "-v" = "flag" }\n',
    HEADER + 'program = "frob"\noption-style = "go"\npositionals = ["free..."]\n',
])
def test_a_document_without_old_rules_is_given_back_as_it_is(text):
    assert migrate_rules(text, GRAMMARS, "r.toml") == (text, [])


def test_a_rule_for_a_program_with_a_grammar_names_it_and_keeps_everything_else():
    text = ('# the role\n' + HEADER + 'program = "pytest"  # the tests\nsubcommands = ["-q"]\ndeny-flags = ["-p"]\n'
            'ask = true\n')
    out, changes = migrate_rules(text, GRAMMARS, "r.toml")
    assert _rules(out) == [{"program": "pytest", "subcommands": ["-q"], "ask": True, "grammar": "pytest"}]
    assert out.startswith('# the role\n' + HEADER + 'program = "pytest"  # the tests\n')
    assert changes == [RuleChange(3, "pytest", "now uses the catalog's grammar `pytest`")]


@pytest.mark.parametrize(("rule", "expected", "summary"), [
    ('program = "frob"\n', {"program": "frob", "options": {}, "positionals": ["free..."]},
     "now takes no options: declare each other option it needs in `options`"),  # "any arguments" meant free operands
    ('program = "frob"\nroot-path-flags = ["-C"]\nscope-path-flags = ["-o", "--out"]\npositional-writes = true\n',
     {"program": "frob", "options": {"-C": "path-in-root", "-o": "path-in-scope", "--out": "path-in-scope"},
      "positionals": ["path-in-scope..."]},
     "now takes only -C, -o, --out: declare each other option it needs in `options`"),
    ('program = "frob"\ndeny-flags = ["-x"]\npositional-writes = false\noption-style = "gnu"\n',
     {"program": "frob", "options": {}, "positionals": ["free..."]},
     "now takes no options: declare each other option it needs in `options`"),
    ('program = "frob"\ndeny-flags = ["-x"]\noption-style = "go"\n',
     {"program": "frob", "option-style": "go", "options": {}, "positionals": ["free..."]},
     "now takes no options: declare each other option it needs in `options`"),  # a style of today's is kept
    ('program = "python3"\nsubcommands = ["-m zz_tool"]\ndeny-flags = ["-x"]\n',
     {"program": "python3", "subcommands": ["-m zz_tool"], "options": {}, "positionals": ["free..."]},
     "now takes no options: declare each other option it needs in `options`"),
])
def test_a_rule_for_a_program_without_a_grammar_declares_what_the_old_rule_let_through(rule, expected, summary):
    out, changes = migrate_rules(HEADER + rule, GRAMMARS, "r.toml")
    assert _rules(out) == [expected]
    assert changes == [RuleChange(2, expected["program"], summary)]


def test_python_running_a_module_with_a_grammar_uses_the_module_s_grammar():
    out, changes = migrate_rules(HEADER + 'program = "python3.12"\nsubcommands = ["-m mypy", "--version"]\n'
                                 'deny-flags = ["--install-types"]\n', GRAMMARS, "r.toml")
    assert _rules(out) == [{"program": "python3.12", "subcommands": ["-m mypy", "--version"], "grammar": "mypy"}]
    assert changes == [RuleChange(2, "python3.12", "now uses the catalog's grammar `mypy`")]


def test_python_rules_in_an_inline_array_split_per_module_grammar_as_inline_tables():
    text = (f'[params."{ATOM}"]\nrules = [{{ program = "python", subcommands = ["-m pytest", "-V", "-m unittest"], '
            'deny-flags = ["-p"] }, { program = "ls" }]\n')
    out, changes = migrate_rules(text, GRAMMARS, "r.toml")
    assert _rules(out) == [{"program": "python", "subcommands": ["-m pytest", "-V"], "grammar": "pytest"},
                           {"program": "python", "subcommands": ["-m unittest"], "grammar": "unittest"},
                           {"program": "ls", "grammar": "ls"}]
    assert out.count("\n") == text.count("\n")  # still one array on one line
    assert [(c.line, c.program) for c in changes] == [(2, "python"), (2, "python"), (2, "ls")]
    assert changes[1].summary == "now uses the catalog's grammar `unittest` for `python -m unittest`"


def test_each_rule_s_line_is_its_own_when_a_program_has_several():
    text = (HEADER + 'program = "ls"\n\n' + HEADER + 'program = "ls"\ngrammar = "ls"\n\n' + HEADER +
            'program = "ls"\ndeny-flags = ["-R"]\n')
    out, changes = migrate_rules(text, GRAMMARS, "r.toml")
    assert [c.line for c in changes] == [2, 9]
    assert _rules(out) == [{"program": "ls", "grammar": "ls"}] * 3


@pytest.mark.parametrize(("rule", "old"), [
    ('program = "pytest"\ngrammar = "pytest"\ndeny-flags = ["-p"]\n', "deny-flags"),
    ('program = "frob"\npositionals = []\nroot-path-flags = ["-C"]\nscope-path-flags = ["-o"]\n',
     "root-path-flags, scope-path-flags"),
    ('program = "frob"\noptions = {}\npositional-writes = true\n', "positional-writes"),
])
def test_a_rule_mixing_old_keys_with_a_grammar_is_an_error_at_its_line(rule, old):
    with pytest.raises(ManifestError) as exc:
        migrate_rules('[role]\nname = "x"\n\n' + HEADER + rule, GRAMMARS, "roles/x.toml")
    program = rule.split('"')[1]
    assert (exc.value.path, exc.value.line) == ("roles/x.toml", 5)
    assert exc.value.message == f"the rule for `{program}` mixes {old} with a grammar; remove the old keys by hand"


@pytest.mark.parametrize("rule", [
    'program = "frob"\noption-style = "exact"\noptions = { "-v" = "flag" }\npositionals = []\n',
    'program = "pytest"\ngrammar = "pytest"\noption-style = "exact"\n',
])
def test_an_exact_option_style_beside_a_grammar_is_dropped(rule):
    # what runtime lint sends the person here for: the style is gone, the rest of the rule is today's form
    out, changes = migrate_rules(HEADER + rule, GRAMMARS, "r.toml")
    expected = tomllib.loads(HEADER + rule)["params"][ATOM]["rules"][0]
    del expected["option-style"]
    assert _rules(out) == [expected] and "option-style" not in out
    program = rule.split('"')[1]
    assert changes == [RuleChange(2, program, "no longer says `option-style = \"exact\"`: options are never "
                                              "abbreviated now")]


def test_a_file_that_is_not_toml_is_an_error():
    with pytest.raises(ManifestError, match=r"^roles/x.toml:1: invalid TOML: "):
        migrate_rules('[role\nname = "x"\n', GRAMMARS, "roles/x.toml")
