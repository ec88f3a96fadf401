"""The egress proxy and its relay, over real sockets and real bubblewrap.

A local HTTP server on 127.0.0.1 stands for an allowed site: only a rule that
opens 127.0.0.1 explicitly (a role's `addresses`) lets the proxy reach it,
which is also how loopback stays refused for everyone else. Refused
destinations are never resolved or connected to: the tests watch the
resolver and count connections.
"""

from __future__ import annotations

import http.server
import os
import resource
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from runtime.audit.log import AuditLog, verify
from runtime.audit.log import records as audit_records
from runtime.audit.records import record_of
from runtime.lang.domains import domain_allowed, pattern_error, url_refusal
from runtime.policy.document import seal
from runtime.sandbox.bwrap import SandboxSpec
from runtime.sandbox.egress import EgressConfigError, EgressProxy, EgressRules, Limits, egress_rules, system_resolver
from runtime.sandbox.env import agent_env
from runtime.sandbox.identity import agent_user
from runtime.sandbox.launch import hand_over, sandboxed
from runtime.sandbox.netrelay import EGRESS_PORT, command_prefix
from tests.conftest import REPO

PY = sys.executable


class _Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = f"hello from {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def folder():
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="rt-egress-"))  # short: Unix socket paths are limited
    yield path
    import shutil

    shutil.rmtree(path, ignore_errors=True)


