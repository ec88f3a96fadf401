"""Redirections and heredocs of a Bash command (`runtime.gate.shell_redirects`): what they write, what they hide."""

from types import SimpleNamespace

import pytest

from runtime.gate.shell_redirects import RedirectReader
from runtime.gate.treesitter import bash_parser
from runtime.lang.shell_types import Script, ShellDeny

_PARSER = bash_parser()
_REDIRECTS = ("file_redirect", "heredoc_redirect", "herestring_redirect")


class Reader(RedirectReader):
    def __init__(self, source: str) -> None:
        self.src = source.encode()
        self.spans = []
        self.literal = []
        self.script = Script()
        self.tails = []
        self.group_ends = set()
        self.inputs = []


def _first(node):
    if node.type in _REDIRECTS:
        return node
    return next((n for n in map(_first, node.children) if n is not None), None)


def reading(source):
    """A reader of ``source`` and its first redirection's node."""
    reader = Reader(source)
    node = _first(_PARSER.parse(reader.src).root_node)
    assert node is not None, source
    return reader, node


def redirect(source, cwds=("/w",)):
    """Read the first redirection: (stray words, writes, streams redirected, inputs) of it."""
    reader, node = reading(source)
    extra = reader.redirect(node, cwds)
    inputs = [None if i is None else (i.path, i.text) for i in reader.inputs]
    return [w.value for w in extra], [(w.target, w.text) for w in reader.script.writes], reader.script.streams_redirected, inputs


# -- what they write -------------------------------------------------------------------------------

@pytest.mark.parametrize("source,write", [
    ("echo x > out", ("out", "> out")),
    ("echo x >out", ("out", ">out")),
    ("echo x >> log", ("log", ">> log")),
    ("echo x &> all", ("all", "&> all")),
    ("echo x &>> all", ("all", "&>> all")),
    ("echo x >| out", ("out", ">| out")),
    ("echo x 2> err", ("err", "2> err")),
    ("echo x > 'a b'", ("a b", "> 'a b'")),
    ("echo x > \"a b\"", ("a b", '> "a b"')),
    ("echo x > /dev/null", ("/dev/null", "> /dev/null")),
])
def test_write_redirections_are_recorded_as_writes(source, write):
    extra, writes, streams, inputs = redirect(source)
    assert (extra, writes, streams, inputs) == ([], [write], False, [])


def test_a_write_keeps_every_folder_it_may_be_relative_to():
    reader, node = reading("echo x > out")
    reader.redirect(node, ("/w", "/w/src"))
    assert reader.script.writes[0].cwds == ("/w", "/w/src")


def test_words_after_the_target_are_returned_as_the_command_s_arguments():
    assert redirect("pytest > out -p evil")[:2] == (["-p", "evil"], [("out", "> out -p evil")])


@pytest.mark.parametrize("source", ["echo x 2>&1", "echo x >&2", "echo x 1>&2", "echo x >&-", "cat <&-", "echo x 2>&-"])
def test_duplicating_or_closing_the_standard_streams_writes_nothing(source):
    extra, writes, streams, _ = redirect(source)
    assert (extra, writes, streams) == ([], [], False)


@pytest.mark.parametrize("source,target", [
    # bash duplicates a descriptor only for a word of ASCII digits; `>&١` (an Arabic-Indic one) and `>&²` write
    # stdout and stderr to a file of that name, though str.isdigit() says they are digits.
    ("echo x >&\u0661", "\u0661"),
    ("echo x >&\u00b2", "\u00b2"),
    ("echo x 1>&\u0663", "\u0663"),
])
def test_a_word_of_non_ascii_digits_after_a_duplication_is_a_file_written(source, target):
    _, writes, _, _ = redirect(source)
    assert [w[0] for w in writes] == [target]


@pytest.mark.parametrize("source,writes", [
    ("echo x 1>&3", []),  # another descriptor on stdout
    ("echo x >&3", []),
    ("echo x 2>&4", []),
    ("echo 1<f", []),  # a file opened for reading on stdout
    ("echo 2<f", []),
    ("echo x >& out", [("out", ">& out")]),  # `>& FILE` is `&> FILE`: both streams into the file
])
def test_a_file_or_descriptor_put_on_stdout_or_stderr_is_noted(source, writes):
    _, found, streams, _ = redirect(source)
    assert streams is True and found == writes


# -- what they hide --------------------------------------------------------------------------------

@pytest.mark.parametrize("source,words", [
    ("echo x > /dev/tcp/h/80", "network redirections"),
    ("echo x >> /dev/udp/h/53", "network redirections"),
    ("cat < /dev/tcp/h/80", "network redirections"),
    ("echo x > *.txt", "uses a glob or `~`"),
    ("echo x > out?", "uses a glob or `~`"),
    ("echo x > ~/x", "uses a glob or `~`"),
    ("cat < ~/x", "uses a glob or `~`"),
    ("echo x > $(id)", "command substitution"),
    ('echo x > "$X"', "variable expansion"),
    ("echo x > ${X}", "parameter expansion"),
    ("cat <<< $x", "variable expansion"),
])
def test_targets_the_gate_cannot_see_or_must_not_allow_are_refused(source, words):
    reader, node = reading(source)
    with pytest.raises(ShellDeny) as info:
        reader.redirect(node, ("/w",))
    assert words in str(info.value)
    assert reader.script.writes == []


@pytest.mark.parametrize("source", ["echo {fd}>out", "echo {PATH}>/dev/null", "cat {x}<in", "cat {x}<<<hi",
                                    "cat {x}<<'EOF'\nx\nEOF"])
