"""What a Bash command would run and write, read leniently for the sandboxed mode.

The strict reading (``runtime.gate.shell``) refuses whatever it cannot see
through. This one accepts anything tree-sitter parses (loops, conditionals,
functions, ``$(...)``, variables, heredocs) and collects the effects it can
see: every simple command whose program it can name, wherever it stands
(inside loops, substitutions, function bodies, ``sh -c`` and ``eval`` strings,
a shell's heredoc, behind wrappers and ``find -exec``), and every file a
redirection writes whose name it can read. Variables assigned a literal value
are followed. What it cannot see (a program named by a variable it cannot
follow, a target built at run time) it leaves to the OS sandbox, which
contains it whatever it is: in this mode the gate's denials are early
feedback, and the sandbox is the boundary.

Wrappers are read generously rather than modelled: after `timeout`, `env`,
`xargs`, `nohup`, `uv run` and the like, every one of the first few words
that is not an option is taken as a program that may run, with the words after
it as its arguments. A wrong guess can only add a denial (`timeout 5 echo git`
is refused as git), never hide a command. The walk is linear in the command's
length; at most ``MAX_COMMANDS`` simple commands, ``MAX_DEPTH`` nested
scripts and ``MAX_FOLDERS`` folders a `cd` may lead to are followed, and more
is a denial.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.shell_words import double_quoted, literal_dollar, touching
from runtime.lang.shell_types import Command, ShellDeny, Word

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_COMMANDS = 2000
MAX_DEPTH = 8
MAX_FOLDERS = 32  # folders a `cd` chain may leave the shell in
_CANDIDATES = 8  # words after a wrapper taken as the program it may run

SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
# Programs that run the command given in their arguments (after options of their own).
WRAPPERS = frozenset({
    "env", "command", "builtin", "exec", "nohup", "timeout", "nice", "ionice", "time", "stdbuf", "setsid",
    "xargs", "sudo", "doas", "su", "runuser", "sg", "chroot", "unshare", "nsenter", "setpriv", "flock",
    "script", "watch", "parallel", "strace", "ltrace", "valgrind", "perf", "catchsegv", "chrt", "taskset",
    "prlimit", "systemd-run", "fakeroot", "proot", "firejail", "bwrap", "dbus-launch", "xvfb-run", "eatmydata",
    "torsocks", "proxychains", "proxychains4", "rlwrap", "entr", "chronic", "unbuffer", "expect", "tmux", "screen",
    "uv", "uvx", "poetry", "pipenv", "pdm", "hatch", "rye", "conda", "mamba", "micromamba", "pixi", "npx", "pnpx",
    "bunx", "pnpm", "yarn", "bun", "pipx", "coverage", "gdb", "lldb", "at", "batch",
})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_GLOB_CHARS = frozenset("*?[{")


class Seen(Word):
    """A word of the command: its value when the gate can know it (``static``), else its source text."""

    __slots__ = ("static",)

    def __init__(self, value: str, static: bool = True, glob: bool = False, tilde: bool = False) -> None:
        super().__init__(value, glob, tilde)
        self.static = static


def is_static(word: Word) -> bool:
    """Whether the gate knows ``word``'s value (a word made elsewhere than this reading always is)."""
    return getattr(word, "static", True) is True


class Target:
    """A file a command may write: the word naming it, every folder it may be relative to, and how it is written.

    ``kind``: "write" (created or changed), "folder" (a folder made), "remove" (removed, with what is below
    it), "inside" (somewhere below it: only control and runtime files are judged, `find DIR -delete`)."""

    __slots__ = ("word", "cwds", "source", "kind", "into")

    def __init__(self, word: Word, cwds: tuple[str, ...], source: str, kind: str = "write",
                 into: str | None = None) -> None:
        self.word = word
        self.cwds = cwds
        self.source = source
        self.kind = kind
        # A copy's source name: when the target is an existing folder, the file written is `target/into`.
        self.into = into


class Effects:
    __slots__ = ("commands", "writes", "network", "unparsed", "streams_redirected")

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.writes: list[Target] = []
        self.network: list[str] = []  # /dev/tcp and /dev/udp redirections
        self.unparsed = False  # tree-sitter could not parse all of it
        # A redirection put a file opened for reading, or another descriptor, on standard output or error.
        self.streams_redirected = False


