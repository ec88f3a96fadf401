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
import re

from runtime.gate import wrappers
from runtime.gate.shell_types import Command, Script, ShellDeny, Word, Write

_parser = None


def _parse(source: bytes):
    global _parser
    if _parser is None:
        from runtime.gate.treesitter import bash_parser

        _parser = bash_parser()
    return _parser.parse(source)


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
_STATEMENTS = frozenset({"command", "list", "pipeline", "redirected_statement", "subshell", "compound_statement", "negated_command"})
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n", "(", ")", "{", "}", "!", ";;"})
_WORD_NODES = frozenset({"word", "number", "raw_string", "string", "concatenation"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_GLOB = re.compile(r"[*?\[]")
_SPECIAL = re.compile(r"[*?\[{]")
_BRACE = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_ASSIGN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables that change which program runs, what it loads or where it writes:
# setting them would let a command escape what the gate checked.
_UNSAFE_VARS = frozenset({
    "PATH", "IFS", "CDPATH", "ENV", "BASH_ENV", "GLOBIGNORE", "SHELLOPTS", "BASHOPTS", "PS4",
    "PROMPT_COMMAND", "HOME", "TMPDIR", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB",
    "RUBYOPT", "RUBYLIB", "EDITOR", "VISUAL", "PAGER", "SHELL", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
    "XDG_CACHE_HOME", "CC", "CXX", "CPP", "LD", "AR", "AS", "NM", "RANLIB", "STRIP", "CFLAGS", "CXXFLAGS",
    "CPPFLAGS", "LDFLAGS", "LDLIBS", "MAKEFLAGS", "MFLAGS", "PKG_CONFIG", "PKG_CONFIG_PATH",
})
_UNSAFE_PREFIXES = (
    "LD_", "DYLD_", "GIT_", "BASH_FUNC_", "NPM_CONFIG_", "CARGO_", "RUST", "PYTEST_", "PIP_", "UV_", "GO",
    "CGO_", "SSH_", "PYTHON",
)
# Python variables that only tune output or hashing; every other PYTHON* can load code.
_SAFE_PYTHON_VARS = frozenset({
    "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
    "PYTHONFAULTHANDLER", "PYTHONDEVMODE", "PYTHONTRACEMALLOC",
})
_SAFE_RUST_VARS = frozenset({"RUST_BACKTRACE", "RUST_LOG", "RUST_TEST_THREADS", "RUST_MIN_STACK"})


def check_assignment(name: str, value: Word) -> None:
    if not _ASSIGN_NAME.match(name):
        raise ShellDeny(f"`{name}` is not a variable name")
    upper = name.upper()
    if upper in _SAFE_PYTHON_VARS or upper in _SAFE_RUST_VARS:
        pass
    elif upper in _UNSAFE_VARS or upper.startswith(_UNSAFE_PREFIXES):
        raise ShellDeny(f"setting `{name}` can change what a command runs or where it writes; run the command without it")
    if value.tilde:
        raise ShellDeny(f"the value of `{name}` uses `~`; write the path out")


# The analysis reads nothing but its two strings, so it is memoised: an agent
# re-runs the same commands (its tests, above all) many times in one session.
# Every check that looks at the file system or the policy runs on each call.
_MEMO: dict[tuple[str, str], Script | str] = {}
_MEMO_SIZE = 512


def analyze(source: str, cwd: str) -> Script:
    """Parse ``source`` and return the commands it would run and the files its redirections write.

    The result is shared between calls: callers must not change it.
    """
    if not isinstance(source, str) or not source.strip():
        raise ShellDeny("the command is empty")
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
        raise ShellDeny("the command contains a NUL byte")
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


class _Walker:
    def __init__(self, source: str, cwds: tuple[str, ...], via: str = "") -> None:
        self.src = source.encode()
        self.cwds = cwds
        self.via = via
        self.script = Script()
        self.spans: list[tuple[int, int]] = []
        self.after_cd: tuple[str, ...] | None = None

    # -- helpers -----------------------------------------------------------
    def text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode(errors="replace")

    def cover(self, node) -> None:
        self.spans.append((node.start_byte, node.end_byte))

    def refuse(self, node) -> ShellDeny:
        what = _CONSTRUCT_NAMES.get(node.type, f"`{node.type}`")
        snippet = self.text(node).strip().splitlines()[0][:60] if self.text(node).strip() else node.type
        return ShellDeny(f"{what} is not allowed (in `{snippet}`): the gate cannot see what it would run; write plain commands with literal arguments")

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
    def statements(self, node) -> None:
        for child in node.children:
            if child.type == "&&" and self.after_cd is not None:
                # `cd DIR && next`: next runs only if the cd worked, so only in DIR.
                self.cwds = self.after_cd
            self.after_cd = None
            self.statement(child)

    def statement(self, node) -> None:
        kind = node.type
        if not node.is_named:
            if kind not in _SEPARATORS:
                raise ShellDeny(f"`{kind}` is not allowed here")
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
        elif kind in _STATEMENTS:
            self.statements(node)
        else:
            raise self.refuse(node)

    def redirected(self, node) -> None:
        body = None
        redirects = []
        for child in node.children:
            if child.type in _STATEMENTS and body is None:
                body = child
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                redirects.append(child)
            else:
                raise self.refuse(child)
        if body is None:
            raise ShellDeny("a redirection without a command is not allowed")
        if body.type == "command":
            # Words after a redirection are the command's arguments (`pytest >f -p x`).
            extra: list[Word] = []
            for child in redirects:
                extra += self.redirect(child)
            self.command(body, extra)
            return
        # tree-sitter hangs `a && b > f` on the whole list; judge the list first
        # so the target is resolved against every folder a `cd` in it may reach.
        self.statement(body)
        for child in redirects:
            if self.redirect(child):
                raise ShellDeny("arguments after a redirection of a compound command are not allowed; put arguments before redirections")

    def redirect(self, node) -> list[Word]:
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
        targets: list[Word] = []
        for child in node.children:
            if child.type == "file_descriptor":
                self.cover(child)
            elif not child.is_named:
                op = child.type
                self.cover(child)
            elif child.type in _WORD_NODES:
                targets.append(self.word(child))
            else:
                raise self.refuse(child)
        if not targets:
            if op in (">&-", "<&-"):
                return []
            raise ShellDeny(f"redirection `{self.text(node)}` has no target")
        target, extra = targets[0], targets[1:]
        if op in (">&", "<&") and (target.value.isdigit() or target.value == "-"):
            return extra
        if target.glob or target.tilde:
            raise ShellDeny(f"redirection target `{target.value}` uses a glob or `~`; write the path out")
        if target.value.startswith(("/dev/tcp/", "/dev/udp/")):
            raise ShellDeny("network redirections (/dev/tcp, /dev/udp) are not allowed")
        if op in _WRITE_OPS or op in (">&", "&>"):
            self.script.writes.append(Write(target.value, self.cwds, self.text(node)))
        elif op not in ("<", "<&"):
            raise ShellDeny(f"redirection operator `{op}` is not allowed")
        return extra

    def heredoc(self, node) -> list[Word]:
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
            elif not child.is_named or kind in _STATEMENTS:
                # The rest of the line after `<<EOF` (`| cmd`, `&& cmd`) hangs here.
                self.statement(child)
            else:
                raise self.refuse(child)
        return extra

    # -- words -------------------------------------------------------------
    def word(self, node) -> Word:
        """Dequote one word; refuse anything whose value is not literal."""
        kind = node.type
        self.spans.append((node.start_byte, node.end_byte))
        if kind == "word":
            raw = node.text.decode()
            if "\\" not in raw and not _SPECIAL.search(raw):
                return Word(raw, False, raw[:1] == "~")
            value, mask = self._part(node)
        elif kind == "concatenation":
            parts = [self._part(c) for c in node.children]
            value = "".join(p[0] for p in parts)
            mask = "".join(p[1] for p in parts)
        else:
            value, mask = self._part(node)
        glob = _GLOB.search(mask) is not None
        if "{" in mask and _BRACE.search(mask):
            raise ShellDeny(f"brace expansion in `{value}` is not allowed; list the words out")
        if glob and (mask[:1] in ("*", "?", "[") or value.startswith("-")):
            raise ShellDeny(f"`{value}` is a glob that could expand to option names; start it with `./` or a folder name")
        return Word(value, glob, mask[:1] == "~")

    def _part(self, node) -> tuple[str, str]:
        """(value, mask) where mask repeats unquoted characters and hides quoted ones."""
        kind = node.type
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
            return body, "q" * len(body)
        if kind == "string":
            out = []
            for child in node.children:
                if child.type == '"':
                    continue
                if child.type != "string_content":
                    raise self.refuse(child)
                out.append(_unescape_double(self.text(child)))
            body = "".join(out)
            return body, "q" * len(body)
        raise self.refuse(node)

    # -- commands ----------------------------------------------------------
    def command(self, node, extra: list[Word]) -> None:
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
            elif kind in _WORD_NODES:
                words.append(self.word(child))
            elif kind in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                extra = self.redirect(child) + extra
            elif kind == "comment":
                self.cover(child)
            else:
                raise self.refuse(child)
        words += extra
        if not words:
            raise ShellDeny("shell variable assignments on their own are not allowed; pass values as arguments")
        self.simple(words, assigns, self.via, open_args=False)

    def assignment(self, node) -> tuple[str, str]:
        self.cover(node)
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None or name_node.type != "variable_name":
            raise self.refuse(node)
        value = self.word(value_node) if value_node is not None else Word("")
        name = self.text(name_node)
        check_assignment(name, value)
        return name, value.value

    def simple(self, words: list[Word], assigns, via: str, open_args: bool) -> None:
        """Judge one simple command: builtins, wrappers, or a program to record."""
        if words[0].value in wrappers.FORBIDDEN_BUILTINS:
            wrappers.unwrap(words[0].value, [])  # raises with the reason
        name = wrappers.program_name(words[0])
        args = words[1:]
        if name == "cd":
            self.cd(args)
            return
        inner = wrappers.unwrap(name, args)
        if inner is not None and open_args:
            raise ShellDeny(f"`xargs {name}` would let its input add options to `{name}`; run `{name}` directly")
        if inner is None:
            self.script.commands.append(Command(name, args, assigns, self.cwds, via, open_args))
            return
        if inner.record_self:
            self.script.commands.append(Command(name, args, assigns, self.cwds, via, open_args))
        for a_name, a_value in inner.assigns:
            check_assignment(a_name, a_value)
        assigns = assigns + [(n, v.value) for n, v in inner.assigns]
        for script in inner.scripts:
            sub = _Walker(script, self.cwds, via + name + " -c ")
            sub.run()
            self.script.commands += sub.script.commands
            self.script.writes += sub.script.writes
        for cmd in inner.commands:
            if cmd:
                self.simple(cmd, assigns, via + name + " ", open_args or inner.open_args)

    def cd(self, args: list[Word]) -> None:
        rest = [a for a in args if a.value not in ("-P", "-L", "--")]
        if len(rest) != 1 or rest[0].value in ("", "-") or rest[0].glob or rest[0].tilde:
            raise ShellDeny("`cd` needs exactly one literal folder (no `-`, `~` or globs)")
        target = rest[0].value
        # A failed `cd` leaves the old folder current, so later paths are
        # checked against every folder the shell may be in (but see `&&`).
        new = tuple(dict.fromkeys(os.path.normpath(os.path.join(c, target)) for c in self.cwds))
        self.cwds = tuple(dict.fromkeys(self.cwds + new))
        self.after_cd = new


def _unescape_double(text: str) -> str:
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
