"""The gate: (tool call, cwd, compiled policy) -> GateDecision.

Everything under this package is on the PreToolUse hook's import path and runs
as a fresh process per tool call: standard library only, plus tree-sitter,
imported lazily for Bash calls.
"""
