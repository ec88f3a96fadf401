"""An agent's change against its base, file by file: each line numbered on both sides, marked as added,
removed or context, highlighted by its file's language (Pygments, which `rich` brings), the base's test
files the task let it change marked apart; and each line open to a comment, the comments sent back to the
agent as the first message of a new series of attempts (``runtime.console.send_back``).

Highlighting lexes each file's shown lines together (so a string or a comment across lines stays one) and
splits the tokens back into lines; every token's text is made printable and escaped, and only the token
types' class names (Pygments' own short names, never text of the diff) reach an attribute.
"""

from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from runtime.console.pages import text
from runtime.printable import printable

if TYPE_CHECKING:
    from pygments.lexer import Lexer

HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
HIGHLIGHT_MAX_LINES = 4000  # a file's shown lines beyond this are shown plain
# What one page of a change shows, so a change of megabytes stays a page a browser opens in a second: a file's
# first FILE_LINES lines (the rest on the file's own page), PAGE_LINES lines and PAGE_CHARS characters in all
# (the files after are listed, each a link to its page), each line's first LINE_CHARS characters (the rest
# counted). A file's own page shows it whole, each line cut the same way.
FILE_LINES = 2000
PAGE_LINES = 12000
PAGE_CHARS = 400_000
LINE_CHARS = 1000
HIGHLIGHT_CHARS = 150_000  # the characters one page highlights (a lexer's pace): the files past them are plain


@dataclass(frozen=True)
class Line:
    kind: str  # add, del, ctx, hunk
    text: str  # the line without its marker, made printable
    old: int | None
    new: int | None


