"""Programs that run other programs: unwrap them, or refuse them.

A wrapper's inner command is judged like any other (so `timeout 60 git push`
is a git call); runners whose inner command cannot be seen are denied
outright, whatever the role's rules say.
"""

from __future__ import annotations

import os
import re

from runtime.gate.shell_types import ShellDeny, Word

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from collections.abc import Iterable

PROGRAM = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
TRUSTED_BIN_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"})

# Builtins that execute text, change the shell's own state or hide what runs.
FORBIDDEN_BUILTINS = frozenset({
    "eval", "source", ".", "exec", "trap", "alias", "unalias", "enable", "set", "shopt", "declare",
    "typeset", "export", "local", "readonly", "unset", "hash", "coproc", "pushd", "popd", "fc",
    "history", "bind", "complete", "compgen", "let", "mapfile", "readarray", "read", "getopts",
    "shift", "ulimit", "umask", "disown", "caller",
})
# Programs that run a command the gate cannot unwrap.
OPAQUE_RUNNERS = frozenset({
    "sudo", "doas", "su", "runuser", "sg", "newgrp", "chroot", "unshare", "nsenter", "setpriv", "flock",
    "script", "watch", "parallel", "strace", "ltrace", "gdb", "lldb", "valgrind", "perf", "catchsegv",
    "chrt", "taskset", "ionice", "prlimit", "systemd-run", "start-stop-daemon", "expect", "tmux",
    "screen", "busybox", "toybox", "fakeroot", "proot", "firejail", "bwrap", "dbus-launch", "xvfb-run",
    "npx", "pnpx", "bunx", "uvx", "pipx", "at", "batch", "crontab", "zsh", "fish", "csh", "tcsh", "ksh",
    "mksh", "eatmydata", "torsocks", "proxychains", "proxychains4", "rlwrap", "entr", "socat",
})
SHELLS = frozenset({"sh", "bash", "dash", "ash"})


class Unwrapped:
    """What a wrapper runs: inner commands, shell scripts, extra environment."""

    __slots__ = ("commands", "scripts", "assigns", "record_self", "self_args", "open_args")

    def __init__(self, commands: Iterable[list[Word]] = (), scripts: Iterable[str] = (),
                 assigns: Iterable[tuple[str, Word]] = (), record_self: bool = False, open_args: bool = False,
                 self_args: list[Word] | None = None) -> None:
        self.commands: list[list[Word]] = list(commands)
        self.scripts: list[str] = list(scripts)
        self.assigns: list[tuple[str, Word]] = list(assigns)
        self.record_self = record_self
        # The wrapper's own arguments as its rule judges them (find without its -exec parts), or None for all.
        self.self_args: list[Word] | None = self_args
        self.open_args = open_args


def program_name(word: Word) -> tuple[str, str | None]:
    """The program a command word names, by basename, and the word itself when it is a path
    outside the system folders (whose folder the shell rules then check against the toolchain's)."""
    value = word.value
    if word.glob or word.tilde:
        raise ShellDeny(f"the program name `{value}` uses a glob or `~`; call programs by name")
    if "/" in value:
        folder, base = os.path.split(os.path.normpath(value))
        if not PROGRAM.match(base) or value.endswith("/"):
            raise ShellDeny(f"`{value}` is not a program name; call a program by its plain name (letters, digits, `._+-`)")
        if value.startswith("/") and folder in TRUSTED_BIN_DIRS:
            return base, None
        return base, value
    if not PROGRAM.match(value):
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


def _shell(name: str, args: list[Word]) -> Unwrapped:
    i, script_flag = 0, False
    while i < len(args):
        a = args[i].value
        if a in ("--noprofile", "--norc", "--login"):
            i += 1
        elif a in ("-o", "+o"):
            i += 2
        elif re.fullmatch(r"[-+][euxvlc]+", a):
            script_flag = script_flag or "c" in a
            i += 1
        elif a.startswith(("-", "+")):
            raise ShellDeny(f"`{name} {a}` is not allowed (options unwrapped: -c -e -u -x -v -l -o)")
        else:
            break
    if not script_flag:
        return Unwrapped(record_self=True)  # a script file or stdin: the rules decide
    if i >= len(args):
        raise ShellDeny(f"`{name} -c` has no script")
    return Unwrapped(scripts=[args[i].value])


