"""The orchestrator's side of the `claude-code` backend's way to the model: an HTTP forwarder.

The Claude Code CLI runs in a sandbox without network and without API keys. It talks HTTP to a
relay inside the sandbox (``runtime.spawn.claude_relay``), which hands every connection, byte for
byte, to this proxy's Unix socket (mode 0600, bound read-only into the sandbox like the model
broker's). The proxy forwards each request to the upstream Anthropic API (the task's
``[agent] api-base``, else ``https://api.anthropic.com``) with the orchestrator's own credentials
in place of whatever ``x-api-key``/``authorization`` the agent sent, and streams the answer back
chunk by chunk, so server-sent events reach the CLI as the model produces them.

Only ``POST /v1/messages`` and ``/v1/messages/count_tokens`` are forwarded: the key buys model
calls and nothing else. Requests are counted, and the token usage the upstream reports in its
``message_start``/``message_delta`` events (or a plain JSON body) is summed, as a
``runtime.models.broker.Usage``, so the parent can enforce turns and token limits while the agent
runs. Cost is not known here (no price table); the CLI reports its own.

Standard library only: ``socketserver`` threads over AF_UNIX, ``http.server`` to parse requests,
``http.client`` upstream. ``start()``/``close()`` as the model broker.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from runtime.errors import FatalError
from runtime.models.unix_service import TrackedServer, UnixService
from runtime.models.broker import Usage

DEFAULT_UPSTREAM = "https://api.anthropic.com"
FORWARDED = ("/v1/messages", "/v1/messages/count_tokens")
MAX_BODY = 64 * 1024 * 1024
_CHUNK = 64 * 1024
# Never passed on: hop-by-hop headers, the agent's (placeholder) credentials, what we recompute.
_DROP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
                   "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
                   "x-api-key", "authorization", "accept-encoding"})


def upstream_credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """The header the orchestrator authenticates with: its ANTHROPIC_API_KEY, else ANTHROPIC_AUTH_TOKEN."""
    if environ.get("ANTHROPIC_API_KEY"):
        return {"x-api-key": environ["ANTHROPIC_API_KEY"]}
    if environ.get("ANTHROPIC_AUTH_TOKEN"):
        return {"authorization": f"Bearer {environ['ANTHROPIC_AUTH_TOKEN']}"}
    raise FatalError("the claude-code backend needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the "
                     "orchestrator's environment; the agent never sees it, the proxy adds it to each model call")


class _TokenCounter:
    """Token usage of one response, from its server-sent events or its JSON body."""

    def __init__(self, streaming: bool) -> None:
        self.streaming, self.buffer = streaming, b""
        self.prompt = self.completion = 0

    def feed(self, data: bytes) -> None:
        self.buffer += data
        if not self.streaming:
            self.buffer = self.buffer[:MAX_BODY]
            return
        *lines, self.buffer = self.buffer.split(b"\n")
        self.buffer = self.buffer[-MAX_BODY:]
        for line in lines:
            if line.startswith(b"data:"):
                self._event(_json(line[5:]))

    def finish(self) -> None:
        if not self.streaming:
            body = _json(self.buffer)
            self._usage(body.get("usage"), start=True)
        elif self.buffer.startswith(b"data:"):
            self._event(_json(self.buffer[5:]))

    def _event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
            self._usage(event["message"].get("usage"), start=True)
        elif event.get("type") == "message_delta":
            self._usage(event.get("usage"), start=False)

    def _usage(self, usage: Any, start: bool) -> None:
        if not isinstance(usage, dict):
            return
        def num(key: str) -> int:
            value = usage.get(key)
            return value if isinstance(value, int) and value >= 0 else 0
        if start:
            self.prompt = num("input_tokens") + num("cache_creation_input_tokens") + num("cache_read_input_tokens")
        self.completion = max(self.completion, num("output_tokens"))  # message_delta's count is cumulative


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


class AnthropicProxy(UnixService):
    """Forwards one agent's model calls from a Unix socket to the upstream API, with our key."""

    thread_name = "anthropic-proxy"

    def __init__(self, socket_path: str | os.PathLike[str], upstream: str = DEFAULT_UPSTREAM,
                 credentials: Mapping[str, str] | None = None, *, timeout_s: float = 600.0) -> None:
        super().__init__(socket_path)
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the upstream must be an http(s) URL, not {upstream!r}")
        self.upstream = upstream
        self._scheme, self._netloc, self._prefix = parts.scheme, parts.netloc, parts.path.rstrip("/")
        self._credentials = dict(credentials or {})
        self.timeout_s = timeout_s
        self._usage = Usage()
        self._lock = threading.Lock()

    def make_server(self) -> TrackedServer:
        return _Server(self.socket_path, _Handler, self)

    def __repr__(self) -> str:  # never shows the credentials
        return f"AnthropicProxy({str(self.socket_path)!r} -> {self.upstream!r})"

    # -- accounting -------------------------------------------------------------------------
    def usage(self) -> Usage:
        with self._lock:
            return self._usage

    def _count(self, tokens: _TokenCounter | None, failed: bool) -> None:
        with self._lock:
            u = self._usage
            u = replace(u, calls=u.calls + 1, errors=u.errors + int(failed))
            if tokens is not None:
                u = replace(u, prompt_tokens=u.prompt_tokens + tokens.prompt,
                            completion_tokens=u.completion_tokens + tokens.completion)
            self._usage = u

    # -- upstream ---------------------------------------------------------------------------
    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        return cls(self._netloc, timeout=self.timeout_s)

    def _headers(self, incoming: Any) -> dict[str, str]:
        headers = {k: v for k, v in incoming.items() if k.lower() not in _DROP}
        headers.update(self._credentials)
        headers["Accept-Encoding"] = "identity"  # the usage is read from the stream as it passes
        return headers


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the CLI's HTTP client expects
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def address_string(self) -> str:
        return "agent"

    def do_GET(self) -> None:  # noqa: N802
        self._refuse(403, "permission_error", "the runtime's proxy forwards only POST /v1/messages")

    do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET  # noqa: N815

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        if path not in FORWARDED:
            self._refuse(403, "permission_error", f"the runtime's proxy does not forward {path}")
            return
        try:
            body = self._body()
        except ValueError:
            self.close_connection = True
            self._refuse(400, "invalid_request_error", "malformed Content-Length or chunked body")
            return
        if body is None:
            return
        proxy = self.server.owner
        conn = proxy._connect()
        try:
            conn.request("POST", proxy._prefix + self.path, body=body, headers=proxy._headers(self.headers))
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            if path == FORWARDED[0]:
                proxy._count(None, failed=True)
            self._refuse(502, "api_error", f"the upstream model API is unreachable: {type(exc).__name__}: {exc}")
            return
        try:
            tokens = self._relay(response)
        finally:
            conn.close()
        if path == FORWARDED[0]:
            proxy._count(tokens, failed=response.status >= 400 or tokens is None)

    def _body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts, size = [], 0
            while (n := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)) > 0:
                size += n
                if size > MAX_BODY:
                    self._refuse(413, "request_too_large", "the request body is too large")
                    return None
                parts.append(self.rfile.read(n))
                self.rfile.readline()
            while self.rfile.readline().strip():  # trailers
                pass
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._refuse(413, "request_too_large", "the request body is too large")
            return None
        return self.rfile.read(length)

    def _relay(self, response: http.client.HTTPResponse) -> _TokenCounter | None:
        """Send the upstream's answer on as it arrives; its token usage, or None if the copy broke."""
        streaming = "text/event-stream" in (response.getheader("Content-Type") or "")
        tokens = _TokenCounter(streaming)
        length = response.getheader("Content-Length")
        bodyless = response.status in (204, 304) or response.status < 200
        encoding = (response.getheader("Transfer-Encoding") or "").lower()
        chunked = not bodyless and (length is None or "chunked" in encoding)
        self.send_response(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in _DROP:
                self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif not bodyless:
            self.send_header("Content-Length", length)
        self.end_headers()
        try:
            while piece := response.read1(_CHUNK):
                tokens.feed(piece)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):
            self.close_connection = True
            return None
        tokens.finish()
        return tokens

    def _refuse(self, status: int, kind: str, message: str) -> None:
        if status == 413:
            self.close_connection = True  # the rest of the body was never read
        payload = json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)


class _Server(TrackedServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # An agent that drops its connection mid-request is no error of ours; anything else is.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)
