"""Bash commands, parsed with tree-sitter into what they would run and write.

``analyze`` accepts a small, known subset of Bash: lists, pipelines, simple
commands, subshells and groups, literal words, redirections and heredocs
without expansions. Everything else (substitutions, expansions, functions,
control flow, declarations, ANSI-C strings) raises ``ShellDeny``, as does a
parse error or any byte of the command the walk did not account for: a
policy cannot judge what it cannot see. Wrappers (``env``, ``timeout``,
``sh -c``, ``find -exec``, ...) are unwrapped so the inner command is judged
on its own; see ``runtime.gate.wrappers``.

Folders. Every command is judged in each folder the shell may be in when it
runs, which the walk follows as bash's list semantics do: a ``cd`` may fail
or succeed, ``A && B`` runs B only where A succeeded, ``A || B`` only where
it failed, and after ``;``, a newline, ``&``, or the end of a group both
outcomes go on (`cd src && x; y` runs y in the worktree or in src). A
subshell, a pipeline's parts and a command sent to the background keep
their ``cd`` to themselves. The set is bounded (``MAX_FOLDERS``): a command
that may run in more folders is refused, which also bounds the work.

Everything here is linear in the command: tree-sitter's own error recovery
is not (a run of `)` or `<` takes it seconds), so the parse stops at its
first error and has a time budget proportional to the command's length.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate import wrappers
from runtime.gate.envvars import BASE, check_assignment
from runtime.gate.paths import PATH_MAX, PathError, collapse
from runtime.gate.shell_redirects import STATEMENTS, WORD_NODES, RedirectReader
from runtime.gate.shell_words import EXPANSIONS
from runtime.lang.shell_programs import FORBIDDEN_BUILTINS, SHELLS
from runtime.lang.shell_types import Command, Input, Script, ShellDeny, ShellUnseen, Word

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree

    State = tuple[tuple[str, ...], tuple[str, ...]]  # folders where the last command succeeded, failed

_parser: Parser | None = None

MAX_COMMAND = 1 << 20  # characters: far above any real command (bash -c itself is bounded by ARG_MAX, 2 MB)
MAX_FOLDERS = 16
MAX_LOOP_VALUES = 32  # the values of one `for` loop read strictly, each a reading of its body
MAX_LOOP_BODIES = 128  # loop bodies read in one command, nested loops multiplied out
# The parse's budget: a real 100 KB command parses in about 50 ms here. Counted in this process's CPU
# time, not on the wall clock: on a loaded machine (CI's two cores, parallel agents) the wall clock ran
# past the budget for commands that parse well within it, and refused them. The hook's own deadline
# (runtime.gate.deadline) still bounds the wall-clock time of the whole decision.
_PARSE_BASE_S = 0.05
_PARSE_PER_BYTE_S = 2e-6
_CHUNK = 4096
# Below this many bytes the slowest input seen (a run of `)`) parses in about 12 ms: parsed directly,
# without the callbacks (which tree-sitter calls a dozen times even for a short command).
_SHORT = 1024


def _parse(source: bytes) -> Tree:
    global _parser
    if _parser is None:
        from runtime.gate.treesitter import bash_parser

        _parser = bash_parser()
    parser = _parser
    if len(source) <= _SHORT:
        return parser.parse(source)
    limit = time.process_time() + _PARSE_BASE_S + len(source) * _PARSE_PER_BYTE_S
    stopped: list[str] = []

    def read(offset: int, _point: object) -> bytes:
        return source[offset:offset + _CHUNK]

    def progress(_offset: int, has_error: bool) -> bool:
        # Any error is a deny anyway: stop there rather than let error recovery run on.
        if has_error:
            stopped.append("error")
        elif time.process_time() > limit:
            stopped.append("time")
        return bool(stopped)

    try:
        tree: Tree = parser.parse(read, progress_callback=progress)
    except ValueError:
        parser.reset()  # a cancelled parse would otherwise resume on the next call
        if stopped and stopped[0] == "time":
            raise ShellDeny("the command took too long to parse; split it into smaller commands") from None
        raise ShellDeny(_UNPARSABLE) from None
    return tree


_UNPARSABLE = "the command could not be parsed as Bash; write simple commands joined by &&, || , ; or |"
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n", "(", ")", "{", "}", "!", ";;"})
# The variables a shell reads itself (bash's manual, "Shell Variables"; dash's ENV): given to a shell,
# they run files (BASH_ENV, ENV), commands (PS4 under -x, PROMPT_COMMAND), change parsing (IFS,
# SHELLOPTS, BASHOPTS, POSIXLY_CORRECT, BASH_COMPAT) or lookup (PATH, CDPATH, EXECIGNORE, HOME for `~`).
_SHELL_VARIABLES = frozenset({
    "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "BASH_COMPAT", "BASH_XTRACEFD", "BASH_LOADABLES_PATH", "PS0", "PS1",
    "PS2", "PS3", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH", "PATH", "HOME", "GLOBIGNORE", "GLOBSORT", "EXECIGNORE",
    "FIGNORE", "FUNCNEST", "POSIXLY_CORRECT", "TMOUT", "TIMEFORMAT", "HISTFILE", "HISTCONTROL", "HISTIGNORE",
    "INPUTRC", "MAIL", "MAILPATH", "MAILCHECK", "OPTIND", "OPTERR", "PWD", "OLDPWD", "SHELL", "SHLVL", "TMPDIR",
    "HOSTFILE", "IGNOREEOF", "BASH_ARGV0", "BASH_CMDS", "BASH_ALIASES", "COMP_WORDBREAKS", "READLINE_LINE",
})

# The analysis reads nothing but its two strings and the folders `cd` names, so it is memoised: an agent
# re-runs the same commands (its tests, above all) many times in one session.
# Every check that looks at the file system or the policy runs on each call.
_MEMO: dict[tuple[str, str], Script | ShellDeny] = {}
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
            found = exc
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.clear()
        _MEMO[key] = found
    if isinstance(found, ShellDeny):
        raise type(found)(str(found))  # a ShellUnseen stays one: what the gate cannot read is asked
    return found


def _analyze(source: str, cwd: str) -> Script:
    if "\x00" in source:
        raise ShellDeny("the command contains a NUL byte; remove it")
    if len(source) > MAX_COMMAND:
        raise ShellDeny(f"the command is longer than {MAX_COMMAND} characters; write a script file instead")
    walker = _Walker(source, (cwd,))
    try:
        walker.run()
    except RecursionError:
        raise ShellDeny("the command nests groups, subshells or shells too deeply to judge; flatten it") from None
    return walker.script


def _check_continuations(source: bytes, literal: list[tuple[int, int]]) -> None:
    """A backslash-newline joins lines; tree-sitter splits the word there instead. Inside single quotes and a
    quoted heredoc's body (``literal``: their spans) both are literal text, and bash keeps them."""
    literal = sorted(literal)
    k = 0
    at = source.find(b"\\\n")
    while at >= 0:
        while k < len(literal) and literal[k][1] <= at:
            k += 1
        inside = k < len(literal) and literal[k][0] < at and at + 2 <= literal[k][1]
        # Between words (a space before it) it only joins lines; inside a word
        # it would glue the parts tree-sitter reports as separate words.
        before = source[at - 1:at] if at else b" "
        if not inside and before not in (b" ", b"\t"):
            raise ShellDeny("a line continuation (backslash-newline) inside a word is not allowed; write the word on one line")
        at = source.find(b"\\\n", at + 2)


