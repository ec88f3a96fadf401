"""The gate's three answers to a call, as one type: what a rule decides, a grammar's or an atom's example
expects, and `runtime check` answers.

Plain strings at run time, typed for mypy alone: the hook is a fresh process per tool call and imports neither
`enum` nor `typing`. Import it under `TYPE_CHECKING` from the hook's path (this module imports `typing`); a
pydantic model that reads an expected answer from a manifest uses it as it is.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

GateVerdict: TypeAlias = Literal["allow", "deny", "ask"]
