"""Glob and Grep, in Python (no subprocess): bounded output, `.git` skipped."""

from __future__ import annotations

import os
import re
from pathlib import Path

from runtime.agent.tools.inputs import optional_string, string

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from collections.abc import Iterator

    from runtime.lang.jsontypes import JSONObject

MAX_RESULTS = 500


def _base(inp: JSONObject, root: str) -> Path:
    path = inp.get("path") or root
    if not isinstance(path, str):
        raise TypeError(f"`path` must be a string, not {type(path).__name__}")
    return Path(path if os.path.isabs(path) else os.path.join(root, path))


def glob(inp: JSONObject, root: str) -> tuple[str, bool]:
    base = _base(inp, root)
    pattern = string(inp, "pattern")
    try:
        found = sorted(p for p in base.glob(pattern) if ".git" not in p.relative_to(base).parts)
    except (OSError, ValueError, NotImplementedError) as exc:
        return f"bad glob: {exc}", True
    lines = [str(p) for p in found[:MAX_RESULTS]]
    if len(found) > MAX_RESULTS:
        lines.append(f"... {len(found) - MAX_RESULTS} more")
    return "\n".join(lines) or "no files match", False


def _files(base: Path, pattern: str | None) -> Iterator[Path]:
    if base.is_file():
        yield base
        return
    for folder, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(names):
            path = Path(folder) / name
            if pattern is None or path.match(pattern):
                yield path


def grep(inp: JSONObject, root: str) -> tuple[str, bool]:
    try:
        rx = re.compile(string(inp, "pattern"), re.IGNORECASE if inp.get("-i") else 0)
    except re.error as exc:
        return f"bad pattern: {exc}", True
    mode = inp.get("output_mode") or "files_with_matches"
    out: list[str] = []
    for path in _files(_base(inp, root), optional_string(inp, "glob")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        hits = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if rx.search(line)]
        if not hits:
            continue
        if mode == "content":
            out += [f"{path}:{n}:{line[:500]}" for n, line in hits]
        elif mode == "count":
            out.append(f"{path}:{len(hits)}")
        else:
            out.append(str(path))
        if len(out) >= MAX_RESULTS:
            out.append("... more results not shown")
            break
    return "\n".join(out) or "no matches", False
