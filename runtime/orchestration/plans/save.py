"""Writing a plan's tables back as ``plan.toml`` (a planner's plan, saved to re-run without a model).

``render_plan`` lays the file out as people write it: the ``#:schema`` line,
``[plan]`` (its keys, then ``[plan.planner]`` and ``[plan.reviewer]``), then
each ``[[subtask]]`` with its inline task tables in task-file order. Strings
holding a line break are written as multi-line strings; long arrays one item
per line. ``tomllib.loads(render_plan(d)) == d`` for any ``d`` made of TOML
values, except that ``None`` (TOML has no null) is left out where it is the
value of a key, which reads back as the key's default. ``None`` inside an
array cannot be written and is a ``ValueError``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

import tomlkit
from tomlkit.container import Container
from tomlkit.items import Item, Table

from runtime.errors import FatalError

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject

SCHEMA_URL = "https://agent-runtime.invalid/schemas/plan.schema.json"  # `$id` of `runtime schema`'s plan.schema.json
_WIDE = 80  # arrays rendered longer than this go one item per line

_MODEL = ["model", "script", "api-base", "max-retries"]
_ORDER: dict[tuple[str, ...], list[str]] = {
    (): ["plan", "subtask"],
    ("plan",): ["goal", "success-criteria", "checks", "max-replans", "concurrency", "max-dispatches", "planner", "reviewer"],
    ("plan", "planner"): _MODEL,
    ("plan", "reviewer"): _MODEL,
    ("subtask",): ["id", "sequence", "uses", "file", "task", "scope", "verification", "output", "network", "agent", "body"],
    ("subtask", "task"): ["role", "agent-id", "parent-agent", "goal"],
    ("subtask", "scope"): ["files-whitelist", "files-denylist"],
    ("subtask", "verification"): ["test-command", "test-count-min", "check-commands", "baseline"],
    ("subtask", "network"): ["allowed-domains"],
    ("subtask", "agent"): ["backend", "model", "script", "api-base", "command", "env", "retries", "limits"],
}


class PlanExists(FatalError):
    """``save_plan`` was asked to write over an existing file."""


def _is_table_array(value: JSON) -> TypeGuard[list[JSONObject]]:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _ordered(data: JSONObject, where: tuple[str, ...]) -> list[str]:
    """Keys in the usual order, plain values before tables (TOML needs that), unknown keys last."""
    prefer = _ORDER.get(where, [])
    keys = sorted(data, key=lambda k: prefer.index(k) if k in prefer else len(prefer))
    rank = lambda k: 2 if _is_table_array(data[k]) else (1 if isinstance(data[k], dict) else 0)  # noqa: E731
    return sorted(keys, key=rank)


def _string(text: str) -> Item:
    # CR is left raw in tomlkit's multi-line strings (and read back as LF): keep such text on one line.
    if "\n" in text and "\r" not in text:
        return tomlkit.string(text, multiline=True)
    return tomlkit.string(text)


def _value(value: JSON, where: str) -> Item:
    if value is None:
        raise ValueError(f"`{where}` is null, which TOML cannot write")
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        for k, v in value.items():
            if v is not None:
                table.append(k, _value(v, f"{where}.{k}"))
        return table
    if isinstance(value, list):
        array = tomlkit.array()
        for i, v in enumerate(value):
            array.append(tomlkit.string(v) if isinstance(v, str) else _value(v, f"{where}[{i}]"))
        if len(array.as_string()) > _WIDE:
            array.multiline(True)
        return array
    return tomlkit.item(value)


def _table(data: JSONObject, where: tuple[str, ...], shown: str) -> Table:
    table = tomlkit.table()
    _fill(table, data, where, shown)
    return table


def _fill(container: Container | Table, data: JSONObject, where: tuple[str, ...], shown: str) -> None:
    for key in _ordered(data, where):
        value = data[key]
        name = f"{shown}.{key}" if shown else key
        if value is None:
            continue
        if isinstance(value, dict):
            container.append(key, _table(value, where + (key,), name))
        elif _is_table_array(value):
            aot = tomlkit.aot()
            for n, item in enumerate(value):
                aot.append(_table(item, where + (key,), f"{name}[{n}]"))
            container.append(key, aot)
        elif isinstance(value, str):
            container.append(key, _string(value))
        else:
            container.append(key, _value(value, name))


def render_plan(plan_data: JSONObject, *, schema: str | None = SCHEMA_URL) -> str:
    """The TOML text of a plan's tables (``#:schema`` first unless ``schema`` is None)."""
    if not isinstance(plan_data, dict):
        raise ValueError("a plan is a table (a JSON object)")
    doc = tomlkit.document()
    _fill(doc, plan_data, (), "")
    text = tomlkit.dumps(doc)
    return (f"#:schema {schema}\n" if schema else "") + text


def save_plan(path: Path | str, plan_data: JSONObject, *, overwrite: bool = False, schema: str | None = SCHEMA_URL) -> Path:
    """Write ``render_plan(plan_data)`` to ``path`` atomically.

    The text goes to a temporary file in the same folder, is flushed to disk,
    then takes the name in one step: readers see the old file or the whole new
    one. An existing file is refused (``PlanExists``) unless ``overwrite``;
    the refusal is atomic too (a hard link fails if the name exists).
    """
    path = Path(path)
    text = render_plan(plan_data, schema=schema)
    if not overwrite and path.exists():
        raise PlanExists(f"{path}: already exists; not overwriting it")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise PlanExists(f"{path}: already exists; not overwriting it") from None
            except OSError:  # no hard links here: fall back to a check, then a rename
                if path.exists():
                    raise PlanExists(f"{path}: already exists; not overwriting it") from None
                os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return path
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
    return path
