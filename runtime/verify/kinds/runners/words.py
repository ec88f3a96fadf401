"""A test command read as bash reads its words, keeping each word's own source text.

The orchestrator starts the test runner itself: it recognises the runner in the task's command (or in the
base's package.json script it names) and adds the options that make the runner write its structured
report. Words it does not touch must reach bash exactly as written (a glob, `tests/test_*.py`, is bash's
to expand, as it would have been), so each word keeps its source; words it adds are quoted.

Only what a test command needs is read: simple commands with leading variable assignments, joined by
`&&`, whose words may hold variables (`"$HOME/x"`, passed to bash as written). Anything else (pipes, `;`,
`||`, redirections, command substitutions, other expansions) makes the command opaque:
`split` raises ``Opaque`` saying why, and the caller judges such a command by its exit code only where the
task asked for that. Hand-written rather than tree-sitter's: this package sits below the gate that holds
the parser, and the reading needed is this small, exact subset, refused whole outside it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_VARIABLE = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})")
_OPERATORS = "|&;<>()"
_META_IN_DOUBLE = "$`"


class Opaque(ValueError):
    """The command is not one the orchestrator can read exactly; the message says what in it."""


@dataclass(frozen=True)
class Word:
    """A word's value (as the program receives it; globs unexpanded) and its source text."""

    value: str
    source: str
    glob: bool = False  # holds an unquoted `*`, `?` or `[`: bash may expand it
    # holds a variable bash expands (`"$HOME/x"`): its value is only known at run time, so the word names no
    # program or option the plan reads, and goes to bash as written
    expands: bool = False

    @staticmethod
    def added(value: str) -> Word:
        """A word the orchestrator adds: quoted, so bash gives the program exactly ``value``."""
        return Word(value, shlex.quote(value))


@dataclass(frozen=True)
class Simple:
    """One simple command: its variable assignments (source text, `NAME=value`) and its words."""

    assignments: tuple[Word, ...]
    words: tuple[Word, ...]

    @property
    def argv(self) -> list[str]:
        return [w.value for w in self.words]

    def render(self) -> str:
        return " ".join(w.source for w in (*self.assignments, *self.words))

    def with_words(self, words: Sequence[Word]) -> Simple:
        return Simple(self.assignments, tuple(words))

    def with_assignment(self, name: str, value: str) -> Simple:
        """The command with `NAME=value` set for it (quoted), after its own assignments."""
        return Simple((*self.assignments, Word(f"{name}={value}", f"{name}={shlex.quote(value)}")), self.words)


def split(command: str) -> list[Simple]:
    """The simple commands of ``command``, joined by `&&`; ``Opaque`` for anything else."""
    commands: list[Simple] = []
    current: list[Word] = []
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if ch in " \t":
            i += 1
            continue
        if ch == "\n":
            raise Opaque("it spans several lines")
        if ch == "#":
            raise Opaque("it holds a comment")
        if command.startswith("&&", i):
            commands.append(_simple(current, command))
            current = []
            i += 2
            continue
        if ch in _OPERATORS:
            raise Opaque(f"it uses `{ch}`, which runs or redirects more than one program's words")
        word, i = _word(command, i)
        current.append(word)
    commands.append(_simple(current, command))
    return commands


def _simple(words: list[Word], command: str) -> Simple:
    if not words:
        raise Opaque("it has an empty command around `&&`")
    n = 0
    while n < len(words) and ASSIGNMENT.match(words[n].value) and ASSIGNMENT.match(words[n].source):
        n += 1
    if n == len(words):
        raise Opaque("it only sets variables")
    return Simple(tuple(words[:n]), tuple(words[n:]))


def _word(command: str, i: int) -> tuple[Word, int]:
    start, value, glob, expands = i, [], False, False
    n = len(command)
    while i < n:
        ch = command[i]
        if ch in " \t\n" or ch in _OPERATORS or command.startswith("&&", i):
            break
        if ch == "'":
            end = command.find("'", i + 1)
            if end < 0:
                raise Opaque("it has an unclosed single quote")
            value.append(command[i + 1:end])
            i = end + 1
        elif ch == '"':
            i += 1
            while True:
                if i >= n:
                    raise Opaque("it has an unclosed double quote")
                c = command[i]
                if c == '"':
                    i += 1
                    break
                if c == "$" and (m := _VARIABLE.match(command, i)):
                    value.append(m.group(0))
                    expands = True
                    i = m.end()
                    continue
                if c in _META_IN_DOUBLE:
                    raise Opaque(f"it expands `{c}` inside double quotes (only a variable, `$NAME` or `${{NAME}}`, "
                                 "is read)")
                if c == "\\" and i + 1 < n and command[i + 1] in '"\\$`\n':
                    value.append(command[i + 1])
                    i += 2
                    continue
                value.append(c)
                i += 1
        elif ch == "\\":
            if i + 1 >= n or command[i + 1] == "\n":
                raise Opaque("it continues a line with a backslash")
            value.append(command[i + 1])
            i += 2
        elif ch == "$" and (m := _VARIABLE.match(command, i)):
            value.append(m.group(0))
            expands = True
            i = m.end()
        elif ch in "$`":
            raise Opaque(f"it expands `{ch}` (only a variable, `$NAME` or `${{NAME}}`, is read)")
        elif ch == "~" and i == start:
            raise Opaque("it starts a word with `~`")
        else:
            if ch in "*?[{":
                glob = True  # bash may expand it (a glob, a brace): its source goes to bash untouched
            value.append(ch)
            i += 1
    return Word("".join(value), command[start:i], glob, expands), i


def render(commands: Sequence[Simple]) -> str:
    return " && ".join(c.render() for c in commands)
