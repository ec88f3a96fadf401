"""Whether git would track what the runtime writes into a repository (its catalog, the hook's settings)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def ignored_by_git(repo: Path, paths: list[str]) -> list[tuple[str, str]]:
    """The paths (relative to ``repo``) git would not track, each with the ignore rule that hides it
    (`file:line: pattern`); none outside a repository."""
    try:
        proc = subprocess.run(["git", "-C", str(repo), "check-ignore", "-v", "--no-index", "-z", "--stdin"],
                              input=b"\0".join(p.encode() for p in paths) + b"\0", capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    fields = proc.stdout.split(b"\0")
    out = []
    for k in range(0, len(fields) - 3, 4):
        source, number, pattern, path = (f.decode("utf-8", "replace") for f in fields[k:k + 4])
        if source and not pattern.startswith("!"):
            out.append((path, f"{source}:{number}: `{pattern}`"))
    return out
