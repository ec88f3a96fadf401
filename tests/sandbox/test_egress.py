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
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from runtime.sandbox.bwrap import SandboxSpec
from runtime.sandbox.domains import domain_allowed, pattern_error, url_refusal
from runtime.sandbox.egress import EgressConfigError, EgressProxy, EgressRules, egress_rules, system_resolver
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


def start(folder: Path, rules: EgressRules, resolver=None) -> tuple[EgressProxy, list[dict]]:
    records: list[dict] = []
    proxy = EgressProxy(folder / "egress.sock", rules, audit=records.append, resolver=resolver or system_resolver)
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
    assert egress_rules({"tools": ["Read", "WebFetch"], "gates": [gate]}) == EgressRules(("pypi.org",), (), (443,))
    assert egress_rules({"tools": ["Read", "Bash"], "gates": [gate]}) is None  # no web tool: no way out
    empty = {**gate, "params": {**gate["params"], "domains": []}}
    assert egress_rules({"tools": ["WebFetch"], "gates": [empty]}) is None


# -- the proxy ---------------------------------------------------------------------------------------

def test_an_allowed_site_is_reachable_by_tunnel_and_by_plain_get(site, folder):
    proxy, records = start(folder, EgressRules(("localhost",), LOCAL, (site,)))
    try:
        tunnel = connect_then_get(proxy, "localhost", site, "/tunnel")
        plain = ask(proxy, f"GET http://localhost:{site}/plain HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        # A request is recorded once its exchange has ended, which may be just after the client read it all.
        deadline = time.monotonic() + 5
        while len(records) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        proxy.close()
    assert b"200 Connection Established" in tunnel and tunnel.endswith(b"hello from /tunnel")
    assert plain.startswith(b"HTTP/1.0 200") or plain.startswith(b"HTTP/1.1 200")
    assert plain.endswith(b"hello from /plain")
    assert [(r["method"], r["host"], r["decision"]) for r in records] == [
        ("CONNECT", "localhost", "allow"), ("GET", "localhost", "allow")]
    assert records[0]["bytes_down"] > 0 and records[0]["address"] in ("127.0.0.1", "::1")


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
    assert [r["decision"] for r in records] == ["deny", "deny"]


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
        assert ask(proxy, b"GET http://u:p@localhost/ HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert ask(proxy, b"GET ftp://localhost/ HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert ask(proxy, b"CONNECT localhost HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert ask(proxy, b"GET / HTTP/1.1\r\nX: " + b"y" * 70000 + b"\r\n\r\n").startswith(b"HTTP/1.1 431")
    finally:
        proxy.close()


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
        deadline = time.monotonic() + 5  # an allowed exchange is recorded once it has ended
        while len(records) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        proxy.close()
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    assert lines["allowed"] == "hello from /inside"
    assert lines["off-list"] == "HTTP 403" and lines["metadata"] == "HTTP 403"
    assert lines["direct"] == "refused"  # the sandbox's own loopback has no such server
    assert sorted((r["host"], r["decision"]) for r in records) == [
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
