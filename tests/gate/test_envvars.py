"""Shell variable assignments (`runtime.gate.envvars`): their shape, and the names any program may be given."""

import pytest

from runtime.gate.envvars import BASE, check_assignment
from runtime.lang.shell_types import ShellDeny, Word


@pytest.mark.parametrize("name", ["A", "a", "_", "_x1", "LC_ALL", "PYTHONHASHSEED", "x9"])
def test_names_of_shell_variables_are_accepted(name):
    check_assignment(name, Word("value"))


@pytest.mark.parametrize("name", ["", "1A", "9", "A-B", "A B", "A.B", "A=B", "é", "$A", "A[0]", "A+",
                                  "A\n", "\nA", "A\nB", "A\r", "A "])  # `$` would match before a final newline
def test_what_is_not_a_variable_name_is_refused(name):
    with pytest.raises(ShellDeny, match="is not a variable name"):
        check_assignment(name, Word("value"))


def test_a_value_with_a_tilde_bash_would_expand_is_refused():
    with pytest.raises(ShellDeny, match="the value of `PATH` uses `~`"):
        check_assignment("PATH", Word("~/bin", tilde=True))


@pytest.mark.parametrize("value", [Word(""), Word("~"), Word("a:~/b"), Word("*.py", glob=True)])
def test_a_value_is_judged_by_what_bash_does_with_it_not_by_its_text(value):
    check_assignment("X", value)  # a quoted `~` or one after `:` stays as it is here


@pytest.mark.parametrize("name", ["LANG", "LC_ALL", "TZ", "COLUMNS", "NO_COLOR", "FORCE_COLOR"])
def test_locale_time_zone_terminal_and_colour_may_be_given_to_any_program(name):
    assert name in BASE


@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "NODE_OPTIONS",
                                  "BASH_ENV", "ENV", "IFS", "HOME", "GIT_DIR", "RIPGREP_CONFIG_PATH", "PERL5OPT",
                                  "RUSTFLAGS", "lang", "TMPDIR"])
def test_variables_that_load_code_or_move_files_are_not_given_to_every_program(name):
    assert name not in BASE


def test_every_base_name_is_a_variable_name():
    for name in BASE:
        check_assignment(name, Word("x"))


# -- the same mistake elsewhere: `^...$` with re.match accepts a value ending in a newline --------------------

@pytest.mark.parametrize("name", ["git\n", "pytest\n", "/usr/bin/git\n"])
def test_a_program_name_ending_in_a_newline_is_not_a_program_name(name):
    from runtime.gate.wrappers import program_name

    with pytest.raises(ShellDeny, match="is not a program name"):
        program_name(Word(name))


@pytest.mark.parametrize("vtype,value", [("int", "5\n"), ("int", "5k\n"), ("mode", "644\n"), ("mode", "u+x\n"),
                                         ("mode", "u+x,go-w\n")])
def test_typed_values_ending_in_a_newline_are_refused(vtype, value):
    from runtime.lang.grammar import ArgDeny, ValueType

    ValueType(vtype, "t").check(value.rstrip("\n"), "--x")
    with pytest.raises(ArgDeny):
        ValueType(vtype, "t").check(value, "--x")


def test_an_obsolete_count_ending_in_a_newline_is_not_a_count():
    from runtime.lang.grammar import ArgDeny, Grammar

    grammar = Grammar({"options": {"-NUM": "int"}, "positionals": ["free..."]}, "head")
    assert [u.spelled for u in grammar.read([Word("-5")])] == ["-NUM"]
    with pytest.raises(ArgDeny):
        grammar.read([Word("-5\n")])


def test_an_option_spelling_ending_in_a_newline_is_refused():
    from runtime.lang.grammar import Grammar, GrammarError

    with pytest.raises(GrammarError, match="is not an option spelling"):
        Grammar({"options": {"--x\n": "flag"}}, "p")


@pytest.mark.parametrize("host", ["example.com\n.evil", "a\n.example.com", "exa\nmple.com"])
def test_a_host_label_with_a_newline_is_not_a_dns_name(host):
    from runtime.lang.domains import normalise_host

    assert normalise_host(host) is None
    assert normalise_host("a.example.com") == "a.example.com"
