"""Inside the sandbox: TCP ports on its own loopback that lead to the orchestrator's Unix sockets.

    python -I -m runtime.sandbox.netrelay --forward 127.0.0.1:3128=/run/x/egress.sock [...] -- ARGV...

Every sandbox has its own network namespace, whose loopback bubblewrap brings
up and nothing else can reach. Programs only speak HTTP to a host and port,
so this listens on each given loopback address and copies every connection
byte for byte to its Unix socket (bound read-only into the sandbox, owned by
the agent's uid): the egress proxy (`EGRESS_PORT`, announced as HTTP_PROXY)
and, for the claude-code backend, the model proxy (`MODEL_PORT`). Then it
runs ARGV with the inherited stdin, stdout, stderr and environment, passes
SIGTERM, SIGINT and SIGHUP on, and exits with its exit code (128 + N when
signal N ended it). The relay itself only ever writes to stderr. The ports
are fixed: the namespace is private, so nothing else can hold them.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading

EGRESS_PORT = 3128
MODEL_PORT = 8082
_CHUNK = 64 * 1024


def pump(src: socket.socket, dst: socket.socket, counter: list[int] | None = None) -> None:
    """Copy until src ends, then tell dst that no more is coming; ``counter[0]`` adds up the bytes."""
    try:
        while chunk := src.recv(_CHUNK):
            dst.sendall(chunk)
            if counter is not None:
                counter[0] += len(chunk)
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
        print(f"netrelay: cannot reach {socket_path}: {exc}", file=sys.stderr)
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
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


def listen(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)
    return listener


def parse_forward(text: str) -> tuple[str, int, str]:
    address, sep, path = text.partition("=")
    host, colon, port = address.rpartition(":")
    if not sep or not colon or not port.isdigit() or not path.startswith("/") or host != "127.0.0.1":
        raise ValueError(f"--forward {text!r}: expected 127.0.0.1:PORT=/path/to.sock")
    return host, int(port), path


def with_forward(argv: list[str], port: int, socket_path: str) -> list[str]:
    """``argv`` run under a relay that also forwards ``port``: one relay per sandbox, not a chain."""
    head = command_prefix({})[:-1]
    if argv[:len(head)] == head:
        return [*argv[:len(head)], "--forward", f"127.0.0.1:{port}={socket_path}", *argv[len(head):]]
    return [*command_prefix({port: socket_path}), *argv]


def command_prefix(forwards: dict[int, str]) -> list[str]:
    """The argv prefix that runs a command under this relay (the interpreter the runtime runs on)."""
    out = [sys.executable, "-I", "-m", "runtime.sandbox.netrelay"]
    for port, path in sorted(forwards.items()):
        out += ["--forward", f"127.0.0.1:{port}={path}"]
    return [*out, "--"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="netrelay", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--forward", action="append", default=[], help="127.0.0.1:PORT=/path/to.sock")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the program and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run after --")
    try:
        forwards = [parse_forward(f) for f in args.forward]
    except ValueError as exc:
        parser.error(str(exc))
    for host, port, path in forwards:
        try:
            listener = listen(host, port)
        except OSError as exc:
            print(f"netrelay: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
            return 126
        threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    try:
        proc = subprocess.Popen(command, env=dict(os.environ))
    except OSError as exc:
        print(f"netrelay: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: proc.send_signal(signum))
    code = proc.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