class Watch:
    """A resolver that records what it was asked, around the real one."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.asked: list[str] = []
        self.answers = answers or {}

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return self.answers[host] if host in self.answers else system_resolver(host, port)


def start(folder: Path, rules: EgressRules, resolver=None, limits: Limits | None = None,
          audit=None) -> tuple[EgressProxy, list[dict]]:
    records: list[dict] = []
    proxy = EgressProxy(folder / "egress.sock", rules, audit=audit or records.append,
                        resolver=resolver or system_resolver, limits=limits or Limits())
    return proxy.start(), records


def ask(proxy: EgressProxy, raw: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(proxy.socket_path))
        sock.sendall(raw)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
        return out


def connect_then_get(proxy: EgressProxy, host: str, port: int, path: str = "/x") -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(proxy.socket_path))
        sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(1)
            if not chunk:
                return head
            head += chunk
        if not head.startswith(b"HTTP/1.1 200"):
            return head + sock.recv(65536)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
        return head + out


LOCAL = ("127.0.0.1/32", "::1/128")


def wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# -- the rules ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern,host,expected", [
    ("pypi.org", "pypi.org", True), ("pypi.org", "PyPI.org.", True), ("pypi.org", "files.pypi.org", False),
    ("*.python.org", "docs.python.org", True), ("*.python.org", "python.org", False),
    ("*.python.org", "evilpython.org", False), ("pypi.org", "127.0.0.1", False), ("pypi.org", "", False),
    ("pypi.org", "pypi.org\x00.evil", False),
])
def test_domain_patterns(pattern, host, expected):
    assert domain_allowed([pattern], host) is expected


@pytest.mark.parametrize("pattern", ["*", "*.com", "10.0.0.1", "https://pypi.org", "pypi.org:443", "a*b.org", ""])
def test_bad_patterns_are_refused(pattern):
    assert pattern_error(pattern) is not None
    with pytest.raises(EgressConfigError):
        EgressRules((pattern,))


@pytest.mark.parametrize("address,refused", [
    ("127.0.0.1", True), ("10.0.0.1", True), ("172.16.5.4", True), ("192.168.1.1", True),
    ("169.254.169.254", True), ("100.64.0.1", True), ("0.0.0.0", True), ("224.0.0.1", True), ("::1", True),
    ("fd00::1", True), ("fe80::1", True), ("::ffff:10.0.0.1", True), ("::ffff:127.0.0.1", True),
    ("93.184.216.34", False), ("2606:4700::1111", False),
])
def test_only_public_addresses_unless_opened(address, refused):
    assert (EgressRules(("example.com",)).address_refusal(address) is not None) is refused
    assert EgressRules(("example.com",), ("0.0.0.0/0", "::/0")).address_refusal(address) is None


def test_urls_for_web_fetch():
    assert url_refusal(["docs.python.org"], "https://docs.python.org/3/") is None
    assert "credentials" in url_refusal(["docs.python.org"], "https://user:pw@docs.python.org/")
    assert "port" in url_refusal(["docs.python.org"], "https://docs.python.org:8443/")
    assert "not in the domains" in url_refusal(["docs.python.org"], "http://169.254.169.254/latest")
    assert "declares no domains" in url_refusal([], "https://docs.python.org/")
    assert url_refusal(["docs.python.org"], "file:///etc/passwd") is not None


def test_rules_come_from_the_compiled_policy():
    gate = {"kind": "egress-allowlist", "atom": "net::egress-allowlist",
            "params": {"domains": ["pypi.org"], "addresses": [], "ports": [443]}}
    def doc(tools, gates):
        return seal(role="test", root="/", tools=tools, gates=gates)

    assert egress_rules(doc(["Read", "WebFetch"], [gate])) == EgressRules(("pypi.org",), (), (443,))
    assert egress_rules(doc(["Read", "Bash"], [gate])) is None  # no web tool: no way out
    empty = {**gate, "params": {**gate["params"], "domains": []}}
    assert egress_rules(doc(["WebFetch"], [empty])) is None


# -- the proxy ---------------------------------------------------------------------------------------

def test_an_allowed_site_is_reachable_by_tunnel_and_by_plain_get(site, folder):
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL, (site,)))
    try:
        tunnel = connect_then_get(proxy, "localhost", site, "/tunnel")
        plain = ask(proxy, f"GET http://localhost:{site}/plain HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        # The end record follows once the exchange has ended, which may be just after the client read it all.
        wait_for(lambda: len(records) == 4)
    finally:
        proxy.close()
    assert b"200 Connection Established" in tunnel and tunnel.endswith(b"hello from /tunnel")
    assert plain.startswith(b"HTTP/1.0 200") or plain.startswith(b"HTTP/1.1 200")
    assert plain.endswith(b"hello from /plain")
    requests = [r for r in records if r["event"] == "request"]
    assert [(r["method"], r["host"], r["decision"], r["status"]) for r in requests] == [
        ("CONNECT", "localhost", "allow", 200), ("GET", "localhost", "allow", None)]
    for request in requests:
        end = next(r for r in records if r["event"] == "end" and r["id"] == request["id"])
        assert records.index(end) > records.index(request)
        assert request["address"] in ("127.0.0.1", "::1") and end["address"] == request["address"]
        assert end["bytes_down"] > 0 and end["bytes_up"] > 0 and end["ended"] == "closed" and end["duration_s"] >= 0


@pytest.mark.parametrize("host", ["example.org", "127.0.0.1", "169.254.169.254", "10.0.0.1", "[::1]"])
def test_refused_destinations_are_never_resolved_or_connected(site, folder, host, monkeypatch):
    watch = Watch()
    connects: list[object] = []
    real = socket.socket.connect

    def counting(sock, address):
        if sock.family != socket.AF_UNIX:
            connects.append(address)
        return real(sock, address)

    proxy, records = start(folder, EgressRules(("localhost",), LOCAL, (site, 80, 443)), watch)
    monkeypatch.setattr(socket.socket, "connect", counting)
    try:
        tunnel = connect_then_get(proxy, host, 443)
        plain = ask(proxy, f"GET http://{host}/latest/meta-data/ HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    finally:
        proxy.close()
    for answer in (tunnel, plain):
        assert answer.startswith(b"HTTP/1.1 403"), answer
        assert b"egress proxy refused" in answer
    assert watch.asked == [] and connects == []
    assert [(r["event"], r["decision"], r["status"]) for r in records] == [("request", "deny", 403)] * 2


def test_a_name_that_resolves_to_loopback_is_refused_after_resolution(site, folder):
    proxy, records = start(folder, EgressRules(("localhost",), (), (site,)))  # no address opened
    try:
        answer = connect_then_get(proxy, "localhost", site)
    finally:
        proxy.close()
    assert answer.startswith(b"HTTP/1.1 403") and b"not a public address" in answer
    assert records[0]["decision"] == "deny" and records[0]["address"] in ("127.0.0.1", "::1")


def test_one_private_answer_refuses_the_name(folder):
    watch = Watch({"mirror.example": ["93.184.216.34", "10.0.0.7"]})  # a rebinding-style mixed answer
    proxy, records = start(folder, EgressRules(("mirror.example",)), watch)
    try:
        answer = connect_then_get(proxy, "mirror.example", 443)
    finally:
        proxy.close()
    assert answer.startswith(b"HTTP/1.1 403") and b"10.0.0.7" in answer
    assert watch.asked == ["mirror.example"]


def test_garbage_and_credentials_are_refused(folder):
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL))
    try:
        assert ask(proxy, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400")
        assert ask(proxy, b"GET http://u:p@localhost/ HTTP/1.1\r\nHost: localhost\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert ask(proxy, b"GET ftp://localhost/ HTTP/1.1\r\nHost: localhost\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert ask(proxy, b"CONNECT localhost HTTP/1.1\r\nHost: localhost\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert ask(proxy, b"GET / HTTP/1.1\r\nHost: localhost\r\nX: " + b"y" * 70000 + b"\r\n\r\n").startswith(b"HTTP/1.1 431")
    finally:
        proxy.close()


@pytest.mark.parametrize("answer", ["10.0.0.7", "2002:a9fe:a9fe::1", "64:ff9b::a9fe:a9fe", "::169.254.169.254",
                                    "fec0::1", "::ffff:127.0.0.1", "192.0.0.8"])
def test_a_name_resolving_to_a_disguised_private_address_is_never_connected(folder, answer, monkeypatch):
    watch = Watch({"mirror.example": [answer]})
    connects: list[object] = []
    real = socket.socket.connect

    def counting(sock, address):
        if sock.family != socket.AF_UNIX:
            connects.append(address)
        return real(sock, address)

    proxy, records = start(folder, EgressRules(("mirror.example",)), watch)
    monkeypatch.setattr(socket.socket, "connect", counting)
    try:
        reply = connect_then_get(proxy, "mirror.example", 443)
    finally:
        proxy.close()
    assert reply.startswith(b"HTTP/1.1 403") and b"not a public address" in reply
    assert connects == [] and [(r["decision"], r["address"]) for r in records] == [("deny", answer)]


# -- bounds ------------------------------------------------------------------------------------------

def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _answer(sock: socket.socket) -> bytes:
    """Everything the proxy sends before it closes (a close with our bytes unread may end in a reset)."""
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


@pytest.fixture
def many_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_connection_flood_creates_no_thread_and_holds_no_descriptor_over_the_bound(site, folder,
                                                                                     many_descriptors):
    flood, cap = 1500, Limits().max_connections
    threads, os_threads, descriptors = threading.active_count(), _os_threads(), _descriptors()
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL, (site,)), limits=Limits(header_timeout_s=300))

    def turned_away() -> int:
        return sum(r["count"] for r in list(records) if r.get("status") == 503)

    clients: list[socket.socket] = []
    try:
        for _ in range(flood):
            sock = socket.socket(socket.AF_UNIX)
            clients.append(sock)
            sock.connect(str(proxy.socket_path))  # blocking: waits while the backlog is full
        wait_for(lambda: turned_away() == flood - cap, 60)
        extra_threads, extra_os_threads = threading.active_count() - threads, _os_threads() - os_threads
        extra_descriptors = _descriptors() - descriptors - len(clients)
        answers = []
        for sock in clients:
            try:
                answers.append(sock.recv(65536, socket.MSG_DONTWAIT))
            except BlockingIOError:
                answers.append(None)  # held: the proxy waits for its request head
        with socket.socket(socket.AF_UNIX) as late:
            late.settimeout(10)
            late.connect(str(proxy.socket_path))
            at_the_bound = _answer(late)
    finally:
        for sock in clients:
            sock.close()
    try:
        # The flood gone, its held connections end and the proxy serves a request again.
        deadline = time.monotonic() + 30
        while (after := connect_then_get(proxy, "localhost", site, "/after")).startswith(b"HTTP/1.1 503"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        threads_after = threading.active_count() - threads
    finally:
        proxy.close()
    # The proxy's loop and its audit writer are its only threads here (no name was looked up).
    assert extra_threads <= 2 and extra_os_threads <= 2, (extra_threads, extra_os_threads)
    assert threads_after <= 2 + Limits().resolver_threads  # a name looked up: at most the lookup pool more
    assert extra_descriptors <= cap + 8, extra_descriptors
    assert answers.count(None) == cap
    assert all(a.startswith(b"HTTP/1.1 503") and b"too many connections" in a for a in answers if a is not None)
    assert at_the_bound.startswith(b"HTTP/1.1 503")
    assert b"200 Connection Established" in after and after.endswith(b"hello from /after")
    refusals = [r for r in records if r.get("status") == 503]
    assert all((r["event"], r["decision"], r["host"]) == ("request", "deny", None) for r in refusals)
    assert turned_away() >= flood - cap + 1
    assert [(r["event"], r.get("decision")) for r in records if r.get("status") != 503] == [
        ("request", "allow"), ("end", None)]


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _unresolvable(host: str, port: int) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@pytest.mark.parametrize("status,request_head,host", [
    (400, b"NONSENSE\r\n\r\n", None),
    (400, b"CONNECT localhost:443 HTTP/1.1\r\nHost: loc", None),  # and then the client stops sending
    (403, b"CONNECT example.net:443 HTTP/1.1\r\nHost: example.net:443\r\n\r\n", "example.net"),
    (403, b"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n", "169.254.169.254"),
    (408, b"CONNECT localhost:443 HTTP/1.1\r\n", None),  # and nothing more
    (431, b"GET http://localhost/ HTTP/1.1\r\nX: " + b"y" * 70000 + b"\r\n\r\n", None),
    (502, b"CONNECT localhost:{closed} HTTP/1.1\r\nHost: localhost\r\n\r\n", "localhost"),
    (502, b"CONNECT nowhere.localhost:443 HTTP/1.1\r\nHost: nowhere.localhost\r\n\r\n", "nowhere.localhost"),
])
def test_every_refusal_is_answered_and_audited_when_it_is_decided(folder, status, request_head, host):
    closed = _unused_port()
    resolver = _unresolvable if b"nowhere" in request_head else None
    rules = EgressRules(("localhost", "nowhere.localhost"), LOCAL, (443, closed))
    proxy, records = start(folder, rules, resolver, limits=Limits(header_timeout_s=0.5))
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(10)
            sock.connect(str(proxy.socket_path))
            sock.sendall(request_head.replace(b"{closed}", str(closed).encode()))
            if request_head.endswith(b"loc"):
                sock.shutdown(socket.SHUT_WR)
            answer = _answer(sock)
            # Recorded before the answer went out: no waiting needed.
            decided = list(records)
    finally:
        proxy.close()
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer[:200]
    assert len(decided) == 1, decided
    record = decided[0]
    assert (record["event"], record["decision"], record["status"], record["host"]) == ("request", "deny", status,
                                                                                       host)
    assert record["reason"] and record["reason"].encode() in answer
    if status == 502 and resolver is None:
        assert record["address"] in ("127.0.0.1", "::1") and record["port"] == closed


def test_a_connection_over_the_bound_is_answered_503_and_audited(folder):
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL), limits=Limits(max_connections=1))
    try:
        with socket.socket(socket.AF_UNIX) as held, socket.socket(socket.AF_UNIX) as late:
            held.connect(str(proxy.socket_path))  # accepted first (the backlog is in order), then waits
            late.settimeout(10)
            late.connect(str(proxy.socket_path))
            answer = _answer(late)
            wait_for(lambda: len(records) == 1)
    finally:
        proxy.close()
    assert answer.startswith(b"HTTP/1.1 503") and b"too many connections (at most 1 at once)" in answer
    assert [(r["event"], r["decision"], r["status"], r["count"]) for r in records] == [("request", "deny", 503, 1)]


# -- audit of tunnels --------------------------------------------------------------------------------

@pytest.fixture
def silent_site():
    """A site that accepts connections and never closes them by itself."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(10)
        yield server


