"""The one type of a JSON value, for what crosses a process boundary and has no record of its own.

A model's messages and tool schemas, a tool call's input as the model wrote it, a hook's payload, a JSON
schema, a settings file we merge into: their shapes are someone else's, so they are typed as what they are,
JSON, and read by narrowing (`isinstance`), never as `Any`. Everything of our own shape that crosses a
package is a record (a dataclass or a pydantic model) instead.

Import it under `TYPE_CHECKING` from the hook's path: it imports `typing`, which a cold hook never pays for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# Read-only in its containers, so a `list[str]` or a `dict[str, int]` is a JSON value as it is.
JSON: TypeAlias = "None | bool | int | float | str | Sequence[JSON] | Mapping[str, JSON]"
JSONObject: TypeAlias = Mapping[str, JSON]
"""A JSON object as it is read."""
JSONDict: TypeAlias = dict[str, JSON]
"""A JSON object being built."""
JSONList: TypeAlias = list[JSON]
"""A JSON array being built."""
