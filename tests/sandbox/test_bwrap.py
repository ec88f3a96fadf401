"""The bubblewrap sandbox, with real bwrap and real processes.

Each test builds a `SandboxSpec`, runs a small command inside it and checks
the effect on the host: what could be written, what was visible, which
processes survived.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runtime.errors import FatalError
from runtime.sandbox.bwrap import SandboxSpec, SandboxSpecError, SandboxUnavailable, bwrap_path
from runtime.sandbox.env import UnsafeEnvironment, agent_env
from runtime.sandbox.launch import sandboxed

PY = sys.executable


@pytest.fixture
def worktree(tmp_path) -> Path:
    root = tmp_path / "worktree"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "src").mkdir()
    (root / "docs").mkdir()
    return root


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def spec(worktree: Path, home: Path, **kw) -> SandboxSpec:
    kw.setdefault("env", agent_env(home, {}))
    sandbox = SandboxSpec(worktree=worktree, home=home, **kw)
    sandbox.expose([Path(sys.prefix), Path(sys.base_prefix)])  # the interpreter stays usable wherever it lives
    return sandbox


def run(sandbox: SandboxSpec, bwrap: str, *cmd: str, timeout: float = 10) -> subprocess.CompletedProcess:
    """Run ``cmd`` in the sandbox as the spawn pipeline does: grants, seccomp descriptor and all."""
    with sandboxed(sandbox, cmd) as (argv, fds):
        argv[next(i for i, a in enumerate(argv) if os.path.basename(a) == "bwrap")] = bwrap  # after the parent guard
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, pass_fds=fds)


def sh(sandbox: SandboxSpec, bwrap: str, script: str) -> subprocess.CompletedProcess:
    return run(sandbox, bwrap, "/bin/sh", "-c", script)


def marked(marker: str) -> list[psutil.Process]:
    """Live processes whose command line carries the marker."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in " ".join(proc.info["cmdline"] or []) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def wait_gone(marker: str, timeout: float = 3.0) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while (alive := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def test_write_outside_writable_paths_is_refused(bwrap, worktree, home):
    sandbox = spec(worktree, home, writable=[worktree / "src"])
    for target in (worktree / "README", worktree / "docs" / "x", Path("/etc/agent-was-here"), Path("/usr/agent")):
        result = sh(sandbox, bwrap, f"echo x > {target}")
        assert result.returncode != 0
        # Two layers: the read-only mount, and (for a root orchestrator) the agent's uid owns nothing there.
        assert "Read-only file system" in result.stderr or "Permission denied" in result.stderr
        assert not target.exists()


def test_var_tmp_is_private_too(bwrap, worktree, home):
    outside = Path("/var/tmp") / f"agent-{secrets.token_hex(6)}"
    result = sh(spec(worktree, home), bwrap, f"echo x > {outside} && cat {outside}")
    assert result.returncode == 0 and result.stdout == "x\n", result.stderr
    assert not outside.exists()  # it landed in the sandbox's own tmpfs


def test_write_inside_writable_path_works(bwrap, worktree, home):
    result = sh(spec(worktree, home, writable=[worktree / "src"]), bwrap, "echo hello > src/new.py")
    assert result.returncode == 0, result.stderr
    assert (worktree / "src" / "new.py").read_text() == "hello\n"


def test_git_stays_read_only_in_a_writable_worktree(bwrap, worktree, home):
    sandbox = spec(worktree, home, writable=[worktree], readonly=[worktree / ".git"])
    result = sh(sandbox, bwrap, "echo x > top.txt && echo evil >> .git/config")
    assert "Read-only file system" in result.stderr
    assert (worktree / "top.txt").exists()
    assert (worktree / ".git" / "config").read_text() == "[core]\n"
    assert "Read-only file system" in sh(sandbox, bwrap, "mkdir .git/hooks").stderr


def test_read_only_worktree_blocks_every_write(bwrap, worktree, home):
    sandbox = spec(worktree, home, writable=[worktree, worktree / "src"], read_only_worktree=True)
    for script in ("echo x > a", "echo x > src/a", "mkdir newdir", "rm -r docs", "touch .git/x"):
        result = sh(sandbox, bwrap, script)
        assert result.returncode != 0 and "Read-only file system" in result.stderr, script
    assert sorted(p.name for p in worktree.iterdir()) == [".git", "docs", "src"]


