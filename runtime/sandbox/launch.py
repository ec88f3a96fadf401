"""Everything a sandboxed command needs, in one place: the host-side grants, the
seccomp program's descriptor and the full command line.

    with sandboxed(spec, argv) as (command, fds):
        await supervise(command, ..., pass_fds=fds)

The descriptor is closed when the block ends; bubblewrap has read the program by
then (it reads it before the first exec).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from runtime.sandbox.bwrap import SandboxSpec, SandboxUnavailable, bwrap_path, check_user_namespaces, setpriv_path
from runtime.sandbox.caches import KINDS, store
from runtime.sandbox.identity import AgentUser
from runtime.sandbox.seccomp import filter_program, program_fd


def preflight() -> None:
    """Everything a sandbox needs, checked before a spawn creates anything: Linux, bubblewrap,
    libseccomp, setpriv for a root orchestrator, user namespaces for any other. One line when
    something is missing."""
    if not sys.platform.startswith("linux"):
        # bubblewrap, seccomp and the namespaces are Linux's (WSL2 runs a Linux kernel): "install
        # bubblewrap" would send a macOS or Windows user after a package their system does not have.
        raise SandboxUnavailable(platform_line())
    exe = bwrap_path()
    if exe is None:
        raise SandboxUnavailable()
    filter_program()  # libseccomp and its bindings are there (the program is cached for the spawn)
    if os.geteuid() == 0:
        setpriv_path()
    else:
        check_user_namespaces(exe)


def platform_line() -> str:
    return (f"the OS sandbox runs on Linux only (WSL2 included), not on {sys.platform}: pass --no-os-sandbox to run "
            "the agent under the gate alone, in its strict mode")


# Run by setpriv once the parent-death signal is armed: if the orchestrator died before that, the
# process has been handed to another parent already, and nothing must start.
_GUARD = 'test "$PPID" = "$0" && exec "$@"; echo "the orchestrator died before the sandbox started" >&2; exit 125'


def parent_guard() -> list[str]:
    """A prefix that ties a command's life to this process's (its parent), with no window at the start.

    bubblewrap's --die-with-parent holds once bubblewrap has run that far; before, a SIGKILLed
    orchestrator would leave it to start the agent with no one watching. setpriv arms SIGKILL on
    the parent's death first, then the shell checks the parent is still the orchestrator: a death
    before the arming shows as a new parent (nothing starts), a death after it kills the command.
    The parent is the thread that forks, which is the orchestrator's event loop.
    """
    try:
        setpriv = setpriv_path()
    except SandboxUnavailable:
        return []  # no util-linux: bubblewrap's own --die-with-parent, with its short window
    return [setpriv, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _GUARD, str(os.getpid())]


@contextlib.contextmanager
def sandboxed(spec: SandboxSpec, argv: Sequence[str]) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """The full command line and the descriptors to pass. The sandbox's life is tied to the
    orchestrator's at both ends: `parent_guard` for bubblewrap itself, and a pipe whose write end
    only this process holds for what runs inside (`runtime.sandbox.bwrap.alive_check`)."""
    spec.grant()
    layers: list[Path] = []
    placeholders = spec.make_placeholders()
    try:
        if spec.caches:
            spec, layers = _with_layers(spec)
        fd = program_fd()
        alive_read, alive_write = os.pipe()  # not inheritable: no child ever holds the write end
        try:
            yield [*parent_guard(), *spec.args(seccomp_fd=fd, alive_fd=alive_read), *argv], (fd, alive_read)
        finally:
            for end in (fd, alive_read, alive_write):
                os.close(end)
    finally:
        spec.remove_placeholders(placeholders)
        for layer in layers:
            store.AHEAD.remove(layer)  # in a thread: nothing waits on it


def _with_layers(spec: SandboxSpec) -> tuple[SandboxSpec, list[Path]]:
    """``spec`` binding a fresh layer of each of its caches (a fill's own folder as it is), and the layers
    made, to remove when the sandbox has ended. A cache with no snapshot yet is left out: the tool builds in
    the sandbox's private /tmp, as without one."""
    binds: list[tuple[Path, Path]] = []
    made: list[Path] = []
    try:
        for slot in spec.caches:
            if slot.filling is not None:
                binds.append((slot.filling, slot.inside))
                continue
            layer = store.open_layer(slot, KINDS[slot.kind], spec.user)
            if layer is not None:
                made.append(layer)
                binds.append((layer, slot.inside))
    except BaseException:
        for layer in made:
            store.remove(layer)
        raise
    return dataclasses.replace(spec, cache_binds=tuple(binds)), made


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
