"""Programs that run other programs: unwrap them, or refuse them.

A wrapper's inner command is judged like any other (so `timeout 60 git push`
is a git call); runners whose inner command cannot be seen are denied
outright, whatever the role's rules say.
"""

from __future__ import annotations

import os

from runtime.lang.shapes import is_negative_number, is_program_name
from runtime.lang.shell_programs import FORBIDDEN_BUILTINS, OPAQUE_RUNNERS, SHELLS
from runtime.lang.shell_types import ShellDeny, ShellUnseen, Word

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from collections.abc import Iterable

TRUSTED_BIN_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"})



class Unwrapped:
    """What a wrapper runs: inner commands, shell scripts, extra environment."""

    __slots__ = ("commands", "scripts", "assigns", "record_self", "self_args", "open_args", "runs", "deletes")

    def __init__(self, commands: Iterable[list[Word]] = (), scripts: Iterable[str] = (),
                 assigns: Iterable[tuple[str, Word]] = (), record_self: bool = False, open_args: bool = False,
                 self_args: list[Word] | None = None, runs: bool = True, deletes: str | None = None) -> None:
        self.commands: list[list[Word]] = list(commands)
        self.scripts: list[str] = list(scripts)
        self.assigns: list[tuple[str, Word]] = list(assigns)
        self.record_self = record_self
        # The wrapper's own arguments as its rule judges them (find without its -exec parts), or None for all.
        self.self_args: list[Word] | None = self_args
        self.open_args = open_args
        # Whether the inner command runs (`command -v git` only names it; it is still judged, as if it ran).
        self.runs = runs
        # find's deletions: "files" (-delete, `-exec rm {} +`) or "tree" (`-exec rm -r {} +`, each found
        # folder with all it holds). The find command then has its found paths checked one by one
        # (runtime.gate.find_deletes), and the `{}` of its rm stands for them.
        self.deletes = deletes


def program_name(word: Word) -> tuple[str, str | None]:
    """The program a command word names, by basename, and the word itself when it is a path
    outside the system folders (whose folder the shell rules then check against the toolchain's)."""
    value = word.value
    if word.glob or word.tilde:
        raise ShellDeny(f"the program name `{value}` uses a glob or `~`; call programs by name")
    if "/" in value:
        folder, base = os.path.split(os.path.normpath(value))
        if not is_program_name(base) or value.endswith("/"):
            raise ShellDeny(f"`{value}` is not a program name; call a program by its plain name (letters, digits, `._+-`)")
        if value.startswith("/") and folder in TRUSTED_BIN_DIRS:
            return base, None
        return base, value
    if not is_program_name(value):
        raise ShellDeny(f"`{value}` is not a program name; call a program by its plain name (letters, digits, `._+-`)")
    return value, None


def by_path_deny(value: str, base: str) -> ShellDeny:
    return ShellDeny(f"`{value}` runs a program by its path; call it by name (`{base}`) so the policy can check it")


def _options(name: str, args: list[Word], with_value: set[str], flags: set[str]) -> int:
    """Skip a wrapper's options; return the index of its first operand."""
    i = 0
    while i < len(args):
        a = args[i].value
        if a == "--":
            return i + 1
        if not a.startswith("-") or a == "-":
            return i
        key = a.split("=", 1)[0]
        if key in flags and "=" not in a:
            i += 1
        elif key in with_value:
            i += 1 if "=" in a else 2
        elif a[:2] in with_value and len(a) > 2 and not a.startswith("--"):
            i += 1  # attached value: -n10, -oL
        else:
            raise ShellDeny(f"`{name} {a}`: unknown option for a wrapper; the gate only unwraps options it knows")
    return i


def _after(name: str, args: list[Word], with_value: set[str], flags: set[str], skip: int = 0) -> Unwrapped:
    i = _options(name, args, with_value, flags) + skip
    if i > len(args):
        raise ShellDeny(f"`{name}` is missing its arguments")
    rest = args[i:]
    return Unwrapped([rest]) if rest else Unwrapped(record_self=True)


