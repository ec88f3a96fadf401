"""Egress benchmark, run on demand (`make bench`), never as a timed test.

What a request through the egress proxy costs when the proxy adds a credential (TLS terminated with the run's
CA, the request read and written again by h11, a second TLS session to the site) against the plain tunnel every
other host gets (CONNECT, then the client's own TLS to the site through the proxy's byte pump), measured side by
side in one run on this machine, against an HTTPS site on loopback:

- a new connection per request (what curl, or pip's first request, pays): CONNECT, handshakes and one GET;
- requests on one kept-alive connection (what git and pip do after their first).

Each figure is the median of `--runs` rounds of `--requests` requests, in milliseconds per request.
"""

from __future__ import annotations

import argparse
import http.server
import shutil
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import h11  # noqa: E402

from runtime.sandbox.credentials import Credential  # noqa: E402
from runtime.sandbox.egress import EgressProxy, EgressRules  # noqa: E402
from runtime.sandbox.egress_ca import RunCA  # noqa: E402

HOSTS = ("registry.test", "plain.test")
BODY = b"x" * 2048


class _Site(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802
        # the answer in one write: a head and a body written apart meet Nagle and delayed ACKs on loopback
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY))

    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    def get_request(self):  # no Nagle: a site on loopback answers at once, as a real one's kernel would send
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address


class _Client:
    def __init__(self, socket_path: Path, host: str, port: int, cadata: bytes) -> None:
        raw = socket.socket(socket.AF_UNIX)
        raw.settimeout(10)
        raw.connect(str(socket_path))
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += raw.recv(1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise SystemExit(f"the proxy refused: {head!r}")
        self.sock = ssl.create_default_context(cadata=cadata.decode()).wrap_socket(raw, server_hostname=host)
        self.host, self.conn = host, h11.Connection(h11.CLIENT)

    def get(self) -> None:
        self.sock.sendall(self.conn.send(h11.Request(method="GET", target="/", headers=[("Host", self.host)]))
                          + self.conn.send(h11.EndOfMessage()))
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(self.sock.recv(65536))
            elif isinstance(event, h11.EndOfMessage):
                self.conn.start_next_cycle()
                return
            elif isinstance(event, h11.ConnectionClosed):
                raise SystemExit("the connection closed mid-answer")


def _per_request(fn, requests: int, runs: int) -> float:
    rounds = []
    for _ in range(runs):
        started = time.perf_counter()
        fn(requests)
        rounds.append((time.perf_counter() - started) / requests * 1000)
    return statistics.median(rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    roots = RunCA.make(HOSTS)  # the sites' certificates, and the "system's roots" the proxy trusts
    servers, ports = [], {}
    for host in HOSTS:
        server = _Server(("127.0.0.1", 0), _Site)
        server.socket = roots.server_context(host).wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        ports[host] = server.server_address[1]
    folder = Path(tempfile.mkdtemp(prefix="rt-bench-"))
    rules = EgressRules(HOSTS, ("127.0.0.1/32",), tuple(ports.values()),
                        (Credential("registry.test", "bearer", None, "bench-secret-0123456789"),))
    proxy = EgressProxy(folder / "egress.sock", rules, resolver=lambda host, port: ["127.0.0.1"],
                        upstream_tls=ssl.create_default_context(cadata=roots.certificate_pem.decode())).start()
    assert proxy.ca is not None
    trust = {"plain.test": roots.certificate_pem, "registry.test": proxy.ca.certificate_pem}
    try:
        rows = []
        for host, label in (("plain.test", "plain tunnel"), ("registry.test", "credential added")):
            def fresh(n: int, host: str = host) -> None:
                for _ in range(n):
                    client = _Client(proxy.socket_path, host, ports[host], trust[host])
                    client.get()
                    client.sock.close()

            def kept(n: int, host: str = host) -> None:
                client = _Client(proxy.socket_path, host, ports[host], trust[host])
                for _ in range(n):
                    client.get()
                client.sock.close()

            fresh(3)  # warm: the leaf certificate is made on the first connection
            rows.append((label, _per_request(fresh, args.requests, args.runs), _per_request(kept, args.requests, args.runs)))
    finally:
        proxy.close()
        for server in servers:
            server.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"ms per request through the egress proxy to an HTTPS site on loopback ({args.requests} requests, median of "
          f"{args.runs} rounds)")
    print(f"{'':<18} {'new connection each':>20} {'one kept-alive connection':>26}")
    for label, fresh_ms, kept_ms in rows:
        print(f"{label:<18} {fresh_ms:>20.2f} {kept_ms:>26.2f}")
    (_, plain_fresh, plain_kept), (_, cred_fresh, cred_kept) = rows
    print(f"{'ratio':<18} {cred_fresh / plain_fresh:>19.2f}x {cred_kept / plain_kept:>25.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
