"""What every verify kind shares: checked access to its inputs, and bounded quoting.

Parameters come from the compiled policy (or an atom's example) as plain tables, so a kind trusts their
shape no more than a judge trusts its evidence: each kind reads them into its own record through these
accessors, which check the type and raise ``MalformedInput`` naming the key.
``runtime.verify.kinds.registry.evaluate`` turns that into an ``error`` result, because a check that cannot
read its input has not judged the agent's work.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeGuard

from runtime.lang.globs import globs_to_regex

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject

# Feedback goes into a model's context: long listings are cut, with a count of the rest.
MAX_LISTED = 20
MAX_QUOTED_LINES = 40


class MalformedInput(ValueError):
    """A parameter or an evidence value is missing or has the wrong type."""


def take_str(data: JSONObject, key: str, where: str) -> str:
    value = _take(data, key, where)
    if not isinstance(value, str):
        raise MalformedInput(f"{where} `{key}` must be a string, got {type(value).__name__}")
    return value


def take_int(data: JSONObject, key: str, where: str) -> int:
    value = _take(data, key, where)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedInput(f"{where} `{key}` must be an integer, got {type(value).__name__}")
    return value


def take_str_list(data: JSONObject, key: str, where: str) -> list[str]:
    value = _take(data, key, where)
    if not _str_list(value):
        raise MalformedInput(f"{where} `{key}` must be a list of strings")
    return value


def take_table_list(data: JSONObject, key: str, where: str) -> list[JSONObject]:
    value = _take(data, key, where)
    if not _table_list(value):
        raise MalformedInput(f"{where} `{key}` must be a list of tables")
    return value


def take_str_map(data: JSONObject, key: str, where: str) -> dict[str, str]:
    value = _take(data, key, where)
    if not _str_map(value):
        raise MalformedInput(f"{where} `{key}` must be a table of strings keyed by path")
    return value


# Guards rather than copies: an accessor hands back the very value it checked.
def _str_list(value: JSON) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _table_list(value: JSON) -> TypeGuard[list[JSONObject]]:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _str_map(value: JSON) -> TypeGuard[dict[str, str]]:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _take(data: JSONObject, key: str, where: str) -> JSON:
    if not isinstance(data, Mapping):
        raise MalformedInput(f"the {where} must be a table, got {type(data).__name__}")
    if key not in data:
        raise MalformedInput(f"{where} `{key}` is missing")
    return data[key]


def compile_globs(globs: Sequence[str]) -> re.Pattern[str] | None:
    """One matcher for a glob list; ``None`` for an empty list (it matches nothing)."""
    try:
        pattern = globs_to_regex(list(globs))
    except ValueError as exc:
        raise MalformedInput(f"parameter `globs`: {exc}") from None
    return re.compile(pattern) if pattern else None


def listing(items: list[str], limit: int = MAX_LISTED) -> str:
    """Markdown list lines of at most ``limit`` items, saying how many more were left out."""
    lines = [f"- {item}" for item in items[:limit]]
    if len(items) > limit:
        lines.append(f"- ... and {len(items) - limit} more")
    return "\n".join(lines)


def tail(text: str, limit: int) -> list[str]:
    """The last ``limit`` lines of an output, trailing blank lines dropped."""
    return text.rstrip().splitlines()[-limit:] if text.strip() else []


def quoted(lines: list[str]) -> str:
    """Output lines as an indented block, so they read as quoted output, not as instructions."""
    return "\n".join(f"    {line}" for line in lines)
