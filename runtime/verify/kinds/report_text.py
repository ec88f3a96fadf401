"""The structure of an agent's final report, shared by report-fields and severity-grades.

Reports are read as structure, never searched as strings: a word inside a
sentence is not a field. Two forms are understood:

- JSON: the whole report as one object, or objects in fenced ```json blocks;
- Markdown or plain text: ``## Heading`` sections (their content runs to the
  next heading of the same or a higher level) and ``Field: value`` lines,
  optionally bold or in a list item. A ``Field:`` line with nothing after the
  colon takes the lines below it, up to the next heading or unindented label.

Lines inside fenced code blocks are content, never headings or labels.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_JSON_BLOCK = re.compile(r"^\s*```\s*json\s*\n(.*?)^\s*```", re.M | re.S | re.I)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)[\s#]*$")
_LABEL = re.compile(
    r"^(\s*(?:[-*+]\s+|\d+[.)]\s+)?)(?:\*\*|__)?([A-Za-z][A-Za-z0-9 _/-]{0,60}?)(?:\*\*|__)?\s*:(?:\*\*|__)?(?:\s+(.*))?$"
)
LABEL_LEVEL = 7  # labels rank below every heading


@dataclass(frozen=True)
class Section:
    """A heading or a label, with the text on its own line and the lines it holds."""

    title: str
    level: int
    inline: str
    body: tuple[str, ...]

    def has_content(self) -> bool:
        return any(has_content(line) for line in (self.inline, *self.body))


def normalise(name: str) -> str:
    """Field names compare case-insensitively, with `-`, `_` and spaces alike and emphasis ignored."""
    return " ".join(re.sub(r"[-_\s*`]+", " ", name).strip(" :").casefold().split())


def has_content(value: JSON) -> bool:
    """Whether a value says something: text with a letter or digit, or a non-empty structure."""
    if isinstance(value, str):
        return any(ch.isalnum() for ch in value)
    if isinstance(value, (list, dict)):
        return bool(value)
    return value is not None


def json_objects(report: str) -> list[JSONObject]:
    """The report when it is one JSON object, else the objects of its fenced ```json blocks."""
    try:
        whole, blocks = json.loads(report), []
    except ValueError:
        whole, blocks = None, _JSON_BLOCK.findall(report)
    objects: list[JSONObject] = [whole] if isinstance(whole, dict) else []
    for block in blocks:
        try:
            data = json.loads(block)
        except ValueError:
            continue
        if isinstance(data, dict):
            objects.append(data)
    return objects


def code_lines(lines: list[str]) -> list[bool]:
    """Which lines are inside fenced code blocks; a fence line counts as code itself (it is content)."""
    # As CommonMark: a block closes only on a fence of its own character at least as long as the
    # one that opened it, so a "~~~" inside a "```" block is content and cannot end it early.
    flags: list[bool] = []
    opened = ""
    for line in lines:
        found = _FENCE.match(line)
        fence = found.group(1) if found else ""
        if not opened:
            flags.append(bool(fence))
            opened = fence
        else:
            flags.append(True)
            if fence and fence[0] == opened[0] and len(fence) >= len(opened) and not line.strip()[len(fence):].strip():
                opened = ""
    return flags


def heading_levels(lines: list[str], in_code: list[bool]) -> list[int]:
    """The heading level of each line, 0 for lines that are not headings."""
    return [0 if code or not (m := HEADING.match(line)) else len(m[1]) for line, code in zip(lines, in_code, strict=True)]


def heading_title(line: str) -> str:
    """The title of a line ``heading_levels`` gave a level (a heading: ``HEADING`` matches it)."""
    match = HEADING.match(line)
    assert match is not None
    return match[2]


def sections(report: str) -> list[Section]:
    lines = report.splitlines()
    in_code = code_lines(lines)
    levels = heading_levels(lines, in_code)
    found = []
    for i, line in enumerate(lines):
        if in_code[i]:
            continue
        if level := levels[i]:
            end = next((j for j in range(i + 1, len(lines)) if 0 < levels[j] <= level), len(lines))
            found.append(Section(heading_title(line), level, "", tuple(lines[i + 1:end])))
        elif label := _LABEL.match(line):
            inline = label[3] or ""
            end = i + 1
            if not has_content(inline):
                end = next((j for j in range(i + 1, len(lines)) if levels[j] or _is_top_label(lines[j], in_code[j])), len(lines))
            found.append(Section(label[2], LABEL_LEVEL, inline, tuple(lines[i + 1:end])))
    return found


def field(report: str, name: str) -> str | None:
    """The content of the report's field ``name`` (a ``Field: value`` line, a heading's section, or a JSON
    object's key), or None when the report has no such field with something in it."""
    wanted = normalise(name)
    for obj in json_objects(report):
        for key, value in obj.items():
            if normalise(str(key)) == wanted and has_content(value):
                return value if isinstance(value, str) else json.dumps(value)
    for section in sections(report):
        if normalise(section.title) == wanted and section.has_content():
            return "\n".join(line for line in (section.inline, *section.body) if line).strip()
    return None


def _is_top_label(line: str, in_code: bool) -> bool:
    label = _LABEL.match(line)
    return label is not None and not in_code and not label[1]