def test_tmp_is_private(bwrap, worktree, home):
    name = f"sandbox-{secrets.token_hex(6)}"
    host_file = Path("/tmp") / f"host-{name}"
    host_file.write_text("host")
    try:
        result = sh(spec(worktree, home), bwrap, f"echo x > /tmp/{name} && cat /tmp/{name} && ls /tmp/host-{name}")
    finally:
        host_file.unlink()
    assert result.stdout.startswith("x\n")
    assert "No such file" in result.stderr  # the host's /tmp is not visible inside
    assert not (Path("/tmp") / name).exists()


def test_home_is_the_private_folder(bwrap, worktree, home):
    result = sh(spec(worktree, home), bwrap, 'echo "$HOME" && echo x > "$HOME/.profile-test"')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(home)
    assert (home / ".profile-test").exists()


def test_network_is_always_off_tcp_to_loopback_fails(bwrap, worktree, home):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')"
        result = run(spec(worktree, home), bwrap, PY, "-c", code)
    assert result.returncode != 0 and "connected" not in result.stdout
    assert "Network is unreachable" in result.stderr or "Connection refused" in result.stderr


def test_environment_is_exactly_the_spec(bwrap, worktree, home, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    env = agent_env(home, {"TASK_FLAG": "1"})
    result = run(spec(worktree, home, env=env), bwrap, "/usr/bin/env", "-0")
    inside = dict(item.split("=", 1) for item in result.stdout.split("\0") if item)
    assert inside == {**env, "PWD": str(worktree)}  # bwrap sets PWD after --chdir
    assert "hunter2" not in result.stdout


def test_no_new_privileges_and_no_capabilities(bwrap, worktree, home):
    status = run(spec(worktree, home), bwrap, "/bin/cat", "/proc/self/status").stdout
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["NoNewPrivs"].strip() == "1"
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0


def test_background_process_dies_with_the_first_process(bwrap, worktree, home):
    marker = f"987.{secrets.randbelow(10**6):06d}"
    script = f"(touch src/started; exec sleep {marker}) & sleep 0.3; exit 0"
    result = sh(spec(worktree, home, writable=[worktree / "src"]), bwrap, script)
    assert result.returncode == 0, result.stderr
    assert (worktree / "src" / "started").exists()  # the background process did run
    assert wait_gone(marker) == []


def test_die_with_parent(bwrap, worktree, home):
    marker = f"986.{secrets.randbelow(10**6):06d}"
    argv = [*spec(worktree, home).args(bwrap), "/bin/sleep", marker]
    parent_code = "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); time.sleep(60)"
    parent = subprocess.Popen([PY, "-c", parent_code, *argv], start_new_session=True)
    try:
        # The sandboxed command itself, not bubblewrap (whose command line carries the marker from the
        # start, before it has armed --die-with-parent: killing the parent then is the window that
        # runtime.sandbox.launch closes, which this test of bubblewrap alone does not use).
        deadline = time.monotonic() + 5
        while not any((proc.info["cmdline"] or [""])[0] == "/bin/sleep" for proc in marked(marker)):
            assert time.monotonic() < deadline, "the sandboxed process never started"
            time.sleep(0.05)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=5)
        assert wait_gone(marker) == []
    finally:
        for proc in marked(marker):
            proc.kill()
        if parent.poll() is None:
            parent.kill()


def test_arguments_order_protected_paths_last(worktree, home):
    args = spec(worktree, home, writable=[worktree / "src"], readonly=[worktree / ".git"]).args("/usr/bin/bwrap")
    assert args[0] == "/usr/bin/bwrap" and args[-1] == "--"
    assert args.index("--tmpfs") < args.index(str(worktree)) < args.index(str(worktree / "src"))
    assert args.index(str(worktree / "src")) < args.index(str(worktree / ".git"))
    assert "--unshare-net" in args and "--clearenv" in args


def test_spec_errors(worktree, home, tmp_path):
    with pytest.raises(SandboxSpecError, match="outside the worktree"):
        spec(worktree, home, writable=[tmp_path]).args("bwrap")
    with pytest.raises(SandboxSpecError, match="overlaps the worktree"):
        spec(worktree, home, extra_binds_rw=[worktree.parent]).args("bwrap")
    with pytest.raises(SandboxSpecError, match="absolute"):
        spec(worktree, home, writable=[Path("src")]).args("bwrap")
    link = worktree / "src" / "escape"
    link.symlink_to(tmp_path)
    with pytest.raises(SandboxSpecError, match="outside the worktree"):
        spec(worktree, home, writable=[link]).args("bwrap")


