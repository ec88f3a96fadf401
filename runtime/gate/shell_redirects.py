"""Redirections and heredocs of a Bash command: what they write, what they hide.

A mixin of the shell walker. Targets that write become ``Write`` records,
checked later like the Write tool; network redirections, globbed targets and
unquoted heredocs that expand `$` or backticks are refused.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.shell_types import Script, ShellDeny, Word, Write
from runtime.gate.shell_words import WordReader

if TYPE_CHECKING:
    from tree_sitter import Node

STATEMENTS = frozenset({"command", "list", "pipeline", "redirected_statement", "subshell", "compound_statement", "negated_command"})
WORD_NODES = frozenset({"word", "number", "raw_string", "string", "concatenation"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})


class RedirectReader(WordReader):
    # The walker's, which this mixin reads and extends.
    script: Script
    cwds: tuple[str, ...]
    # Words tree-sitter left out of a command, by the command node's first byte (see dropped_dashes).
    carry: tuple[int, list[Word]] | None = None

    def command(self, node: Node, extra: list[Word]) -> None:
        raise NotImplementedError

    def statement(self, node: Node) -> None:
        raise NotImplementedError

    def redirected(self, node: Node) -> None:
        body = None
        redirects = []
        for child in node.children:
            if child.type in STATEMENTS and body is None:
                body = child
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                redirects.append(child)
            else:
                raise self.refuse(child)
        if body is None:
            raise ShellDeny("a redirection without a command is not allowed")
        if body.type == "command":
            # Words after a redirection are the command's arguments (`pytest >f -p x`).
            extra: list[Word] = self.dropped_dashes(body, redirects[0]) if redirects else []
            for child in redirects:
                extra += self.redirect(child)
            self.command(body, extra)
            return
        # tree-sitter hangs `a && b > f` on the whole list; judge the list first
        # so the target is resolved against every folder a `cd` in it may reach.
        last = body
        while last.type in ("pipeline", "list") and last.named_children:
            last = last.named_children[-1]
        if last.type == "command" and last.end_byte == body.end_byte and redirects:
            dashes = self.dropped_dashes(body, redirects[0])
            if dashes:  # `a | cat - 2>&1`: the `-` is the last command's
                self.carry = (last.start_byte, dashes)
        self.statement(body)
        self.carry = None
        for child in redirects:
            if self.redirect(child):
                raise ShellDeny("arguments after a redirection of a compound command are not allowed; put arguments before redirections")

    def dropped_dashes(self, body: Node, first: Node) -> list[Word]:
        """tree-sitter leaves a `-` operand just before a redirection out of the command (`cat - 2>&1`):
        the bytes between them, when they are nothing but such words, are its last arguments."""
        gap = self.src[body.end_byte:first.start_byte]
        words = gap.split()
        if not words or any(w != b"-" for w in words) or not gap[:1].isspace():
            return []  # anything else stays uncovered, and the coverage check refuses it
        self.spans.append((body.end_byte, first.start_byte))
        return [Word("-") for _ in words]

    def redirect(self, node: Node) -> list[Word]:
        """Record what a redirection writes; return stray words that are really arguments."""
        if node.type == "herestring_redirect":
            self.cover(node)
            for child in node.children:
                if child.is_named:
                    self.word(child)
            return []
        if node.type == "heredoc_redirect":
            return self.heredoc(node)
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
        if not targets:
            if op in (">&-", "<&-"):
                return []
            raise ShellDeny(f"redirection `{self.text(node)}` has no target")
        target, extra = targets[0], targets[1:]
        stream = fd if fd is not None else ("0" if op in ("<", "<&", "<>") else "1")
        if stream in ("1", "2") and (op in ("<", "<>", "<&") or (op == ">&" and target.value not in ("1", "2", "-"))):
            self.script.streams_redirected = True
        if op in (">&", "<&") and (target.value.isdigit() or target.value == "-"):
            return extra
        if target.glob or target.tilde:
            raise ShellDeny(f"redirection target `{target.value}` uses a glob or `~`; write the path out")
        if target.value.startswith(("/dev/tcp/", "/dev/udp/")):
            raise ShellDeny("network redirections (/dev/tcp, /dev/udp) are not allowed; redirect into a file of the worktree")
        if op in _WRITE_OPS or op in (">&", "&>"):
            self.script.writes.append(Write(target.value, self.cwds, self.text(node)))
        elif op not in ("<", "<&"):
            raise ShellDeny(f"redirection operator `{op}` is not allowed")
        return extra

    def heredoc(self, node: Node) -> list[Word]:
        extra: list[Word] = []
        quoted = False
        for child in node.children:
            kind = child.type
            if kind == "heredoc_start":
                quoted = any(ch in self.text(child) for ch in "'\"\\")
                self.cover(child)
            elif kind in ("heredoc_end", "<<", "<<-"):
                self.cover(child)
            elif kind == "heredoc_body":
                for part in child.children:
                    if part.type != "heredoc_content":
                        raise self.refuse(part)
                if not quoted and any(ch in self.text(child) for ch in "$`"):
                    raise ShellDeny("an unquoted heredoc expands `$` and backticks; quote its delimiter (<<'EOF') to keep the text literal")
                self.cover(child)
            elif kind == "file_redirect":
                extra += self.redirect(child)
            elif not child.is_named or kind in STATEMENTS:
                # The rest of the line after `<<EOF` (`| cmd`, `&& cmd`) hangs here.
                self.statement(child)
            else:
                raise self.refuse(child)
        return extra
