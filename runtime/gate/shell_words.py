"""Words of a Bash command: dequoted, or refused when their value is not literal.

A mixin of the shell walker: it records the byte span of every node it
judges (``cover``), so the walker can refuse a command holding bytes nobody
looked at.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

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
_GLOB = re.compile(r"[*?\[]")
_SPECIAL = re.compile(r"[*?\[{]")


class WordReader:
    src: bytes
    spans: list[tuple[int, int]]
    literal: list[tuple[int, int]]  # spans whose bytes bash takes as they are (single quotes, quoted heredocs)

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
        if kind == "word":
            raw = (node.text or b"").decode()
            if "\\" not in raw and not _SPECIAL.search(raw):
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
        glob = _GLOB.search(mask) is not None
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
            for child in node.children:  # an expansion is refused by name, whatever else the string holds
                if child.type not in ('"', "string_content") and not (
                        child.type == "$" and self._literal_dollar(child, quoted=True)):
                    raise self.refuse(child)
            parts = double_quoted(self.src, node)
            if parts is None or not all(isinstance(p, str) for p in parts):
                raise unreadable(self.text(node))
            body = "".join(p for p in parts if isinstance(p, str))
            return body, "q" * len(body)
        raise self.refuse(node)


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