def test_a_word_in_braces_right_before_a_redirection_is_a_named_descriptor_and_refused(source):
    reader, node = reading(source)
    with pytest.raises(ShellDeny, match="`{NAME}>`"):
        reader.redirect(node, ("/w",))


def test_a_group_s_closing_brace_before_a_redirection_is_no_named_descriptor():
    reader, node = reading("{ a; }>out")
    reader.group_ends.add(node.start_byte)
    reader.redirect(node, ("/w",))
    assert [w.target for w in reader.script.writes] == ["out"]
    reader, node = reading("echo {x} >out")  # a space between: a word, then a redirection
    reader.redirect(node, ("/w",))
    assert [w.target for w in reader.script.writes] == ["out"]


# -- heredocs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("source,words", [
    ("cat <<EOF\nprice 5$\nEOF", "an unquoted heredoc expands"),
    ("cat <<EOF\na ` b\nEOF", "an unquoted heredoc expands"),
    ("cat <<EOF\n$x\nEOF", "variable expansion"),
    ("cat <<EOF\n$(id)\nEOF", "command substitution"),
])
def test_an_unquoted_heredoc_that_expands_is_refused(source, words):
    reader, node = reading(source)
    with pytest.raises(ShellDeny) as info:
        reader.redirect(node, ("/w",))
    assert words in str(info.value)


@pytest.mark.parametrize("source,body", [("cat <<'EOF'\n$x `id` $(id)\nEOF", b"$x `id` $(id)\n"),
                                         ('cat <<"EOF"\n$x\nEOF', b"$x\n"), ("cat <<\\EOF\n$x\nEOF", b"$x\n")])
def test_a_quoted_heredoc_keeps_its_text_literal(source, body):
    reader, node = reading(source)
    assert reader.redirect(node, ("/w",)) == []
    [(start, end)] = reader.literal
    assert reader.src[start:end] == body


def test_the_rest_of_the_line_after_a_heredoc_is_kept_to_run_after_its_command():
    reader, node = reading("cat <<EOF && ls\nx\nEOF")
    reader.redirect(node, ("/w",))
    assert [(op, reader.text(n)) for op, n in reader.tails] == [("&&", "ls")]
    reader, node = reading("cat <<'EOF' | git apply\nx\nEOF")
    reader.redirect(node, ("/w",))
    assert [reader.text(n) for _, n in reader.tails] == ["| git apply"]


def test_a_redirection_on_the_heredoc_line_is_a_write():
    assert redirect("cat <<EOF >out\nx\nEOF") == ([], [("out", ">out")], False, [(None, "x\n")])


# -- standard input --------------------------------------------------------------------------------

@pytest.mark.parametrize("source,stdin", [
    ("cat < in", ("in", None)),
    ("cat 0< in", ("in", None)),
    ("cat <<< hi", (None, "hi\n")),
    ("cat <<< 'a b'", (None, "a b\n")),
    ("cat <<'EOF'\nhello\nEOF", (None, "hello\n")),
    ("cat <<EOF\nhello\nEOF", (None, "hello\n")),
    ("cat <<EOF\nhello\nEOF\n", (None, "hello\n")),
    ('cat <<"EOF"\na\\\\b\nEOF', (None, "a\\\\b\n")),  # quoted: backslashes are text
    ("cat <<EOF\nEOF", (None, "")),
    ("cat <<'EOF'\nEOF\nEOF", (None, "")),  # the first delimiter line ends it
    ("cat <&3", None),  # another descriptor: its content is not known
    ("cat <&-", None),
    ("cat <<-EOF\n\thello\nEOF", None),  # `<<-` drops tabs tree-sitter still shows
    ("cat <<EOF\na\\\\b\nEOF", None),  # unquoted: bash would drop a backslash
    ("cat <<EOF\nx\nEOF ", None),  # the delimiter not alone on its line
])
def test_what_a_redirection_gives_as_standard_input(source, stdin):
    assert redirect(source)[3] == [stdin]


@pytest.mark.parametrize("source", ["cat 3< in", "echo x > out", "echo x 2>&1", "echo 1<f"])
def test_redirections_of_other_descriptors_give_no_standard_input(source):
    assert redirect(source)[3] == []


def test_inputs_are_not_recorded_where_no_one_command_reads_them():
    reader, node = reading("cat < in")
    reader.inputs = None
    reader.redirect(node, ("/w",))
    assert reader.inputs is None


def test_input_of_reads_the_node_only():
    reader, node = reading("cat < *.txt")
    assert reader.input_of(node) == (True, None)  # a glob: which file is not known
    reader, node = reading("echo x > out")
    assert reader.input_of(node) == (False, None)
    assert reader.script.writes == [] and reader.inputs == []


# -- words tree-sitter drops -----------------------------------------------------------------------

@pytest.mark.parametrize("gap,dashes", [(" - ", 1), (" - - ", 2), ("\t-\t", 1), (" x ", 0), (" -- ", 0), (" - x ", 0),
                                        ("- ", 0), ("", 0), ("  ", 0)])
def test_dashes_tree_sitter_leaves_out_before_a_redirection_are_arguments(gap, dashes):
    reader = Reader("cat" + gap + "2>&1")
    body, first = SimpleNamespace(end_byte=3), SimpleNamespace(start_byte=3 + len(gap))
    words = reader.dropped_dashes(body, first)
    assert [w.value for w in words] == ["-"] * dashes
    assert reader.spans == ([(3, 3 + len(gap))] if dashes else [])


def test_the_dash_of_cat_dash_is_found_between_the_real_nodes():
    reader = Reader("cat - 2>&1")
    statement = _PARSER.parse(reader.src).root_node.children[0]
    body, first = statement.children[0], statement.children[1]
    assert [w.value for w in reader.dropped_dashes(body, first)] == ["-"]
