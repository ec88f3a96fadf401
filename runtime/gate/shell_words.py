"""Words of a Bash command: dequoted, or refused when their value is not literal.

A mixin of the shell walker: it records the byte span of every node it
judges (``cover``), so the walker can refuse a command holding bytes nobody
looked at.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.lang.shapes import has_any, has_space_or_any
from runtime.lang.shell_types import ShellDeny, ShellUnseen, Word

if TYPE_CHECKING:
    from tree_sitter import Node

_CONSTRUCT_NAMES = {
    "command_substitution": "command substitution ($(...) or backticks)",
    "process_substitution": "process substitution (<(...) or >(...))",
    "simple_expansion": "variable expansion ($NAME)",
    "expansion": "parameter expansion (${...})",
    "arithmetic_expansion": "arithmetic expansion ($((...)))",
    "brace_expression": "brace expansion ({a..b})",
    "ansi_c_string": "ANSI-C quoting ($'...')",
    "translated_string": "locale quoting ($\"...\")",
    "function_definition": "function definitions",
    "if_statement": "if statements",
    "while_statement": "loops",
    "for_statement": "loops",
    "c_style_for_statement": "loops",
    "case_statement": "case statements",
    "test_command": "test expressions ([[ ]])",
    "declaration_command": "declarations (export, declare, local, readonly)",
    "unset_command": "unset",
    "variable_assignment": "shell variable assignments",
}
# A concrete next step for the constructs agents reach for most.
_INSTEAD = {
    "for_statement": " (one command per value, or one command given all the values: most programs take several files)",
    "while_statement": " (run the command itself; a loop that polls is `sleep N` between two calls)",
    "c_style_for_statement": " (one command per value)",
    "command_substitution": " (run the inner command first, then write what it printed into the next one)",
    "simple_expansion": " (write the value itself)",
    "expansion": " (write the value itself)",
    "if_statement": " (join the test and the command with && or ||)",
    "declaration_command": " (put a variable on the command that reads it, `NAME=value program …`, where the "
                           "program's rule judges it)",
    "variable_assignment": " (put a variable on the command that reads it, `NAME=value program …`, where the "
                           "program's rule judges it)",
}
_PLURAL = frozenset({"function_definition", "if_statement", "while_statement", "for_statement", "c_style_for_statement",
                     "case_statement", "test_command", "declaration_command", "variable_assignment"})

EXPANSIONS = frozenset({"simple_expansion", "expansion"})


class WordReader:
    src: bytes
    spans: list[tuple[int, int]]
    literal: list[tuple[int, int]]  # spans whose bytes bash takes as they are (single quotes, quoted heredocs)
    # A loop's variable, while its body is read for one of its values; the walker sets its own.
    bound: dict[str, Word] = {}  # noqa: RUF012 - never changed in place: a loop binds a new dict

    def bound_word(self, node: Node) -> Word | None:
        """The value a loop gave the variable ``node`` expands (`$f`, `${f}`), or None: any other expansion."""
        kids = [k.type for k in node.children]
        if kids == ["$", "variable_name"] or kids == ["${", "variable_name", "}"]:
            return self.bound.get(self.text(node.children[1]))
        return None

    def _unquoted_bound(self, node: Node) -> Word | None:
        """An unquoted `$f` of a loop: its value when bash would take it as it is (no blank to split it at, no
        glob or brace or tilde to expand); refused when it would not, or when it stands for the names a glob
        matches (a name holding a blank would split into other arguments)."""
        word = self.bound_word(node)
        if word is None:
            return None
        if word.glob or word.tilde or has_space_or_any(word.value, "*?[{~") or not word.value:
            raise ShellUnseen(f"`{self.text(node)}` unquoted would be split and expanded again; write "
                              f"`\"{self.text(node)}\"`")
        return word

    def text(self, node: Node) -> str:
        return self.src[node.start_byte:node.end_byte].decode(errors="replace")

    def cover(self, node: Node) -> None:
        self.spans.append((node.start_byte, node.end_byte))

    def refuse(self, node: Node) -> ShellUnseen:
        what = _CONSTRUCT_NAMES.get(node.type, f"`{node.type}`")
        snippet = self.text(node).strip().splitlines()[0][:60] if self.text(node).strip() else node.type
        instead = _INSTEAD.get(node.type, "")
        if node.type == "simple_expansion" and snippet == "$?":
            instead = "; to see whether a command worked, write `cmd && echo ok || echo failed`"
        verb = "are" if node.type in _PLURAL else "is"
        return ShellUnseen(f"{what} {verb} not allowed (in `{snippet}`): the gate cannot see what it would run; write "
                         f"plain commands with literal arguments{instead}")

    def word(self, node: Node) -> Word:
        """Dequote one word; refuse anything whose value is not literal."""
        kind = node.type
        self.spans.append((node.start_byte, node.end_byte))
        if kind in EXPANSIONS:
            plain = self._unquoted_bound(node)
            if plain is not None:
                return Word(plain.value)
        if kind == "string" and self.bound:
            inside = double_quoted(self.src, node)  # `"$f"`: the value itself, a glob's names one by one
            if inside is not None and len(inside) == 3 and inside[0] == inside[2] == "" and not isinstance(inside[1], str):
                whole = self.bound_word(inside[1])
                if whole is not None:
                    return Word(whole.value, whole.glob, whole.tilde, whole.dash)
        if kind == "word":
            raw = (node.text or b"").decode()
            if "\\" not in raw and not has_any(raw, "*?[{"):
                return Word(raw, False, raw[:1] == "~")
            value, mask = self._part(node)
        elif kind == "concatenation":
            if not touching(node):
                raise unreadable(self.text(node))
            parts = [self._part(c) for c in node.children]
            value = "".join(p[0] for p in parts)
            mask = "".join(p[1] for p in parts)
        else:
            value, mask = self._part(node)
        glob = has_any(mask, "*?[")
        if "{" in mask and _expands_braces(mask):
            raise ShellDeny(f"brace expansion in `{value}` is not allowed; list the words out")
        if glob and value.startswith("-"):
            raise ShellDeny(f"`{value}` is a glob that could expand to option names; start it with `./` or a folder name")
        # A leading wildcard may expand into an option name too: the rules decide (`ls *.md` yes, `rm *` no).
        return Word(value, glob, mask[:1] == "~", glob and mask[:1] in ("*", "?", "["))

    def _literal_dollar(self, node: Node, quoted: bool) -> bool:
        return literal_dollar(self.src, node, quoted)

    def _part(self, node: Node) -> tuple[str, str]:
        """(value, mask) where mask repeats unquoted characters and hides quoted ones."""
        kind = node.type
        if kind == "$" and self._literal_dollar(node, quoted=False):
            return "$", "$"
        if kind in EXPANSIONS:
            plain = self._unquoted_bound(node)
            if plain is not None:
                return plain.value, plain.value
        raw = self.text(node)
        if kind in ("word", "number"):
            if "\\" not in raw:
                return raw, raw
            value, mask, i = [], [], 0
            while i < len(raw):
                ch = raw[i]
                if ch == "\\" and i + 1 < len(raw):
                    if raw[i + 1] != "\n":
                        value.append(raw[i + 1])
                        mask.append("q")
                    i += 2
                    continue
                value.append(ch)
                mask.append(ch)
                i += 1
            return "".join(value), "".join(mask)
        if kind == "raw_string":
            body = raw[1:-1]
            self.literal.append((node.start_byte, node.end_byte))
            return body, "q" * len(body)
        if kind == "string":
            texts: dict[int, str] = {}  # a `$(cat <<'EOF' ... EOF)` inside: the literal text it prints
            for child in node.children:  # an expansion is refused by name, whatever else the string holds
                if child.type == "command_substitution":
                    found = literal_substitution(self.src, child)
                    if found is not None:
                        texts[child.start_byte] = found
                        continue
                if child.type in EXPANSIONS:
                    bound = self.bound_word(child)
                    if bound is not None and not bound.glob and not bound.tilde:
                        texts[child.start_byte] = bound.value
                        continue
                if child.type not in ('"', "string_content") and not (
                        child.type == "$" and self._literal_dollar(child, quoted=True)):
                    raise self.refuse(child)
            parts = double_quoted(self.src, node)
            if parts is None:
                raise unreadable(self.text(node))
            read = [p if isinstance(p, str) else texts.get(p.start_byte) for p in parts]
            if any(p is None for p in read):
                raise unreadable(self.text(node))
            body = "".join(p for p in read if p is not None)
            return body, "q" * len(body)
        raise self.refuse(node)


def literal_substitution(src: bytes, node: Node) -> str | None:
    """What `$(cat <<'EOF' ... EOF)` prints, exactly: the quoted heredoc's text without its trailing newlines
    (bash strips them from a substitution), as Claude Code writes a commit message. None for anything else:
    any other command or argument, a pipe, an unquoted or `<<-` heredoc, text beside the delimiters."""
    kids = node.children
    if [k.type for k in kids] != ["$(", "redirected_statement", ")"]:
        return None
    stmt = kids[1].children
    if [k.type for k in stmt] != ["command", "heredoc_redirect"] or src[stmt[0].start_byte:stmt[0].end_byte] != b"cat":
        return None
    if src[kids[0].end_byte:stmt[0].start_byte] != b"" or src[stmt[0].end_byte:stmt[1].start_byte] != b" ":
        return None
    parts = stmt[1].children
    if [k.type for k in parts] != ["<<", "heredoc_start", "heredoc_body", "heredoc_end"]:
        return None
    opener, start, body, end = parts
    word = src[start.start_byte:start.end_byte]
    delimiter = src[end.start_byte:end.end_byte]
    if len(word) < 3 or word[:1] not in (b"'", b'"') or word[-1:] != word[:1] or word[1:-1] != delimiter \
            or not delimiter.replace(b"_", b"").isalnum():
        return None
    if body.children or src[opener.end_byte:start.start_byte] not in (b"", b" ") \
            or src[start.end_byte:body.start_byte] != b"\n" or body.end_byte != end.start_byte \
            or (body.end_byte > body.start_byte and src[body.end_byte - 1:body.end_byte] != b"\n") \
            or src[end.end_byte:kids[2].start_byte] != b"\n":
        return None
    return src[body.start_byte:body.end_byte].decode(errors="surrogateescape").rstrip("\n")


def unreadable(text: str) -> ShellDeny:
    """A word whose parts tree-sitter laid out in a shape this reading does not follow exactly: refused as
    unparsable, never read as some other word."""
    snippet = text.replace("\n", "\\n").replace("\r", "\\r")[:60]
    return ShellDeny(f"the command could not be parsed as Bash: the word `{snippet}` could not be read exactly; "
                     "write it in single quotes")


def touching(node: Node) -> bool:
    """Whether the children of ``node`` cover it end to end, with no byte between them: the parts of one
    word (a concatenation), which bash joins only where nothing separates them."""
    pos = node.start_byte
    for child in node.children:
        if child.start_byte != pos:
            return False
        pos = child.end_byte
    return pos == node.end_byte


def literal_dollar(src: bytes, node: Node, quoted: bool) -> bool:
    """Whether a bare `$` token is literal: what follows it cannot start an expansion (checked on the bytes,
    not on tree-sitter's reading). Outside double quotes `$'…'` and `$"…"` are quoting forms too."""
    after = src[node.end_byte:node.end_byte + 1]
    if node.end_byte - node.start_byte != 1:
        return False
    return not after or (after[0] not in _EXPANDS_AFTER_DOLLAR and (quoted or after not in (b"'", b'"')))


def double_quoted(src: bytes, node: Node) -> list[str | Node] | None:
    """A double-quoted string (`"..."`) as bash reads it: its literal text, dequoted, and the children that
    expand (`$NAME`, `$(...)`, ...), in order. None for a shape this cannot read exactly.

    The text is read from the source, not from the children: tree-sitter ends a string_content at a newline
    (and at a carriage return before one) and puts the bytes up to the next child in no node, so the
    children of `"src<newline>"` say `src`, while bash keeps the newline (a folder named `src\n` is
    outside `src/**`). A gap may hold only whitespace, which is text to bash: anything else there is
    something tree-sitter skipped that this reading would not see, and the string is not read.
    """
    start, end = node.start_byte, node.end_byte
    children = node.children
    if (end - start < 2 or len(children) < 2 or children[0].type != '"' or children[-1].type != '"'
            or (children[0].start_byte, children[0].end_byte) != (start, start + 1) or children[-1].end_byte != end
            or src[start:start + 1] != b'"' or src[end - 1:end] != b'"'):
        return None
    parts: list[str | Node] = []
    run = pos = start + 1  # where the literal text being read began, and how far it is read
    for child in children[1:-1]:
        if child.start_byte < pos or not _blank(src[pos:child.start_byte]):
            return None
        pos = child.end_byte
        if child.type == "string_content" or (child.type == "$" and literal_dollar(src, child, quoted=True)):
            continue
        if not child.is_named:
            return None
        text = src[run:child.start_byte]
        if (len(text) - len(text.rstrip(b"\\"))) % 2:
            return None  # an odd backslash would escape the expansion's `$`: bash would not expand it
        parts += [unescape_double(text.decode(errors="surrogateescape")), child]
        run = pos
    if children[-1].start_byte < pos or not _blank(src[pos:end - 1]):
        return None  # the closing quote's node may start on the whitespace before it (`" \n "`)
    parts.append(unescape_double(src[run:end - 1].decode(errors="surrogateescape")))
    return parts


def _blank(gap: bytes) -> bool:
    return not gap or gap.isspace()


def _expands_braces(mask: str) -> bool:
    r"""Whether bash would brace-expand: a `{` and a later `}` with a `,` or `..` between them and no
    brace in between (what the regex `{[^{}]*(,|\.\.)[^{}]*}` finds, in one pass: the regex backtracks
    to every comma after an unclosed brace)."""
    open_, seen, prev = False, False, ""
    for ch in mask:
        if ch == "{":
            open_, seen = True, False
        elif ch == "}":
            if open_ and seen:
                return True
            open_ = False
        elif open_ and (ch == "," or (ch == "." and prev == ".")):
            seen = True
        prev = ch
    return False


# What may follow `$` for bash to expand it inside double quotes: a name, a digit, a special
# parameter, `{`, `(` or `[` (the old `$[1+2]`). Before anything else (the closing quote of
# `"^def .*)$"`, `/`, `)`) it is a literal `$`, which tree-sitter reports as a bare `$` token.
_EXPANDS_AFTER_DOLLAR = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789{([@*#?$!-")


def unescape_double(text: str) -> str:
    """The text between double quotes: a backslash escapes only the dollar, backquote, quote, backslash and newline."""
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
