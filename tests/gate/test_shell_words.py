"""Words of a Bash command (`runtime.gate.shell_words`): dequoted, or refused when their value is not literal."""

import shutil
import subprocess

import pytest

from runtime.gate.shell_words import WordReader, _expands_braces, unescape_double
from runtime.gate.treesitter import bash_parser
from runtime.lang.shell_types import ShellDeny

_PARSER = bash_parser()


class Reader(WordReader):
    def __init__(self, source: str) -> None:
        self.src = source.encode()
        self.spans = []
        self.literal = []


def argument(text):
    """A reader of `echo TEXT` and the node of TEXT (one argument)."""
    reader = Reader("echo " + text)
    command = _PARSER.parse(reader.src).root_node.children[0]
    (node,) = [c for c in command.children if c.type != "command_name"]
    return reader, node


def word(text):
    reader, node = argument(text)
    return reader.word(node)


@pytest.mark.parametrize("text,value", [
    ("abc", "abc"),
    ("'a b'", "a b"),
    ('"a b"', "a b"),
    ('"a\\"b"', 'a"b'),
    ('"a\\nb"', "a\\nb"),  # inside double quotes a backslash escapes only $ ` " \ and newline
    ("a\\ b", "a b"),
    ("a'b'\"c\"", "abc"),
    ("'$x'", "$x"),
    ('"cost $"', "cost $"),  # a `$` that starts no expansion is itself
    ('"a$/"', "a$/"),
    ("a$", "a$"),
    ("'a'$", "a$"),
    ("$", "$"),
    ('"$"', "$"),
    ("123", "123"),
    ("{a}", "{a}"),  # braces without a comma or `..` expand nothing
    ("{x}", "{x}"),
    ("'{a,b}'", "{a,b}"),
    ("'{'a,b}", "{a,b}"),
    ("{a,b'}'", "{a,b}"),
    ("-\\*", "-*"),
])
def test_literal_words_are_dequoted(text, value):
    assert word(text).value == value


@pytest.mark.parametrize("text,glob,tilde,dash", [
    ("abc", False, False, False),
    ("*.py", True, False, True),  # a leading wildcard may expand into an option name
    ("?", True, False, True),
    ("[ab]", True, False, True),
    ("a*.py", True, False, False),
    ("src/*.py", True, False, False),
    ("'*.py'", False, False, False),
    ('"a"\'*\'', False, False, False),
    ("a\\*", False, False, False),
    ("\\?", False, False, False),
    ("~/x", False, True, False),
    ("~", False, True, False),
    ("'~/x'", False, False, False),
    ('"~"', False, False, False),
    ("\\~x", False, False, False),
])
def test_globs_tildes_and_leading_wildcards_are_noted_only_when_unquoted(text, glob, tilde, dash):
    w = word(text)
    assert (w.glob, w.tilde, w.dash) == (glob, tilde, dash)


@pytest.mark.parametrize("text,words", [
    ("-*", "could expand to option names"),
    ("'-'*", "could expand to option names"),
    ("\\-*", "could expand to option names"),
    ("-?", "could expand to option names"),
    ("{a,b}", "brace expansion in `{a,b}`"),
    ("a{b,c}d", "brace expansion"),
    ("{a,'b'}", "brace expansion"),
    ("{1..3}", "brace expansion"),
    ('"$HOME"', "variable expansion ($NAME) is not allowed"),
    ('"$1"', "variable expansion"),
    ('"a${x}"', "parameter expansion (${...}) is not allowed"),
    ("$(id)", "command substitution ($(...) or backticks) is not allowed"),
    ('"`id`"', "command substitution"),
    ("$'x'", "ANSI-C quoting"),
    ("$((1+2))", "arithmetic expansion"),
])
def test_words_whose_value_is_not_literal_are_refused(text, words):
    reader, node = argument(text)
    with pytest.raises(ShellDeny) as info:
        reader.word(node)
    assert words in str(info.value)


