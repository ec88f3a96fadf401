"""`runtime check --resident`: answered by a resident process of this user's, exactly as cold, and cold whenever
the server is missing, unsafe to reach, or answers anything but an answer.

Real processes: the hook as `runtime hook install --resident` writes it, the server it starts, a real git
repository; every test has its own socket folder (XDG_RUNTIME_DIR) and stops its server.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import RUNTIME

CALLS = [
    ("Bash", {"command": "ls src"}),
    ("Bash", {"command": "git push origin main"}),
    ("Bash", {"command": "python -c 'print(1)'"}),
    ("Bash", {"command": "for f in a b; do echo \"$f\"; done"}),
    ("Write", {"file_path": "src/app.py", "content": "x = 2\n"}),
    ("Write", {"file_path": ".git/config", "content": "x"}),
    ("Read", {"file_path": "~/.ssh/id_rsa"}),
    ("NoSuchTool", {}),
]


@pytest.fixture
def world(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src/app.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    sockets = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp"))  # a socket's path is short (108 bytes)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(sockets), "CLAUDE_PROJECT_DIR": str(repo),
           "RUNTIME_CACHE_DIR": str(tmp_path / "cache")}
    yield repo.resolve(), sockets, env
    for lock in sockets.glob("agent-runtime-gate/*.lock"):
        pid = lock.read_text().strip()
        if pid.isdigit():
            try:
                os.kill(int(pid), signal.SIGTERM)
            except ProcessLookupError:
                pass
    shutil.rmtree(sockets, ignore_errors=True)


def hook(repo: Path, env: dict, tool: str, tool_input: dict, *extra: str,
         resident: bool = True) -> subprocess.CompletedProcess:
    call = {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input, "cwd": str(repo)}
    argv = [RUNTIME, "check", "--on-allow", "defer", "--main-session", "session", *(["--resident"] if resident else [])]
    return subprocess.run([*extra, *argv], input=json.dumps(call), capture_output=True, text=True, env=env,
                          cwd=repo, timeout=60)


def server_socket(sockets: Path, timeout: float = 20) -> Path:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = [p for p in (sockets / "agent-runtime-gate").glob("gate-*.sock") if p.is_socket()]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("no resident server started")


def test_the_resident_server_answers_exactly_as_the_cold_hook(world):
    repo, sockets, env = world
    first = hook(repo, env, *CALLS[0])
    assert first.returncode == 0 and first.stdout == ""  # allowed (deferred), answered cold
    server_socket(sockets)
    for tool, tool_input in CALLS:
        cold = hook(repo, env, tool, tool_input, resident=False)
        served = hook(repo, env, tool, tool_input)
        assert (served.returncode, served.stdout, served.stderr) == (cold.returncode, cold.stdout, cold.stderr), tool_input
    assert hook(repo, env, *CALLS[1]).returncode == 2  # a deny is a deny
    assert json.loads(hook(repo, env, *CALLS[2]).stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_an_answer_from_the_server_imports_nothing_of_the_gate(world):
    repo, sockets, env = world
    hook(repo, env, *CALLS[0])
    server_socket(sockets)
    time.sleep(0.3)  # the server has loaded the gate and listens
    python = Path(RUNTIME).parent / "python3"
    traced = subprocess.run([str(python), "-X", "importtime", RUNTIME, "check", "--on-allow", "defer",
                             "--main-session", "session", "--resident"],
                            input=json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                              "tool_input": {"command": "git push"}, "cwd": str(repo)}),
                            capture_output=True, text=True, env=env, cwd=repo, timeout=60)
    assert traced.returncode == 2 and "never allowed" in traced.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines() if "import time" in line]
    assert "runtime.cli.resident" in imported
    assert not [m for m in imported if m.startswith(("runtime.gate", "runtime.policy", "tree_sitter"))], imported
    assert "re" not in imported and "enum" not in imported, imported  # the launcher and the client path import neither


def test_a_server_that_answers_garbage_or_nothing_leaves_the_cold_answer(world):
    repo, sockets, env = world
    hook(repo, env, *CALLS[0])
    path = server_socket(sockets)
    pid = int(Path(str(path) + ".lock").read_text())
    os.kill(pid, signal.SIGTERM)
    time.sleep(0.2)
    path.unlink(missing_ok=True)
    # A process of this user's holds the lock and the socket, and answers an `allow` of the wrong shape.
    lock = os.open(str(path) + ".lock", os.O_RDWR)
    import fcntl

    fcntl.flock(lock, fcntl.LOCK_EX)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)

    def fake() -> None:
        for answer in (b"\x00\x00\x00\x05hello", b"", None):
            conn, _ = listener.accept()
            if answer is None:
                time.sleep(0.5)
            elif answer:
                conn.sendall(answer)
            conn.close()

    thread = threading.Thread(target=fake, daemon=True)
    thread.start()
    for _ in range(3):
        d = hook(repo, env, "Bash", {"command": "git push origin main"})
        assert d.returncode == 2 and "never allowed" in d.stdout  # answered cold, and denied
    thread.join(5)
    assert not thread.is_alive()  # each of the three calls reached the fake server first
    listener.close()
    os.close(lock)


def test_a_socket_folder_others_may_enter_is_never_used(world):
    repo, sockets, env = world
    folder = sockets / "agent-runtime-gate"
    folder.mkdir(mode=0o700)
    folder.chmod(0o755)
    d = hook(repo, env, "Bash", {"command": "git push origin main"})
    assert d.returncode == 2 and "never allowed" in d.stdout
    time.sleep(1)
    assert not list(folder.glob("gate-*"))  # no server started there


def test_hook_install_writes_the_resident_hook_unless_told_not_to(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    proc = subprocess.run([RUNTIME, "hook", "install", "--json"], capture_output=True, text=True, cwd=repo, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["command"].endswith("--main-session session --resident")
    proc = subprocess.run([RUNTIME, "hook", "install", "--no-resident", "--json"], capture_output=True, text=True,
                          cwd=repo, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["command"].endswith("--main-session session")
    settings = json.loads((repo / out["settings"]).read_text())
    [entry] = settings["hooks"]["PreToolUse"]
    assert not entry["hooks"][0]["command"].endswith("--resident")  # replaced, not added beside


def test_a_server_whose_socket_is_gone_exits(world):
    """Its folder removed (a HOME that was a test's, a cleared cache): no call can reach it, so it goes."""
    repo, sockets, env = world
    hook(repo, env, *CALLS[0])
    path = server_socket(sockets)
    pid = int(Path(str(path) + ".lock").read_text())
    path.unlink()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the server {pid} still runs")
