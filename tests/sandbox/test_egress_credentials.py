"""Credentials added at the egress (`net::egress-allowlist`'s `credentials`): the proxy terminates TLS for a
declared host with the run's CA, adds the secret to each request, and re-encrypts to the site after verifying
its certificate; every other host stays a plain tunnel with the site's own certificate.

Two HTTPS sites on 127.0.0.1 stand for the real hosts, `registry.test` and `other.test`, with certificates of a
CA of the test's own (the "system's roots" the proxy is given); each answers with the request it saw."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import h11
import pytest

from runtime.manifests.params import check_value
from runtime.sandbox.credentials import Credential
from runtime.sandbox.egress import EgressConfigError, EgressProxy, EgressRules
from runtime.sandbox.egress_ca import RunCA

SECRET = "tok-9f8e7d6c5b4a39281706"
HOSTS = ("registry.test", "other.test")


class _Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as git and pip use it

    def do_GET(self):  # noqa: N802
        self._answer(b"")

    def do_POST(self):  # noqa: N802
        self._answer(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def _answer(self, body: bytes) -> None:
        seen = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                "body": body.decode("latin-1")}
        type(self).seen.append(seen)
        data = json.dumps(seen).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def sites() -> Iterator[tuple[RunCA, dict[str, int]]]:
    """An HTTPS echo site per host, its certificate from a CA of the test's own."""
    roots = RunCA.make(HOSTS)
    _Echo.seen = []
    servers, ports = [], {}
    for host in HOSTS:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
        server.socket = roots.server_context(host).wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        ports[host] = server.server_address[1]
    yield roots, ports
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rt-cred-"))  # short: Unix socket paths are limited
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _proxy(folder: Path, roots: RunCA, ports: dict[str, int], credential: Credential,
           records: list[dict]) -> EgressProxy:
    rules = EgressRules(HOSTS, ("127.0.0.1/32",), tuple(ports.values()), (credential,))
    upstream = ssl.create_default_context(cadata=roots.certificate_pem.decode())  # the "system's roots"
    return EgressProxy(folder / "egress.sock", rules, audit=records.append,
                       resolver=lambda host, port: ["127.0.0.1"], upstream_tls=upstream).start()


def _headers(body: bytes) -> dict[str, str]:
    """The headers the site saw, by lower-case name."""
    return {k.lower(): v for k, v in json.loads(body)["headers"].items()}