def _open_tunnel(socket_path: Path, port: int) -> tuple[socket.socket, bytes]:
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(10)
    sock.connect(str(socket_path))
    sock.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head and (chunk := sock.recv(1)):
        head += chunk
    return sock, head


def test_a_tunnel_is_on_disk_from_its_start_while_the_site_keeps_it_open(folder, silent_site, tmp_path):
    port = silent_site.getsockname()[1]
    log = AuditLog(tmp_path / "audit.jsonl")
    proxy, _ = start(folder, EgressRules(("localhost",), LOCAL, (port,)),
                     audit=lambda record: log.append(record_of("egress", record), "ag-web"))

    def on_disk() -> list[dict]:
        return [r.data() for r in audit_records(log.path, kind="egress")]

    try:
        client, head = _open_tunnel(proxy.socket_path, port)
        with client:
            while_open = on_disk()  # the tunnel is open and the site has not closed: the record is there
            far, _ = silent_site.accept()
            with far:
                client.sendall(b"ping")
                assert far.recv(4) == b"ping"
                far.sendall(b"pong!")
                assert client.recv(5) == b"pong!"
                still_open = on_disk()
                client.close()
                far.close()
                wait_for(lambda: len(on_disk()) == 2)
    finally:
        proxy.close()
    assert head.startswith(b"HTTP/1.1 200")
    assert len(while_open) == 1 and still_open == while_open
    start_record = while_open[0]
    assert {k: start_record[k] for k in ("event", "method", "host", "port", "address", "decision", "status")} == {
        "event": "request", "method": "CONNECT", "host": "localhost", "port": port, "address": "127.0.0.1",
        "decision": "allow", "status": 200}
    end = on_disk()[1]
    assert (end["event"], end["id"], end["bytes_up"], end["bytes_down"], end["ended"]) == (
        "end", start_record["id"], 4, 5, "closed")
    assert end["duration_s"] >= 0 and verify(log.path) == []