def _find(args: list[Word]) -> Unwrapped:
    commands: list[list[Word]] = []
    own: list[Word] = []
    i = 0
    while i < len(args):
        a = args[i].value
        if a in ("-execdir", "-okdir"):
            raise ShellDeny(f"`find {a}` runs its command in each found folder, where relative paths cannot be checked; use -exec")
        if a in ("-exec", "-ok"):
            j = i + 1
            while j < len(args) and args[j].value not in (";", "+"):
                j += 1
            if j >= len(args):
                raise ShellDeny(f"`find {a}` is not terminated by `;` or `+`")
            if j == i + 1:
                raise ShellDeny(f"`find {a}` has no command")
            if any("{}" in w.value and w.value != "{}" for w in args[i + 1:j]):
                raise ShellDeny(f"`find {a}`: `{{}}` inside a longer word is replaced by the found path; pass `{{}}` as a word of its own")
            commands.append(args[i + 1:j])
            own.append(Word("-print"))  # stands in for the action in find's own grammar
            i = j + 1
        elif a in ("-delete", "-fprint", "-fprint0", "-fprintf", "-fls"):
            raise ShellDeny(f"`find {a}` writes or deletes files the gate cannot list; find the files, then act on explicit paths")
        else:
            own.append(args[i])
            i += 1
    return Unwrapped(commands, record_self=True, self_args=own)


def _uv(args: list[Word]) -> Unwrapped | None:
    """`uv run --no-sync CMD` runs CMD in the project's environment, and is judged as CMD; plain
    `uv run` syncs the environment before it runs anything. uv's other commands (add, sync, pip)
    are an ordinary program's, for the role's rules (which have none for uv) to judge."""
    if not args or args[0].value != "run":
        return None
    i = _options("uv run", args[1:], set(), _UV_FLAGS) + 1
    if "--no-sync" not in {a.value for a in args[1:i]}:
        inner = " ".join(a.value for a in args[i:i + 4]) or "CMD"
        raise ShellDeny("`uv run` first syncs the environment (writes .venv, downloads packages); "
                        f"run `uv run --no-sync {inner}`")
    if i >= len(args):
        raise ShellDeny("`uv run` needs a command")
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
_XARGS_VALUE = {"-I", "-i", "-L", "-l", "-n", "-P", "-s", "-d", "-E", "-e", "-a", "--max-args", "--max-procs",
                "--delimiter", "--replace", "--arg-file", "--max-lines", "--max-chars", "--eof"}
_XARGS_FLAGS = {"-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-p", "--interactive", "-x", "--exit"}


def unwrap(name: str, args: list[Word]) -> Unwrapped | None:
    """What ``name args`` runs if it is a wrapper; None for an ordinary program."""
    if name in FORBIDDEN_BUILTINS:
        raise ShellDeny(f"`{name}` is not allowed: it runs text or changes the shell in ways the gate cannot see; "
                        "run the programs themselves, with their arguments written out")
    if name in OPAQUE_RUNNERS:
        raise ShellDeny(f"`{name}` runs other programs in a way the gate cannot check; run the inner command directly")
    if name == "env":
        return _env(args)
    if name in SHELLS:
        return _shell(name, args)
    if name == "find":
        return _find(args)
    if name == "xargs":
        i = _options(name, args, _XARGS_VALUE, _XARGS_FLAGS)
        rest = args[i:] or [Word("echo")]
        return Unwrapped([rest], open_args=True)
    if name == "uv":
        return _uv(args)
    if name == "nice" and args and re.fullmatch(r"-\d+", args[0].value):
        args = args[1:]
    spec = _SIMPLE.get(name)
    if spec is None:
        return None
    with_value, flags, skip = spec
    return _after(name, args, with_value, flags, skip)
