"""Argument grammars: words are read as the program's own parser reads them, and nothing undeclared passes."""

from __future__ import annotations

import pytest

from runtime.lang.grammar import ArgDeny, Grammar, GrammarError
from runtime.lang.shell_types import Word

SORTISH = {
    "options": {"-n": "flag", "-r": "flag", "-k": "free", "--key": "free", "-o": "path-in-scope", "--output": "path-in-scope",
                "--color": "free?", "-i": "free?", "--mode": ["a", "b"], "-j": "int", "-name": "free", "-NUM": "int"},
    "positionals": ["free", "path..."],
}


def read(grammar: dict, line: str, program: str = "prog"):
    return [(u.spelled, u.type, u.value) for u in Grammar(grammar, program).read([Word(w) for w in line.split()])]


@pytest.mark.parametrize(("line", "uses"), [
    ("-nr x f", [("-n", "flag", ""), ("-r", "flag", ""), ("", "free", "x"), ("", "path", "f")]),
    ("-no.git/config x", [("-n", "flag", ""), ("-o", "path-in-scope", ".git/config"), ("", "free", "x")]),
    ("-rno ../x", [("-r", "flag", ""), ("-n", "flag", ""), ("-o", "path-in-scope", "../x")]),
    ("--output=a --key b", [("--output", "path-in-scope", "a"), ("--key", "free", "b")]),
    ("--color x", [("--color", "free", ""), ("", "free", "x")]),  # an optional value is only ever attached
    ("--color=never -i.bak", [("--color", "free", "never"), ("-i", "free", ".bak")]),
    ("-name '*.py'", [("-name", "free", "'*.py'")]),
    ("-5 x", [("-NUM", "int", "5"), ("", "free", "x")]),
    ("-- -o x", [("", "free", "-o"), ("", "path", "x")]),
    ("- -", [("", "free", "-"), ("", "path", "-")]),
    ("--mode b -j 3", [("--mode", "enum", "b"), ("-j", "int", "3")]),
])
def test_gnu_words_are_read_as_getopt_reads_them(line, uses):
    assert read(SORTISH, line) == uses


@pytest.mark.parametrize(("line", "why"), [
    ("-T x", "`prog -T` is not an option this role allows"),
    ("-nT x", "`-T` inside the cluster"),
    ("--out=x", "spell the option out in full (`--output`)"),
    ("--outputs=x", "is not an option this role allows"),
    ("-n=x", "is not an option"),  # getopt: `-n`, then `-=`, not an option
    ("-o=x", "parsers disagree"),  # getopt: the value `=x`; argparse: `x`
    ("--mode c", "must be one of a, b"),
    ("-j x", "must be a number"),
    ("-o", "needs a value"),
    ("a b c", None),  # a repeating last operand takes any number
])
def test_what_the_grammar_does_not_declare_is_denied(line, why):
    if why is None:
        read(SORTISH, line)
        return
    with pytest.raises(ArgDeny, match=why.replace("(", r"\(").replace(")", r"\)").replace("`", ".")):
        read(SORTISH, line)


def test_a_flag_refuses_an_attached_value_and_counted_operands_stop():
    with pytest.raises(ArgDeny, match="takes no value"):
        read({"options": {"--quiet": "flag"}}, "--quiet=1")
    with pytest.raises(ArgDeny, match="takes at most 1 argument"):
        read({"positionals": ["free"]}, "a b")
    with pytest.raises(ArgDeny, match="takes no arguments"):
        read({}, "a")


def test_go_style_reads_one_dash_or_two_and_no_clusters():
    go = {"option-style": "go", "options": {"-v": "flag", "-o": "path-in-scope", "-run": "free"}, "positionals": ["path-in-root..."]}
    assert read(go, "--v -o=bin -run X ./...") == [
        ("-v", "flag", ""), ("-o", "path-in-scope", "bin"), ("-run", "free", "X"), ("", "path-in-root", "./...")]
    assert read(go, "-v=true") == [("-v", "flag", "")]
    for bad in ("-vo x", "-v=maybe", "-toolexec=x", "--toolexec x"):
        with pytest.raises(ArgDeny):
            read(go, bad)


def test_words_after_double_dash_go_to_the_trailing_grammar():
    cargo = {"options": {"-p": "free"}, "positionals": ["free..."],
             "trailing": {"options": {"--nocapture": "flag", "-D": "free"}, "positionals": ["free..."]}}
    assert read(cargo, "-p x -- --nocapture -Dwarnings name") == [
        ("-p", "free", "x"), ("--nocapture", "flag", ""), ("-D", "free", "warnings"), ("", "free", "name")]
    with pytest.raises(ArgDeny, match="--logfile"):
        read(cargo, "-- --logfile /tmp/x")


def test_style_none_has_no_options():
    assert read({"option-style": "none", "positionals": ["free..."]}, "-n -- -e") == [
        ("", "free", "-n"), ("", "free", "--"), ("", "free", "-e")]


