"""Reading TOML manifests with line numbers for every error.

tomllib gives no positions for values, so schema errors (which know only a key
path such as ``("capabilities", "required", 2)``) are mapped back to a line by
``TomlSource.line_of``, a small scanner of table headers, keys and array items.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.errors import ManifestError
from runtime.lang.jsontypes import JSONDict

_DECODE_POS = re.compile(r"\(at line (\d+), column \d+\)")
_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*'))*)\s*=""")
_KEY_PART = re.compile(r"""\s*([A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')\s*(?:\.|$)""")


def _split_key(text: str) -> tuple[str, ...]:
    parts = []
    for m in _KEY_PART.finditer(text):
        raw = m.group(1)
        parts.append(raw[1:-1] if raw[0] in "\"'" else raw)
    return tuple(parts)


@dataclass
class TomlSource:
    """A TOML file's text, with a map from key paths to line numbers."""

    path: str
    text: str
    _index: dict[tuple[Any, ...], int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._build_index()

    def _build_index(self) -> None:
        # ``[a.b]`` after the second ``[[a]]`` belongs to ``a[1]``: it is indexed as
        # ``("a", 1, "b")``, the key path pydantic reports.
        table: tuple[Any, ...] = ()
        counts: dict[tuple[Any, ...], int] = {}
        in_multiline = None
        for no, line in enumerate(self.text.splitlines(), start=1):
            if in_multiline:
                if line.count(in_multiline) % 2 == 1:
                    in_multiline = None
                continue
            header = _HEADER.match(line)
            if header and not _KEY.match(line):
                keys = _split_key(header.group(2))
                resolved: tuple[Any, ...] = ()
                for key in keys[:-1]:
                    resolved += (key,)
                    if resolved in counts:  # a sub-table of the last entry of an array of tables
                        resolved += (counts[resolved] - 1,)
                resolved += keys[-1:]
                if header.group(1) == "[[":
                    n = counts.get(resolved, 0)
                    counts[resolved] = n + 1
                    self._index.setdefault(resolved, no)
                    table = resolved + (n,)
                else:
                    table = resolved
                self._index.setdefault(table, no)
                continue
            assignment = _KEY.match(line)
            if assignment:
                self._index.setdefault(table + _split_key(assignment.group(1)), no)
                rest = line[assignment.end():]
                for quote in ('"""', "'''"):
                    if rest.count(quote) % 2 == 1:
                        in_multiline = quote

    def line_of(self, loc: tuple[Any, ...]) -> int:
        """The line of the deepest part of ``loc`` that can be found (1 if none)."""
        for n in range(len(loc), 0, -1):
            prefix = tuple(loc[:n])
            if prefix in self._index:
                line = self._index[prefix]
                if n < len(loc) and isinstance(loc[n], int):
                    return self._array_item_line(line, loc[n])
                return line
        return 1

    def _array_item_line(self, start: int, index: int) -> int:
        """Best effort: the line holding the ``index``-th string of an array."""
        lines = self.text.splitlines()
        seen = -1
        for no in range(start, min(len(lines), start + 400) + 1):
            body = lines[no - 1].split("#", 1)[0] if no > start else lines[no - 1].split("=", 1)[-1]
            seen += len(re.findall(r""""[^"]*"|'[^']*'|\{""", body))
            if seen >= index:
                return no
            if "]" in body and body.count("[") < body.count("]"):
                break
        return start

    def error(self, loc: tuple[Any, ...], message: str) -> ManifestError:
        return ManifestError(self.path, self.line_of(loc), message)


def read_toml(path: Path | str, display: str | None = None) -> tuple[JSONDict, TomlSource]:
    """Parse a TOML file; any problem becomes a one-line ``ManifestError``.

    Its tables are read as JSON, to be narrowed or validated: a date or time, which no manifest takes, is
    refused there as a value of the wrong type."""
    shown = display or str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ManifestError(shown, 1, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ManifestError(shown, line, "file is not valid UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _DECODE_POS.search(msg)
        line = int(m.group(1)) if m else 1
        msg = _DECODE_POS.sub("", msg).strip()
        raise ManifestError(shown, line, f"invalid TOML: {msg}") from None
    return data, TomlSource(shown, text)
