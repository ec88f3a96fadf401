"""scope::read-only: no writes at all, by file tools or by shell redirection."""

from __future__ import annotations

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate

# Programs whose whole purpose is to change files; denied even when a role's
# shell rules would allow them, because this role writes nothing.
WRITERS = frozenset({
    "tee", "rm", "rmdir", "mv", "cp", "touch", "mkdir", "ln", "chmod", "chown", "chgrp", "truncate",
    "dd", "install", "shred", "unlink", "mkfifo", "mknod", "patch", "rsync", "tar", "unzip", "gzip", "gunzip",
})


class ReadOnly(Gate):
    kind = "read-only"

    def on_write(self, resolved, rel, ctx):
        return deny(f"this role is read-only: it may not write `{rel if rel is not None else resolved}`; report what should change instead", self.atom, "read-only")

    def on_command(self, cmd, ctx):
        if cmd.name in WRITERS:
            return deny(f"this role is read-only: `{cmd.name}` changes files; report what should change instead", self.atom, cmd.name)
        if cmd.name in ("sed", "perl", "ruby") and any(a == "-i" or a.startswith(("-i", "--in-place")) for a in cmd.args):
            return deny(f"this role is read-only: `{cmd.name} -i` edits files in place", self.atom, cmd.name)
        return None
