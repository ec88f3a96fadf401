"""A tool's input as the model wrote it: JSON, read by narrowing.

A value of the wrong type raises ``TypeError`` (a missing required one ``KeyError``), which the loop
answers as the tool's failure: the model reads it and tries again.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject


def _wrong(key: str, wanted: str, value: JSON) -> TypeError:
    return TypeError(f"`{key}` must be {wanted}, not {type(value).__name__}")


def string(inp: JSONObject, key: str, default: str | None = None) -> str:
    """``inp[key]``, a string (``default`` when it is missing and there is one)."""
    value = inp[key] if default is None else inp.get(key, default)
    if not isinstance(value, str):
        raise _wrong(key, "a string", value)
    return value


def optional_string(inp: JSONObject, key: str) -> str | None:
    """``inp[key]``, a string, or None when it is missing or null."""
    value = inp.get(key)
    if value is not None and not isinstance(value, str):
        raise _wrong(key, "a string", value)
    return value


def whole_number(inp: JSONObject, key: str, default: int) -> int:
    """``inp[key]`` as an integer (a number, or a string of one), ``default`` when it is missing or 0."""
    value = inp.get(key) or default
    if not isinstance(value, (int, float, str)):
        raise _wrong(key, "a number", value)
    return int(value)


def number(inp: JSONObject, key: str, default: float) -> float:
    """``inp[key]`` as a number (or a string of one), ``default`` when it is missing or 0."""
    value = inp.get(key) or default
    if not isinstance(value, (int, float, str)):
        raise _wrong(key, "a number", value)
    return float(value)