def _env(args: list[Word]) -> Unwrapped:
    assigns: list[tuple[str, Word]] = []
    i = 0
    while i < len(args):
        a = args[i].value
        if a in ("-i", "--ignore-environment", "-0", "--null", "-"):
            i += 1
        elif a in ("-u", "--unset"):
            i += 2
        elif a.startswith(("--unset=", "-u")):
            i += 1
        elif a == "--":
            i += 1
            break
        elif a.startswith("-"):
            raise ShellDeny(f"`env {a}` is not allowed (only -i, -0 and -u are unwrapped)")
        elif "=" in a:
            key, _, val = a.partition("=")
            assigns.append((key, Word(val, args[i].glob, val.startswith("~"))))
            i += 1
        else:
            break
    while i < len(args) and "=" in args[i].value and not args[i].value.startswith("-"):
        key, _, val = args[i].value.partition("=")
        assigns.append((key, Word(val, args[i].glob, val.startswith("~"))))
        i += 1
    rest = args[i:]
    return Unwrapped([rest] if rest else [], assigns=assigns, record_self=not rest)


# `set -o` options a shell may be started with: they only make it stricter or louder. The others change
# how the script is read or run (keyword: `cmd A=b` exports A; physical: `cd` follows symlinks; posix;
# allexport; history and monitor) or mean nothing here; each is refused rather than modelled.
_SHELL_OPTIONS = frozenset({"errexit", "nounset", "xtrace", "verbose", "pipefail", "noclobber", "noglob", "noexec"})
_SHELL_FLAGS = frozenset("euxvlc")


def _shell(name: str, args: list[Word]) -> Unwrapped:
    i, script_flag = 0, False
    while i < len(args):
        a = args[i].value
        if a in ("--noprofile", "--norc", "--login"):
            i += 1
        elif a in ("-o", "+o"):
            option = args[i + 1].value if i + 1 < len(args) else ""
            if option not in _SHELL_OPTIONS:
                raise ShellDeny(f"`{name} {a} {option}`".replace("  ", " ") + " is not allowed: only options that make "
                                f"the shell stricter or louder may be set (allowed: {', '.join(sorted(_SHELL_OPTIONS))}); "
                                "drop the option, or run the command without the shell")
            i += 2
        elif len(a) > 1 and a[0] in "-+" and all(ch in _SHELL_FLAGS for ch in a[1:]):
            # `+c` runs a command string too: bash reads the letters, whichever the sign.
            script_flag = script_flag or "c" in a
            i += 1
        elif a.startswith(("-", "+")):
            raise ShellDeny(f"`{name} {a}` is not allowed (options unwrapped: -c -e -u -x -v -l, and -o "
                            f"{'|'.join(sorted(_SHELL_OPTIONS))})")
        else:
            break
    if not script_flag:
        return Unwrapped(record_self=True)  # a script file or stdin: the rules decide
    if i >= len(args):
        raise ShellDeny(f"`{name} -c` has no script")
    return Unwrapped(scripts=[args[i].value])


# rm's options a find deletion may give it (`-exec rm -rf {} +`): which paths it removes, nothing else.
_RM_LETTERS = frozenset("rRfvd")
_RM_LONG = frozenset({"--recursive", "--force", "--verbose", "--dir"})


def _rm_of_find(command: list[Word]) -> str | None:
    """`rm [-rfvd] {}`: "tree" with -r, "files" without; None for any other command."""
    if not command or command[0].value not in ("rm", "/bin/rm", "/usr/bin/rm") or command[0].glob:
        return None
    recursive, braces = False, 0
    for w in command[1:]:
        v = w.value
        if v == "{}":
            braces += 1
        elif v in _RM_LONG:
            recursive = recursive or v == "--recursive"
        elif len(v) > 1 and v[0] == "-" and v[1] != "-" and set(v[1:]) <= _RM_LETTERS:
            recursive = recursive or "r" in v or "R" in v
        else:
            return None
    return ("tree" if recursive else "files") if braces == 1 and command[-1].value == "{}" else None


