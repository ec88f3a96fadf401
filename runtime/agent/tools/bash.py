"""Bash: the command runs in the worktree, inside the same OS sandbox as the agent."""

from __future__ import annotations

import subprocess

from runtime.agent.tools.inputs import number, string

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

DEFAULT_TIMEOUT_S = 120
MAX_TIMEOUT_S = 600
MAX_OUTPUT = 30000


def bash(inp: JSONObject, root: str) -> tuple[str, bool]:
    if inp.get("run_in_background"):
        return "background commands are not available; run the command in the foreground", True
    timeout = min(number(inp, "timeout", DEFAULT_TIMEOUT_S * 1000) / 1000, MAX_TIMEOUT_S)
    try:
        proc = subprocess.run(
            ["/bin/bash", "-c", string(inp, "command")], cwd=root, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.output or b"").decode("utf-8", errors="replace")
        return f"{out[-MAX_OUTPUT:]}\n[timed out after {timeout:.0f} s]", True
    out = proc.stdout.decode("utf-8", errors="replace")
    if len(out) > MAX_OUTPUT:
        out = f"[... {len(out) - MAX_OUTPUT} characters cut ...]\n" + out[-MAX_OUTPUT:]
    if proc.returncode:
        return f"{out}\n[exit code {proc.returncode}]", True
    return out or "(no output)", False