def test_a_bare_dollar_before_a_quote_is_a_quoting_form_and_refused():
    reader = Reader('echo $"x"')
    command = _PARSER.parse(reader.src).root_node.children[0]
    dollar = next(c for c in command.children if c.type == "$")
    with pytest.raises(ShellDeny, match="`\\$` is not allowed"):
        reader.word(dollar)


def test_every_word_read_is_covered_and_single_quotes_are_literal():
    reader, node = argument("a'b'\"c\"")
    reader.word(node)
    assert reader.spans == [(5, 12)]
    assert reader.literal == [(6, 9)]  # the single-quoted part
    reader, node = argument('"x"')
    reader.word(node)
    assert reader.literal == []


# -- refusals ---------------------------------------------------------------------------------------

def refusal(source, node_type):
    reader = Reader(source)

    def find(node):
        if node.type == node_type:
            return node
        return next((n for n in map(find, node.children) if n is not None), None)

    return str(reader.refuse(find(_PARSER.parse(reader.src).root_node)))


@pytest.mark.parametrize("source,node_type,words", [
    ("for x in a; do id; done", "for_statement", "loops are not allowed (in `for x in a; do id; done`)"),
    ("if true; then id; fi", "if_statement", "if statements are not allowed"),
    ("f() { id; }", "function_definition", "function definitions are not allowed"),
    ("case x in a) id;; esac", "case_statement", "case statements are not allowed"),
    ("export A=1", "declaration_command", "declarations (export, declare, local, readonly) are not allowed"),
    ("A=1", "variable_assignment", "shell variable assignments are not allowed"),
    ("echo $HOME", "simple_expansion", "variable expansion ($NAME) is not allowed"),
    ("echo $(id)", "command_substitution", "is not allowed"),
    ("unset A", "unset_command", "unset is not allowed"),
])
def test_a_refusal_names_the_construct_with_the_right_verb(source, node_type, words):
    assert words in refusal(source, node_type)


@pytest.mark.parametrize("source,node_type,hint", [
    ("for x in a; do id; done", "for_statement", "one command per value"),
    ("while true; do id; done", "while_statement", "sleep N"),
    ("if true; then id; fi", "if_statement", "join the test and the command with && or ||"),
    ("echo $(id)", "command_substitution", "run the inner command first"),
    ("echo $HOME", "simple_expansion", "write the value itself"),
    ("export A=1", "declaration_command", "`NAME=value program …`"),
    ("echo $?", "simple_expansion", "`cmd && echo ok || echo failed`"),
])
def test_a_refusal_suggests_what_to_write_instead(source, node_type, hint):
    assert hint in refusal(source, node_type)


def test_a_refusal_of_a_node_without_a_name_says_its_type_and_shows_one_line():
    text = refusal("echo a\nb", "program")
    assert text.startswith("`program` is not allowed (in `echo a`)")


# -- the pure helpers ------------------------------------------------------------------------------

@pytest.mark.parametrize("mask,expands", [
    ("{a,b}", True), ("{a..b}", True), ("{,}", True), ("x{a,b}y", True), ("{a{b,c}", True), ("{a}{b,c}", True),
    ("{a}", False), ("{a.b}", False), ("{a,b", False), ("a,b}", False), ("}{a,b", False), ("{a,{b}", False),
    ("{.}", False), ("{a.}", False), ("q{q,q}", True), ("qa,b}", False), ("", False), ("{" + "," * 10_000, False),
])
def test_brace_expansion_needs_a_comma_or_dotdot_between_a_matching_pair(mask, expands):
    assert _expands_braces(mask) is expands


