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
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from runtime.console.pages import text
from runtime.printable import printable

if TYPE_CHECKING:
    from pygments.lexer import Lexer

HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
HIGHLIGHT_MAX_LINES = 4000  # a file's shown lines beyond this are shown plain


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


def parse_diff(diff: str) -> list[FileChange]:
    """A unified diff (`git diff`) as its files: each line with its numbers on the old and the new side."""
    out: list[FileChange] = []
    current: FileChange | None = None
    old = new = 0
    in_hunks = False
    for raw in diff.splitlines():
        if raw.startswith("diff --git "):
            current, in_hunks = FileChange(""), False
            out.append(current)
            continue
        if current is None:
            continue
        if not in_hunks:
            if raw.startswith("+++ "):
                target = raw[4:]
                current.path = target[2:] if target.startswith("b/") else current.path or target
            elif raw.startswith("--- "):
                source = raw[4:]
                current.path = current.path or (source[2:] if source.startswith("a/") else source)
            elif raw.startswith("Binary files "):
                current.binary = True
            elif raw.startswith("rename to "):
                current.path = raw[len("rename to "):]
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


def highlighted(change: FileChange) -> list[str]:
    """The HTML of each of the change's lines (hunk headers as plain text), highlighted when its language
    is known and it is not too long."""
    code = [ln for ln in change.lines if ln.kind != "hunk"]
    lexer = _lexer(change.path)
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


def diff_page(agent_id: str, base: str, head: str, files: list[FileChange], test_edits: set[str],
              sendable: str | None) -> str:
    """The change; ``sendable`` None when it can be sent back, else why not (shown instead of the form)."""
    parts = [f"<p class=\"links\"><a href=\"/agents/{text(agent_id)}\">agent {text(agent_id)}</a> · "
             f"{text(base[:12])}..{text(head[:12])} · {len(files)} file{'s' if len(files) != 1 else ''}</p>"]
    if not files:
        parts.append("<p class=\"empty\">no change against the base</p>")
    for change in files:
        edited = change.path in test_edits
        badge = " <span class=\"badge\">test edit: an existing test the task let it change</span>" if edited else ""
        parts.append(f"<section class=\"file{' test-edit' if edited else ''}\" data-path=\"{text(change.path)}\">"
                     f"<h2>{text(change.path)}{badge}</h2>")
        if change.binary:
            parts.append("<p class=\"empty\">a binary file</p></section>")
            continue
        parts.append("<table class=\"diff\"><tbody>")
        for ln, shown in zip(change.lines, highlighted(change), strict=True):
            if ln.kind == "hunk":
                parts.append(f"<tr class=\"hunk\"><td class=\"ln\"></td><td class=\"ln\"></td><td class=\"code\">{shown}</td></tr>")
                continue
            side, number = ("old", ln.old) if ln.kind == "del" else ("new", ln.new)
            parts.append(f"<tr class=\"{ln.kind}\" data-side=\"{side}\" data-line=\"{number}\">"
                         f"<td class=\"ln\">{ln.old or ''}</td><td class=\"ln\">{ln.new or ''}</td>"
                         f"<td class=\"code\"><button class=\"comment\" type=\"button\" title=\"comment on this line\">+</button>"
                         f"<code class=\"hl\">{shown}</code></td></tr>")
        parts.append("</tbody></table></section>")
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
