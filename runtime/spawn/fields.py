"""Our own records' JSON read back (`state.json`, an outcome's JSON): each field narrowed to the type its
record gives it.

A required field that is missing, or a field of another type, is a ``ValueError`` naming it: the document
was not written by these records. A number stays as it was written (an integer is not made a float), so a
record read and written again is the same JSON.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject

_E = TypeVar("_E", bound=StrEnum)


def _wrong(key: str, wanted: str, value: JSON) -> ValueError:
    return ValueError(f"`{key}` must be {wanted}, not {type(value).__name__}")


def _required(data: JSONObject, key: str) -> JSON:
    if key not in data:
        raise ValueError(f"`{key}` is missing")
    return data[key]


def only(data: JSONObject, names: set[str], what: str) -> None:
    """Refuse a field ``data`` holds that is not one of ``names``."""
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{what} has no field {', '.join(f'`{k}`' for k in unknown)}")


def text(data: JSONObject, key: str, default: str | None = None) -> str:
    """A string; required unless there is a ``default``."""
    value = _required(data, key) if default is None else data.get(key, default)
    if not isinstance(value, str):
        raise _wrong(key, "a string", value)
    return value


def member(data: JSONObject, key: str, family: type[_E]) -> _E:
    """A required string naming a member of ``family`` by its value."""
    value = text(data, key)
    try:
        return family(value)
    except ValueError:
        raise ValueError(f"`{key}` must be one of {', '.join(family)}, not {value!r}") from None


def optional_text(data: JSONObject, key: str, *, required: bool = False) -> str | None:
    """A string or null (missing: null, unless ``required``)."""
    value = _required(data, key) if required else data.get(key)
    if value is not None and not isinstance(value, str):
        raise _wrong(key, "a string or null", value)
    return value


def integer(data: JSONObject, key: str, default: int | None = None) -> int:
    """An integer; required unless there is a ``default``."""
    value = _required(data, key) if default is None else data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(key, "an integer", value)
    return value


def optional_integer(data: JSONObject, key: str) -> int | None:
    """An integer or null (missing: null)."""
    value = data.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise _wrong(key, "an integer or null", value)
    return value


def number(data: JSONObject, key: str, default: float | None = None) -> float:
    """A number, as it was written; required unless there is a ``default``."""
    value = _required(data, key) if default is None else data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _wrong(key, "a number", value)
    return value


def flag(data: JSONObject, key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise _wrong(key, "true or false", value)
    return value


def objects(data: JSONObject, key: str) -> list[JSONObject]:
    """An array of objects (missing or null: none)."""
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong(key, "an array", value)
    items: list[JSONObject] = []
    for item in value:
        if not isinstance(item, dict):
            raise _wrong(f"{key}[{len(items)}]", "an object", item)
        items.append(item)
    return items
