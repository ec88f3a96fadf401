"""runtime.models.reach: is a model server on the loopback up? (One GET of its model list, before a run.)"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from runtime.models.reach import is_loopback, local_server_problem


@pytest.mark.parametrize("api_base", [
    "http://localhost:8000/v1", "http://LOCALHOST:8000", "http://localhost.:8000", "http://localhost.localdomain/v1",
    "http://ip6-localhost/v1", "http://ip6-loopback/v1", "http://models.localhost:1234/v1",
    "http://127.0.0.1:8000/v1", "http://127.9.8.7/v1", "http://[::1]:8000/v1", "http://0.0.0.0:8000/v1",
    "https://127.0.0.1/v1",
])
def test_loopback_addresses_and_names_are_loopback(api_base):
    assert is_loopback(api_base)


@pytest.mark.parametrize("api_base", [
    "https://api.openai.com/v1", "http://10.0.0.1:8000/v1", "http://192.168.1.2/v1", "http://[2001:db8::1]/v1",
    "http://localhost.example.com/v1", "http://mylocalhost/v1", "http://128.0.0.1/v1", "not a url", "",
])
def test_other_hosts_are_not_loopback(api_base):
    assert not is_loopback(api_base)


class _Handler(http.server.BaseHTTPRequestHandler):
    status = 200
    paths: list[str]

    def do_GET(self):  # noqa: N802 - the standard library's name
        self.paths.append(self.path)
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"data": []}')

    def log_message(self, *args):
        pass


@contextmanager
def server(status: int) -> Iterator[tuple[str, list[str]]]:
    """A model server on 127.0.0.1 answering every GET with ``status``; its base URL and the paths asked."""
    paths: list[str] = []
    handler = type("Handler", (_Handler,), {"status": status, "paths": paths})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", paths
    finally:
        httpd.shutdown()
        httpd.server_close()


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.mark.parametrize("status", [200, 401, 404])
def test_a_server_that_answers_below_500_is_no_problem(status):
    with server(status) as (base, paths):
        assert local_server_problem(base + "/v1") is None
    assert paths == ["/v1/models"]


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
def test_the_model_list_is_asked_below_the_api_base(suffix):
    with server(200) as (base, paths):
        assert local_server_problem(base + suffix) is None
    assert paths == ["/v1/models"]


@pytest.mark.parametrize("status", [500, 503])
def test_a_server_answering_5xx_is_a_problem_naming_it_the_code_and_the_url(status):
    with server(status) as (base, _):
        problem = local_server_problem(base + "/v1")
    assert problem is not None
    assert f"the model server at {base}/v1 answers HTTP {status}" in problem
    assert f"GET {base}/v1/models" in problem and "fix or restart it" in problem


def test_a_server_that_is_not_running_is_a_problem_saying_to_start_it():
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    problem = local_server_problem(base)
    assert problem is not None
    assert problem.startswith(f"cannot reach the model server at {base} (")
    assert "refused" in problem.lower() and "start it, or correct `api-base`" in problem


def test_a_server_that_never_answers_is_a_problem_after_the_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # the kernel completes the handshake; nobody ever answers
    try:
        base = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        problem = local_server_problem(base, timeout_s=0.2)
    finally:
        listener.close()
    assert problem is not None and problem.startswith(f"cannot reach the model server at {base} (")
    assert "timed out" in problem


def test_a_tls_mismatch_is_left_to_the_model_client():
    with server(200) as (base, _):
        assert local_server_problem(base.replace("http://", "https://") + "/v1", timeout_s=2) is None


def test_the_probe_goes_around_any_proxy(monkeypatch):
    dead_proxy = f"http://127.0.0.1:{_closed_port()}"
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(var, dead_proxy)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    with server(200) as (base, paths):
        assert local_server_problem(base + "/v1") is None
    assert paths == ["/v1/models"]


@pytest.mark.parametrize("api_base", ["https://api.openai.com/v1", "http://10.1.2.3:8000/v1",
                                      "ftp://localhost/v1", "unix:///run/model.sock", "localhost:8000"])
def test_servers_that_are_not_http_on_the_loopback_are_not_asked(api_base, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"the probe connected for {api_base}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    assert local_server_problem(api_base, timeout_s=0.2) is None