def _merge(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """The folders of ``groups``, each once, in order; refused past ``MAX_FOLDERS``."""
    out = tuple(dict.fromkeys(c for g in groups for c in g))
    if len(out) > MAX_FOLDERS:
        raise ShellDeny(f"the command may run in more than {MAX_FOLDERS} folders (a `cd` may fail, and after `;` "
                        "the next command runs either way); use `cd DIR && ...`, or split the command")
    return out


class _Walker(RedirectReader):
    def __init__(self, source: str, cwds: tuple[str, ...], via: str = "") -> None:
        self.src = source.encode()
        self.start = cwds
        self.via = via
        self.script = Script()
        self.spans: list[tuple[int, int]] = []
        self.group_ends: set[int] = set()
        # The rest of a line after a heredoc's `<<EOF` (`&& x`, `| y`), hung on the heredoc by
        # tree-sitter; it runs after the command the heredoc belongs to.
        self.tails: list[tuple[str | None, Node]] = []
        self._cd: dict[tuple[str, str], str] = {}
        self.last_cwds = cwds  # where the last simple command (a `cd` too) started
        self.literal: list[tuple[int, int]] = []  # single-quoted strings and quoted heredoc bodies
        self.bound: dict[str, Word] = {}
        self.iterations = 0  # loop bodies read, every loop and value counted

    # -- helpers -----------------------------------------------------------
    def run(self) -> None:
        tree = _parse(self.src)
        root = tree.root_node
        if root.has_error:
            raise ShellDeny(_UNPARSABLE)
        self.sequence(root, self.start)
        self.check_coverage()
        _check_continuations(self.src, self.literal)

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
    def sequence(self, node: Node, cwds: tuple[str, ...]) -> State:
        """Statements one after another (a script, a group, a subshell's body)."""
        return self.statements(node.children, cwds)

    def statements(self, children: list[Node], cwds: tuple[str, ...]) -> State:
        state: State = (cwds, ())
        current = cwds
        for n, child in enumerate(children):
            if not child.is_named:
                if child.type not in _SEPARATORS:
                    raise ShellDeny(f"`{child.type}` is not allowed here; write simple commands joined by &&, ||, ; or |")
                self.cover(child)
                continue
            if child.type == "comment":
                self.cover(child)
                continue
            state = self.statement(child, current)
            if n + 1 < len(children) and children[n + 1].type == "&":
                state = (current, ())  # in the background: in a subshell of its own, and status 0
            current = _merge(state[0], state[1])
        return state

    def statement(self, node: Node, cwds: tuple[str, ...]) -> State:
        kind = node.type
        if kind == "command":
            return self.command(node, [], cwds)
        if kind == "redirected_statement":
            return self.redirected(node, cwds)
        if kind == "list":
            return self.and_or(node, cwds)
        if kind == "pipeline":
            for child in node.children:  # each part runs in a subshell
                if child.is_named:
                    self.statement(child, cwds)
                elif child.type in ("|", "|&"):
                    self.cover(child)
                else:
                    raise self.refuse(child)
            return cwds, cwds
        if kind == "subshell":
            self.sequence(node, cwds)
            return cwds, cwds  # its `cd` ends with it
        if kind == "compound_statement":
            self.group_ends.add(node.end_byte)
            return self.sequence(node, cwds)
        if kind == "for_statement":
            return self.loop(node, cwds)
        if kind == "negated_command":
            state: State = (cwds, cwds)
            for child in node.children:
                if child.type == "!":
                    self.cover(child)
                elif child.is_named:
                    state = self.statement(child, cwds)
                else:
                    raise self.refuse(child)
            return state[1], state[0]
        raise self.refuse(node)

    def loop(self, node: Node, cwds: tuple[str, ...]) -> State:
        """`for NAME in WORDS; do BODY; done` over literal words: the body read once per word, with `$NAME`
        (`"$NAME"`, `${NAME}`) as that word; a glob word stands for the names it matches, so only `"$NAME"`
        may take it. The body runs once per value, one after another (a `cd` in it carries on)."""
        name: str | None = None
        values: list[Word] = []
        body: Node | None = None
        seen_in = False
        for child in node.children:
            kind = child.type
            if kind in ("for", ";", "\n", "comment"):
                self.cover(child)
            elif kind == "variable_name" and name is None:
                self.cover(child)
                name = self.text(child)
            elif kind == "in":
                self.cover(child)
                seen_in = True
            elif kind in WORD_NODES and seen_in and body is None:
                values.append(self.word(child))
            elif kind == "do_group" and body is None:
                body = child
            else:
                raise self.refuse(node)
        if name is None or body is None or not seen_in or not values:
            raise self.refuse(node)  # `for f; do`: the script's own arguments
        if len(values) > MAX_LOOP_VALUES or self.iterations + len(values) > MAX_LOOP_BODIES:
            raise ShellUnseen(f"a loop over more than {MAX_LOOP_VALUES} values (or loops reading more than "
                              f"{MAX_LOOP_BODIES} bodies in all) is not read; give the program all the values at once")
        statements = [c for c in body.children if c.type not in ("do", "done")]
        for keyword in (c for c in body.children if c.type in ("do", "done")):
            self.cover(keyword)
        saved = self.bound
        ok_all: tuple[str, ...] = ()
        fail_all: tuple[str, ...] = ()
        current = cwds
        try:
            for value in values:
                self.iterations += 1
                self.bound = {**saved, name: value}
                ok, fail = self.statements(statements, current)
                ok_all, fail_all = _merge(ok_all, ok), _merge(fail_all, fail)
                current = _merge(ok, fail)
        finally:
            self.bound = saved
        return ok_all, fail_all

    def and_or(self, node: Node, cwds: tuple[str, ...]) -> State:
        # `a && b || c` nests to the left; walked without recursion, so a long chain costs no stack.
        rights: list[list[Node]] = []
        while node.type == "list" and node.children:
            rights.append(node.children[1:])
            node = node.children[0]
        ok, fail = self.statement(node, cwds)
        for rest in reversed(rights):
            op = None
            for child in rest:
                if not child.is_named:
                    if child.type not in ("&&", "||"):
                        raise self.refuse(child)
                    op = child.type
                    self.cover(child)
                elif child.type == "comment":
                    self.cover(child)
                else:
                    ok, fail = self.after(op, child, (ok, fail), cwds)
                    op = None
        return ok, fail

    def after(self, op: str | None, node: Node, state: State, cwds: tuple[str, ...]) -> State:
        """``node`` run after a command that left ``state``, joined by ``op``."""
        ok, fail = state
        if op == "&&":  # only where it succeeded
            ok2, fail2 = self.statement(node, ok or cwds)
            return ok2, _merge(fail, fail2)
        if op == "||":  # only where it failed
            ok2, fail2 = self.statement(node, fail or cwds)
            return _merge(ok, ok2), fail2
        if op in (";", "\n"):
            return self.statement(node, _merge(ok, fail))
        if op is None and node.type == "pipeline" and node.children and node.children[0].type in ("|", "|&"):
            op = "|"  # `cat <<EOF | sh`: the heredoc holds the rest of the pipeline, `|` first
        if op in ("|", "|&"):  # a pipeline: the command before ran in a subshell too
            self.statement(node, cwds)
            return cwds, cwds
        raise self.refuse(node)

    def run_tails(self, tails: list[tuple[str | None, Node]], state: State, cwds: tuple[str, ...]) -> State:
        for op, node in tails:
            state = self.after(op, node, state, cwds)
        return state

    def redirected(self, node: Node, cwds: tuple[str, ...]) -> State:
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
        saved, self.tails = self.tails, []
        saved_inputs = self.inputs
        if body.type == "command":
            # Words after a redirection are the command's arguments (`pytest >f -p x`).
            extra: list[Word] = self.dropped_dashes(body, redirects[0]) if redirects else []
            inputs: list[Input | None] = []
            self.inputs = inputs
            for child in redirects:
                extra += self.redirect(child, cwds)
            self.inputs = saved_inputs
            tails, self.tails = self.tails, saved
            return self.run_tails(tails, self.command(body, extra, cwds, inputs), cwds)
        self.inputs = None  # a group's or a pipeline's standard input is no one command's to judge
        last = body
        while last.type in ("pipeline", "list") and last.named_children:
            last = last.named_children[-1]
        if last.type == "command" and last.end_byte == body.end_byte and redirects:
            dashes = self.dropped_dashes(body, redirects[0])
            if dashes:  # `a | cat - 2>&1`: the `-` is the last command's
                self.carry = (last.start_byte, dashes)
            if body.type in ("list", "pipeline"):  # `cd src && patch -p1 <<'EOF'`: the heredoc is patch's
                found = [value for stdin, value in map(self.input_of, redirects) if stdin]
                self.carry_inputs = (last.start_byte, found) if found else None
        ok, fail = self.statement(body, cwds)
        self.carry = self.carry_inputs = None
        # A group's or a subshell's redirection is opened before its body runs. tree-sitter also hangs
        # `a && b > f` on the whole list, where bash gives it to the last command, b, in b's folders.
        reached = cwds if body.type in ("compound_statement", "subshell") else self.last_cwds
        for child in redirects:
            if self.redirect(child, reached):
                raise ShellDeny("arguments after a redirection of a compound command are not allowed; put arguments before redirections")
        self.inputs = saved_inputs
        tails, self.tails = self.tails, saved
        return self.run_tails(tails, (ok, fail), cwds)

    # -- commands ----------------------------------------------------------
    def command(self, node: Node, extra: list[Word], cwds: tuple[str, ...],
                inputs: list[Input | None] | None = None) -> State:
        assigns: list[tuple[str, str]] = []
        words: list[Word] = []
        saved, self.tails = self.tails, []
        saved_inputs, self.inputs = self.inputs, list(inputs or [])
        if self.carry_inputs is not None and self.carry_inputs[0] == node.start_byte:
            self.inputs += self.carry_inputs[1]  # what tree-sitter hung on the list around the command
            self.carry_inputs = None
        for child in node.children:
            kind = child.type
            if kind == "variable_assignment":
                assigns.append(self.assignment(child))
            elif kind == "command_name":
                self.cover(child)
                if child.child_count != 1:
                    raise self.refuse(child)
                words.append(self.word(child.children[0]))
            elif kind in WORD_NODES or (kind in EXPANSIONS and self.bound_word(child) is not None):
                words.append(self.word(child))
            elif kind in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                extra = self.redirect(child, cwds) + extra
            elif kind == "comment":
                self.cover(child)
            else:
                raise self.refuse(child)
        # One redirection gives the command its input; with several, which one it reads is left unknown.
        found, self.inputs = self.inputs, saved_inputs
        stdin = found[0] if len(found) == 1 else None
        words += extra
        if self.carry is not None and self.carry[0] == node.start_byte:
            words += self.carry[1]  # a `-` tree-sitter left out before a redirection of the whole pipeline
            self.carry = None
        if not words:
            raise ShellUnseen("shell variable assignments on their own are not allowed; put the variable on the command "
                            "that reads it (`NAME=value program …`), where the program's rule judges it")
        tails, self.tails = self.tails, saved
        state = self.simple(words, assigns, self.via, False, cwds, True, stdin)
        return self.run_tails(tails, state, cwds)

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

    def simple(self, words: list[Word], assigns: list[tuple[str, str]], via: str, open_args: bool,
               cwds: tuple[str, ...], in_shell: bool, stdin: Input | None = None, found: bool = False) -> State:
        """Judge one simple command: builtins, wrappers, or a program to record.

        ``in_shell``: the command runs in this shell (a builtin there acts on it), not as a program
        a wrapper starts (`timeout 5 cd x` runs a `cd` program, which changes no folder of ours).
        """
        self.last_cwds = cwds
        if words[0].value in FORBIDDEN_BUILTINS:
            wrappers.unwrap(words[0].value, [])  # raises with the reason
        name, by_path = wrappers.program_name(words[0])
        args = words[1:]
        if by_path is not None and (name == "cd" or name in FORBIDDEN_BUILTINS):
            raise wrappers.by_path_deny(by_path, name)
        if name == "cd":
            if not in_shell:
                raise ShellDeny(f"`{via.strip()} cd` runs `cd` as a program of its own, which changes no folder "
                                "of the shell; write `cd DIR && ...`")
            return self.cd(args, cwds)
        inner = wrappers.unwrap(name, args)
        if inner is not None:
            self.wrapper_words(name, args, inner)
        if inner is not None and by_path is not None:
            raise wrappers.by_path_deny(by_path, name)  # a wrapper or shell from a folder of the repository
        if inner is not None and open_args:
            raise ShellDeny(f"`xargs {name}` would let its input add options to `{name}`; run `{name}` directly")
        if inner is None:
            # A wrapper's command (`timeout 5 patch`) gets no input of record: the wrapper may read it first.
            self.script.commands.append(Command(name, args, assigns, cwds, via, open_args, by_path, stdin,
                                                found=found))
            return cwds, cwds
        if inner.record_self:
            own = args if inner.self_args is None else inner.self_args
            self.script.commands.append(Command(name, own, assigns, cwds, via, open_args, deletes=inner.deletes))
        for a_name, a_value in inner.assigns:
            check_assignment(a_name, a_value)
        assigns = assigns + [(n, v.value) for n, v in inner.assigns]
        if name in SHELLS:
            self.shell_variables(name, assigns, inner.scripts)
        for script in inner.scripts:
            sub = _Walker(script, cwds, via + name + " -c ")
            sub.run()
            for inner_cmd in sub.script.commands:  # `FOO=1 bash -c 'cmd'`: cmd runs with FOO set
                inner_cmd.assigns = assigns + inner_cmd.assigns
            self.script.commands += sub.script.commands
            self.script.writes += sub.script.writes
            self.script.streams_redirected |= sub.script.streams_redirected
        state: State = (cwds, cwds)
        # `builtin cd` and `command cd` run the builtin in this shell; `command -v cd` only names it.
        keeps_shell = in_shell and (name == "builtin" or (name == "command" and inner.runs))
        for cmd in inner.commands:
            if cmd:
                state = self.simple(cmd, assigns, via + name + " ", open_args or inner.open_args, cwds, keeps_shell,
                                    found=inner.deletes is not None)
        return state if keeps_shell else (cwds, cwds)

    @staticmethod
    def wrapper_words(name: str, args: list[Word], inner: wrappers.Unwrapped) -> None:
        """The wrapper's own words (`timeout 5*`, `env A=*`, `find *.py`): bash expands a glob into any number of
        words, and a wrapper would read them as its own, the second perhaps as the command to run, one starting
        with `-` as an option. The inner command's words are its rule's to judge; find's own words are judged
        by find's grammar too, but a glob there that could start with `-` would be an option of find."""
        theirs = {id(w) for command in inner.commands for w in command}
        for a in args:
            if id(a) in theirs or not (a.glob or a.tilde):
                continue
            if a.dash:
                raise ShellDeny(f"`{a.value}` is a glob bash expands before `{name}` runs, and could expand into "
                                f"option names of `{name}` (a file named `-x…` matches it); quote it (`'{a.value}'`) "
                                f"for the program to match it itself, or start it with `./` (`./{a.value}`)")
            if name != "find":
                raise ShellDeny(f"`{name} … {a.value}`: bash expands `{a.value}` before `{name}` runs, into words "
                                f"`{name}` would read as its own; quote it, or write the value out")

    def shell_variables(self, name: str, assigns: list[tuple[str, str]], scripts: list[str]) -> None:
        """Variables given to a shell: never those it reads itself; with nothing to run (`bash -c ''`), no
        command's rule will judge them, so only the harmless few every program may be given."""
        for var, _value in assigns:
            if var in _SHELL_VARIABLES or var.startswith("BASH"):
                raise ShellDeny(f"`{var}` is read by `{name}` itself (it can run files or change how the script is "
                                "read); run the command without it")
            if scripts and not any(s.strip() for s in scripts) and var not in BASE:
                raise ShellDeny(f"`{var}` is given to a `{name}` that runs no command; run the command without it")

    def cd(self, args: list[Word], cwds: tuple[str, ...]) -> State:
        i = 0
        while i < len(args) and args[i].value in ("-P", "-L"):
            i += 1
        if i < len(args) and args[i].value == "--":
            i += 1
        rest = args[i:]
        if len(rest) != 1 or rest[0].value in ("", "-") or rest[0].glob or rest[0].tilde:
            raise ShellDeny("`cd` needs exactly one literal folder (no options but -P or -L, no `-`, `~` or globs); "
                            "write the folder out (`cd src`)")
        target = rest[0].value
        if target.startswith("-"):
            raise ShellDeny(f"`cd {target}`: write the folder as `./{target}`")
        new = []
        for cwd in cwds:
            key = (cwd, target)
            found = self._cd.get(key)
            if found is None:
                found = self._cd[key] = _cd_target(cwd, target)
            new.append(found)
        # A `cd` that fails leaves the shell where it was.
        return _merge(tuple(new)), cwds


def _cd_target(cwd: str, target: str) -> str:
    """Where ``cd target`` from ``cwd`` goes.

    bash's `cd` (-L, the default) drops a name before each `..`, and when that path does not exist it
    retries the target as the file system reads it (`cd link/../x` may land beside the link's target);
    `cd -P` only does the latter. The two agree when every name a `..` takes back is a folder, not a
    symlink: that is required (``collapse``), and the path then has one meaning.
    """
    full = target if target.startswith("/") else f"{cwd}/{target}"
    if len(full) > PATH_MAX:
        raise ShellDeny(f"`cd {target[:40]}`: the path is longer than {PATH_MAX} characters")
    if "/.." in full:
        try:
            return collapse(full)
        except PathError as exc:
            raise ShellDeny(f"`cd {target}`: {exc}") from None
    # Without `..`, both readings name the same folder (its symlinks are followed when it is used).
    folder = os.path.normpath(full)
    return "/" + folder.lstrip("/") if folder.startswith("//") else folder
