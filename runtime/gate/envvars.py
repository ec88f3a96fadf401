"""Shell variable assignments: which names an agent may set on a command.

`FOO=1 cmd`, `env FOO=1 cmd`: values must be literal. Which names may be set is
an allowlist, not a list of dangerous names: every program reads its own
variables, and each one missed (RIPGREP_CONFIG_PATH, RUFF_OUTPUT_FILE,
NODE_V8_COVERAGE, TARGET_CC, ...) once let a command load code or write where
the gate never looked. ``BASE`` holds what any program may be given (locale,
time zone, terminal, colour); everything else is per program, in the
``env`` list of its rule (``tools::bash-allowlist``), checked by that gate.
"""

from __future__ import annotations

from runtime.lang.shapes import is_env_name
from runtime.lang.shell_types import ShellDeny, Word

BASE = frozenset({
    "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME", "TZ",
    "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
})


def check_assignment(name: str, value: Word) -> None:
    """The assignment's shape; the name itself is checked against the program's rule."""
    if not is_env_name(name):
        raise ShellDeny(f"`{name}` is not a variable name")
    if value.tilde:
        raise ShellDeny(f"the value of `{name}` uses `~`; write the path out")
