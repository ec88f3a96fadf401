"""Everything a sandboxed command needs, in one place: the host-side grants, the
seccomp program's descriptor and the full command line.

    with sandboxed(spec, argv) as (command, fds):
        await supervise(command, ..., pass_fds=fds)

The descriptor is closed when the block ends; bubblewrap has read the program by
then (it reads it before the first exec).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from runtime.sandbox.bwrap import SandboxSpec, SandboxUnavailable, bwrap_path, check_user_namespaces, setpriv_path
from runtime.sandbox.identity import AgentUser
from runtime.sandbox.seccomp import filter_program, program_fd


def preflight() -> None:
    """Everything a sandbox needs, checked before a spawn creates anything: bubblewrap, libseccomp,
    setpriv for a root orchestrator, user namespaces for any other. One line when something is missing."""
    exe = bwrap_path()
    if exe is None:
        raise SandboxUnavailable()
    filter_program()  # libseccomp and its bindings are there (the program is cached for the spawn)
    if os.geteuid() == 0:
        setpriv_path()
    else:
        check_user_namespaces(exe)


@contextlib.contextmanager
def sandboxed(spec: SandboxSpec, argv: Sequence[str]) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    spec.grant()
    fd = program_fd()
    try:
        yield [*spec.args(seccomp_fd=fd), *argv], (fd,)
    finally:
        os.close(fd)


def hand_over(folder: Path, user: AgentUser | None) -> None:
    """Give the agent's uid a run folder of Unix sockets (its model broker, approvals, egress).

    The folder and its sockets become the agent's (0700/0600): no other uid on the host can
    connect, and no other sandbox binds the folder. Symlinks are never followed (lchown).
    """
    if user is None:
        return
    os.chown(folder, user.uid, user.gid, follow_symlinks=False)
    os.chmod(folder, 0o700)
    for entry in os.scandir(folder):
        if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
            os.chown(entry.path, user.uid, user.gid, follow_symlinks=False)
