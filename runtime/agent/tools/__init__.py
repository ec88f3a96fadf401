"""The builtin agent's tools, in Claude Code's `tool_input` shapes, by name.

A tool gets its input (already allowed by the gate) and the worktree root,
and returns `(text, is_error)`; it never raises for a mistake of the model
(a missing file, an ambiguous edit), which goes back to the model as text.

A tool's module is imported the first time the tool is asked for: the agent starts once per attempt, and a
role without web tools never pays for `urllib.request`, `http.client` and `email` (half its start-up).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

Tool: TypeAlias = "Callable[[JSONObject, str], tuple[str, bool]]"

# name -> (module, function)
WHERE: dict[str, tuple[str, str]] = {
    "Read": ("runtime.agent.tools.files", "read"),
    "Write": ("runtime.agent.tools.files", "write"),
    "Edit": ("runtime.agent.tools.files", "edit"),
    "MultiEdit": ("runtime.agent.tools.files", "multi_edit"),
    "Glob": ("runtime.agent.tools.search", "glob"),
    "Grep": ("runtime.agent.tools.search", "grep"),
    "Bash": ("runtime.agent.tools.bash", "bash"),
    "WebFetch": ("runtime.agent.tools.web", "web_fetch"),
}


class _Tools(Mapping[str, "Tool"]):
    """The tools by name, each imported when it is first looked up."""

    def __init__(self) -> None:
        self._loaded: dict[str, Tool] = {}

    def __getitem__(self, name: str) -> Tool:
        tool = self._loaded.get(name)
        if tool is None:
            module, function = WHERE[name]
            tool = self._loaded[name] = getattr(importlib.import_module(module), function)
        return tool

    def __iter__(self) -> Iterator[str]:
        return iter(WHERE)

    def __len__(self) -> int:
        return len(WHERE)

    def __contains__(self, name: object) -> bool:
        return name in WHERE


TOOLS: Mapping[str, Tool] = _Tools()
