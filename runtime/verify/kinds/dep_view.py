"""The flat view every dependency-file parser produces, and how two views differ.

A view maps a dependency's label (where it is declared and its name, such as
``project.dependencies `requests` ``) to a canonical text of what is declared or
locked for it, or to ``""`` when being there is all that counts. Parsers drop
everything that is formatting (whitespace, key order, list order, comments),
so two views are equal exactly when the declared dependencies and the locked
versions are. Parsers raise ``ValueError`` for a file they cannot read.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from typing import Any

View = dict[str, str]

# Values longer than this are cut in feedback: a lock entry's hashes help nobody.
SHOWN_VALUE_CHARS = 80


def _dump(value: Any) -> str:
    # default=str: TOML dates and times have no JSON form, their text is enough.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_normalised(v) for v in value), key=_dump)
    return value


def canonical(value: Any) -> str:
    """Compact JSON with tables and lists sorted: order never matters in dependency data."""
    return value if isinstance(value, str) else _dump(_normalised(value))


def table(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is a table, ``{}`` when absent; anything else is unreadable."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a table holding `{key}`, found {type(data).__name__}")
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"`{key}` should be a table, not {type(value).__name__}")
    return value


def add_entries(view: View, section: str, value: Any, name: Callable[[str], str] = str) -> None:
    """One entry per key of a table, per item of a list, or one for the section itself."""
    if isinstance(value, dict):
        for key, spec in value.items():
            view[f"{section} `{name(key)}`"] = canonical(spec)
    elif isinstance(value, list):
        for item in value:
            view[f"{section} `{canonical(item)}`"] = ""
    else:
        view[section] = canonical(value)


def toml_lock(text: str, noise: set[str], name: Callable[[str], str] = str) -> View:
    """A TOML lock file of ``[[package]]`` tables (uv.lock, poetry.lock, Cargo.lock).

    Each package is labelled ``name@version`` with the rest of its table as
    value; ``noise`` holds top-level keys and ``table.key`` paths that carry no
    dependency information (lock format versions, content hashes).
    """
    data = tomllib.loads(text)
    packages = data.get("package", [])
    if not isinstance(packages, list) or not all(isinstance(p, dict) and "name" in p for p in packages):
        raise ValueError("`package` should be a list of tables with a `name`")
    locked: dict[str, list[str]] = {}
    for package in packages:
        details = {k: v for k, v in package.items() if k not in ("name", "version") and f"package.{k}" not in noise}
        label = f"package `{name(str(package['name']))}@{package.get('version', '?')}`"
        locked.setdefault(label, []).append(canonical(details))
    view = {label: " | ".join(sorted(values)) for label, values in locked.items()}
    for key, value in data.items():
        if key == "package" or key in noise:
            continue
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if f"{key}.{k}" not in noise}
        add_entries(view, key, value)
    return view


def differences(before: View, after: View) -> list[str]:
    """One line per dependency added, removed or changed, naming it."""
    lines = []
    for label in sorted(before.keys() | after.keys()):
        old, new = before.get(label), after.get(label)
        if old == new:
            continue
        if old is None:
            lines.append(f"{label} was added" + (f" (`{_shown(new)}`)" if new else ""))
        elif new is None:
            lines.append(f"{label} was removed")
        else:
            lines.append(f"{label} changed from `{_shown(old)}` to `{_shown(new)}`")
    return lines


def _shown(value: str | None) -> str:
    value = value or ""
    return value if len(value) <= SHOWN_VALUE_CHARS else value[: SHOWN_VALUE_CHARS - 3] + "..."
