"""Reading a reporter's JSON-lines file: one object a line; a line that is no object makes the report
unreadable (a reporter of ours never writes one, so something else wrote to the file)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject


class Unreadable(ValueError):
    pass


def records(data: bytes) -> list[JSONObject]:
    out: list[JSONObject] = []
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise Unreadable(f"line {n} of the report is not JSON") from None
        if not isinstance(record, dict):
            raise Unreadable(f"line {n} of the report is not a JSON object")
        out.append(record)
    return out


def text(record: JSONObject, key: str) -> str:
    value = record.get(key, "")
    return value if isinstance(value, str) else str(value)
