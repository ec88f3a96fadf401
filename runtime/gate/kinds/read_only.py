"""scope::read-only: no writes at all, by file tools or by shell redirection."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate
from runtime.lang.audience import phrase

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.shell_types import Command

# Programs whose whole purpose is to change files; denied even when a role's
# shell rules would allow them, because this role writes nothing.
WRITERS = frozenset({
    "tee", "rm", "rmdir", "mv", "cp", "touch", "mkdir", "ln", "chmod", "chown", "chgrp", "truncate",
    "dd", "install", "shred", "unlink", "mkfifo", "mknod", "patch", "rsync", "tar", "unzip", "gzip", "gunzip",
})


class ReadOnly(Gate):
    kind = "read-only"

    def on_write(self, resolved: str, rel: str | None, ctx: Context) -> GateDecision | None:
        return deny(f"this role is read-only: it may not write `{rel if rel is not None else resolved}`; "
                    f"{phrase(ctx.policy.audience, 'read-only')}", self.atom, "read-only")

    def on_command(self, cmd: Command, ctx: Context) -> GateDecision | None:
        if cmd.name in WRITERS:
            return deny(f"this role is read-only: `{cmd.name}` changes files; "
                        f"{phrase(ctx.policy.audience, 'read-only')}", self.atom, cmd.name)
        if cmd.deletes is not None:
            return deny(f"this role is read-only: `{cmd.name}` would remove what it finds; "
                        f"{phrase(ctx.policy.audience, 'read-only')}", self.atom, cmd.name)
        if cmd.name in ("sed", "perl", "ruby") and any(a == "-i" or a.startswith(("-i", "--in-place")) for a in cmd.args):
            return deny(f"this role is read-only: `{cmd.name} -i` edits files in place", self.atom, cmd.name)
        return None