def test_an_orchestrator_killed_mid_tunnel_has_left_the_start_record(folder, silent_site, tmp_path):
    port = silent_site.getsockname()[1]
    path, sock_path = tmp_path / "audit.jsonl", folder / "egress.sock"
    code = textwrap.dedent(f"""
        import time
        from runtime.audit.log import AuditLog
        from runtime.audit.records import record_of
        from runtime.sandbox.egress import EgressProxy, EgressRules
        log = AuditLog({str(path)!r})
        EgressProxy({str(sock_path)!r}, EgressRules(("localhost",), {LOCAL!r}, ({port},)),
                    audit=lambda record: log.append(record_of("egress", record), "ag-web")).start()
        print("ready", flush=True)
        time.sleep(120)
    """)
    orchestrator = subprocess.Popen([PY, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert orchestrator.stdout.readline().strip() == "ready"
        client, head = _open_tunnel(sock_path, port)
        with client:
            far, _ = silent_site.accept()
            with far:
                client.sendall(b"ping")
                assert far.recv(4) == b"ping"
                orchestrator.kill()
                orchestrator.wait(timeout=30)
    finally:
        orchestrator.kill()
        orchestrator.wait(timeout=30)
    assert head.startswith(b"HTTP/1.1 200")
    left = [r.data() for r in audit_records(path, kind="egress")]
    assert [(r["event"], r["decision"], r["host"], r["address"]) for r in left] == [
        ("request", "allow", "localhost", "127.0.0.1")]
    assert verify(path) == []


def test_a_tunnel_where_nothing_moves_is_closed_after_the_idle_timeout(folder, silent_site):
    port = silent_site.getsockname()[1]
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL, (port,)), limits=Limits(idle_timeout_s=0.5))
    try:
        client, head = _open_tunnel(proxy.socket_path, port)
        with client:
            far, _ = silent_site.accept()
            with far:
                far.settimeout(10)
                assert client.recv(1) == b""  # the proxy ended the tunnel: the client sees its end
                assert far.recv(1) == b""  # and so does the site
            wait_for(lambda: len(records) == 2)
    finally:
        proxy.close()
    assert head.startswith(b"HTTP/1.1 200")
    assert [(r["event"], r.get("ended")) for r in records] == [("request", None), ("end", "idle")]
    assert records[1]["duration_s"] >= 0.5