@dataclass
class FileChange:
    path: str
    lines: list[Line] = field(default_factory=list)
    binary: bool = False

    def line(self, side: str, number: int) -> Line | None:
        """The line a comment names: ``side`` new (added or context) or old (removed), by its number."""
        for ln in self.lines:
            if ln.kind == "hunk":
                continue
            if side == "new" and ln.kind != "del" and ln.new == number:
                return ln
            if side == "old" and ln.kind == "del" and ln.old == number:
                return ln
        return None


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote(name: str) -> str:
    """A path as git prints it in a diff's headers, its C-style quoting undone (`core.quotePath`: a name with
    bytes past ASCII, a quote, a backslash or a control character is quoted, each such byte escaped): the real
    name, decoded as UTF-8 (a byte that is not shows as U+FFFD; ``text`` escapes what it shows)."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    out, body, i = bytearray(), name[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out += ch.encode("utf-8")
            i += 1
        elif body[i + 1] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        elif body[i + 1:i + 4].isdigit() and len(body[i + 1:i + 4]) == 3:
            out.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        else:
            out += ch.encode("utf-8")
            i += 1
    return out.decode("utf-8", errors="replace")


def _side(field: str) -> str | None:
    """The path of a `---`/`+++`/`rename` field: git's trailing tab (after a name with a space) and its quoting
    gone, without its ``a/``/``b/``; None for /dev/null (the side a new or deleted file lacks)."""
    field = field[:-1] if field.endswith("\t") else field
    if field == "/dev/null":
        return None
    name = unquote(field)
    return name[2:] if name[:2] in ("a/", "b/") else name


def _header(rest: str) -> str:
    """The new side's path from `diff --git A B` (for a change without ---/+++ lines: a binary file, a mode)."""
    if rest.startswith('"'):
        i = 1
        while i < len(rest) and rest[i] != '"':
            i += 2 if rest[i] == "\\" else 1
        second = rest[i + 1:].lstrip(" ")
    elif ' "' in rest:
        second = rest[rest.index(' "') + 1:]
    else:
        second = rest[(len(rest) - 1) // 2 + 1:]  # two unquoted names, the same name (a rename says it apart)
    return _side(second) or ""


def parse_diff(diff: str) -> list[FileChange]:
    """A unified diff (`git diff`) as its files, each under its real name (git's quoting undone): each line
    with its numbers on the old and the new side."""
    out: list[FileChange] = []
    current: FileChange | None = None
    old = new = 0
    in_hunks = False
    named = False  # the path came from a ---/+++ or rename line, which the header only stands in for
    for raw in diff.split("\n"):  # git's lines: a \r or a form feed inside one is the file's, not a line end
        raw = raw.removesuffix("\r")
        if raw.startswith("diff --git "):
            current, in_hunks, named = FileChange(_header(raw[len("diff --git "):])), False, False
            out.append(current)
            continue
        if current is None:
            continue
        if not in_hunks:
            if raw.startswith("+++ ") and (path := _side(raw[4:])) is not None:
                current.path, named = path, True
            elif raw.startswith("--- ") and not named and (path := _side(raw[4:])) is not None:
                current.path = path  # a deleted file's only name; a +++ name after it wins
            elif raw.startswith("Binary files "):
                current.binary = True
            elif raw.startswith("rename to "):
                current.path, named = _side(raw[len("rename to "):]) or current.path, True
        match = HUNK.match(raw)
        if match:
            in_hunks = True
            old, new = int(match.group(1)), int(match.group(2))
            current.lines.append(Line("hunk", printable(raw), None, None))
        elif in_hunks and raw.startswith("+"):
            current.lines.append(Line("add", printable(raw[1:]), None, new))
            new += 1
        elif in_hunks and raw.startswith("-"):
            current.lines.append(Line("del", printable(raw[1:]), old, None))
            old += 1
        elif in_hunks and raw.startswith(" "):
            current.lines.append(Line("ctx", printable(raw[1:]), old, new))
            old, new = old + 1, new + 1
        elif in_hunks and raw.startswith("\\"):
            continue  # "\ No newline at end of file"
    for change in out:
        if not change.path:
            change.path = "(unnamed)"
    return out


@lru_cache(maxsize=256)
def _lexer(path: str) -> Lexer | None:
    from pygments.lexers import get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename(path.rsplit("/", 1)[-1], stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return None


def _css(ttype: object) -> str:
    from pygments.token import STANDARD_TYPES

    while ttype is not None:
        name = STANDARD_TYPES.get(ttype)
        if name:
            return str(name)
        ttype = getattr(ttype, "parent", None)
    return ""


def highlight_styles() -> str:
    """The style sheet of the token classes `highlighted` writes (Pygments' default style), for `/highlight.css`."""
    from pygments.formatters import HtmlFormatter

    return str(HtmlFormatter(style="default").get_style_defs(".hl"))


def highlighted(change: FileChange, plain: bool = False) -> list[str]:
    """The HTML of each of the change's lines (hunk headers as plain text), highlighted when its language
    is known, it is not too long and not ``plain``."""
    code = [ln for ln in change.lines if ln.kind != "hunk"]
    lexer = None if plain else _lexer(change.path)
    if lexer is None or len(code) > HIGHLIGHT_MAX_LINES:
        return [html.escape(ln.text, quote=True) for ln in change.lines]
    pieces: list[list[str]] = [[]]
    for ttype, value in lexer.get_tokens("\n".join(ln.text for ln in code) + "\n"):
        for k, part in enumerate(value.split("\n")):
            if k:
                pieces.append([])
            if part:
                escaped = html.escape(part, quote=True)
                css = _css(ttype)
                pieces[-1].append(f"<span class=\"{css}\">{escaped}</span>" if css else escaped)
    lines = iter("".join(p) for p in pieces)
    return [html.escape(ln.text, quote=True) if ln.kind == "hunk" else next(lines, html.escape(ln.text, quote=True))
            for ln in change.lines]


def _rows(change: FileChange, lines: list[Line], plain: bool = False) -> list[str]:
    """The table rows of ``lines`` of ``change``, each cut at ``LINE_CHARS`` characters (what is cut, counted)."""
    cut = FileChange(change.path, [replace(ln, text=ln.text[:LINE_CHARS]) for ln in lines], change.binary)
    rows = []
    for ln, whole, shown in zip(cut.lines, lines, highlighted(cut, plain), strict=True):
        more = len(whole.text) - len(ln.text)
        if more:
            shown += f"<span class=\"cut\"> … {more} more characters</span>"
        if ln.kind == "hunk":
            rows.append(f"<tr class=\"hunk\"><td class=\"ln\"></td><td class=\"ln\"></td><td class=\"code\">{shown}</td></tr>")
            continue
        side, number = ("old", ln.old) if ln.kind == "del" else ("new", ln.new)
        rows.append(f"<tr class=\"{ln.kind}\" data-side=\"{side}\" data-line=\"{number}\">"
                    f"<td class=\"ln\">{ln.old or ''}</td><td class=\"ln\">{ln.new or ''}</td>"
                    f"<td class=\"code\"><button class=\"comment\" type=\"button\" title=\"comment on this line\">+</button>"
                    f"<code class=\"hl\">{shown}</code></td></tr>")
    return rows


def _fits(lines: list[Line], most: int, chars: int) -> tuple[int, int]:
    """How many of ``lines`` (at most ``most``) fit in ``chars`` characters, each cut at ``LINE_CHARS``, and the
    characters they take."""
    n = used = 0
    while n < min(most, len(lines)) and used < chars:
        used += min(len(lines[n].text), LINE_CHARS) + 1
        n += 1
    return n, used


def diff_page(agent_id: str, base: str, head: str, files: list[FileChange], test_edits: set[str],
              sendable: str | None, whole: int | None = None) -> str:
    """The change; ``sendable`` None when it can be sent back, else why not (shown instead of the form).
    ``whole``: the index of the one file shown whole (its own page); else each file up to the page's bounds."""
    here = f"/agents/{text(agent_id)}/diff"
    parts = [f"<p class=\"links\"><a href=\"/agents/{text(agent_id)}\">agent {text(agent_id)}</a> · "
             f"{text(base[:12])}..{text(head[:12])} · {len(files)} file{'s' if len(files) != 1 else ''}"
             + (f" · <a href=\"{here}\">every file</a>" if whole is not None else "") + "</p>"]
    if not files:
        parts.append("<p class=\"empty\">no change against the base</p>")
    budget, chars, lexed = PAGE_LINES, PAGE_CHARS, HIGHLIGHT_CHARS
    for k, change in enumerate(files):
        if whole is not None and k != whole:
            continue
        edited = change.path in test_edits
        badge = " <span class=\"badge\">test edit: an existing test the task let it change</span>" if edited else ""
        parts.append(f"<section class=\"file{' test-edit' if edited else ''}\" data-path=\"{text(change.path)}\">"
                     f"<h2>{text(change.path)}{badge}</h2>")
        if change.binary:
            parts.append("<p class=\"empty\">a binary file</p></section>")
            continue
        if whole is not None:  # the file's own page: all of it
            limit, size = _fits(change.lines, len(change.lines), sys.maxsize)
        else:
            limit, size = _fits(change.lines, min(FILE_LINES, budget), chars)
        if limit == 0:
            parts.append(f"<p class=\"empty\">{len(change.lines)} lines, past what one page shows: "
                         f"<a href=\"{here}?file={k}\">show this file</a></p></section>")
            continue
        budget -= limit
        chars -= size
        lexed -= size
        parts.append("<div class=\"scroll\"><table class=\"diff\"><tbody>")
        parts += _rows(change, change.lines[:limit], plain=lexed < 0)
        parts.append("</tbody></table></div>")
        if limit < len(change.lines):
            parts.append(f"<p class=\"empty\">{len(change.lines) - limit} more lines: "
                         f"<a href=\"{here}?file={k}\">show all of this file</a></p>")
        parts.append("</section>")
    parts.append("<section id=\"send-back\"><h2>send it back</h2>")
    if sendable is None:
        parts.append("<p>Comments on lines (the <strong>+</strong> beside each) and a note below go to the agent as the "
                     "first message of a new series of attempts on this work, under the same task; its new attempt "
                     "shows on its page.</p><ol id=\"comments\"></ol>"
                     "<label for=\"note\">a note for the agent</label><textarea id=\"note\" rows=\"4\"></textarea>"
                     f"<p><button id=\"send\" type=\"button\" data-agent=\"{text(agent_id)}\">send back</button>"
                     "<span id=\"sent\"></span></p>")
    else:
        parts.append(f"<p class=\"empty\">{text(sendable)}</p>")
    parts.append("</section>")
    return "".join(parts)