def _find(args: list[Word]) -> Unwrapped:
    commands: list[list[Word]] = []
    own: list[Word] = []
    deletes: str | None = None
    actions = 0
    i = 0
    while i < len(args):
        a = args[i].value
        if a in ("-execdir", "-okdir"):
            raise ShellDeny(f"`find {a}` runs its command in each found folder, where relative paths cannot be checked; use -exec")
        if a in ("-exec", "-ok"):
            # As findutils reads it (parser.c, new_insert_exec_ok): the command ends at the first `;`,
            # or, for -exec only, at a `+` right after a word holding `{}`; any other `+` is an argument.
            j, braces = i + 1, False
            while j < len(args):
                w = args[j].value
                if w == ";" or (w == "+" and braces and a == "-exec"):
                    break
                braces = "{}" in w
                j += 1
            if j >= len(args):
                raise ShellDeny(f"`find {a}` is not terminated by `;` or `{{}} +`")
            if j == i + 1:
                raise ShellDeny(f"`find {a}` has no command")
            if any("{}" in w.value and w.value != "{}" for w in args[i + 1:j]):
                raise ShellDeny(f"`find {a}`: `{{}}` inside a longer word is replaced by the found path; pass `{{}}` as a word of its own")
            commands.append(args[i + 1:j])
            own.append(Word("-print"))  # stands in for the action in find's own grammar
            actions += 1
            if a == "-exec":
                deletes = _rm_of_find(args[i + 1:j])
            i = j + 1
        elif a in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            raise ShellDeny(f"`find {a}` writes a file the gate cannot check; redirect find's output into a file instead")
        else:
            if a == "-delete":
                actions += 1
                deletes = "files"
            own.append(args[i])
            i += 1
    if deletes is not None and actions > 1:
        raise ShellDeny("`find` removes what it finds only with one action (-delete, or `-exec rm {} +`), so the gate "
                        "can list what it removes; split the command")
    return Unwrapped(commands, record_self=True, self_args=own, deletes=deletes)


def _uv(args: list[Word]) -> Unwrapped | None:
    """`uv run --no-sync CMD` runs CMD in the project's environment, and is judged as CMD; plain
    `uv run CMD` first syncs the environment (it writes .venv and may download the locked packages): it
    is judged as CMD and as `uv run` itself, which a rule must allow (a person's session has one; an
    agent's role none: it runs `uv run --no-sync`). uv's other commands (add, sync, pip) are an ordinary
    program's, for the role's rules (which have none for uv) to judge."""
    if not args or args[0].value != "run":
        return None
    i = _options("uv run", args[1:], set(), _UV_FLAGS) + 1
    if i >= len(args):
        raise ShellDeny("`uv run` needs a command")
    if "--no-sync" not in {a.value for a in args[1:i]}:
        return Unwrapped([args[i:]], record_self=True, self_args=[Word("run")])
    return Unwrapped([args[i:]])


_SIMPLE: dict[str, tuple[set[str], set[str], int]] = {
    # name: (options taking a value, options without one, operands before the command)
    "command": (set(), {"-p", "-v", "-V"}, 0),
    "builtin": (set(), set(), 0),
    "nohup": (set(), set(), 0),
    "time": ({"-f", "--format"}, {"-p", "-v", "--verbose", "-q", "--quiet", "--portability"}, 0),
    "timeout": ({"-s", "--signal", "-k", "--kill-after"}, {"--preserve-status", "--foreground", "-v", "--verbose"}, 1),
    "nice": ({"-n", "--adjustment"}, set(), 0),
    "stdbuf": ({"-i", "-o", "-e", "--input", "--output", "--error"}, set(), 0),
    "setsid": (set(), {"-c", "--ctty", "-f", "--fork", "-w", "--wait"}, 0),
}
# `uv run` options that only choose how it runs, never what it installs: no --with, --python, --index.
_UV_FLAGS = {"--no-sync", "--frozen", "--locked", "--offline", "-q", "--quiet", "--active", "--no-dev",
             "--no-project", "--isolated"}