def test_closing_the_proxy_ends_open_tunnels_with_their_end_record(folder, silent_site):
    port = silent_site.getsockname()[1]
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL, (port,)))
    client, head = _open_tunnel(proxy.socket_path, port)
    with client:
        far, _ = silent_site.accept()
        with far:
            client.sendall(b"ping")
            assert far.recv(4) == b"ping"
            proxy.close()
            assert client.recv(1) == b""
    assert head.startswith(b"HTTP/1.1 200")
    assert [(r["event"], r.get("ended"), r.get("bytes_up")) for r in records] == [
        ("request", None, None), ("end", "proxy closed", 4)]
    assert not proxy.socket_path.exists()


def test_an_allowed_request_that_cannot_be_audited_is_refused(folder, silent_site):
    port = silent_site.getsockname()[1]

    def broken(record: dict) -> None:
        raise OSError("disk full")

    proxy, _ = start(folder, EgressRules(("localhost",), LOCAL, (port,)), audit=broken)
    try:
        client, head = _open_tunnel(proxy.socket_path, port)
        with client:
            rest = _answer(client)
        far, _ = silent_site.accept()  # the connection was made, and closed before a byte went through
        with far:
            far.settimeout(10)
            assert far.recv(1) == b""
        refused = ask(proxy, b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
    finally:
        proxy.close()
    assert head.startswith(b"HTTP/1.1 500") and b"cannot write its audit record" in head + rest
    assert refused.startswith(b"HTTP/1.1 403")  # a refusal stays a refusal


# -- through the sandbox -----------------------------------------------------------------------------

def test_inside_the_sandbox_the_proxy_is_the_only_way_out(bwrap, site, folder, tmp_path):
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL, (site,)))
    hand_over(folder, agent_user())
    worktree, home = tmp_path / "wt", tmp_path / "home"
    worktree.mkdir()
    home.mkdir()
    env = agent_env(home, {})
    env.update(HTTP_PROXY=f"http://127.0.0.1:{EGRESS_PORT}", http_proxy=f"http://127.0.0.1:{EGRESS_PORT}")
    spec = SandboxSpec(worktree=worktree, home=home, env=env, extra_binds_ro=[folder])
    spec.expose([Path(PY).parent.parent, Path(sys.base_prefix), REPO])
    code = textwrap.dedent(f"""
        import socket, urllib.request, urllib.error
        def fetch(url):
            try:
                return urllib.request.urlopen(url, timeout=10).read().decode()
            except urllib.error.HTTPError as exc:
                return f"HTTP {{exc.code}}"
            except OSError as exc:
                return f"error {{exc}}"
        print("allowed:", fetch("http://localhost:{site}/inside"))
        print("off-list:", fetch("http://example.org/"))
        print("metadata:", fetch("http://169.254.169.254/latest/meta-data/"))
        try:
            socket.create_connection(("127.0.0.1", {site}), timeout=3)
            print("direct: CONNECTED")
        except OSError as exc:
            print("direct: refused")
    """)
    argv = [*command_prefix({EGRESS_PORT: str(folder / "egress.sock")}), PY, "-I", "-c", code]
    try:
        with sandboxed(spec, argv) as (command, fds):
            result = subprocess.run(command, capture_output=True, text=True, timeout=60, pass_fds=fds)
        wait_for(lambda: len(records) == 4)  # the allowed exchange's end record follows its end
    finally:
        proxy.close()
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    assert lines["allowed"] == "hello from /inside"
    assert lines["off-list"] == "HTTP 403" and lines["metadata"] == "HTTP 403"
    assert lines["direct"] == "refused"  # the sandbox's own loopback has no such server
    assert sorted((r["host"], r["decision"]) for r in records if r["event"] == "request") == [
        ("169.254.169.254", "deny"), ("example.org", "deny"), ("localhost", "allow")]


