"""What the shell analysis produces (kept apart so wrappers can use it too)."""

from __future__ import annotations


class ShellDeny(Exception):
    """The command cannot be allowed; the message says why and what to do."""


class ShellUnseen(ShellDeny):
    """The command holds what the gate cannot read before it runs (`$(...)`, a loop, `eval`, a runner it cannot
    unwrap): no rule decides it, so it is asked of a person once nothing the gate can see in it is forbidden."""


class Word:
    __slots__ = ("value", "glob", "tilde", "dash")

    def __init__(self, value: str, glob: bool = False, tilde: bool = False, dash: bool = False) -> None:
        self.value = value
        self.glob = glob
        self.tilde = tilde
        # A glob that starts with a wildcard (`*.md`): bash may expand it into a name starting with `-`,
        # an option. Only a program none of whose options writes or runs anything may be given one.
        self.dash = dash


class Command:
    """One simple command as it would run, after unwrapping wrappers."""

    __slots__ = ("name", "args", "words", "assigns", "cwds", "via", "open_args", "path", "stdin", "deletes", "found")

    def __init__(self, name: str, words: list[Word], assigns: list[tuple[str, str]], cwds: tuple[str, ...], via: str,
                 open_args: bool, path: str | None = None, stdin: Input | None = None, deletes: str | None = None,
                 found: bool = False) -> None:
        self.name = name
        # The program word when it names the program by a path outside the system folders
        # (`.venv/bin/pytest`): allowed only from a toolchain folder (the shell rules check it).
        self.path = path
        self.words = words
        self.args = [w.value for w in words]
        self.assigns = assigns
        self.cwds = cwds
        self.via = via
        self.open_args = open_args
        # What the command reads on standard input when the shell's reading tells for sure (one `< FILE`, a
        # heredoc, a here-string of its own); None for anything else (a pipe, what the call was given).
        self.stdin = stdin
        # A find that removes what it finds ("files" or "tree", see wrappers.Unwrapped): its rule checks each.
        self.deletes = deletes
        # An rm a removing find runs: its `{}` stands for the paths that find's own check covers.
        self.found = found


class Input:
    """A command's standard input: a file (``path``, relative to the command's folders) or text in the command."""

    __slots__ = ("path", "text")

    def __init__(self, path: str | None = None, text: str | None = None) -> None:
        self.path = path
        self.text = text


class Write:
    """A file a redirection writes, with every directory it may be relative to."""

    __slots__ = ("target", "cwds", "text")

    def __init__(self, target: str, cwds: tuple[str, ...], text: str) -> None:
        self.target = target
        self.cwds = cwds
        self.text = text


class Script:
    __slots__ = ("commands", "writes", "streams_redirected")

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.writes: list[Write] = []
        # A redirection put a file opened for reading, or another descriptor, on standard output or
        # error (`1<f`, `2<>f`, `1>&3`): /dev/stdout would then re-open that file for writing.
        self.streams_redirected = False
