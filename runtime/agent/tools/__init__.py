"""The builtin agent's tools, in Claude Code's `tool_input` shapes, by name.

A tool gets its input (already allowed by the gate) and the worktree root,
and returns `(text, is_error)`; it never raises for a mistake of the model
(a missing file, an ambiguous edit), which goes back to the model as text.
"""

from __future__ import annotations

from runtime.agent.tools.bash import bash
from runtime.agent.tools.files import edit, multi_edit, read, write
from runtime.agent.tools.search import glob, grep
from runtime.agent.tools.web import web_fetch

TOOLS = {
    "Read": read,
    "Write": write,
    "Edit": edit,
    "MultiEdit": multi_edit,
    "Glob": glob,
    "Grep": grep,
    "Bash": bash,
    "WebFetch": web_fetch,
}