def test_another_uid_cannot_use_the_agents_proxy(folder):
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another uid")
    proxy, _ = start(folder, EgressRules(("localhost",), LOCAL))
    hand_over(folder, agent_user())
    try:
        probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                 f"try:\n    s.connect({str(proxy.socket_path)!r}); print('CONNECTED')\n"
                 "except OSError as e:\n    print('refused', e.errno)\n")
        result = subprocess.run(["setpriv", "--reuid=1234567", "--regid=1234567", "--clear-groups", "/usr/bin/python3",
                                 "-c", probe], capture_output=True, text=True, timeout=30)
    finally:
        proxy.close()
    assert result.stdout.startswith("refused"), result.stdout + result.stderr


# -- a real parser, stricter than it ------------------------------------------------------------------

class _Recorder:
    """A site that records every byte a connection sent it, then answers one short response."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.got: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.server.settimeout(10)
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(1.0)
            data = b""
            try:
                while chunk := conn.recv(65536):
                    data += chunk
                    if b"\r\n\r\n" in data and data.endswith(b"body"):
                        break
            except OSError:
                pass
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            try:
                while chunk := conn.recv(65536):
                    data += chunk
            except OSError:
                pass
            self.got.append(data)


@pytest.mark.parametrize("smuggle,why", [
    (b"Host: localhost\nHost: evil.example\r\n", "bare LF"),
    (b"Host: localhost\r\nX-A: 1\rTransfer-Encoding: chunked\r\n", "bare LF or CR"),
    (b"Host: localhost\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n", "obsolete line folding"),
    (b"Host: localhost\r\nHost: evil.example\r\n", "multiple Host"),
    (b"Host: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n", "both Transfer-Encoding and Content-Length"),
    (b"Host: localhost\r\nContent-Length: 4\r\nContent-Length: 9\r\n", "malformed request"),
    (b"Host : localhost\r\n", "malformed request"),
])
def test_ambiguous_requests_are_refused_400_and_in_the_audit_log(folder, tmp_path, smuggle, why):
    site = _Recorder()
    log = AuditLog(tmp_path / "audit.jsonl")
    proxy, _ = start(folder, EgressRules(("localhost",), LOCAL, (site.port,)),
                     audit=lambda record: log.append(record_of("egress", record), "ag-net"))
    try:
        answer = ask(proxy, f"POST http://localhost:{site.port}/x HTTP/1.1\r\n".encode() + smuggle + b"\r\nbody")
    finally:
        proxy.close()
        site.server.close()
    assert answer.startswith(b"HTTP/1.1 400 ") and why.encode() in answer, answer
    (record,) = [r.data() for r in audit_records(log.path, kind="egress")]
    assert (record["event"], record["decision"], record["status"]) == ("request", "deny", 400)
    assert why in record["reason"] and record["method"] == "POST"
    assert site.got == []  # nothing reached the site


def test_a_forwarded_request_is_written_anew_and_nothing_after_its_body_reaches_the_site(folder):
    site = _Recorder()
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL, (site.port,)))
    try:
        answer = ask(proxy, (f"POST http://localhost:{site.port}/up HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\n"
                             "Proxy-Authorization: x\r\nX-Kept: yes\r\n\r\nbody"
                             "GET /second HTTP/1.1\r\nHost: localhost\r\n\r\n").encode())
        site.thread.join(10)
        wait_for(lambda: any(r["event"] == "end" for r in records))
    finally:
        proxy.close()
        site.server.close()
    assert answer.endswith(b"ok")
    (sent,) = site.got
    head, _, rest = sent.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /up HTTP/1.1\r\n") and f"host: localhost:{site.port}".encode() in head
    assert b"x-kept: yes" in head and b"proxy-authorization" not in head.lower() and b"connection: close" in head
    assert rest == b"body" and b"/second" not in sent  # the request smuggled behind the body went nowhere
    end = next(r for r in records if r["event"] == "end")
    assert end["bytes_up"] == len(sent)


def test_every_refusal_reaches_the_audit_log_malformed_too_large_and_over_the_bound(folder, tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    proxy, _ = start(folder, EgressRules(("localhost",), LOCAL), limits=Limits(max_connections=1, linger_s=0.05),
                     audit=lambda record: log.append(record_of("egress", record), "ag-net"))
    try:
        assert ask(proxy, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400")
        time.sleep(0.3)  # the one connection the bound allows has ended
        assert ask(proxy, b"GET / HTTP/1.1\r\nHost: localhost\r\nX: " + b"y" * 70000 + b"\r\n\r\n").startswith(
            b"HTTP/1.1 431")
        time.sleep(0.3)
        with socket.socket(socket.AF_UNIX) as held, socket.socket(socket.AF_UNIX) as late:
            held.connect(str(proxy.socket_path))
            late.settimeout(10)
            late.connect(str(proxy.socket_path))
            assert _answer(late).startswith(b"HTTP/1.1 503")
            wait_for(lambda: len(list(audit_records(log.path, kind="egress"))) == 3)
    finally:
        proxy.close()
    assert [r.data()["status"] for r in audit_records(log.path, kind="egress")] == [400, 431, 503]
    assert verify(log.path) == []


class _BigSite(http.server.BaseHTTPRequestHandler):
    """Sends a few megabytes at once and closes: a wheel from a package index."""

    BODY = bytes(range(256)) * 1024  # 256 KiB: more than the socket holds, less than the proxy reads ahead

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.BODY)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, *args):
        pass


def _slow_read(sock: socket.socket) -> bytes:
    """Everything until the proxy closes, read slowly enough that the site has finished long before."""
    time.sleep(1.0)
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


@pytest.mark.parametrize("tunnel", [False, True])
def test_a_download_the_client_reads_slowly_arrives_whole(folder, tunnel):
    """The site's last bytes wait in the proxy's buffer while the client reads on: the proxy hands them over
    before it closes the client's connection (a truncated wheel is what pip called "invalid")."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _BigSite)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    proxy, _ = start(folder, EgressRules(("localhost",), LOCAL, (port,)))
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(30)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(str(proxy.socket_path))
            if tunnel:
                sock.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
                head = b""
                while b"\r\n\r\n" not in head:
                    head += sock.recv(1)
                assert head.startswith(b"HTTP/1.1 200")
                sock.sendall(b"GET /w.whl HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            else:
                sock.sendall(f"GET http://localhost:{port}/w.whl HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
            answer = _slow_read(sock)
    finally:
        proxy.close()
        server.shutdown()
        server.server_close()
    body = answer.split(b"\r\n\r\n", 1)[1]
    assert len(body) == len(_BigSite.BODY) and body == _BigSite.BODY
