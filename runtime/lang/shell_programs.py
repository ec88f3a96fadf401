"""The programs and builtins the shell analysis treats apart from every other program.

The gate sees through shells (their scripts are read as commands of their own) and refuses what it cannot
see through: runners whose command it cannot unwrap, and builtins that run text or change the shell's own
state. The policy compiler reads the same sets, so no shell rule can allow one of them: a rule for them
would allow anything.
"""

from __future__ import annotations

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
