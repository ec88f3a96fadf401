"""A Ray cluster of a head and two worker nodes, all on 127.0.0.1, with one command run against it.

Run as `unshare -n -p -f --mount-proc python loopback_cluster.py SPEC.json`: in a network namespace
of its own with only loopback up, every Ray address is 127.0.0.1 and no traffic can leave the
machine (outside one, Ray advertises the machine's interface address); in a PID namespace of its own,
every Ray process dies with this script, so parallel tests never stop each other's clusters.

SPEC: {"temp": short folder for Ray's sockets, "command": [...], "env": {...} for the command,
"out": where to write what was observed, "kill_busy_node": kill the raylet of the first node that
runs a job, a second after the job starts, "canary": a text no process or Ray file may hold,
"serve": a command started before the nodes and stopped (SIGTERM) after the command, "serve_port":
the port on 127.0.0.1 it listens on}. The nodes start from an environment without the command's
extra variables (as nodes a cluster's operator started would be).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
PORT = "6390"


def _start(args: list[str], env: dict[str, str]) -> None:
    subprocess.run([RAY, "start", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
                    "--object-store-memory=100000000", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _nodes(env: dict[str, str]) -> dict[str, str]:
    """Node id -> the worker resource it carries ("w1", "w2", or "head")."""
    code = ("import json, ray; ray.init(address='127.0.0.1:" + PORT + "', logging_level='ERROR');"
            "print(json.dumps({n['NodeID']: next((r for r in n['Resources'] if r in ('w1', 'w2')), 'head')"
            " for n in ray.nodes() if n['Alive']}))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _wait_for_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _busy_raylet() -> tuple[int, int] | None:
    """(raylet pid, worker pid) of a worker process running a job (a child of its node's raylet)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            title = (proc / "cmdline").read_bytes()
            if title.startswith(b"ray::_remote_run"):
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                return ppid, int(proc.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    base_env = {k: v for k, v in os.environ.items() if k not in spec.get("env", {})}
    base_env["RAY_USAGE_STATS_ENABLED"] = "0"
    temp = spec["temp"]
    served = None
    if spec.get("serve"):
        served = subprocess.Popen(spec["serve"], env=base_env)
        _wait_for_port(int(spec["serve_port"]))
    _start(["--head", f"--port={PORT}", "--num-cpus=0", "--include-dashboard=false", f"--temp-dir={temp}"], base_env)
    for n in (1, 2):
        _start([f"--address=127.0.0.1:{PORT}", "--num-cpus=2", f"--resources={json.dumps({f'w{n}': 1})}",
                f"--labels=runtime-test/worker=w{n}"], base_env)
    nodes = _nodes(base_env)
    killed: list[str] = []
    if spec.get("kill_busy_node"):
        def killer() -> None:
            deadline = time.monotonic() + 120
            while (busy := _busy_raylet()) is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if busy is not None:
                time.sleep(1.0)
                raylet_cmd = Path(f"/proc/{busy[0]}/cmdline").read_bytes()
                worker = next((w for w in ("w1", "w2") if w.encode() in raylet_cmd), "?")
                for pid in busy:
                    os.kill(pid, signal.SIGKILL)
                killed.append(worker)
        threading.Thread(target=killer, daemon=True).start()
    env = {**base_env, **spec.get("env", {}), "RAY_ADDRESS": f"127.0.0.1:{PORT}"}
    done = subprocess.run(spec["command"], env=env, capture_output=True, text=True, cwd=spec.get("cwd"))
    if served is not None:
        served.terminate()
        served.wait(timeout=30)
    leaks = []
    canary = spec.get("canary")
    if canary:  # every process but the command's own (gone by now) and this script's
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit() and int(proc.name) != os.getpid():
                try:
                    if canary.encode() in (proc / "environ").read_bytes():
                        leaks.append(" ".join(p.decode() for p in (proc / "cmdline").read_bytes().split(b"\0")[:3]))
                except OSError:
                    pass
        for path in Path(temp).rglob("*"):
            try:
                if path.is_file() and canary.encode() in path.read_bytes():
                    leaks.append(str(path))
            except OSError:
                pass
    Path(spec["out"]).write_text(json.dumps({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
                                             "nodes": nodes, "killed": killed, "leaks": leaks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
