"""Redirections and heredocs of a Bash command: what they write, what they hide.

A mixin of the shell walker. Targets that write become ``Write`` records,
checked later like the Write tool; network redirections, globbed targets,
unquoted heredocs that expand `$` or backticks and named descriptors
(`{NAME}>file`, which assigns the shell variable NAME) are refused.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.shell_words import WordReader
from runtime.lang.shell_types import Input, Script, ShellDeny, ShellUnseen, Word, Write

if TYPE_CHECKING:
    from tree_sitter import Node

STATEMENTS = frozenset({"command", "list", "pipeline", "redirected_statement", "subshell", "compound_statement", "negated_command"})
WORD_NODES = frozenset({"word", "number", "raw_string", "string", "concatenation"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_TAIL_OPS = frozenset({"&&", "||", "|", "|&", ";", "\n"})


class RedirectReader(WordReader):
    # The walker's, which this mixin reads and extends.
    script: Script
    tails: list[tuple[str | None, Node]]
    group_ends: set[int]  # where groups `{ ...; }` end: a `}` there is no `{NAME}`
    # Words tree-sitter left out of a command, by the command node's first byte (see dropped_dashes).
    carry: tuple[int, list[Word]] | None = None
    # The redirections of the command being read that give it a standard input, in order (None: not recorded,
    # as for a group's or a pipeline's, which no one command of them reads alone); an Input, or None for one
    # whose content the gate cannot know (`<&3`, `<<-`, a heredoc that expands).
    inputs: list[Input | None] | None = None
    # Standard input tree-sitter hung on a list or pipeline whose last command bash gives it to.
    carry_inputs: tuple[int, list[Input | None]] | None = None

    def dropped_dashes(self, body: Node, first: Node) -> list[Word]:
        """tree-sitter leaves a `-` operand just before a redirection out of the command (`cat - 2>&1`):
        the bytes between them, when they are nothing but such words, are its last arguments."""
        gap = self.src[body.end_byte:first.start_byte]
        words = gap.split()
        if not words or any(w != b"-" for w in words) or not gap[:1].isspace():
            return []  # anything else stays uncovered, and the coverage check refuses it
        self.spans.append((body.end_byte, first.start_byte))
        return [Word("-") for _ in words]

    def redirect(self, node: Node, cwds: tuple[str, ...]) -> list[Word]:
        """Record what a redirection writes (relative to ``cwds``); return stray words that are really arguments."""
        start = node.start_byte
        if start and self.src[start - 1:start] == b"}" and start not in self.group_ends:
            # bash reads `{NAME}>file` as "open file on a new descriptor and put its number in NAME":
            # an assignment (`{PATH}>x` sets PATH) hidden in a redirection. Any word ending in `}`
            # right before a redirection is refused.
            raise ShellDeny("`{NAME}>` before a redirection stores a descriptor number in the shell variable NAME; "
                            "put a space before the redirection, or drop the braces around the word")
        if node.type == "herestring_redirect":
            self.cover(node)
            for child in node.children:
                if child.is_named and child.type != "file_descriptor":
                    self.word(child)
            self.record_input(node)
            return []
        if node.type == "heredoc_redirect":
            return self.heredoc(node, cwds)
        op = None
        fd = None
        targets: list[Word] = []
        for child in node.children:
            if child.type == "file_descriptor":
                fd = self.text(child)
                self.cover(child)
            elif not child.is_named:
                op = child.type
                self.cover(child)
            elif child.type in WORD_NODES:
                targets.append(self.word(child))
            else:
                raise self.refuse(child)
        self.record_input(node)
        if not targets:
            if op in (">&-", "<&-"):
                return []
            raise ShellDeny(f"redirection `{self.text(node)}` has no target")
        target, extra = targets[0], targets[1:]
        stream = fd if fd is not None else ("0" if op in ("<", "<&", "<>") else "1")
        if stream in ("1", "2") and (op in ("<", "<>", "<&") or (op == ">&" and target.value not in ("1", "2", "-"))):
            self.script.streams_redirected = True
        # ASCII digits only, as bash reads a descriptor: `>&١` and `>&²` (digits to str.isdigit) write a file.
        if op in (">&", "<&") and ((target.value.isascii() and target.value.isdigit()) or target.value == "-"):
            return extra
        if target.glob or target.tilde:
            raise ShellDeny(f"redirection target `{target.value}` uses a glob or `~`; write the path out")
        if target.value.startswith(("/dev/tcp/", "/dev/udp/")):
            raise ShellDeny("network redirections (/dev/tcp, /dev/udp) are not allowed; redirect into a file of the worktree")
        if op in _WRITE_OPS or op in (">&", "&>"):
            self.script.writes.append(Write(target.value, cwds, self.text(node)))
        elif op not in ("<", "<&"):
            raise ShellDeny(f"redirection operator `{op}` is not allowed")
        return extra

    def heredoc(self, node: Node, cwds: tuple[str, ...]) -> list[Word]:
        extra: list[Word] = []
        quoted = False
        op: str | None = None
        for child in node.children:
            kind = child.type
            if kind == "heredoc_start":
                quoted = any(ch in self.text(child) for ch in "'\"\\")
                self.cover(child)
            elif kind in ("heredoc_end", "<<", "<<-", "file_descriptor"):
                self.cover(child)
            elif kind == "heredoc_body":
                for part in child.children:
                    if part.type != "heredoc_content":
                        raise self.refuse(part)
                if not quoted and any(ch in self.text(child) for ch in "$`"):
                    raise ShellUnseen("an unquoted heredoc expands `$` and backticks; quote its delimiter (<<'EOF') to keep the text literal")
                self.cover(child)
                if quoted:
                    self.literal.append((child.start_byte, child.end_byte))
            elif kind == "file_redirect":
                extra += self.redirect(child, cwds)
            elif not child.is_named and kind in _TAIL_OPS:
                op = kind
                self.cover(child)
            elif kind in STATEMENTS:
                # The rest of the line after `<<EOF` (`| cmd`, `&& cmd`) hangs here; it runs after the
                # command the heredoc belongs to, which judges it then.
                self.tails.append((op, child))
                op = None
            else:
                raise self.refuse(child)
        self.record_input(node)
        return extra

    def record_input(self, node: Node) -> None:
        """Note what a redirection gives the command as standard input, when it gives one (see ``inputs``)."""
        if self.inputs is not None:
            stdin, found = self.input_of(node)
            if stdin:
                self.inputs.append(found)

    def input_of(self, node: Node) -> tuple[bool, Input | None]:
        """Whether the redirection ``node`` puts something on descriptor 0, and what: an Input, or None when its
        content is not known here. Reads the node only (a word's value may be read again)."""
        fd, op, word, start, body, end = None, None, None, "", None, None
        for child in node.children:
            kind = child.type
            if kind == "file_descriptor":
                fd = self.text(child)
            elif kind == "heredoc_start":
                start = self.text(child)
            elif kind == "heredoc_body":
                body = child
            elif kind == "heredoc_end":
                end = child
            elif not child.is_named:
                op = op or kind
            elif word is None and kind in WORD_NODES:
                word = self.word(child)
        stream = fd if fd is not None else ("0" if op in ("<", "<&", "<>", "<<", "<<-", "<<<", "<&-") else "1")
        if stream != "0":
            return False, None
        if node.type == "heredoc_redirect":
            # `<<-` drops leading tabs from every line, which tree-sitter's span of the body does not show.
            return True, None if op == "<<-" else self.heredoc_text(start, body, end)
        if word is None or word.glob or word.tilde:
            return True, None
        if node.type == "herestring_redirect":
            return True, Input(text=word.value + "\n")
        return True, Input(path=word.value) if op == "<" else None

    def heredoc_text(self, start: str, body: Node | None, end: Node | None) -> Input | None:
        """The text a heredoc gives, when bash's reading of where it ends is tree-sitter's: the body starts on a
        line of its own, no line of it is the delimiter, the end is the delimiter alone on its line. An
        unquoted heredoc would drop backslash-newlines and backslashes before `\\`, `$` and backticks: with a
        backslash, its text is not known here."""
        quoted = any(ch in start for ch in "'\"\\")
        delimiter = start[1:-1] if len(start) > 1 and start[0] == start[-1] and start[0] in "'\"" else start
        if any(ch in delimiter for ch in "'\"\\$`") or not delimiter:
            return None
        if body is None:
            text, after = "", None
            if end is not None and self.src[end.start_byte - 1:end.start_byte] != b"\n":
                return None
        else:
            text, after = self.text(body), body.end_byte
            if self.src[body.start_byte - 1:body.start_byte] != b"\n":
                return None
        if end is None or self.text(end) != delimiter or (after is not None and after != end.start_byte):
            return None
        if self.src[end.end_byte:end.end_byte + 1] not in (b"", b"\n") or (not quoted and "\\" in text):
            return None
        if text and not text.endswith("\n") or delimiter in text.split("\n"):
            return None
        return Input(text=text)