@pytest.mark.parametrize("text,value", [
    ("plain", "plain"),
    ('a\\"b', 'a"b'),
    ("a\\$b", "a$b"),
    ("a\\`b", "a`b"),
    ("a\\\\b", "a\\b"),
    ("a\\\nb", "ab"),  # a backslash-newline joins the lines
    ("a\\nb", "a\\nb"),  # other backslashes stay
    ("a\\'b", "a\\'b"),
    ("end\\", "end\\"),
    ("\\\\\\\\", "\\\\"),
])
def test_unescape_double_follows_bash_inside_double_quotes(text, value):
    assert unescape_double(text) == value


# -- quoted text read exactly ----------------------------------------------------------------------
# tree-sitter ends a string_content at a newline (and at a carriage return before one) and leaves the
# bytes up to the next child in no node: `"src<newline>"` once read as `src`, and the strict edit-local
# policy let `echo x > "src<newline>/evil.py"` write into a folder named `src\n` outside `src/**`.

_QUOTED_SHAPES = [
    ('"a\nb"', "a\nb"),
    ('"src\n"', "src\n"),
    ('"src\n/evil.py"', "src\n/evil.py"),
    ('"a\n\n\nb"', "a\n\n\nb"),
    ('"a\r\nb"', "a\r\nb"),
    ('"a\rb"', "a\rb"),
    ('"a\r"', "a\r"),
    ('"\r\n"', "\r\n"),
    ('"\n"', "\n"),
    ('"\na"', "\na"),
    ('"x\n\n"', "x\n\n"),
    ('" \n "', " \n "),
    ('"a \n b"', "a \n b"),
    ('"a\t\n\tb"', "a\t\n\tb"),
    ('"a\v\nb"', "a\v\nb"),
    ('"a\n#c\nb"', "a\n#c\nb"),
    ('"a\n$"', "a\n$"),
    ('"$\n"', "$\n"),
    ('"\n$"', "\n$"),
    ('"a\\\\ b\n c"', "a\\ b\n c"),
    ('"a\n\\$b"', "a\n$b"),
    ('"é\nü"', "é\nü"),
    ('x"a\nb"y', "xa\nby"),
    ('"a\n"\'b\nc\'"\nd"', "a\nb\nc\nd"),
    ("'a\nb'", "a\nb"),
    ("'a\r\n\nb'", "a\r\n\nb"),
    ('a"b\nc"$', "ab\nc$"),
]


@pytest.mark.parametrize("text,value", _QUOTED_SHAPES)
def test_quoted_newlines_and_what_tree_sitter_leaves_between_parts_are_kept(text, value):
    assert word(text).value == value


def test_quoted_values_are_what_bash_gives_the_program():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    for text, value in _QUOTED_SHAPES:
        out = subprocess.run([bash, "--norc", "--noprofile", "-c", f"printf '%s\\0' {text}"], capture_output=True,
                             check=True, env={"LC_ALL": "C.UTF-8"}).stdout
        assert out.decode() == value + "\0", text
        assert word(text).value == value


@pytest.mark.parametrize("text,words", [
    ('"$x\ny"', "variable expansion ($NAME) is not allowed"),
    ('"a\n$x"', "variable expansion"),
    ('"a\n`id`"', "command substitution"),
    ("$'a\nb'", "ANSI-C quoting"),
])
def test_expansions_after_a_quoted_newline_are_still_refused(text, words):
    reader, node = argument(text)
    with pytest.raises(ShellDeny) as info:
        reader.word(node)
    assert words in str(info.value)


def _with_gap_replaced(text, new):
    """A reader of `echo TEXT` whose source has the first newline replaced by ``new`` after the parse: the
    parts tree-sitter made of TEXT, and bytes between them this reading does not know."""
    reader, node = argument(text)
    reader.src = reader.src.replace(b"\n", new, 1)
    return reader, node


@pytest.mark.parametrize("text", ['"a\nb"', 'x"a\nb"', '"a\n$"'])
def test_a_gap_between_quoted_parts_that_is_not_whitespace_is_refused_not_dropped(text):
    reader, node = _with_gap_replaced(text, b"`")
    with pytest.raises(ShellDeny, match="could not be read exactly"):
        reader.word(node)


