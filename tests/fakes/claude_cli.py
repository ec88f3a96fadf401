"""Run the real Claude Code CLI (the Makefile's CLAUDE_VERSION) non-interactively against a fake model server.

What ``run_claude`` passes, and why (each point verified against the real binary as root):

- ``-p PROMPT --output-format json``: one final JSON object on stdout, with
  ``permission_denials`` (every call a hook or the permission system refused).
- ``--permission-mode dontAsk`` and NO allow rules (no ``--allowedTools``, no
  ``permissions.allow``): the PreToolUse hook runs first for every offered tool; its
  ``permissionDecision: "allow"`` makes the call run, exit 2 / ``deny`` blocks it, and anything
  else (no decision, exit 1, a crash, a missing script, a timeout) falls through to ``dontAsk``.
  ``dontAsk`` denies most calls, but 2.1.330 still runs what it judges read-only inside the working
  directory (``ls``, ``cat``, ``find``, ``git status``, ``echo``...), so a hook that fails open
  there is not fully covered by the CLI: the gate must deny itself (exit 2), which ours does. With
  an allow rule for a tool, a crashing hook lets that tool run, unless the hook carries
  ``"onFailure": "block"`` (``tests/cli/test_claude_code_fail_closed.py``). (``bypassPermissions`` is
  refused as root.)
- ``--setting-sources user``: HOME is a private temp dir, so this loads no settings but ours. With
  the default sources a ``.claude/settings.json`` in the worktree holding
  ``{"disableAllHooks": true}`` switches the ``--settings`` hook off.
- ``--tools A,B``: the built-in tools offered to the model (comma-joined, since the flag is
  variadic). A tool not offered never reaches the hook: the model gets ``is_error`` "No such tool
  available".
- Environment built from scratch (no inherited ``CLAUDE*``/``ANTHROPIC*``/proxy variables): HOME in
  a temp dir, ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY=test``, ``DISABLE_TELEMETRY=1``,
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``, and ``HTTPS_PROXY``/``HTTP_PROXY`` pointing at the
  fake server (``NO_PROXY`` for loopback) so any stray request to another host is caught there
  instead of leaving the machine. stdin is /dev/null.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PLATFORM_BINARY = Path("node_modules/@anthropic-ai/claude-code-linux-x64/claude")
_REPO_ROOT = Path(__file__).resolve().parents[2]
_CANDIDATES = (
    _REPO_ROOT / ".cache/claude-code" / _PLATFORM_BINARY,
    Path("/root/.cache/runtime-claude") / _PLATFORM_BINARY,
)


def find_cli() -> Path | None:
    """The CLI binary: ``RUNTIME_CLAUDE_BIN`` if set, else the first known install that exists."""
    override = os.environ.get("RUNTIME_CLAUDE_BIN")
    if override:
        return Path(override) if os.access(override, os.X_OK) else None
    return next((p for p in _CANDIDATES if os.access(p, os.X_OK)), None)


def cli_version(binary: Path) -> str | None:
    try:
        with tempfile.TemporaryDirectory(prefix="claude-home-") as home:
            out = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                                 timeout=30, stdin=subprocess.DEVNULL, env=_base_env(home))
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def missing_cli_reason() -> str | None:
    """Why the real CLI cannot be used here, or None when it can."""
    binary = find_cli()
    if binary is None:
        override = os.environ.get("RUNTIME_CLAUDE_BIN")
        if override:
            return f"RUNTIME_CLAUDE_BIN={override} is not an executable file"
        return "Claude Code CLI not found; looked in " + ", ".join(map(str, _CANDIDATES))
    if cli_version(binary) is None:
        return f"{binary} --version failed (a stub bin/claude.exe, or a broken install?)"
    return None


@dataclass
class ClaudeRun:
    args: list[str]
    returncode: int | None  # None when it was killed on timeout
    stdout: str
    stderr: str
    result: dict[str, Any] | None  # the final JSON object, when stdout held one
    timed_out: bool = False
    permission_denials: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        """Everything a failing assertion should show."""
        return (f"args={self.args}\nreturncode={self.returncode} timed_out={self.timed_out}\n"
                f"stdout={self.stdout[-4000:]}\nstderr={self.stderr[-4000:]}")


def _base_env(home: str) -> dict[str, str]:
    env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "LANG": os.environ.get("LANG", "C.UTF-8")}
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def _descendants(pid: int) -> list[int]:
    """Processes below ``pid``, read from /proc (Linux). Empty where /proc is unreadable."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            # The field after the parenthesised command name: state, then the parent pid.
            ppid = int(entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
        except (ValueError, IndexError, OSError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(pid: int) -> None:
    # The CLI starts each shell command in a session of its own, so killing the CLI's process
    # group is not enough: find its descendants first, while they are still its children.
    for victim in [*_descendants(pid), pid]:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _parse_result(stdout: str) -> dict[str, Any] | None:
    # --output-format json prints one object; take the last line that parses, to be lenient.
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def run_claude(prompt: str, cwd: str | os.PathLike[str], settings: dict[str, Any] | None, server_url: str,
               tools: list[str] | None, extra_args: Sequence[str] = (), timeout: float = 120,
               *, binary: Path | None = None, env: dict[str, str] | None = None,
               home: Path | None = None, prefix: Sequence[str] = ()) -> ClaudeRun:
    """Run ``claude -p PROMPT`` in ``cwd`` with ``settings`` (hooks etc.) passed by --settings.

    ``tools`` None keeps the CLI's default tool set; a list offers exactly those built-in tools.
    ``extra_args`` go last (e.g. ``["--allowedTools", "Read"]``); ``env`` adds variables.
    ``settings`` None passes none: the CLI reads the project's own settings files, as a person's
    session does, with ``home`` (prepared by the caller, kept) as HOME and no proxy trap (the CLI's
    own sandbox proxy would send its traffic there). ``prefix`` goes before the CLI
    (``setpriv ...`` to run it as another user).
    """
    binary = binary or find_cli()
    if binary is None:
        raise RuntimeError(missing_cli_reason())
    with tempfile.TemporaryDirectory(prefix="claude-home-") as temp:
        home_dir = str(home) if home is not None else temp
        args = [*prefix, str(binary), "-p", prompt, "--output-format", "json", "--permission-mode", "dontAsk"]
        trap: dict[str, str] = {}
        if settings is not None:
            settings_file = Path(temp) / "runtime-settings.json"
            settings_file.write_text(json.dumps(settings))
            args += ["--settings", str(settings_file), "--setting-sources", "user"]
            trap = {"HTTPS_PROXY": server_url, "HTTP_PROXY": server_url, "NO_PROXY": "127.0.0.1,localhost"}
        if tools is not None:
            args += ["--tools", ",".join(tools)]
        args += list(extra_args)
        child_env = _base_env(home_dir) | {
            "ANTHROPIC_BASE_URL": server_url,
            "ANTHROPIC_API_KEY": "test",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        } | trap | (env or {})
        out_path, err_path = Path(temp) / "stdout", Path(temp) / "stderr"
        # Output goes to files, not pipes: a background command the agent started may keep a
        # pipe open long after the CLI exits.
        with out_path.open("w") as out, err_path.open("w") as err:
            proc = subprocess.Popen(args, cwd=cwd, env=child_env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err)
            try:
                proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                _kill_tree(proc.pid)
                proc.wait()
                timed_out = True
        stdout, stderr = out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
    result = _parse_result(stdout)
    return ClaudeRun(args=args, returncode=None if timed_out else proc.returncode, stdout=stdout,
                     stderr=stderr, result=result, timed_out=timed_out,
                     permission_denials=list((result or {}).get("permission_denials") or []))