def test_missing_bwrap_is_a_fatal_error(worktree, home, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert bwrap_path() is None
    with pytest.raises(SandboxUnavailable, match="--no-os-sandbox") as info:
        spec(worktree, home).args()
    assert isinstance(info.value, FatalError) and "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["PATH", "HOME", "LD_PRELOAD", "BASH_ENV", "PYTHONPATH", "GIT_DIR",
                                  "SSH_AUTH_SOCK", "RUNTIME_CATALOG", "CLAUDE_PROJECT_DIR", "LC_ALL", "bad-name"])
def test_agent_env_refuses_names_that_undo_the_sandbox(home, name):
    with pytest.raises(UnsafeEnvironment):
        agent_env(home, {name: "x"})


def test_agent_env_is_built_from_scratch(home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = agent_env(home, {"PYTHONUNBUFFERED": "1", "MY_FLAG": "on"})
    assert set(env) == {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TERM", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "MY_FLAG"}
    assert env["HOME"] == str(home) and env["TMPDIR"] == "/tmp" and env["TERM"] == "dumb"
    assert env["PATH"].split(":")[-1] == str(Path(sys.executable).parent)
    assert os.path.exists(Path(env["PATH"].split(":")[-1]) / "runtime")


def test_masked_folders_hide_secrets_but_binds_show_through(bwrap, worktree, home, tmp_path):
    masked = tmp_path / "orchestrator-home"
    (masked / ".ssh").mkdir(parents=True)
    (masked / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (masked / "tools" / "bin").mkdir(parents=True)
    (masked / "tools" / "bin" / "hello").write_text("visible\n")
    sandbox = spec(worktree, home, masked=[masked], extra_binds_ro=[masked / "tools"])
    secret = run(sandbox, bwrap, "cat", str(masked / ".ssh" / "id_ed25519"))
    assert secret.returncode != 0 and "PRIVATE KEY" not in secret.stdout
    shown = run(sandbox, bwrap, "cat", str(masked / "tools" / "bin" / "hello"))
    assert shown.returncode == 0 and shown.stdout == "visible\n"
    assert (masked / ".ssh" / "id_ed25519").read_text() == "PRIVATE KEY\n"  # the host is untouched


def test_expose_binds_back_what_tmp_or_a_mask_would_hide(worktree, home, tmp_path):
    masked = tmp_path / "orchestrator-home"
    (masked / "tools").mkdir(parents=True)
    system = Path("/usr/bin")  # shown by every sandbox already
    outside = tmp_path / "venv"  # neither under a system folder nor bound: hidden unless exposed
    outside.mkdir()
    sandbox = SandboxSpec(worktree=worktree, home=home, masked=[masked])
    sandbox.expose([masked / "tools", worktree / "src", system, tmp_path / "missing", outside, outside / "bin"])
    assert sandbox.extra_binds_ro == [(masked / "tools").resolve(), outside.resolve()]


@pytest.mark.parametrize("mount, share", [("/tmp", 1.0), ("/var/tmp", 0.25), ("/dev/shm", 0.25), ("/run", None)])
def test_each_private_tmpfs_holds_its_share_of_the_memory_limit(bwrap, worktree, home, mount, share):
    """Sized from the run's memory limit (64 MiB here): a writer that fills one gets ENOSPC at its size,
    whatever the host's free memory; the host's own folder of that name is untouched."""
    size_mb = 16 if share is None else int(64 * share)
    marker = secrets.token_hex(6)
    script = (f"dd if=/dev/zero of={mount}/fill-{marker} bs=1M count={size_mb + 8} 2>&1; "
              f"echo size=$(stat -c %s {mount}/fill-{marker})")
    result = sh(spec(worktree, home, tmpfs_mb=64), bwrap, script)
    assert "No space left on device" in result.stdout, result.stdout + result.stderr
    written = int(result.stdout.rsplit("size=", 1)[1])
    assert written <= size_mb << 20
    assert not Path(f"{mount}/fill-{marker}").exists()


def test_without_a_memory_limit_the_tmpfs_mounts_are_unsized(worktree, home):
    args = spec(worktree, home).args("/usr/bin/bwrap")
    assert "--size" not in args
    sized = spec(worktree, home, tmpfs_mb=1024, masked=[home.parent / "masked"])
    (home.parent / "masked").mkdir()
    args = sized.args("/usr/bin/bwrap")
    sizes = {args[i + 3]: int(args[i + 1]) for i, a in enumerate(args) if a == "--size"}
    assert sizes == {"/tmp": 1 << 30, "/var/tmp": 256 << 20, "/dev/shm": 256 << 20, "/run": 16 << 20,
                     str((home.parent / "masked").resolve()): 16 << 20}

