"""Is this process inside the runtime's OS sandbox for the policy's worktree?

A sandboxed policy allows what only the sandbox makes harmless (scripts the
agent wrote, one-liners, programs without a grammar), so it must not decide
anywhere else: copied next to a Claude Code on the host, it would let the
agent's code run with the user's rights. The hook is a fresh process per call,
so the test must cost microseconds and read nothing the agent can write.

It reads two files of the kernel's own:

- ``/proc/1/cmdline``: pid 1 of this PID namespace must be bubblewrap, started
  with the runtime's fixed ``--unshare-pid`` and ``--unshare-net`` and with
  ``--chdir`` at this policy's worktree. On the host pid 1 is the host's init,
  which no agent renames; the hook Claude Code runs is Claude Code's child, in
  Claude Code's namespaces, so an agent that starts a bubblewrap of its own
  only changes what its own processes see, never the hook's answer. The
  ``--chdir`` ties the policy to the sandbox built for its worktree: another
  agent's sandbox does not count. (Reading ``/proc/1/exe`` would need the
  right to trace pid 1, which the agent's uid never has; the command line is
  world-readable.)
- ``/proc/net/dev``: the network namespace this process is in has no
  interface but loopback: the state the kernel is in, not the intention on a
  command line.
"""

from __future__ import annotations

import os

_WHAT = ("this policy is for an agent inside the runtime's OS sandbox, and {why}; it decides nothing "
         "here: every call is denied (outside a sandbox, compile the role's strict policy: "
         "`runtime check --role NAME`, or `runtime spawn --no-os-sandbox`)")


def sandbox_refusal(root: str, proc: str = "/proc") -> str | None:
    """None inside the runtime's bubblewrap sandbox for worktree ``root``; otherwise why not."""
    try:
        with open(f"{proc}/1/cmdline", "rb") as fh:
            argv = fh.read(1 << 20).split(b"\0")
    except OSError as exc:
        return _WHAT.format(why=f"the first process of this PID namespace cannot be read ({exc.strerror})")
    if not argv or os.path.basename(argv[0]) != b"bwrap":
        name = os.path.basename(argv[0]).decode(errors="replace")[:40] if argv else "?"
        return _WHAT.format(why=f"the first process of this PID namespace is `{name}`, not bubblewrap")
    if b"--unshare-pid" not in argv or b"--unshare-net" not in argv:
        return _WHAT.format(why="the bubblewrap around it did not take its own PID and network namespaces")
    chdir = [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == b"--chdir"]
    if len(chdir) != 1 or os.path.realpath(os.fsdecode(chdir[0])) != root:
        return _WHAT.format(why=f"the sandbox around it was not built for this policy's worktree {root}")
    try:
        with open(f"{proc}/net/dev", "rb") as fh:
            lines = fh.read(1 << 16).splitlines()[2:]
    except OSError as exc:
        return _WHAT.format(why=f"its network interfaces cannot be read ({exc.strerror})")
    names = sorted({line.split(b":", 1)[0].strip().decode(errors="replace") for line in lines if b":" in line})
    if names != ["lo"]:
        return _WHAT.format(why=f"its network namespace has interfaces other than loopback ({', '.join(names)})")
    return None
