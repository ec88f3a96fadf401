"""The agent's environment, built from scratch.

Nothing is inherited from the orchestrator: not API keys, not git credentials,
not an SSH agent socket. The agent gets a fixed PATH (plus the folder of the
runtime's own interpreter, so `runtime check` is reachable), its private HOME,
TMPDIR=/tmp (the sandbox's private tmpfs), a UTF-8 C locale, TERM=dumb, and
only the variables its task declares. A declared name that would change what
runs, what gets loaded, where the gate reads its policy or where git and the
tools look for credentials is refused: it would undo the sandbox or the gate.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

from runtime.errors import FatalError

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names the runtime sets itself, and names that change what runs or what loads.
_REFUSED = frozenset({
    "PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TERM", "SHELL", "USER", "LOGNAME",
    "IFS", "ENV", "BASH_ENV", "CDPATH", "GLOBIGNORE", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
    "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
    "EDITOR", "VISUAL", "PAGER", "MAKEFLAGS", "MFLAGS",
})
_REFUSED_PREFIXES = (
    "LD_", "DYLD_", "LC_", "GIT_", "SSH_", "GPG_", "BASH_FUNC_", "PYTHON", "XDG_",
    "RUNTIME_",  # the gate's catalog and policy cache
    "CLAUDE_", "ANTHROPIC_",  # the hook's project root, the client's endpoint and key
)
# Python variables that only tune output or hashing; every other PYTHON* can load code.
_SAFE_PYTHON = frozenset({
    "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
    "PYTHONFAULTHANDLER",
})


class UnsafeEnvironment(FatalError):
    """A task declares a variable that would undo the sandbox or the gate."""


def default_path() -> str:
    """The system PATH, then the folder of the runtime's interpreter (for `runtime check`)."""
    return f"{SYSTEM_PATH}:{Path(sys.executable).parent}"


def check_declared(name: str, value: str) -> None:
    """Refuse a declared variable that is malformed or would undo the sandbox or the gate."""
    if not _NAME.fullmatch(name):
        raise UnsafeEnvironment(f"environment variable {name!r} is not a valid name")
    if "\0" in value:
        raise UnsafeEnvironment(f"environment variable {name} contains a NUL byte")
    if name in _SAFE_PYTHON:
        return
    if name in _REFUSED or name.upper() in _REFUSED or name.upper().startswith(_REFUSED_PREFIXES):
        raise UnsafeEnvironment(
            f"environment variable {name} cannot be declared for an agent: it would change what runs, "
            "what loads or where credentials come from; remove it from the task"
        )


def agent_env(home: Path, declared: Mapping[str, str], path: str | None = None) -> dict[str, str]:
    """The complete environment of an agent process: fixed variables plus the declared ones."""
    for name, value in declared.items():
        check_declared(name, value)
    env = {
        "PATH": path if path is not None else default_path(),
        "HOME": str(home),
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        # Bytecode caches would be changes in the worktree (and, where a repository does not
        # ignore them, committed); the agent and its checks run from source.
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(declared)
    return env