class _Node:
    """A stand-in for a tree-sitter node: a type, a span, children."""

    def __init__(self, kind, start, end, children=()):
        self.type, self.start_byte, self.end_byte, self.children = kind, start, end, list(children)


def test_parts_of_a_concatenation_that_do_not_touch_are_refused_not_joined():
    # `echo a 'b'` laid out as one word of two parts with a byte between them: bash would give two words.
    reader = Reader("echo a 'b'")
    gapped = _Node("concatenation", 5, 10, [_Node("word", 5, 6), _Node("raw_string", 7, 10)])
    with pytest.raises(ShellDeny, match="could not be read exactly"):
        reader.word(gapped)


# -- through the engine ----------------------------------------------------------------------------

def test_strict_mode_denies_a_write_into_a_folder_named_with_a_quoted_newline(policy_for, worktree):
    from runtime.gate.decision import ALLOW, DENY
    from runtime.gate.engine import decide

    policy = policy_for("edit-local")  # strict, write scope src/** and tests/**
    d = decide(policy, "Bash", {"command": 'mkdir "src\n"'}, str(worktree))
    assert d.verdict == DENY and "outside your write scope" in d.reason
    (worktree / "src\n").mkdir()  # made some other way: the write below is judged on its own
    for command in ('echo x > "src\n/evil.py"', 'touch "src\n/evil.py"', 'echo x > "src\r\n/evil.py"'):
        d = decide(policy, "Bash", {"command": command}, str(worktree))
        assert d.verdict == DENY and "outside your write scope" in d.reason, command
    assert decide(policy, "Bash", {"command": 'echo x > "src/ok.py"'}, str(worktree)).verdict == ALLOW


# -- `$(cat <<'EOF' ... EOF)`: Claude Code's commit message, read as the literal text bash passes -----------

MESSAGES = [
    "Fix the parser",
    "Fix the parser\n\nThe tokenizer dropped a quote.\n\nCo-Authored-By: Claude <noreply@anthropic.com>",
    "a $(id) `x` ${HOME} $'q' \"dq\" 'sq' \\ back",
    "trailing newlines go\n\n\n",
    "",
]


@pytest.mark.parametrize("message", MESSAGES)
def test_a_quoted_heredoc_substituted_in_double_quotes_is_the_text_bash_passes(message):
    from runtime.gate.shell import analyze

    for delimiter in ("'EOF'", '"EOF"', "'END_MSG'"):
        bare = delimiter.strip("'\"")
        body = f"{message}\n" if message else ""
        command = f'printf %s "$(cat <<{delimiter}\n{body}{bare}\n)"'
        args = analyze(command, "/w").commands[0].args
        ran = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout
        assert args == ["%s", ran], (command, args, ran)


@pytest.mark.parametrize("command", [
    'git commit -m "$(cat <<EOF\nx $(id)\nEOF\n)"',  # unquoted: it expands
    "git commit -m \"$(cat x <<'EOF'\nm\nEOF\n)\"",  # cat of a file too
    "git commit -m $(cat <<'EOF'\nm\nEOF\n)",  # unquoted substitution: split into words
    "git commit -m \"$(cat <<'EOF' | sh\nm\nEOF\n)\"",  # piped on
    "git commit -m \"$(cat <<-'EOF'\n\tm\n\tEOF\n)\"",  # <<- strips tabs
    "git commit -m \"$(tac <<'EOF'\nm\nEOF\n)\"",  # another program
    "git commit -m \"$(cat <<'EOF'\nm\nEOF\necho more)\"",  # another command after it
])
def test_anything_else_in_a_substitution_stays_unread(command):
    from runtime.gate.shell import analyze
    from runtime.lang.shell_types import ShellUnseen

    with pytest.raises(ShellDeny) as caught:
        analyze(command, "/w")
    assert isinstance(caught.value, ShellUnseen) or "could not be" in str(caught.value), str(caught.value)
