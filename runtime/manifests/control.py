"""Control files: what rules the next run rather than being the work.

No agent writes them, at any depth and in any case (trailing dots and spaces
ignored: on macOS and Windows `.GIT` and `.git.` are `.git`), whatever its write
scope says: the gate refuses the write, the sandbox shows them read-only (also
when absent, so they cannot be created) and verify rejects a change to one. A
task given to `runtime spawn` may name some it must change (`[scope]
control-files`, never `.git`); a plan's subtasks never may, and such a change
is merged only after a person approves it.

Here, at the lowest layer and with the standard library only, because the
gate's hook, the sandbox, verify and the manifests all ask the same question.
"""

from __future__ import annotations

CONTROL = {
    ".git": "git's own data",
    ".gitmodules": "git's list of submodules",
    ".claude": "Claude Code's settings, hooks and agents",
    ".mcp.json": "Claude Code's MCP servers",
    ".agent-runtime": "the runtime's project catalog (roles, rules, the toolchain)",
}
# `.git` is git's and the orchestrator's alone; the others a task may be allowed to change (`control-files`).
NEVER_EXEMPT = frozenset({".git"})


def control_name(path: str) -> str | None:
    """The control name (a key of ``CONTROL``) among the components of ``path``, or None."""
    low = path.lower()
    if ".git" not in low and ".claude" not in low and ".mcp" not in low and ".agent-runtime" not in low:
        return None  # the common case, without splitting
    for comp in low.split("/"):
        name = comp.rstrip(". ")
        if name in CONTROL:
            return name
    return None


def exempted(resolved: str, exempt: tuple[str, ...]) -> bool:
    """Is ``resolved`` one of the ``exempt`` paths (absolute) or inside one?"""
    return any(resolved == e or resolved.startswith(e + "/") for e in exempt)