_parser: Parser | None = None
_MEMO: dict[tuple[str, str], Effects | str] = {}


def read_effects(source: str, cwd: str) -> Effects:
    """The effects of ``source`` run from ``cwd`` (shared between calls: callers must not change them)."""
    key = (source, cwd)
    found = _MEMO.get(key)
    if found is None:
        try:
            found = _read(source, cwd)
        except ShellDeny as exc:
            found = str(exc)
        if len(_MEMO) >= 256:
            _MEMO.clear()
        _MEMO[key] = found
    if isinstance(found, str):
        raise ShellDeny(found)
    return found


def _read(source: str, cwd: str) -> Effects:
    if "\x00" in source:
        raise ShellDeny("the command contains a NUL byte, which bash cannot take")
    effects = Effects()
    counter = [0]
    _Reader(effects, (cwd,), counter, 0, "").run(source)
    if "\\\n" in source:
        # bash joins lines at a backslash-newline, inside a word too (`gi\<newline>t`); tree-sitter splits
        # the word there. Read the joined text as well: effects seen either way count.
        _Reader(effects, (cwd,), counter, 0, "").run(source.replace("\\\n", ""))
    return effects


def _parse(source: bytes) -> Node:
    global _parser
    if _parser is None:
        from runtime.gate.treesitter import bash_parser

        _parser = bash_parser()
    return _parser.parse(source).root_node