# GNU xargs's options as its getopt_long reads them (findutils xargs.c: "+0a:E:e::i::I:l::L:n:oprs:txP:d:"):
# "x:" takes a value, attached or the next word; "x::" takes one only attached (`-i`, `-e`, `-l`, and
# `--replace`, `--eof`, `--max-lines` only as `--name=value`), so `xargs -i cmd` runs cmd.
_XARGS_SHORT = {"0": "", "a": ":", "E": ":", "e": "::", "i": "::", "I": ":", "l": "::", "L": ":", "n": ":", "o": "",
                "p": "", "r": "", "s": ":", "t": "", "x": "", "P": ":", "d": ":"}
_XARGS_LONG = {"null": "", "arg-file": ":", "delimiter": ":", "eof": "::", "replace": "::", "max-lines": "::",
               "max-args": ":", "interactive": "", "no-run-if-empty": "", "max-chars": ":", "verbose": "",
               "show-limits": "", "exit": "", "max-procs": ":", "process-slot-var": ":", "open-tty": "",
               "version": "", "help": ""}


def _xargs(args: list[Word]) -> Unwrapped:
    """The command xargs runs (`echo` without one), with the variable `--process-slot-var` sets in it.

    Long options must be spelled out: getopt_long would take any unambiguous prefix (`--repl`), and
    a word the gate cannot read is refused rather than guessed. Whatever the input is, it becomes
    arguments of the command (appended, or put in place of the `-I` string): ``open_args``.
    """
    assigns: list[tuple[str, Word]] = []
    i = 0
    while i < len(args):
        a = args[i].value
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            kind = _XARGS_LONG.get(name)
            if kind is None:
                raise ShellDeny(f"`xargs {a}` is not an option the gate reads; spell xargs's options out in full")
            if kind == "" and eq:
                raise ShellDeny(f"`xargs {a}`: `--{name}` takes no value")
            if kind == ":" and not eq:
                if i + 1 >= len(args):
                    raise ShellDeny(f"`xargs {a}` needs a value")
                value = args[i + 1].value
                i += 1
            if name == "process-slot-var":
                assigns.append((value, Word("0")))
            if name == "replace" and eq and not value:
                raise ShellDeny("`xargs --replace=` with an empty string is not allowed")
            i += 1
            continue
        k = 1
        while k < len(a):
            letter = a[k]
            kind = _XARGS_SHORT.get(letter)
            if kind is None:
                raise ShellDeny(f"`xargs -{letter}` is not an option the gate reads")
            if kind == "":
                k += 1
                continue
            if kind == ":" and k + 1 == len(a):
                if i + 1 >= len(args):
                    raise ShellDeny(f"`xargs -{letter}` needs a value")
                value = args[i + 1].value
                i += 1
            else:  # the rest of the word, possibly empty for an optional value
                value = a[k + 1:]
            if letter == "I" and not value:
                raise ShellDeny("`xargs -I` with an empty string is not allowed")
            break
        i += 1
    rest = args[i:] or [Word("echo")]
    return Unwrapped([rest], assigns=assigns, open_args=True)


def unwrap(name: str, args: list[Word]) -> Unwrapped | None:
    """What ``name args`` runs if it is a wrapper; None for an ordinary program."""
    if name in FORBIDDEN_BUILTINS:
        raise ShellUnseen(f"`{name}` is not allowed: it runs text or changes the shell in ways the gate cannot see; "
                        "run the programs themselves, with their arguments written out")
    if name in OPAQUE_RUNNERS:
        raise ShellUnseen(f"`{name}` runs other programs in a way the gate cannot check; run the inner command directly")
    if name == "env":
        return _env(args)
    if name in SHELLS:
        return _shell(name, args)
    if name == "find":
        return _find(args)
    if name == "xargs":
        return _xargs(args)
    if name == "uv":
        return _uv(args)
    if name == "nice" and args and is_negative_number(args[0].value):
        args = args[1:]
    spec = _SIMPLE.get(name)
    if spec is None:
        return None
    with_value, flags, skip = spec
    inner = _after(name, args, with_value, flags, skip)
    if name == "command":
        for w in args:
            if not w.value.startswith("-") or w.value == "--":
                break
            inner.runs = inner.runs and w.value not in ("-v", "-V")
    return inner
