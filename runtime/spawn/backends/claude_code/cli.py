"""The installed Claude Code CLI: where it is, how to start it, and whether its hooks can fail closed.

Claude Code runs a tool call whose PreToolUse hook cannot start (exit 127: `runtime` not on PATH),
exits with anything but 0 or 2 (a crash), or times out: a non-blocking error. A hook that carries
`"onFailure": "block"` blocks the call instead; Claude Code honours that from 2.1.295 on, and
older versions ignore the key and keep the hook (seen with 2.1.294), so the hook still gates but
fails open. Every hook the runtime writes is `gate_hook`, and nothing that relies on it is given a
CLI older than `FAIL_CLOSED_SINCE` (`require_fail_closed`): `runtime hook install` and the
claude-code backend's preflight refuse one.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import runtime
from runtime.errors import FatalError
from runtime.timeouts import HOOK_TIMEOUT_S

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict

PINNED_VERSION = "2.1.332"  # the version the tests run (Makefile CLAUDE_VERSION)
FAIL_CLOSED_SINCE = "2.1.295"  # the first version that honours `onFailure` on a hook
INSTALL_HINT = (f"install it with `npm install -g @anthropic-ai/claude-code@{PINNED_VERSION}` (or `make test`, which "
                "installs it under .cache/claude-code), or set RUNTIME_CLAUDE_BIN to the binary")
_UPGRADE_HINT = (f"upgrade it (`npm install -g @anthropic-ai/claude-code@{PINNED_VERSION}`), or set RUNTIME_CLAUDE_BIN "
                 "to a newer binary")
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
_VERSION = re.compile(r"\s*(\d+)\.(\d+)\.(\d+)(?![\d.])")
_VERSION_TIMEOUT_S = 30


def gate_hook(command: str) -> JSONDict:
    """The hook handler that runs ``command`` for a tool call: a call it cannot answer is blocked."""
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S, "onFailure": "block"}


def _known_installs() -> list[Path]:
    arch = _ARCH.get(platform.machine().lower(), platform.machine().lower())
    binary = Path("node_modules/@anthropic-ai", f"claude-code-linux-{arch}", "claude")
    package_root = Path(runtime.__file__).resolve().parent.parent
    return [package_root / ".cache/claude-code" / binary, Path.home() / ".cache/runtime-claude" / binary,
            Path("/root/.cache/runtime-claude") / binary]


def locate_claude(*, known_installs: bool = True) -> Path | None:
    """The CLI: RUNTIME_CLAUDE_BIN, else `claude` on PATH, else (``known_installs``) one of the runtime's
    own copies (`make test`'s under .cache); None if there is none.

    A RUNTIME_CLAUDE_BIN that names no executable file is an error, never "not found": it was asked for.
    """
    override = os.environ.get("RUNTIME_CLAUDE_BIN")
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise FatalError(f"RUNTIME_CLAUDE_BIN={override} is not an executable file: {INSTALL_HINT}")
        return Path(override).absolute()
    on_path = shutil.which("claude")
    for candidate in ([Path(on_path)] if on_path else []) + (_known_installs() if known_installs else []):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.absolute()
    return None


def find_claude() -> Path:
    """The CLI as ``locate_claude`` finds it; FatalError if there is none."""
    found = locate_claude()
    if found is None:
        raise FatalError(f"the Claude Code CLI was not found: {INSTALL_HINT}")
    return found


def cli_launch(cli: Path) -> tuple[list[str], list[Path]]:
    """How to start the CLI, and the folders it needs to see: the native binary's, or node's and the package's."""
    real = cli.resolve()
    with open(real, "rb") as f:
        script = f.read(2) == b"#!"
    if not script:
        return [str(real)], [real.parent]
    node = shutil.which("node")
    if node is None:
        raise FatalError(f"{real} is a Node.js script and `node` is not installed: install Node.js, or {INSTALL_HINT}")
    node_real = Path(node).resolve()
    packages = [p for p in real.parents if p.name == "node_modules"]
    return [str(node_real), str(real)], [node_real.parent.parent, packages[-1] if packages else real.parent]


def cli_version(cli: Path) -> str:
    """What ``claude --version`` says (``2.1.332``); FatalError when it cannot be read.

    A CLI whose version cannot be read counts as too old: it may be one that ignores `onFailure`.
    Run as it is (a Node.js script by its `#!` line): this is the host's CLI, not the sandbox's.
    """
    try:
        out = subprocess.run([str(cli), "--version"], capture_output=True, text=True, timeout=_VERSION_TIMEOUT_S,
                             stdin=subprocess.DEVNULL, env={**os.environ, "DISABLE_AUTOUPDATER": "1"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FatalError(f"{cli} --version failed ({exc}): cannot tell whether it honours the hook's "
                         f"`onFailure: block`; {_UPGRADE_HINT}") from None
    match = _VERSION.match(out.stdout)
    if out.returncode != 0 or match is None:
        said = (out.stdout.strip() or out.stderr.strip() or f"exit {out.returncode}").splitlines()[0][:200]
        raise FatalError(f"{cli} --version said {said!r}, not a version: cannot tell whether it honours the hook's "
                         f"`onFailure: block`; {_UPGRADE_HINT}")
    return ".".join(match.groups())


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def require_fail_closed(cli: Path) -> str:
    """The CLI's version, when it honours `onFailure: block`; else FatalError (one line)."""
    version = cli_version(cli)
    if _numbers(version) < _numbers(FAIL_CLOSED_SINCE):
        raise FatalError(f"{cli} is Claude Code {version}, older than {FAIL_CLOSED_SINCE}: it ignores the hook's "
                         f"`onFailure: block` and runs a call whose hook cannot start, crashes or times out; "
                         f"{_UPGRADE_HINT}")
    return version
