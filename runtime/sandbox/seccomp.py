"""The seccomp filter every sandboxed process runs under.

bubblewrap loads a compiled BPF program from a descriptor (`--seccomp FD`) just
before it executes the sandbox's first process, after it has built the
namespaces and mounts (which need the very calls refused here). The program is
built with libseccomp (through `pyseccomp`, ctypes bindings with the API of
libseccomp's own Python module), not written by hand: architecture checks,
syscall numbering per ABI and argument comparisons are where hand-written BPF
goes wrong. A call from a foreign ABI (i386 `int 0x80`, x32) kills the process:
libseccomp's default for an architecture the filter was not built for.

What is refused is the kernel surface an agent has no use for and that
sandbox escapes go through: tracing other processes (ptrace would stop the
sandbox's teardown), reading or writing their memory, the keyring, BPF, perf,
userfaultfd and io_uring (the usual vehicles of kernel exploits), every mount
call, new namespaces (unshare, setns, clone with a CLONE_NEW* flag; clone3,
whose flags sit in memory a filter cannot read, answers ENOSYS so libc falls
back to clone), kernel modules, kexec, reboot, swap, the clock, the kernel log,
file handles (open_by_handle_at walks around mount restrictions), terminal
injection (TIOCSTI, TIOCLINUX), changing the CPU affinity (an agent pinned to its declared CPUs
stays on them), and socket families other than Unix, IPv4 and
IPv6 (netlink, packet, vsock, ...). Everything else stays allowed: the
programs an agent runs (compilers, test runners, package managers of every
language) are open-ended, and the boundary that holds is the unprivileged uid,
the namespaces and the mounts; this filter narrows what a kernel bug can be
reached through.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import tempfile

from runtime.errors import FatalError

REFUSED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr",
    "unshare", "setns",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "quotactl_fd",
    "settimeofday", "clock_settime", "clock_adjtime",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
    "iopl", "ioperm", "vhangup", "uselib", "nfsservctl",
    "sched_setaffinity",  # an agent pinned to its `cpus` (runtime.sandbox.cpus) cannot widen the pin
)
CLONE_NAMESPACE_FLAGS = (
    0x00000080,  # CLONE_NEWTIME
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
REFUSED_IOCTLS = (0x5412, 0x541C)  # TIOCSTI (type into the terminal), TIOCLINUX
SOCKET_FAMILIES = frozenset({socket.AF_UNIX, socket.AF_INET, socket.AF_INET6})
AF_MAX = 64  # above every family Linux defines (46 in 6.x); larger values are refused too


class SeccompUnavailable(FatalError):
    """libseccomp or its bindings are missing, so the filter cannot be built."""


@functools.cache
def filter_program() -> bytes:
    """The compiled BPF program (built once per process)."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:  # the bindings, or libseccomp.so.2 they load
        raise SeccompUnavailable(
            f"libseccomp is not available ({exc}): install it (e.g. `apt-get install libseccomp2`) "
            "or pass --no-os-sandbox to run the agent without an OS sandbox") from None
    flt = sc.SyscallFilter(sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for name in REFUSED:
        flt.add_rule(eperm, name)
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in CLONE_NAMESPACE_FLAGS:
        flt.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for request in REFUSED_IOCTLS:
        flt.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    # The allowed families are the allowlist; the filter can only say it as "refuse each other value".
    no_family = sc.ERRNO(errno.EAFNOSUPPORT)
    for call in ("socket", "socketpair"):
        for family in range(AF_MAX + 1):
            if family not in SOCKET_FAMILIES:
                flt.add_rule(no_family, call, sc.Arg(0, sc.EQ, family))
        flt.add_rule(no_family, call, sc.Arg(0, sc.GT, AF_MAX))
    with tempfile.TemporaryFile() as out:
        flt.export_bpf(out)
        out.seek(0)
        return out.read()


def program_fd() -> int:
    """A fresh descriptor holding the program, for `bwrap --seccomp FD`; the caller closes it."""
    program = filter_program()
    fd = os.memfd_create("runtime-seccomp", 0)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
