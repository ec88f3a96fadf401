"""migrate: deprecated atom names rewritten to their new names in TOML files.

Only string tokens whose whole value is an alias name change (values and
quoted keys alike); comments, order, quoting and layout stay byte for byte.
The result is re-parsed and compared with the original data, names
substituted, before anything is written: a rewrite that would change
anything else (a duplicate key, say) is refused with the line.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from runtime.errors import ManifestError


@dataclass(frozen=True)
class Use:
    line: int
    old: str
    new: str


def _string_tokens(text: str) -> Iterator[tuple[int, int, str]]:
    """Yield (start, end, value) of every single-line string token outside comments."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#":
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith('"""', i) or text.startswith("'''", i):
            end = text.find(text[i:i + 3], i + 3)
            i = n if end < 0 else end + 3
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if ch == '"' and text[j] == "\\" else 1
            yield i, j + 1, text[i + 1:j]
            i = j + 1
        else:
            i += 1


def _substitute(data: Any, aliases: dict[str, str]) -> Any:
    if isinstance(data, dict):
        return {aliases.get(k, k): _substitute(v, aliases) for k, v in data.items()}
    if isinstance(data, list):
        return [_substitute(v, aliases) for v in data]
    if isinstance(data, str):
        return aliases.get(data, data)
    return data


def rewrite(text: str, aliases: dict[str, str], where: str) -> tuple[str, list[Use]]:
    """The text with alias names replaced, and each use found."""
    uses: list[Use] = []
    pieces: list[str] = []
    last = 0
    for start, end, value in _string_tokens(text):
        if value in aliases:
            line = text.count("\n", 0, start) + 1
            uses.append(Use(line, value, aliases[value]))
            pieces += [text[last:start + 1], aliases[value]]
            last = end - 1
    if not uses:
        return text, uses
    new = "".join(pieces) + text[last:]
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(where, 1, f"invalid TOML: {exc}") from None
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(where, uses[0].line, f"cannot rewrite: the result would not parse ({exc})") from None
    if after != _substitute(before, aliases):
        raise ManifestError(where, uses[0].line, "cannot rewrite: the new names would collide with names already present")
    return new, uses
