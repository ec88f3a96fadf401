"""Read, Write, Edit and MultiEdit."""

from __future__ import annotations

import os

from runtime.agent.tools.inputs import string, whole_number

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject

MAX_READ_LINES = 2000
MAX_LINE = 2000


def _path(root: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(root, path)


def read(inp: JSONObject, root: str) -> tuple[str, bool]:
    file_path = string(inp, "file_path")
    path = _path(root, file_path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return f"cannot read {file_path}: {exc.strerror or exc}", True
    if b"\x00" in data[:8192]:
        return f"{file_path} is a binary file ({len(data)} bytes)", False
    lines = data.decode("utf-8", errors="replace").splitlines()
    start = max(whole_number(inp, "offset", 1), 1)
    count = whole_number(inp, "limit", MAX_READ_LINES)
    shown = lines[start - 1:start - 1 + count]
    out = [f"{n:6}\t{line[:MAX_LINE]}" for n, line in enumerate(shown, start=start)]
    if start - 1 + count < len(lines):
        out.append(f"... {len(lines) - (start - 1 + count)} more lines (use offset and limit)")
    return "\n".join(out) if out else "(empty file)", False


def write(inp: JSONObject, root: str) -> tuple[str, bool]:
    file_path = string(inp, "file_path")
    path = _path(root, file_path)
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(string(inp, "content", ""))
    except OSError as exc:
        return f"cannot write {file_path}: {exc.strerror or exc}", True
    return f"wrote {file_path}", False


def _apply(text: str, old: str, new: str, replace_all: bool) -> tuple[str | None, str]:
    if not old:
        return None, "old_string is empty"
    found = text.count(old)
    if found == 0:
        return None, "old_string was not found in the file"
    if found > 1 and not replace_all:
        return None, f"old_string occurs {found} times; give more context or set replace_all"
    return text.replace(old, new) if replace_all else text.replace(old, new, 1), ""


def _edit_file(inp: JSONObject, root: str, edits: list[JSONObject]) -> tuple[str, bool]:
    file_path = string(inp, "file_path")
    path = _path(root, file_path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot edit {file_path}: {exc}", True
    for n, e in enumerate(edits, start=1):
        new, why = _apply(text, str(e.get("old_string", "")), str(e.get("new_string", "")), bool(e.get("replace_all")))
        if new is None:
            return f"edit {n} of {file_path} not applied: {why}; nothing was changed", True
        text = new
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        return f"cannot write {file_path}: {exc.strerror or exc}", True
    return f"edited {file_path}", False


def _edits(value: JSON) -> list[JSONObject]:
    """MultiEdit's ``edits``: a list of objects (none when it is missing)."""
    if not value:
        return []
    if not isinstance(value, list):
        raise TypeError(f"`edits` must be a list of edits, not {type(value).__name__}")
    edits: list[JSONObject] = []
    for e in value:
        if not isinstance(e, dict):
            raise TypeError(f"an edit must be an object, not {type(e).__name__}")
        edits.append(e)
    return edits


def edit(inp: JSONObject, root: str) -> tuple[str, bool]:
    return _edit_file(inp, root, [inp])


def multi_edit(inp: JSONObject, root: str) -> tuple[str, bool]:
    return _edit_file(inp, root, _edits(inp.get("edits")))
