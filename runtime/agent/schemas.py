"""The tools as the model sees them: OpenAI function schemas in Claude Code's input shapes."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict, JSONObject

_STR = {"type": "string"}
_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}


def _tool(name: str, description: str, properties: JSONObject, required: list[str]) -> JSONDict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
    }}


SCHEMAS = {
    "Read": _tool("Read", "Read a file; lines come numbered.", {"file_path": _STR, "offset": _INT, "limit": _INT}, ["file_path"]),
    "Write": _tool("Write", "Create or overwrite a file.", {"file_path": _STR, "content": _STR}, ["file_path", "content"]),
    "Edit": _tool("Edit", "Replace old_string (unique unless replace_all) with new_string in a file.",
                  {"file_path": _STR, "old_string": _STR, "new_string": _STR, "replace_all": _BOOL},
                  ["file_path", "old_string", "new_string"]),
    "MultiEdit": _tool("MultiEdit", "Apply several edits to one file, all or none.",
                       {"file_path": _STR, "edits": {"type": "array", "items": {"type": "object", "properties": {
                           "old_string": _STR, "new_string": _STR, "replace_all": _BOOL}, "required": ["old_string", "new_string"]}}},
                       ["file_path", "edits"]),
    "Glob": _tool("Glob", "List files matching a glob pattern.", {"pattern": _STR, "path": _STR}, ["pattern"]),
    "Grep": _tool("Grep", "Search file contents with a regular expression.",
                  {"pattern": _STR, "path": _STR, "glob": _STR, "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]}, "-i": _BOOL},
                  ["pattern"]),
    "Bash": _tool("Bash", "Run a shell command in the worktree (timeout in milliseconds).",
                  {"command": _STR, "description": _STR, "timeout": _INT}, ["command"]),
    "WebFetch": _tool("WebFetch", "Fetch a web page.", {"url": _STR, "prompt": _STR}, ["url", "prompt"]),
}


def tool_schemas(shown: list[str]) -> list[JSONDict]:
    """The schemas of the tools a role shows that this agent implements, in the role's order."""
    return [SCHEMAS[name] for name in shown if name in SCHEMAS]