@pytest.mark.parametrize("raw", [
    {"option-style": "posix"},
    {"options": {"o": "flag"}},
    {"options": {"-o": "file"}},
    {"options": {"-o": "flag?"}},
    {"options": {"-o": []}},
    {"positionals": ["path...", "free"]},
    {"positionals": ["flag"]},
    {"positionals": ["free?"]},
])
def test_malformed_grammars_are_policy_errors(raw):
    with pytest.raises(GrammarError):
        Grammar(raw, "prog")


def test_the_deny_lists_what_is_allowed():
    with pytest.raises(ArgDeny) as exc:
        read({"options": {"-q": "flag", "--tb": ["short"]}}, "-x")
    assert "allowed: -q, --tb" in str(exc.value)


# -- typed values of the newer kinds -------------------------------------------------------------

TYPED = {"options": {"-W": "warning-filter", "-o": {"assignments": {"log_cli": ["true", "false"], "cache": "path-in-scope",
                                                                    "n": "int"}}},
         "positionals": ["mode", "format"]}


@pytest.mark.parametrize(("line", "uses"), [
    ("-W error::DeprecationWarning", [("-W", "warning-filter", "error::DeprecationWarning")]),
    ("-W ignore", [("-W", "warning-filter", "ignore")]),
    ("-Wi::UserWarning:mymod:3", [("-W", "warning-filter", "i::UserWarning:mymod:3")]),  # a prefix, as Python takes
    ("-o log_cli=true", [("-o log_cli=", "enum", "true")]),
    ("-ocache=out/c -o n=3", [("-o cache=", "path-in-scope", "out/c"), ("-o n=", "int", "3")]),
    ("u+x,go-w +%s", [("", "mode", "u+x,go-w"), ("", "format", "+%s")]),
    ("644", [("", "mode", "644")]),
    ("=r", [("", "mode", "=r")]),
])
def test_typed_values_are_read_with_their_kind(line, uses):
    assert read(TYPED, line) == uses


@pytest.mark.parametrize(("line", "why"), [
    ("-W ignore::mypkg.MyWarning", "would be imported"),
    ("-W explode", "ACTION one of"),
    ("-W a:b:c:d:e:f", "ACTION one of"),
    ("-o addopts=-pevil", "set one of cache, log_cli, n as KEY=VALUE"),
    ("-o log_cli", "as KEY=VALUE"),
    ("-o log_cli=maybe", "must be one of false, true"),
    ("-o n=x", "must be a number"),
    ("u+s", "set-user-ID"),
    ("4755", "set-user-ID"),
    ("+t", "sticky"),
    ("g=u", "give a mode of r, w, x"),
    ("644 010100002030", "only an output format"),
])
def test_typed_values_refuse_what_loads_code_or_sets_bits(line, why):
    with pytest.raises(ArgDeny, match=why.replace("+", r"\+")):
        read(TYPED, line)


def test_an_assignment_path_is_a_use_of_its_own_type():
    uses = Grammar(TYPED, "p").read([Word("-o"), Word("cache=.git/x")])
    assert [(u.type, u.value, u.word) for u in uses] == [("path-in-scope", ".git/x", None)]  # judged by its text


def test_min_positionals_requires_operands():
    grammar = {"positionals": ["path-in-scope", "path"], "min-positionals": 1}
    assert read(grammar, "out/a fix.diff") == [("", "path-in-scope", "out/a"), ("", "path", "fix.diff")]
    with pytest.raises(ArgDeny, match="needs at least 1 operand here; name the file it works on"):
        read(grammar, "")
    with pytest.raises(GrammarError, match="min-positionals"):
        Grammar({"positionals": ["path"], "min-positionals": 2}, "p")
    Grammar({"positionals": ["mode", "path..."], "min-positionals": 5}, "p")  # a repeating operand has no cap


@pytest.mark.parametrize("raw", [
    {"options": {"-o": {"assignments": {}}}},
    {"options": {"-o": {"assignments": {"k": "flag"}}}},
    {"options": {"-o": {"assignments": {"k": {"assignments": {"j": "free"}}}}}},
    {"options": {"-o": {"keys": {"k": "free"}}}},
    {"options": {"-o": {"assignments": {"a=b": "free"}}}},
    {"positionals": ["mode?"]},
])
def test_malformed_typed_values_are_grammar_errors(raw):
    with pytest.raises(GrammarError):
        Grammar(raw, "p")


def test_harmless_options_cannot_be_claimed_by_a_program_that_writes():
    from runtime.manifests.params import GrammarFields, compile_grammar

    def fields(table: dict) -> GrammarFields:
        return GrammarFields.model_validate(table)

    assert compile_grammar(fields({"positionals": ["path..."], "harmless-options": True}), "ls").harmless_options is True
    with pytest.raises(ValueError, match="harmless-options.*path-in-scope"):
        compile_grammar(fields({"positionals": ["path-in-scope..."], "harmless-options": True}), "rm")
    with pytest.raises(ValueError, match="path-in-root"):
        compile_grammar(fields({"options": {"--rootdir": "path-in-root"}, "harmless-options": True}), "x")