class _Reader:
    def __init__(self, effects: Effects, cwds: tuple[str, ...], counter: list[int], depth: int, via: str) -> None:
        self.effects = effects
        self.cwds = cwds
        self.counter = counter
        self.depth = depth
        self.via = via
        self.src = b""
        self.vars: dict[str, str | None] = {}  # literal values of assigned variables (None: not known)
        self.after_cd: tuple[str, ...] | None = None
        self.wrapped = 0  # wrappers around the command being read (`nohup timeout 5 env ...`)

    def run(self, source: str) -> None:
        if self.depth > MAX_DEPTH:
            raise ShellDeny(f"scripts nested more than {MAX_DEPTH} deep (`sh -c` in `sh -c` ...) are too deep to "
                            "judge; run the inner command directly")
        self.src = source.encode(errors="surrogateescape")
        root = _parse(self.src)
        if root.has_error:
            self.effects.unparsed = True
        self.visit(root)

    def text(self, node: Node) -> str:
        return self.src[node.start_byte:node.end_byte].decode(errors="replace")

    # -- statements ------------------------------------------------------------------------------
    def visit(self, node: Node) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, [])
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind == "list":
            self.statements(node)
        elif kind in ("variable_assignment", "variable_assignments"):
            for child in ([node] if kind == "variable_assignment" else node.children):
                if child.type == "variable_assignment":
                    self.assign(child, keep=True)
        elif kind == "declaration_command":
            for child in node.children:
                if child.type == "variable_assignment":
                    self.assign(child, keep=True)
                elif child.is_named:
                    self.visit(child)
        elif kind == "for_statement":
            self.loop(node)
        elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self.redirect(node)
        else:
            # Loops, conditionals, function bodies, subshells, pipelines, substitutions, parse errors:
            # every command inside may run.
            for child in node.children:
                self.visit(child)
            if kind in ("subshell", "pipeline", "compound_statement", "function_definition"):
                self.after_cd = None  # a `cd` inside ends with it: no narrowing after it

    def statements(self, node: Node) -> None:
        left = None
        narrow = False
        for child in node.children:
            if child.type == "&&" and left is not None and left.type in ("command", "redirected_statement"):
                narrow = self.after_cd is not None
                continue
            if not child.is_named:
                continue
            if narrow and self.after_cd is not None:
                # `cd DIR && next`: next runs only where the cd went.
                saved, self.cwds = self.cwds, self.after_cd
                self.after_cd = None
                self.visit(child)
                self.cwds = tuple(dict.fromkeys(saved + self.cwds))
            else:
                self.visit(child)
            narrow = False
            left = child

    def loop(self, node: Node) -> None:
        name = node.child_by_field_name("variable")
        values = [c for c in node.children_by_field_name("value")]
        seen = [self.word(v) for v in values]
        if name is not None:
            one = seen[0].value if len(seen) == 1 and seen[0].static and not seen[0].glob else None
            self.vars[self.text(name)] = one
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit(body)

    def redirected(self, node: Node) -> None:
        body = None
        redirects = []
        for child in node.children:
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.append(child)
            elif body is None and child.is_named:
                body = child
            else:
                self.visit(child)
        if body is not None and body.type == "command":
            extra: list[Seen] = []
            stdin = None
            for child in redirects:
                more, script = self.redirect(child)
                extra += more
                stdin = script if script is not None else stdin
            self.command(body, extra, stdin)
            # The redirections are the command's, so they land where it ran.
            return
        if body is not None:
            self.visit(body)
        for child in redirects:
            self.redirect(child)

    # -- commands --------------------------------------------------------------------------------
    def command(self, node: Node, extra: list[Seen], stdin: str | None = None) -> None:
        assigns: list[tuple[str, str]] = []
        words: list[Seen] = []
        pending: list[Node] = []
        for child in node.children:
            kind = child.type
            if kind == "variable_assignment":
                assigns.append(self.assign(child, keep=False))
            elif kind == "command_name":
                named = [c for c in child.children if c.is_named]
                words.append(self.word(named[0]) if len(named) == 1 else Seen(self.text(child), False))
            elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                pending.append(child)
            elif kind == "comment" or not child.is_named:
                continue
            else:
                words.append(self.word(child))
        for child in pending:
            more, script = self.redirect(child)
            extra = more + extra
            stdin = script if script is not None else stdin
        words += extra
        if not words:
            for name, value in assigns:  # `A=1 B=2` on their own set shell variables
                self.vars[name] = value
            return
        self.simple(words, assigns, stdin)

    def assign(self, node: Node, keep: bool) -> tuple[str, str]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self.text(name_node) if name_node is not None else ""
        value = self.word(value_node) if value_node is not None else Seen("")
        known = value.value if value.static and value_node is not None and value_node.type != "array" else None
        if keep:
            self.vars[name] = known
        return name, value.value

    def simple(self, words: list[Seen], assigns: list[tuple[str, str]], stdin: str | None = None) -> None:
        """Record one simple command (when its program can be named) and read what it runs in turn."""
        self.counter[0] += 1
        if self.counter[0] > MAX_COMMANDS:
            raise ShellDeny(f"the command runs more than {MAX_COMMANDS} simple commands, too many to judge; split it")
        first = words[0]
        if not first.static or first.glob:
            self.after_cd = None
            return  # a program named at run time: the sandbox contains whatever it is
        name = os.path.basename(first.value.rstrip("/")) if "/" in first.value else first.value
        if not name:
            return
        args = words[1:]
        self.effects.commands.append(Command(name, list(args), assigns, self.cwds, self.via, False))
        if name in ("cd", "pushd"):
            self.cd(args)
            return
        self.after_cd = None
        if name in SHELLS:
            self.shell(name, args, assigns, stdin)
        elif name == "eval":
            if all(a.static for a in args):
                self.nested(" ".join(a.value for a in args), name)
        elif name == "find":
            self.find(args, assigns)
        elif name in WRAPPERS and not (name == "command" and args and args[0].value in ("-v", "-V")):
            self.wrapper(name, args, assigns)

    def cd(self, args: list[Seen]) -> None:
        rest = [a for a in args if a.value not in ("-P", "-L", "-e", "-@", "--")]
        if len(rest) != 1 or not rest[0].static or rest[0].glob or rest[0].tilde or rest[0].value in ("", "-"):
            self.after_cd = None  # a folder the gate cannot know: later relative paths are judged where it can
            return
        target = rest[0].value
        # bash's `cd` takes `..` lexically, and falls back to the physical path: both may be where it lands.
        new: tuple[str, ...] = ()
        for c in self.cwds:
            joined = os.path.join(c, target)
            new += (os.path.normpath(joined), os.path.realpath(joined))
        new = tuple(dict.fromkeys(new))
        self.cwds = tuple(dict.fromkeys(self.cwds + new))
        if len(self.cwds) > MAX_FOLDERS:
            raise ShellDeny(f"the command may leave the shell in more than {MAX_FOLDERS} folders, too many to follow; "
                            "split it, or use paths from one folder")
        self.after_cd = new

    def shell(self, name: str, args: list[Seen], assigns: list[tuple[str, str]], stdin: str | None) -> None:
        """`bash -c SCRIPT`, `bash -o pipefail -c SCRIPT`, or a shell reading the script from a heredoc."""
        if name == "busybox":
            # `busybox sh -c ...`, `busybox wget ...`: the first word is the applet it runs, bounded as wrappers are.
            if args and args[0].static and not args[0].value.startswith("-"):
                self.wrapped += 1
                try:
                    if self.wrapped > MAX_DEPTH * 4:
                        raise ShellDeny(f"more than {MAX_DEPTH * 4} wrappers around one command are too many to "
                                        "judge; run the command directly")
                    self.simple(args, assigns, stdin)
                finally:
                    self.wrapped -= 1
            return
        scripts, reads_stdin = (_fish_script if name == "fish" else _shell_script)(name, args)
        for script in scripts:
            if script.static:
                self.nested(script.value, name + " -c")
        if reads_stdin and stdin is not None:
            self.nested(stdin, name + " <<")

    def find(self, args: list[Seen], assigns: list[tuple[str, str]]) -> None:
        i = 0
        while i < len(args):
            if args[i].value in _FIND_EXEC:
                j = i + 1
                while j < len(args) and args[j].value != ";" and not (args[j].value == "+" and args[j - 1].value == "{}"):
                    j += 1
                if j > i + 1:
                    self.simple(args[i + 1:j], assigns)
                i = j
            i += 1

    def wrapper(self, name: str, args: list[Seen], assigns: list[tuple[str, str]]) -> None:
        self.wrapped += 1
        if self.wrapped > MAX_DEPTH * 4:
            raise ShellDeny(f"more than {MAX_DEPTH * 4} wrappers around one command are too many to judge; "
                            "run the command directly")
        try:
            self._wrapper(name, args, assigns)
        finally:
            self.wrapped -= 1

    def _wrapper(self, name: str, args: list[Seen], assigns: list[tuple[str, str]]) -> None:
        taken = 0
        assigns = list(assigns)
        for i, a in enumerate(args):
            if taken >= _CANDIDATES:
                break
            if not a.static:
                continue
            v = a.value
            if name == "env" and "=" in v and not v.startswith("-"):
                assigns.append((v.split("=", 1)[0], v.split("=", 1)[1]))  # `env GIT_DIR=x git ...`
                continue
            if any(ch.isspace() for ch in v) or any(ch in v for ch in ";|&"):
                self.nested(v, name)  # `watch 'git status'`, `su -c 'cmd'`, `flock f -c 'cmd'`
                continue
            if v.startswith(("-", "+")) or not v:
                continue
            taken += 1
            self.simple(args[i:], assigns)
            inner = os.path.basename(v)
            if inner in WRAPPERS or inner in SHELLS or inner in ("find", "eval"):
                break  # that wrapper reads the rest itself

    def nested(self, script: str, via: str) -> None:
        sub = _Reader(self.effects, self.cwds, self.counter, self.depth + 1, self.via + via + " ")
        sub.run(script)

    # -- words -----------------------------------------------------------------------------------
    def word(self, node: Node) -> Seen:
        kind = node.type
        text = self.text(node)
        if kind == "word":
            return _bare(text)
        if kind in ("number", "variable_name"):
            return Seen(text)
        if kind == "raw_string":
            return Seen(text[1:-1])
        if kind == "translated_string":  # `$"..."`: the string, translated by a message catalog bash may not have
            inner = [c for c in node.children if c.is_named]
            if touching(node) and len(inner) == 1 and inner[0].type == "string":
                return self.word(inner[0])
            for child in inner:
                self.visit(child)
            return Seen(text, False)
        if kind == "string":
            # Read from the source between the children, not from the children alone: tree-sitter leaves a
            # quoted newline in no node (see double_quoted).
            found = double_quoted(self.src, node)
            parts: list[str] = []
            static = found is not None
            for item in found if found is not None else [c for c in node.children if c.is_named]:
                if isinstance(item, str):
                    parts.append(item)
                elif item.type != "string_content":
                    part = self.word(item)  # what runs inside counts, known or not
                    static = static and part.static
                    parts.append(part.value)
            return Seen("".join(parts), True) if static else Seen(text, False)
        if kind == "ansi_c_string":
            value = _ansi_c(text[2:-1])
            return Seen(value) if value is not None else Seen(text, False)
        if kind == "concatenation":
            parts = []
            static, glob, tilde = touching(node), False, False  # parts apart would be two words to bash
            for n, child in enumerate(node.children):
                if child.type == "$" and not child.is_named:
                    # `a$` is `a` and a literal `$`; `a$"b"` is `a` and the string `$"b"` translates.
                    after = self.src[child.end_byte:child.end_byte + 1]
                    if after == b'"':
                        continue
                    static = static and literal_dollar(self.src, child, quoted=False)
                    parts.append("$")
                    continue
                if not child.is_named:
                    static = False
                    continue
                part = self.word(child)
                static = static and part.static
                glob = glob or part.glob
                tilde = tilde or (n == 0 and part.tilde)
                parts.append(part.value)
            return Seen("".join(parts), static, glob, tilde) if static else Seen(text, False)
        if kind in ("simple_expansion", "expansion"):
            named = [c for c in node.children if c.is_named]
            plain = len(named) == 1 and named[0].type == "variable_name" and (
                kind == "simple_expansion" or [c.type for c in node.children] == ["${", "variable_name", "}"])
            if plain:
                name = self.text(named[0])
                value = self.vars.get(name)
                if value is None and name == "PWD" and name not in self.vars and len(self.cwds) == 1:
                    value = self.cwds[0]
                if value is not None:
                    return Seen(value, True, any(ch in _GLOB_CHARS for ch in value))
            for child in named:
                self.visit(child)  # `${X:-$(cmd)}`: cmd runs
            return Seen(text, False)
        # Substitutions, arithmetic, arrays, anything else: a value known only when it runs; what runs inside counts.
        for child in node.children:
            self.visit(child)
        if kind == "command_substitution" and text in ("$(pwd)", "`pwd`") and len(self.cwds) == 1:
            return Seen(self.cwds[0])  # the folder it runs in: `rm -rf $(pwd)`
        return Seen(text, False)

    # -- redirections ----------------------------------------------------------------------------
    def redirect(self, node: Node) -> tuple[list[Seen], str | None]:
        """Record what a redirection writes; return stray words (really arguments) and a heredoc's text."""
        kind = node.type
        if kind == "herestring_redirect":
            for child in node.children:
                if child.is_named:
                    self.word(child)
            return [], None
        if kind == "heredoc_redirect":
            return self.heredoc(node)
        op = fd = None
        words: list[Seen] = []
        for child in node.children:
            if child.type == "file_descriptor":
                fd = self.text(child)
            elif not child.is_named:
                op = child.type
            elif child.type == "ERROR" and op == "<" and not words and self.text(child) == ">" and (
                    self.src[child.start_byte - 1:child.start_byte] == b"<"):
                # tree-sitter knows no `<>` (open for reading and writing): it reads `<`, then a parse error
                # on the `>` right after it. The file is written.
                op = "<>"
            elif child.type == "ERROR":
                self.visit(child)
            else:
                words.append(self.word(child))
        if not words:
            return [], None
        target, extra = words[0], words[1:]
        stream = fd if fd is not None else ("0" if op in ("<", "<&", "<>") else "1")
        if stream in ("1", "2") and (op in ("<", "<>", "<&") or (op == ">&" and target.value not in ("1", "2", "-"))):
            self.effects.streams_redirected = True
        # ASCII digits only, as bash reads a descriptor: `>&١` and `>&²` (digits to str.isdigit) write a file.
        if op in (">&", "<&") and ((target.value.isascii() and target.value.isdigit()) or target.value == "-"):
            return extra, None
        if target.static and target.value.startswith(("/dev/tcp/", "/dev/udp/")):
            self.effects.network.append(self.text(node))
        elif op in _WRITE_OPS or op == ">&":
            self.effects.writes.append(Target(target, self.cwds, f"redirection `{self.text(node)}`"))
        return extra, None

    def heredoc(self, node: Node) -> tuple[list[Seen], str | None]:
        extra: list[Seen] = []
        quoted = False
        body: str | None = None
        for child in node.children:
            kind = child.type
            if kind == "heredoc_start":
                quoted = any(ch in self.text(child) for ch in "'\"\\")
            elif kind == "heredoc_body":
                text = self.text(child)
                if quoted or ("$" not in text and "`" not in text):
                    body = text
                else:
                    for part in child.children:
                        self.visit(part)  # `$(cmd)` in an unquoted heredoc runs
            elif kind == "file_redirect":
                more, _ = self.redirect(child)
                extra += more
            elif child.is_named and kind not in ("heredoc_end",):
                self.visit(child)  # the rest of the line after `<<EOF` (`| cmd`, `&& cmd`)
        return extra, body


