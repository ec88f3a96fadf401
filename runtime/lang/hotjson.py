"""JSON for the hook's hot path: the standard library's own C scanner and encoder (`_json`), without `json` itself.

Written by hand because the hook is a fresh process per tool call: importing `json` imports `json.decoder`,
which imports `re`, which imports `enum` (about 6 ms, a third of a cold hook's own cost), and nothing else on
the hook's path needs either. The work is the standard library's: `_json.make_scanner` and `_json.make_encoder`
are what `json.loads` and `json.dumps` run in CPython, given the same settings here (strict strings, NaN and the
infinities read, ASCII output with the default separators). So `loads` returns what `json.loads` returns and
`dumps` writes what `json.dumps(value)` writes; an error is a ValueError, as `json`'s own are (bad input is
read again by `json` itself, for its message: only bad input pays for importing it).
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from typing import Any

_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
_WHITESPACE = " \t\n\r"


class _Context:
    """What `_json.make_scanner` reads off `json.JSONDecoder`: its settings, as `json.loads` has them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__
    memo: dict[str, str] = {}  # noqa: RUF012 - the scanner's own key cache, cleared by it after every call


# A JSONDecoder's settings, duck-typed as CPython's scanner reads them.
_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]


def _default(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# check_circular's markers, the default hook, ASCII strings, no indent, ": " and ", ", unsorted, no skipped keys,
# NaN allowed: `json.dumps(value)`'s own settings.
_encode = _json.make_encoder({}, _default, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True)


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)`` for a document in UTF-8 (bytes) or text."""
    if isinstance(data, (bytes, bytearray)):
        # `utf-8-sig` by hand: that codec is a module of its own to import, the BOM three bytes to drop.
        text = (data[3:] if data[:3] == b"\xef\xbb\xbf" else data).decode("utf-8")
    else:
        text = data
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"Expecting value: char {exc.value}") from None
    except SystemError:
        # CPython 3.11's scanner raises its errors as `json.decoder.JSONDecodeError`, found in `sys.modules`
        # only: before `json` is imported it fails without one. Bad input alone gets here; `json` says why.
        import json

        return json.loads(text)
    rest = text[end:]
    if rest.strip(_WHITESPACE):
        raise ValueError(f"Extra data: char {end + len(rest) - len(rest.lstrip(_WHITESPACE))}")
    return value


def dumps(value: object) -> str:
    """``json.dumps(value)``."""
    return "".join(_encode(value, 0))
