"""The seccomp filter's rules, as `filter_program` builds them (recorded through stand-in bindings; nothing is loaded
into the kernel), and the descriptor bubblewrap reads it from."""

from __future__ import annotations

import errno
import os
import socket
import sys
import termios
import types

import pytest

from runtime.sandbox import seccomp
from runtime.sandbox.seccomp import (
    AF_MAX,
    CLONE_NAMESPACE_FLAGS,
    REFUSED,
    SOCKET_FAMILIES,
    SeccompUnavailable,
    filter_program,
    program_fd,
)
from tests.conftest import require

PROGRAM = b"\x06\x00\x00\x00\x00\x00\xff\x7f"  # what the stand-in filter exports


class _Filter:
    built: list[_Filter] = []

    def __init__(self, default):
        self.default = default
        self.rules: list[tuple] = []
        _Filter.built.append(self)

    def add_rule(self, action, call, *args):
        self.rules.append((action, call, *args))

    def export_bpf(self, out):
        out.write(PROGRAM)


def _bindings() -> types.ModuleType:
    module = types.ModuleType("pyseccomp")
    module.SyscallFilter = _Filter
    module.ALLOW = "ALLOW"
    module.ERRNO = lambda code: ("ERRNO", code)
    module.Arg = lambda index, op, *values: ("Arg", index, op, *values)
    module.EQ, module.GT, module.MASKED_EQ = "EQ", "GT", "MASKED_EQ"
    return module


@pytest.fixture
def built(monkeypatch):
    """The one filter `filter_program` built with the stand-in bindings."""
    _Filter.built.clear()
    monkeypatch.setitem(sys.modules, "pyseccomp", _bindings())
    filter_program.cache_clear()
    try:
        assert filter_program() == PROGRAM
        assert len(_Filter.built) == 1
        yield _Filter.built[0]
    finally:
        filter_program.cache_clear()  # the real program for whatever runs next


def _rules_for(flt: _Filter, call: str) -> list[tuple]:
    return [rule for rule in flt.rules if rule[1] == call]


EPERM = ("ERRNO", errno.EPERM)


def test_everything_not_refused_is_allowed(built):
    assert built.default == "ALLOW"


@pytest.mark.parametrize("call", ["ptrace", "process_vm_readv", "keyctl", "bpf", "perf_event_open", "userfaultfd",
                                  "io_uring_setup", "mount", "umount2", "pivot_root", "unshare", "setns",
                                  "init_module", "kexec_load", "reboot", "open_by_handle_at", "sched_setaffinity"])
def test_the_escape_surface_is_refused_outright_with_eperm(built, call):
    assert call in REFUSED
    assert _rules_for(built, call) == [(EPERM, call)]


def test_every_refused_call_gets_exactly_one_unconditional_eperm_rule(built):
    assert len(set(REFUSED)) == len(REFUSED)
    for call in REFUSED:
        assert _rules_for(built, call) == [(EPERM, call)], call


def test_clone3_answers_enosys_so_libc_falls_back_to_clone(built):
    assert _rules_for(built, "clone3") == [(("ERRNO", errno.ENOSYS), "clone3")]


def test_clone_is_refused_only_with_a_namespace_flag(built):
    rules = _rules_for(built, "clone")
    assert rules == [(EPERM, "clone", ("Arg", 0, "MASKED_EQ", flag, flag)) for flag in CLONE_NAMESPACE_FLAGS]
    assert all(len(rule) == 3 for rule in rules)  # never an unconditional rule: plain clone (threads, fork) runs


def test_the_namespace_flags_are_single_distinct_bits():
    assert len(set(CLONE_NAMESPACE_FLAGS)) == 8
    assert all(flag & (flag - 1) == 0 for flag in CLONE_NAMESPACE_FLAGS)


def test_terminal_injection_ioctls_are_refused_and_only_those(built):
    rules = _rules_for(built, "ioctl")
    assert rules == [(EPERM, "ioctl", ("Arg", 1, "MASKED_EQ", 0xFFFFFFFF, request))
                     for request in (termios.TIOCSTI, 0x541C)]  # TIOCLINUX, which termios does not name


@pytest.mark.parametrize("call", ["socket", "socketpair"])
def test_socket_families_other_than_unix_and_ip_are_refused_with_eafnosupport(built, call):
    no_family = ("ERRNO", errno.EAFNOSUPPORT)
    rules = _rules_for(built, call)
    assert all(action == no_family for action, *_ in rules)
    refused = {rule[2][3] for rule in rules if rule[2][2] == "EQ"}
    assert refused == set(range(AF_MAX + 1)) - SOCKET_FAMILIES
    assert {socket.AF_NETLINK, socket.AF_PACKET} <= refused
    assert not {socket.AF_UNIX, socket.AF_INET, socket.AF_INET6} & refused
    assert [rule[2] for rule in rules if rule[2][2] == "GT"] == [("Arg", 0, "GT", AF_MAX)]  # and any larger value


def test_no_rule_is_added_for_calls_outside_the_lists(built):
    calls = {rule[1] for rule in built.rules}
    assert calls == set(REFUSED) | {"clone3", "clone", "ioctl", "socket", "socketpair"}
    assert not calls & {"read", "write", "execve", "connect", "open", "openat"}


def test_the_program_is_built_once_per_process(monkeypatch):
    _Filter.built.clear()
    monkeypatch.setitem(sys.modules, "pyseccomp", _bindings())
    filter_program.cache_clear()
    try:
        assert filter_program() is filter_program()
        assert len(_Filter.built) == 1
    finally:
        filter_program.cache_clear()


def test_missing_bindings_say_what_to_install_and_how_to_run_without(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # `import pyseccomp` raises ImportError
    filter_program.cache_clear()
    try:
        with pytest.raises(SeccompUnavailable) as info:
            filter_program()
    finally:
        filter_program.cache_clear()
    message = str(info.value)
    assert message.startswith("libseccomp is not available (")
    assert "libseccomp2" in message and "--no-os-sandbox" in message


def test_the_descriptor_holds_the_program_from_its_start(monkeypatch):
    monkeypatch.setattr(seccomp, "filter_program", lambda: PROGRAM * 3)
    fd = program_fd()
    try:
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0
        assert os.read(fd, 1024) == PROGRAM * 3
        assert os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:runtime-seccomp")
    finally:
        os.close(fd)


def test_each_call_gives_a_fresh_descriptor(monkeypatch):
    monkeypatch.setattr(seccomp, "filter_program", lambda: PROGRAM)
    first, second = program_fd(), program_fd()
    try:
        assert first != second
        assert os.read(first, 64) == os.read(second, 64) == PROGRAM
    finally:
        os.close(first)
        os.close(second)


def _real_bindings():
    try:
        import pyseccomp
    except (ImportError, OSError):
        pyseccomp = None
    require(pyseccomp is not None, "libseccomp or its bindings (pyseccomp) are not installed")
    return pyseccomp


@pytest.mark.parametrize("call", [*REFUSED, "clone3", "clone", "ioctl", "socket", "socketpair"])
def test_every_call_the_filter_names_is_known_to_libseccomp(call):
    sc = _real_bindings()
    assert sc.resolve_syscall(sc.Arch.NATIVE, call) != -1  # -1: a name libseccomp does not know (a typo)


def test_the_real_program_is_whole_bpf_instructions():
    _real_bindings()
    filter_program.cache_clear()
    program = filter_program()
    assert program and len(program) % 8 == 0  # struct sock_filter is 8 bytes