# How a shell is told its script. bash(1), OPTIONS and `set`, with dash(1)'s few other letters (sh may be either;
# a letter one of them refuses stops it before anything runs); zsh, ksh and mksh are read the same way, and an
# option outside these is refused rather than guessed. In a cluster each `o` and `O` takes the next word,
# never an attached value (`bash -opipefail` reads `-c` as the option's name), `+o`/`+O` too; `c` (also `+c`)
# makes the first operand the script, wherever it stands in the cluster (`-ec`, `-ce`, `-c -e 'cmd'`); `s` reads
# the script from standard input, the operands being its arguments; `-` and `--` end the options.
_SH_FLAGS = frozenset("abefhkmnptuvxBCEHPTilrsDIqV")
_SH_VALUED = frozenset("oO")
# bash's long options, with two dashes or one (`-norc`, `-rcfile FILE`: bash tries a long name before reading
# the word as letters), and whether they take the next word. bash reads them only before the letters; after,
# it refuses them, so reading them there too hides nothing.
_BASH_LONG = {
    "debug": False, "debugger": False, "dump-po-strings": False, "dump-strings": False, "help": False,
    "init-file": True, "login": False, "noediting": False, "noprofile": False, "norc": False, "posix": False,
    "pretty-print": False, "rcfile": True, "restricted": False, "verbose": False, "version": False,
}
_CSH_FLAGS = frozenset("bdefFilmnqstvVxX")  # csh(1), tcsh(1): none takes a value; `-c` as for bash
# fish(1): getopt `+hPilNnvc:C:p:d:o:f:D:`: -c (--command) and -C (--init-command) are code, each value
# attached or the next word; the first operand ends the options.
_FISH_CODE = {"-c": "--command", "-C": "--init-command"}
_FISH_VALUED = {"-p": "--profile", "-d": "--debug", "-o": "--debug-output", "-f": "--features",
                "-D": "--debug-stack-frames"}