class _Client:
    """A client inside the sandbox: CONNECT through the proxy's socket, then TLS trusting ``cafile``'s roots."""

    def __init__(self, proxy: EgressProxy, host: str, port: int, cadata: bytes) -> None:
        raw = socket.socket(socket.AF_UNIX)
        raw.settimeout(10)
        raw.connect(str(proxy.socket_path))
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += raw.recv(1)
        assert head.startswith(b"HTTP/1.1 200"), head
        context = ssl.create_default_context(cadata=cadata.decode())
        self.sock = context.wrap_socket(raw, server_hostname=host)
        self.host, self.conn = host, h11.Connection(h11.CLIENT)

    def request(self, path: str, headers: tuple[tuple[str, str], ...] = (), body: bytes = b"",
                method: str = "GET") -> tuple[int, bytes]:
        framing = [("Content-Length", str(len(body)))] if method == "POST" else []
        self.sock.sendall(self.conn.send(h11.Request(method=method, target=path,
                                                     headers=[("Host", self.host), *headers, *framing])))
        if body:
            self.sock.sendall(self.conn.send(h11.Data(data=body)))
        self.sock.sendall(self.conn.send(h11.EndOfMessage()))
        status, data = 0, b""
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(self.sock.recv(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                data += event.data
            elif isinstance(event, h11.EndOfMessage):
                if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
                    self.conn.start_next_cycle()
                return status, data
            else:
                return status, data


def test_the_credential_is_added_for_its_host_over_tls_the_sandbox_trusts(sites, folder):
    roots, ports = sites
    records: list[dict] = []
    with _proxy(folder, roots, ports, Credential("registry.test", "bearer", None, SECRET), records) as proxy:
        assert proxy.ca is not None
        client = _Client(proxy, "registry.test", ports["registry.test"], proxy.ca.certificate_pem)
        status, body = client.request("/simple/pkg/")
        assert status == 200 and _Echo.seen[-1]["headers"]["authorization"] == f"Bearer {SECRET}"
        # the site sent it back: the agent reads it blanked, the answer's length as it was
        assert _headers(body)["authorization"] == "*" * len(f"Bearer {SECRET}")
        # the same connection again (keep-alive), with a body
        status, body = client.request("/upload", body=b"x" * 70_000, method="POST")
        assert status == 200 and len(json.loads(body)["body"]) == 70_000
        client.sock.close()
    (request,) = [r for r in records if r["event"] == "request"]
    assert request["decision"] == "allow" and "credential added" in request["reason"]
    (end,) = [r for r in records if r["event"] == "end"]
    assert end["credentialed"] == 2 and end["bytes_up"] > 70_000
    assert SECRET not in json.dumps(records)


def test_every_other_host_is_a_plain_tunnel_with_its_own_certificate_and_no_credential(sites, folder):
    roots, ports = sites
    with _proxy(folder, roots, ports, Credential("registry.test", "bearer", None, SECRET), []) as proxy:
        assert proxy.ca is not None
        with pytest.raises(ssl.SSLCertVerificationError):  # the run's CA signs nothing for another host
            _Client(proxy, "other.test", ports["other.test"], proxy.ca.certificate_pem)
        client = _Client(proxy, "other.test", ports["other.test"], roots.certificate_pem)  # the site's own
        status, body = client.request("/echo")
        assert status == 200 and "authorization" not in _headers(body)
        with pytest.raises(ValueError, match="not a name"):
            proxy.ca.server_context("other.test")


def test_a_request_with_a_credential_of_its_own_or_for_another_host_is_refused(sites, folder):
    roots, ports = sites
    records: list[dict] = []
    with _proxy(folder, roots, ports, Credential("registry.test", "header", "X-Api-Key", SECRET), records) as proxy:
        assert proxy.ca is not None
        port = ports["registry.test"]
        status, body = _Client(proxy, "registry.test", port, proxy.ca.certificate_pem).request(
            "/x", (("X-Api-Key", "mine"),))
        assert status == 403 and b"credential of its own" in body
        status, body = _Client(proxy, "registry.test", port, proxy.ca.certificate_pem).request(
            "/x", (("Authorization", "Bearer mine"),))
        assert status == 403
        client = _Client(proxy, "registry.test", port, proxy.ca.certificate_pem)
        client.host = "other.test"  # the Host header inside names another site
        status, body = client.request("/x")
        assert status == 403 and b"names host `other.test`" in body
    assert _Echo.seen == []  # none of them reached the site
    assert [r["ended"] for r in records if r["event"] == "end"] == [
        "refused: the request to `registry.test` carries a credential of its own; the runtime adds the declared one",
        "refused: the request to `registry.test` carries a credential of its own; the runtime adds the declared one",
        "refused: the request names host `other.test` inside a connection to `registry.test`"]


@pytest.mark.parametrize("credential,expected", [
    (Credential("registry.test", "basic", "ci", SECRET), ("Authorization", "Basic Y2k6dG9rLTlmOGU3ZDZjNWI0YTM5MjgxNzA2")),
    (Credential("registry.test", "header", "PRIVATE-TOKEN", SECRET), ("Private-Token", SECRET)),
])
def test_basic_auth_and_a_named_header(sites, folder, credential, expected):
    roots, ports = sites
    with _proxy(folder, roots, ports, credential, []) as proxy:
        assert proxy.ca is not None
        status, body = _Client(proxy, "registry.test", ports["registry.test"], proxy.ca.certificate_pem).request("/")
    seen = {k.lower(): v for k, v in _Echo.seen[-1]["headers"].items()}
    assert status == 200 and seen[expected[0].lower()] == expected[1]
    assert SECRET not in body.decode() and expected[1] not in body.decode()


def test_a_query_credential_is_appended_to_the_path(sites, folder):
    roots, ports = sites
    with _proxy(folder, roots, ports, Credential("registry.test", "query", "access_token", SECRET), []) as proxy:
        assert proxy.ca is not None
        client = _Client(proxy, "registry.test", ports["registry.test"], proxy.ca.certificate_pem)
        status, body = client.request("/a?b=1")
        assert status == 200 and _Echo.seen[-1]["path"] == f"/a?b=1&access_token={SECRET}"
        assert json.loads(body)["path"] == "/a?b=1&access_token=" + "*" * len(SECRET)
        assert client.request("/a?access_token=mine")[0] == 403


def test_a_site_whose_certificate_the_system_does_not_trust_gets_nothing(sites, folder):
    roots, ports = sites
    records: list[dict] = []
    rules = EgressRules(HOSTS, ("127.0.0.1/32",), tuple(ports.values()),
                        (Credential("registry.test", "bearer", None, SECRET),))
    with EgressProxy(folder / "egress.sock", rules, audit=records.append,
                     resolver=lambda host, port: ["127.0.0.1"]).start() as proxy:  # the real system roots
        assert proxy.ca is not None
        client = _Client(proxy, "registry.test", ports["registry.test"], proxy.ca.certificate_pem)
        status, body = client.request("/")
    assert status == 502 and b"could not reach `registry.test` over TLS verified with the system's roots" in body
    assert _Echo.seen == []
    (end,) = [r for r in records if r["event"] == "end"]
    assert end["ended"].startswith("tls: ") and "CERTIFICATE_VERIFY_FAILED" in end["ended"] and end["credentialed"] == 0


@pytest.mark.parametrize("size", [1, 7, 64 * 1024])
def test_a_secret_the_site_sends_back_is_blanked_however_the_answer_is_cut(size):
    from runtime.sandbox.egress import _Blanker

    credential = Credential("registry.test", "basic", "ci", SECRET)
    forms = credential.echoes()
    page = b"".join(b"<p>" + f + b"</p>" for f in forms) * 50
    blank = _Blanker(forms)
    out = b"".join(blank.feed(page[i:i + size]) for i in range(0, len(page), size)) + blank.rest()
    assert len(out) == len(page) and not any(f in out for f in forms) and out.count(b"<p>") == len(forms) * 50


def test_credentials_are_declared_per_host_and_covered_by_the_domains():
    good = check_value("credential-list", [{"host": "Registry.Test", "env": "TOKEN"}])
    assert [c.host for c in good] == ["registry.test"]  # type: ignore[union-attr]
    for bad, why in (
        ([{"host": "*.test", "env": "T"}], "not a host name"),
        ([{"host": "r.test"}], "exactly one source"),
        ([{"host": "r.test", "env": "T", "file": "/x"}], "exactly one source"),
        ([{"host": "r.test", "env": "T", "send": "basic"}], "needs `username`"),
        ([{"host": "r.test", "env": "T", "header": "X-A"}], "is for `send = \"header\"`"),
        ([{"host": "r.test", "env": "T"}, {"host": "r.test", "file": "/x"}], "a second credential"),
        ([{"host": "r.test", "env": "T", "token": "x"}], "unknown key"),
    ):
        with pytest.raises(ValueError, match=why):
            check_value("credential-list", bad)
    with pytest.raises(EgressConfigError, match="not among the domains"):
        EgressRules(("pypi.org",), credentials=(Credential("registry.test", "bearer", None, SECRET),))
