"""Shell variable assignments: which names an agent may set on a command.

`FOO=1 cmd`, `env FOO=1 cmd`: values must be literal, and names that change
which program runs, what it loads or where it writes are refused.
"""

from __future__ import annotations

import re

from runtime.gate.shell_types import ShellDeny, Word

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