_FISH_FLAGS = {"-h": "--help", "-P": "--private", "-i": "--interactive", "-l": "--login",
               "-N": "--no-config", "-n": "--no-execute", "-v": "--version"}
_FISH_LONG_VALUED = frozenset(_FISH_VALUED.values()) | {"--profile-startup"}
_FISH_LONG_FLAGS = frozenset(_FISH_FLAGS.values()) | {"--print-rusage-self", "--print-debug-categories"}


def _unreadable(name: str, spelled: str) -> ShellDeny:
    return ShellDeny(f"`{name} {spelled}`: the gate cannot read this among the options of `{name}`, so it cannot tell which "
                     f"word `{name}` runs as its script; write the options out as `{name}` documents them "
                     f"(`{name} -o pipefail -c 'cmd'`), or run the command itself")


def _shell_script(name: str, args: list[Seen]) -> tuple[list[Seen], bool]:
    """The words a POSIX-style shell (or csh) runs as scripts, and whether it reads one on standard input.
    An option it cannot read, or a word only the run knows before the script, is refused: either could make
    any later word the script (`bash -o "$O" -c 'cmd'` with an empty $O names `-c` as the option)."""
    csh = name in ("csh", "tcsh")
    command = from_stdin = False
    i, n = 0, len(args)
    while i < n:
        word = args[i]
        v = word.value
        if not word.static:
            if i == n - 1:
                # The last word: the script only the run knows, a script file, or an option (`-s` reads
                # standard input): whatever it is, no word after it can be the script.
                return [], not command
            raise _unreadable(name, v)
        if v in ("-", "--"):
            i += 1
            break
        if len(v) < 2 or v[0] not in "-+":
            break  # the first operand
        long = v[2:] if v.startswith("--") else v[1:]
        if not csh and v[0] == "-" and long in _BASH_LONG:
            i += 2 if _BASH_LONG[long] else 1
            continue
        if v.startswith("--"):
            raise _unreadable(name, v)
        taken = 0
        for letter in v[1:]:
            if letter == "c":
                command = True
            elif letter == "s" and not csh:
                from_stdin = True
            elif letter in _SH_VALUED and not csh:
                taken += 1
                if i + taken < n and not args[i + taken].static:
                    raise _unreadable(name, f"{v} {args[i + taken].value}")
            elif letter not in (_CSH_FLAGS if csh else _SH_FLAGS):
                raise _unreadable(name, f"{v[0]}{letter}")
        i += 1 + taken
    operands = args[i:]
    if command:
        return operands[:1], False  # the first operand is the script; the next ones are $0, $1, ...
    return [], from_stdin or not operands  # else the first operand is a script file the agent wrote


