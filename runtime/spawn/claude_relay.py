"""Inside the sandbox: give the Claude Code CLI an HTTP endpoint that leads to the proxy.

    python -I -m runtime.spawn.claude_relay --socket SOCK -- CLAUDE_ARGV...

The sandbox has no network (``bwrap --unshare-net``), but its own network namespace has a
loopback interface that bubblewrap brings up, and the CLI only speaks HTTP to a URL. So this
program listens on 127.0.0.1:<ephemeral port> in that namespace, copies each TCP connection byte
for byte to the orchestrator's proxy on the Unix socket ``SOCK`` (one thread per direction), and
runs the CLI with ``ANTHROPIC_BASE_URL`` pointing at the listener and a placeholder API key: the
real key is added by the proxy, outside the sandbox, and never exists in here.

The CLI inherits stdin, stdout and stderr, so the agent's stdout stays the CLI's stream-JSON;
the relay itself only ever writes to stderr. Termination signals are passed on to the CLI, and
the relay exits with the CLI's exit code (128 + N when signal N ended it).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading

PLACEHOLDER_KEY = "placeholder-not-a-key"
_CHUNK = 64 * 1024


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy until src ends, then tell dst that no more is coming."""
    try:
        while chunk := src.recv(_CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _relay(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError as exc:
        print(f"claude_relay: cannot reach the model proxy at {socket_path}: {exc}", file=sys.stderr)
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, socket_path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(client, socket_path), daemon=True).start()


def listen() -> socket.socket:
    """A TCP listener on the loopback interface, on a port the kernel picks."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    return listener


def cli_env(environ: dict[str, str], port: int) -> dict[str, str]:
    """The CLI's environment: ours, pointed at the relay, with a key that is not a key."""
    env = {k: v for k, v in environ.items() if k != "ANTHROPIC_AUTH_TOKEN"}
    env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{port}"
    env["ANTHROPIC_API_KEY"] = PLACEHOLDER_KEY
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="claude_relay", description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="the orchestrator's model proxy (a Unix socket)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the CLI and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run after --")
    listener = listen()
    threading.Thread(target=_serve, args=(listener, args.socket), daemon=True).start()
    try:
        proc = subprocess.Popen(command, env=cli_env(dict(os.environ), listener.getsockname()[1]))
    except OSError as exc:
        print(f"claude_relay: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: proc.send_signal(signum))
    code = proc.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
