"""Attacks on the sandbox itself, each run for real and checked on the host afterwards.

These are the escapes an outside review found when the orchestrator runs as root
(CI, containers): sysctls written as uid 0, host sockets reached through the
read-only root, ptrace stopping the namespace's teardown. Every probe that
touches a kernel knob writes back the value it read, so a failure of the
sandbox never changes the host.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from runtime.sandbox.bwrap import SandboxSpec
from runtime.sandbox.env import agent_env
from runtime.sandbox.identity import DEFAULT_AGENT_ID
from runtime.sandbox.launch import sandboxed
from tests.conftest import REPO

PY = sys.executable


@pytest.fixture
def box(tmp_path) -> SandboxSpec:
    worktree, home = tmp_path / "worktree", tmp_path / "home"
    (worktree / "src").mkdir(parents=True)
    home.mkdir()
    spec = SandboxSpec(worktree=worktree, home=home, writable=[worktree / "src"], env=agent_env(home, {}))
    spec.expose([Path(sys.prefix), Path(sys.base_prefix), REPO])
    return spec


def run(spec: SandboxSpec, *cmd: str, timeout: float = 20) -> subprocess.CompletedProcess:
    with sandboxed(spec, cmd) as (argv, fds):
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, pass_fds=fds)


def python(spec: SandboxSpec, code: str) -> subprocess.CompletedProcess:
    return run(spec, PY, "-I", "-c", textwrap.dedent(code))


def test_the_agent_is_never_host_root(bwrap, box):
    result = run(box, "/bin/sh", "-c", "id -u; id -g; id -G; grep -E '^(Uid|Gid|CapBnd|CapEff|CapPrm|CapAmb|NoNewPrivs)' /proc/self/status")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    uid, gid = int(lines[0]), int(lines[1])
    assert uid != 0 and gid != 0 and "0" not in lines[2].split()
    status = dict(line.split(":", 1) for line in lines[3:])
    assert all(int(status[cap], 16) == 0 for cap in ("CapBnd", "CapEff", "CapPrm", "CapAmb"))
    assert status["NoNewPrivs"].strip() == "1"
    if os.geteuid() == 0:  # no user namespace in between: the uid inside is the host uid
        assert uid == DEFAULT_AGENT_ID and set(status["Uid"].split()) == {str(DEFAULT_AGENT_ID)}


def test_sysctls_cannot_be_written(bwrap, box):
    host_before = Path("/proc/sys/kernel/core_pattern").read_text()
    result = run(box, "/bin/sh", "-c",
                 'v=$(cat /proc/sys/kernel/core_pattern); printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern && echo WROTE')
    assert "WROTE" not in result.stdout
    assert "Read-only file system" in result.stderr or "Permission denied" in result.stderr
    result = python(box, """
        import os
        for knob in ("/proc/sysrq-trigger", "/proc/sys/vm/drop_caches", "/proc/sys/kernel/modprobe"):
            try:
                os.close(os.open(knob, os.O_WRONLY))  # opening writes nothing
                print("OPENED", knob)
            except OSError as exc:
                print("refused", knob, exc.errno)
    """)
    assert "OPENED" not in result.stdout and result.stdout.count("refused") == 3, result.stdout + result.stderr
    assert Path("/proc/sys/kernel/core_pattern").read_text() == host_before


def test_shadow_and_root_files_are_out_of_reach(bwrap, box):
    result = run(box, "/bin/sh", "-c", "cat /etc/shadow; echo; ls -A /home /srv /mnt /var/lib /root 2>&1; echo done")
    assert ":$" not in result.stdout and not result.stdout.startswith("root:")  # no shadow entry was printed
    assert "Permission denied" in result.stderr
    listing = result.stdout.split("done")[0]
    for host_only in ("/home", "/srv", "/mnt", "/var/lib"):
        assert f"cannot access '{host_only}'" in listing, listing  # absent, not merely unreadable
    # /root exists only as the folder leading to bind points (the interpreter may live there): nothing else.
    assert not (set(os.listdir("/root")) - {".pyenv"}) & set(listing.split())


def test_ptrace_of_pid_1_and_of_siblings_fails(bwrap, box):
    result = python(box, """
        import ctypes, os, subprocess
        libc = ctypes.CDLL(None, use_errno=True)
        PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
        child = subprocess.Popen(["sleep", "5"])
        for pid in (1, child.pid):
            for request in (PTRACE_ATTACH, PTRACE_SEIZE):
                rc = libc.ptrace(request, pid, None, None)
                print(pid == 1 and "init" or "sibling", rc, ctypes.get_errno())
        child.kill()
    """)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert len(rows) == 4
    assert all(rc == "-1" and int(err) == 1 for _, rc, err in rows), rows  # EPERM from the filter


def test_refused_system_calls(bwrap, box):
    result = python(box, """
        import ctypes, errno, socket
        libc = ctypes.CDLL(None, use_errno=True)
        def call(name, number, *args):
            rc = libc.syscall(number, *args)
            print(name, rc, errno.errorcode.get(ctypes.get_errno(), "?"))
        # x86_64 numbers
        call("unshare-user", 272, 0x10000000)
        call("unshare-net", 272, 0x40000000)
        call("mount", 165, b"none", b"/tmp", b"tmpfs", 0, None)
        call("keyctl", 250, 0, 0, 0, 0)
        call("bpf", 321, 0, None, 0)
        call("perf_event_open", 298, None, 0, -1, -1, 0)
        call("userfaultfd", 323, 0)
        call("io_uring_setup", 425, 1, None)
        call("setns", 308, 0, 0)
        call("clone-newuser", 56, 0x10000000 | 17, 0, 0, 0, 0)
        call("clone3", 435, None, 0)
        for family, name in ((socket.AF_NETLINK, "netlink"), (socket.AF_PACKET, "packet"), (40, "vsock")):
            try:
                socket.socket(family, socket.SOCK_RAW if family != 40 else socket.SOCK_STREAM).close()
                print("socket-" + name, 0, "OPENED")
            except OSError as exc:
                print("socket-" + name, -1, errno.errorcode.get(exc.errno, "?"))
        for family, name in ((socket.AF_UNIX, "unix"), (socket.AF_INET, "inet"), (socket.AF_INET6, "inet6")):
            socket.socket(family, socket.SOCK_STREAM).close()
            print("socket-" + name, 0, "ok")
    """)
    assert result.returncode == 0, result.stderr
    seen = {name: (int(rc), err) for name, rc, err in (line.split() for line in result.stdout.splitlines())}
    if sys.platform == "linux" and os.uname().machine == "x86_64":
        for name in ("unshare-user", "unshare-net", "mount", "keyctl", "bpf", "perf_event_open", "userfaultfd",
                     "io_uring_setup", "setns", "clone-newuser"):
            assert seen[name] == (-1, "EPERM"), (name, seen[name])
        assert seen["clone3"] == (-1, "ENOSYS")
    for name in ("netlink", "packet", "vsock"):
        assert seen[f"socket-{name}"] == (-1, "EAFNOSUPPORT"), seen
    for name in ("unix", "inet", "inet6"):
        assert seen[f"socket-{name}"] == (0, "ok")


def test_no_host_pathname_socket_is_reachable(bwrap, box, tmp_path):
    folders = [tmp_path / "sockets", Path("/var/tmp") / f"rt-test-{secrets.token_hex(4)}",
               Path("/dev/shm") / f"rt-test-{secrets.token_hex(4)}"]
    listeners = []
    try:
        for folder in folders:
            folder.mkdir(mode=0o777)
            os.chmod(folder, 0o777)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(str(folder / "host.sock"))
            os.chmod(folder / "host.sock", 0o777)  # only the sandbox's view may stop the agent
            sock.listen(4)
            sock.settimeout(0.5)
            listeners.append(sock)
        paths = [str(f / "host.sock") for f in folders]
        result = python(box, f"""
            import socket
            for path in {paths!r}:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(path)
                    print("CONNECTED", path)
                except OSError as exc:
                    print("unreachable", exc.errno)
        """)
        assert result.returncode == 0, result.stderr
        assert "CONNECTED" not in result.stdout and result.stdout.count("unreachable") == len(paths)
        for sock in listeners:
            with pytest.raises(TimeoutError):
                sock.accept()
    finally:
        for sock in listeners:
            sock.close()
        for folder in folders:
            (folder / "host.sock").unlink(missing_ok=True)
            folder.rmdir()


def test_the_tree_dies_with_the_agent_even_after_a_ptrace_attempt(bwrap, box):
    beat = box.home / "beat"
    script = f"""
        import ctypes, os, subprocess, sys
        libc = ctypes.CDLL(None, use_errno=True)
        writer = "import time\\nwhile True:\\n    open({str(beat)!r}, 'a').write('x')\\n    time.sleep(0.02)\\n"
        subprocess.Popen([sys.executable, "-c", writer], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print("attach", libc.ptrace(16, 1, None, None), ctypes.get_errno())
    """
    result = python(box, script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["attach", "-1", "1"]
    time.sleep(1.0)
    size = beat.stat().st_size if beat.exists() else 0
    time.sleep(0.5)
    assert (beat.stat().st_size if beat.exists() else 0) == size, "a background writer outlived the agent"


def test_an_unprivileged_orchestrator_sandboxes_in_a_user_namespace(bwrap, request):
    if os.geteuid() != 0:
        pytest.skip("runs as root to become an unprivileged orchestrator")  # the suite then runs as that user
    uid = DEFAULT_AGENT_ID + 7
    root = Path(tempfile.mkdtemp(prefix="rt-unprivileged-"))  # pytest's own folders are root-only
    os.chmod(root, 0o755)
    os.chown(root, uid, uid)
    request.addfinalizer(lambda: shutil.rmtree(root, ignore_errors=True))
    code = textwrap.dedent(f"""
        import subprocess, sys
        from pathlib import Path
        from runtime.sandbox.bwrap import SandboxSpec
        from runtime.sandbox.env import agent_env
        from runtime.sandbox.launch import sandboxed
        root = Path({str(root)!r})
        (root / "wt").mkdir(); (root / "home").mkdir()
        spec = SandboxSpec(worktree=root / "wt", home=root / "home", env=agent_env(root / "home", {{}}))
        assert spec.user is None
        script = 'id -u; cat /proc/self/uid_map; echo x > /proc/sys/kernel/core_pattern || echo refused'
        with sandboxed(spec, ["/bin/sh", "-c", script]) as (argv, fds):
            r = subprocess.run(argv, capture_output=True, text=True, pass_fds=fds)
        print(r.stdout, r.stderr, r.returncode)
    """)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "HOME": str(root)}
    # The interpreter may live in a folder only root can enter; then this machine cannot host the test.
    probe = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", PY, "-c", "pass"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"the interpreter is not reachable by an unprivileged user here: {probe.stderr.strip()}")
    result = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", PY, "-c", code],
                            capture_output=True, text=True, env=env, cwd=root, timeout=30)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split()
    assert lines[0] != "0"
    assert str(uid) in result.stdout  # the uid map leads to the orchestrator's unprivileged uid
    assert "refused" in result.stdout


def test_the_agent_dies_with_its_sandbox_after_the_uid_switch(bwrap, box):
    """The kernel clears a parent-death signal when the uid changes; the agent's is set again after it,
    so a killed sandbox (or orchestrator) never leaves the agent running."""
    result = python(box, """
        import ctypes, ctypes.util
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        sig = ctypes.c_int(-1)
        assert libc.prctl(2, ctypes.byref(sig), 0, 0, 0) == 0  # PR_GET_PDEATHSIG
        print(sig.value)
    """)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) == 9  # SIGKILL
