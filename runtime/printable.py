"""Text that came from an agent, made safe to show on the operator's terminal.

An agent controls much of what the runtime shows: its stdout and stderr, its
report, the names of the files it wrote, the output of the checks run on its
work, the tool calls it asks approval for. Printed raw, that text controls the
terminal: ESC and C1 sequences set the window title, clear the screen, move the
cursor or fake a green "ok" line; CR and backspace overwrite what was printed;
bidi overrides and zero-width characters make one name read as another. Every
human output of the runtime passes such text through ``printable`` first.

Hand-written because the standard library has no function for it (``repr``
also escapes quotes and backslashes and adds its own, ``str.isprintable``
only answers yes or no, and treats a tab as unprintable), and because this is
the boundary between the agent and the operator, so what it lets through is
spelled out here: everything but the characters of the Unicode categories
below, a tab, and a newline where a block of several lines is meant. It
imports only the standard library, so any layer may use it.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["UNSAFE_CATEGORIES", "printable"]

# Cc: C0 controls, DEL and the C1 controls 0x80-0x9f (ESC, CSI 0x9b, BEL, CR, backspace ...).
# Cf: format characters, invisible by design: bidi embeddings, overrides and isolates
#     (U+202A-U+202E, U+2066-U+2069), LRM/RLM, zero-width space and joiners, the BOM, soft hyphen,
#     interlinear annotation marks, tag characters.
# Cs: lone surrogates (undecodable bytes read with surrogateescape); the terminal's encoder
#     would fail on them.
# Zl, Zp: the line and paragraph separators U+2028 and U+2029, which some terminals break lines at.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

# Printable ASCII never needs a look-up; anything else is checked one character at a time.
_SUSPECT = re.compile(r"[^\x20-\x7e\t]")
_SUSPECT_MULTILINE = re.compile(r"[^\x20-\x7e\t\n]")


_SHORT = {"\n": "\\n", "\r": "\\r"}  # the two a reader meets most, as Python writes them


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if unicodedata.category(ch) not in UNSAFE_CATEGORIES:
        return ch
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as surrogateescape kept it: show the byte
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(value: object, *, multiline: bool = False) -> str:
    """``value`` as text with every character that could act on a terminal written as an escape.

    Tabs stay; newlines stay only with ``multiline`` (a block meant to span lines: test output, a
    report), where a CR of a CRLF line end is dropped. Everything else of the unsafe categories,
    CR, backspace, ESC and the C1 controls among them, becomes ``\\n``, ``\\r``, ``\\xNN``,
    ``\\uNNNN`` or ``\\UNNNNNNNN``; so does a lone surrogate (a byte that was not UTF-8 shows as
    ``\\xNN``).
    Total: any object is shown through ``str``, bytes are decoded as UTF-8 with surrogateescape.
    """
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", "surrogateescape")
    elif isinstance(value, str):
        text = value
    else:
        text = str(value)
    if multiline:
        text = text.replace("\r\n", "\n")
        return _SUSPECT_MULTILINE.sub(_escape, text)
    return _SUSPECT.sub(_escape, text)
