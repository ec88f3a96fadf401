"""Replay the tool calls of scripts/demo-calls.tsv through `runtime check`, one hook process each."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rich.console import Console
from rich.table import Table


def main(runtime: str, policy: str, calls: str) -> int:
    table = Table(title="runtime check --policy " + policy, show_lines=False)
    for col in ("decision", "exit", "tool call", "reason"):
        table.add_column(col, overflow="fold")
    root = os.getcwd()
    with open(calls, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            tool, raw = line.rstrip("\n").split("\t", 1)
            hook_input = {"hook_event_name": "PreToolUse", "cwd": root, "tool_name": tool, "tool_input": json.loads(raw)}
            proc = subprocess.run([runtime, "check", "--policy", policy], input=json.dumps(hook_input),
                                  capture_output=True, text=True, check=False)
            out = json.loads(proc.stdout)["hookSpecificOutput"]
            colour = {"allow": "green", "deny": "red", "ask": "yellow"}[out["permissionDecision"]]
            shown = raw if len(raw) < 70 else raw[:67] + "..."
            table.add_row(f"[{colour}]{out['permissionDecision']}[/{colour}]", str(proc.returncode), f"{tool} {shown}",
                          out["permissionDecisionReason"])
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
