"""Shell variable assignments: which names an agent may set on a command.

`FOO=1 cmd`, `env FOO=1 cmd`: values must be literal, and only the names listed
here may be set. An allowlist, not a list of dangerous names: every program
reads its own variables, and each one missed (RIPGREP_CONFIG_PATH,
RUFF_OUTPUT_FILE, NODE_V8_COVERAGE, TARGET_CC, ...) once let a command load
code or write where the gate never looked. What is listed only tunes output,
locale, hashing, colour or logging, and loads and writes nothing.
"""

from __future__ import annotations

import re

from runtime.gate.shell_types import ShellDeny, Word

_ASSIGN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SETTABLE = frozenset({
    # locale, time and terminal width: how text is shown
    "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME", "TZ",
    "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "CI",
    # Python: output, hashing and fault reports only (PYTHONWARNINGS can import modules: not here)
    "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
    "PYTHONFAULTHANDLER", "PYTHONDEVMODE", "PYTHONTRACEMALLOC",
    # Rust and Go test runs: backtraces, log levels, parallelism
    "RUST_BACKTRACE", "RUST_LOG", "RUST_TEST_THREADS", "RUST_MIN_STACK", "GOMAXPROCS", "GOTRACEBACK",
})


def check_assignment(name: str, value: Word) -> None:
    if not _ASSIGN_NAME.match(name):
        raise ShellDeny(f"`{name}` is not a variable name")
    if name not in SETTABLE:
        raise ShellDeny(f"`{name}` is not a variable commands may be given here (only output, locale and logging "
                        "settings are: LANG, LC_*, TZ, NO_COLOR, RUST_BACKTRACE, ...); run the command without it")
    if value.tilde:
        raise ShellDeny(f"the value of `{name}` uses `~`; write the path out")
