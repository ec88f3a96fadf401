"""Read, Write, Edit and MultiEdit."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from typing import Any

MAX_READ_LINES = 2000
MAX_LINE = 2000


def _path(root: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(root, path)


def read(inp: dict[str, Any], root: str) -> tuple[str, bool]:
    path = _path(root, inp["file_path"])
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return f"cannot read {inp['file_path']}: {exc.strerror or exc}", True
    if b"\x00" in data[:8192]:
        return f"{inp['file_path']} is a binary file ({len(data)} bytes)", False
    lines = data.decode("utf-8", errors="replace").splitlines()
    start = max(int(inp.get("offset") or 1), 1)
    count = int(inp.get("limit") or MAX_READ_LINES)
    shown = lines[start - 1:start - 1 + count]
    out = [f"{n:6}\t{line[:MAX_LINE]}" for n, line in enumerate(shown, start=start)]
    if start - 1 + count < len(lines):
        out.append(f"... {len(lines) - (start - 1 + count)} more lines (use offset and limit)")
    return "\n".join(out) if out else "(empty file)", False


def write(inp: dict[str, Any], root: str) -> tuple[str, bool]:
    path = _path(root, inp["file_path"])
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(inp.get("content", ""))
    except OSError as exc:
        return f"cannot write {inp['file_path']}: {exc.strerror or exc}", True
    return f"wrote {inp['file_path']}", False


def _apply(text: str, old: str, new: str, replace_all: bool) -> tuple[str | None, str]:
    if not old:
        return None, "old_string is empty"
    found = text.count(old)
    if found == 0:
        return None, "old_string was not found in the file"
    if found > 1 and not replace_all:
        return None, f"old_string occurs {found} times; give more context or set replace_all"
    return text.replace(old, new) if replace_all else text.replace(old, new, 1), ""


def _edit_file(inp: dict[str, Any], root: str, edits: list[dict[str, Any]]) -> tuple[str, bool]:
    path = _path(root, inp["file_path"])
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot edit {inp['file_path']}: {exc}", True
    for n, e in enumerate(edits, start=1):
        new, why = _apply(text, str(e.get("old_string", "")), str(e.get("new_string", "")), bool(e.get("replace_all")))
        if new is None:
            return f"edit {n} of {inp['file_path']} not applied: {why}; nothing was changed", True
        text = new
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        return f"cannot write {inp['file_path']}: {exc.strerror or exc}", True
    return f"edited {inp['file_path']}", False


def edit(inp: dict[str, Any], root: str) -> tuple[str, bool]:
    return _edit_file(inp, root, [inp])


def multi_edit(inp: dict[str, Any], root: str) -> tuple[str, bool]:
    return _edit_file(inp, root, list(inp.get("edits") or []))