def _fish_script(name: str, args: list[Seen]) -> tuple[list[Seen], bool]:
    """fish's scripts (every -c and -C value), and whether it reads one on standard input."""
    scripts: list[Seen] = []
    i, n = 0, len(args)
    while i < n:
        word = args[i]
        v = word.value
        if not word.static:
            if i == n - 1:
                return scripts, not scripts  # as for bash: no word after it can be a script
            raise _unreadable(name, v)
        if v == "--":
            i += 1
            break
        if len(v) < 2 or v[0] != "-":
            break
        if v.startswith("--"):
            long, eq, value = v.partition("=")
            if long in _FISH_CODE.values() or long in _FISH_LONG_VALUED:
                found = Seen(value) if eq else (args[i + 1] if i + 1 < n else Seen(""))
                if long in _FISH_CODE.values():
                    scripts.append(found)
                i += 1 if eq else 2
                continue
            if long not in _FISH_LONG_FLAGS or eq:
                raise _unreadable(name, v)
            i += 1
            continue
        for k in range(1, len(v)):
            letter = "-" + v[k]
            if letter in _FISH_CODE or letter in _FISH_VALUED:
                rest = v[k + 1:]
                found = Seen(rest) if rest else (args[i + 1] if i + 1 < n else Seen(""))
                if letter in _FISH_CODE:
                    scripts.append(found)
                i += 0 if rest else 1
                break
            if letter not in _FISH_FLAGS:
                raise _unreadable(name, letter)
        i += 1
    return scripts, not scripts and i >= n


