"""The gate's policy: the compiled document (``runtime.policy.document``) turned into gate objects.

The gate trusts nothing in it: the document's reader checks the content hash,
the format, the version and the shape; here every gate kind must be in the
registry and every parameter must be what that kind expects. Any surprise is a
PolicyError, and the hook turns a PolicyError into a deny.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from runtime.policy.compiled import PolicyJSON

from runtime.gate.kinds import gate_class
from runtime.policy.document import SANDBOXED, STRICT, PolicyDocument, PolicyError

__all__ = ["SANDBOXED", "STRICT", "Policy", "PolicyError", "load_policy"]


class Policy:
    """A loaded policy: the gate objects, ready to decide."""

    __slots__ = ("doc", "role", "root", "tools", "gates", "tool_gates", "write_gates", "command_gates", "protected", "hash",
                 "tool_path", "exempt", "mode", "audience", "_outside", "package_scripts", "subagents", "reviewer")

    def __init__(self, doc: PolicyJSON | PolicyDocument, extra_protected: tuple[str, ...] = (), *,
                 assume_sandbox: bool = False) -> None:
        """``doc``: a compiled policy, checked as a `PolicyDocument` (its format, version, hash and shape)
        unless it is one already. ``assume_sandbox``: judge a sandboxed policy as if inside its sandbox,
        without looking (`runtime explain --mode sandboxed` on the host, and tests of its judgements)."""
        document = PolicyDocument.read(doc)
        self.doc = document.raw
        self.mode = document.mode
        self.audience = document.audience
        # Why this sandboxed policy must not decide here (None: it may), found on the first decision.
        self._outside: str | None | bool = None if assume_sandbox or self.mode == STRICT else False
        self.hash = document.hash
        self.role = document.role
        self.root = os.path.realpath(document.root)
        self.tools = frozenset(document.tools)
        self.protected = tuple(os.path.realpath(p) for p in document.protected) + tuple(extra_protected)
        self.tool_path = frozenset(os.path.normpath(os.path.join(self.root, p)) for p in document.toolchain_path)
        self.package_scripts: dict[str, str] = document.package_scripts
        self.subagents: dict[str, str] = document.subagents
        self.reviewer: dict[str, str | None] | None = document.reviewer  # `[session] reviewer` (model, api-base, script)
        self.gates = []
        for entry in document.gates:
            cls = gate_class(entry.kind)
            if cls is None:
                raise PolicyError(f"unknown gate kind `{entry.kind}`")
            self.gates.append(cls(entry.atom, entry.params))
        # Gates that only deny run before those that grant, so a denial names
        # the atom that forbids (no-git) rather than the one that did not allow.
        self.gates.sort(key=lambda g: g.grants)
        self.tool_gates = [g for g in self.gates if g.answers("on_tool")]
        self.write_gates = [g for g in self.gates if g.answers("on_write")]
        self.command_gates = [g for g in self.gates if g.answers("on_command")]
        # Control files the task may change (`[scope] control-files`), as absolute paths; `.git` never.
        self.exempt = tuple(os.path.normpath(os.path.join(self.root, path))
                            for g in self.write_gates for path in getattr(g, "control_files", ()))

    def outside_sandbox(self) -> str | None:
        """Why this policy may not decide here: a sandboxed policy outside the runtime's sandbox.
        Looked at once per process (the hook is one process per call; the builtin agent's loop lives in
        one sandbox for its whole run)."""
        if self._outside is False:
            from runtime.gate.confinement import sandbox_refusal

            self._outside = sandbox_refusal(self.root)
        return self._outside if isinstance(self._outside, str) else None


def load_policy(path: str) -> Policy:
    """Read and check a compiled policy file; the file itself becomes protected."""
    return Policy(PolicyDocument.load(path), (os.path.realpath(path),))
