"""Bash commands, parsed with tree-sitter into what they would run and write.

``analyze`` accepts a small, known subset of Bash: lists, pipelines, simple
commands, subshells and groups, literal words, redirections and heredocs
without expansions. Everything else (substitutions, expansions, functions,
control flow, declarations, ANSI-C strings) raises ``ShellDeny``, as does a
parse error or any byte of the command the walk did not account for: a
policy cannot judge what it cannot see. Wrappers (``env``, ``timeout``,
``sh -c``, ``find -exec``, ...) are unwrapped so the inner command is judged
on its own; see ``runtime.gate.wrappers``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate import wrappers
from runtime.gate.envvars import check_assignment
from runtime.gate.shell_redirects import STATEMENTS, WORD_NODES, RedirectReader
from runtime.gate.shell_types import Command, Script, ShellDeny, Word

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree

_parser: Parser | None = None


def _parse(source: bytes) -> Tree:
    global _parser
    if _parser is None:
        from runtime.gate.treesitter import bash_parser

        _parser = bash_parser()
    return _parser.parse(source)


_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n", "(", ")", "{", "}", "!", ";;"})

# The analysis reads nothing but its two strings, so it is memoised: an agent
# re-runs the same commands (its tests, above all) many times in one session.
# Every check that looks at the file system or the policy runs on each call.
_MEMO: dict[tuple[str, str], Script | str] = {}
_MEMO_SIZE = 512


def analyze(source: object, cwd: str) -> Script:
    """Parse ``source`` and return the commands it would run and the files its redirections write.

    The result is shared between calls: callers must not change it.
    """
    if not isinstance(source, str) or not source.strip():
        raise ShellDeny("the command is empty; give the command to run")
    key = (source, cwd)
    found = _MEMO.get(key)
    if found is None:
        try:
            found = _analyze(source, cwd)
        except ShellDeny as exc:
            found = str(exc)
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.clear()
        _MEMO[key] = found
    if isinstance(found, str):
        raise ShellDeny(found)
    return found


def _analyze(source: str, cwd: str) -> Script:
    if "\x00" in source:
        raise ShellDeny("the command contains a NUL byte; remove it")
    _check_continuations(source)
    walker = _Walker(source, (cwd,))
    walker.run()
    return walker.script


def _check_continuations(source: str) -> None:
    """A backslash-newline joins lines; tree-sitter splits the word there instead."""
    at = source.find("\\\n")
    while at >= 0:
        # Between words (a space before it) it only joins lines; inside a word
        # it would glue the parts tree-sitter reports as separate words.
        before = source[at - 1] if at else " "
        if before not in " \t":
            raise ShellDeny("a line continuation (backslash-newline) inside a word is not allowed; write the word on one line")
        at = source.find("\\\n", at + 2)


class _Walker(RedirectReader):
    def __init__(self, source: str, cwds: tuple[str, ...], via: str = "") -> None:
        self.src = source.encode()
        self.cwds = cwds
        self.via = via
        self.script = Script()
        self.spans: list[tuple[int, int]] = []
        self.after_cd: tuple[str, ...] | None = None

    # -- helpers -----------------------------------------------------------
    def run(self) -> None:
        tree = _parse(self.src)
        root = tree.root_node
        if root.has_error:
            raise ShellDeny("the command could not be parsed as Bash; write simple commands joined by &&, || , ; or |")
        self.statements(root)
        self.check_coverage()

    def check_coverage(self) -> None:
        # tree-sitter is error-tolerant and has been seen to drop tokens (the
        # `-` of `python - <<EOF`); every byte must belong to something judged.
        pos = 0
        src = self.src
        self.spans.sort()
        for start, end in self.spans:
            if start > pos:
                gap = src[pos:start]
                if not gap.isspace() and gap.replace(b"\\\n", b"").strip():
                    raise ShellDeny(f"part of the command was not understood: `{gap.strip().decode(errors='replace')[:40]}`")
            if end > pos:
                pos = end
        tail = self.src[pos:].replace(b"\\\n", b"")
        if tail.strip():
            raise ShellDeny(f"part of the command was not understood: `{tail.strip().decode(errors='replace')[:40]}`")

    # -- statements --------------------------------------------------------
    def statements(self, node: Node) -> None:
        for child in node.children:
            if child.type == "&&" and self.after_cd is not None:
                # `cd DIR && next`: next runs only if the cd worked, so only in DIR.
                self.cwds = self.after_cd
            self.after_cd = None
            self.statement(child)

    def statement(self, node: Node) -> None:
        kind = node.type
        if not node.is_named:
            if kind not in _SEPARATORS:
                raise ShellDeny(f"`{kind}` is not allowed here; write simple commands joined by &&, ||, ; or |")
            self.cover(node)
        elif kind == "comment":
            self.cover(node)
        elif kind == "command":
            self.command(node, [])
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind == "subshell":
            saved = self.cwds  # a subshell's `cd` ends with it
            self.statements(node)
            self.cwds, self.after_cd = saved, None
        elif kind == "pipeline":
            for child in node.children:  # each element runs in a subshell
                saved = self.cwds
                self.statement(child)
                self.cwds, self.after_cd = saved, None
        elif kind in STATEMENTS:
            self.statements(node)
        else:
            raise self.refuse(node)

    # -- commands ----------------------------------------------------------
    def command(self, node: Node, extra: list[Word]) -> None:
        assigns: list[tuple[str, str]] = []
        words: list[Word] = []
        for child in node.children:
            kind = child.type
            if kind == "variable_assignment":
                assigns.append(self.assignment(child))
            elif kind == "command_name":
                self.cover(child)
                if child.child_count != 1:
                    raise self.refuse(child)
                words.append(self.word(child.children[0]))
            elif kind in WORD_NODES:
                words.append(self.word(child))
            elif kind in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                extra = self.redirect(child) + extra
            elif kind == "comment":
                self.cover(child)
            else:
                raise self.refuse(child)
        words += extra
        if self.carry is not None and self.carry[0] == node.start_byte:
            words += self.carry[1]  # a `-` tree-sitter left out before a redirection of the whole pipeline
            self.carry = None
        if not words:
            raise ShellDeny("shell variable assignments on their own are not allowed; pass values as arguments")
        self.simple(words, assigns, self.via, open_args=False)

    def assignment(self, node: Node) -> tuple[str, str]:
        self.cover(node)
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None or name_node.type != "variable_name":
            raise self.refuse(node)
        value = self.word(value_node) if value_node is not None else Word("")
        name = self.text(name_node)
        check_assignment(name, value)
        return name, value.value

    def simple(self, words: list[Word], assigns: list[tuple[str, str]], via: str, open_args: bool) -> None:
        """Judge one simple command: builtins, wrappers, or a program to record."""
        if words[0].value in wrappers.FORBIDDEN_BUILTINS:
            wrappers.unwrap(words[0].value, [])  # raises with the reason
        name, by_path = wrappers.program_name(words[0])
        args = words[1:]
        if by_path is not None and (name == "cd" or name in wrappers.FORBIDDEN_BUILTINS):
            raise wrappers.by_path_deny(by_path, name)
        if name == "cd":
            self.cd(args)
            return
        inner = wrappers.unwrap(name, args)
        if inner is not None and any(a.dash for a in args):
            # A wrapper reads its own options first: a glob bash turns into `-c…` would be one of them.
            glob = next(a.value for a in args if a.dash)
            raise ShellDeny(f"`{glob}` is a glob that could expand to option names of `{name}`; start it with `./` "
                            f"(`./{glob}`) or a folder name")
        if inner is not None and by_path is not None:
            raise wrappers.by_path_deny(by_path, name)  # a wrapper or shell from a folder of the repository
        if inner is not None and open_args:
            raise ShellDeny(f"`xargs {name}` would let its input add options to `{name}`; run `{name}` directly")
        if inner is None:
            self.script.commands.append(Command(name, args, assigns, self.cwds, via, open_args, by_path))
            return
        if inner.record_self:
            own = args if inner.self_args is None else inner.self_args
            self.script.commands.append(Command(name, own, assigns, self.cwds, via, open_args))
        for a_name, a_value in inner.assigns:
            check_assignment(a_name, a_value)
        assigns = assigns + [(n, v.value) for n, v in inner.assigns]
        for script in inner.scripts:
            sub = _Walker(script, self.cwds, via + name + " -c ")
            sub.run()
            for inner_cmd in sub.script.commands:  # `FOO=1 bash -c 'cmd'`: cmd runs with FOO set
                inner_cmd.assigns = assigns + inner_cmd.assigns
            self.script.commands += sub.script.commands
            self.script.writes += sub.script.writes
        for cmd in inner.commands:
            if cmd:
                self.simple(cmd, assigns, via + name + " ", open_args or inner.open_args)

    def cd(self, args: list[Word]) -> None:
        rest = [a for a in args if a.value not in ("-P", "-L", "--")]
        if len(rest) != 1 or rest[0].value in ("", "-") or rest[0].glob or rest[0].tilde:
            raise ShellDeny("`cd` needs exactly one literal folder (no `-`, `~` or globs); write the folder out (`cd src`)")
        target = rest[0].value
        physical = any(a.value == "-P" for a in args)
        # A failed `cd` leaves the old folder current, so later paths are
        # checked against every folder the shell may be in (but see `&&`).
        # `cd -P` follows symlinks before `..` as bash does; plain `cd` (-L) takes `..` lexically.
        new = tuple(dict.fromkeys((os.path.realpath if physical else os.path.normpath)(os.path.join(c, target))
                                  for c in self.cwds))
        self.cwds = tuple(dict.fromkeys(self.cwds + new))
        self.after_cd = new