def _bare(text: str) -> Seen:
    """An unquoted word: backslashes removed; globs, braces and a leading `~` noted (bash expands them)."""
    if "\\" not in text:
        glob = any(ch in _GLOB_CHARS for ch in text)
        return Seen(text, True, glob, text.startswith("~"))
    out: list[str] = []
    glob = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":  # a backslash-newline joins the lines: bash keeps neither
                out.append(text[i + 1])
            i += 2
            continue
        glob = glob or ch in _GLOB_CHARS
        out.append(ch)
        i += 1
    return Seen("".join(out), True, glob, text.startswith("~"))


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
            "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(text: str) -> str | None:
    """The value of `$'...'` for the common escapes (hex, octal, letters); None for the rest."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "x":
            digits = ""
            j = i + 2
            while j < len(text) and len(digits) < 2 and text[j] in "0123456789abcdefABCDEF":
                digits += text[j]
                j += 1
            if not digits:
                return None
            out.append(chr(int(digits, 16)))
            i = j
        elif nxt in "01234567":
            digits = ""
            j = i + 1
            while j < len(text) and len(digits) < 3 and text[j] in "01234567":
                digits += text[j]
                j += 1
            out.append(chr(int(digits, 8) & 0xFF))
            i = j
        else:
            return None
    return "".join(out)
