"""The orchestrator's side of the `claude-code` backend's way to the model: an HTTP forwarder.

The Claude Code CLI runs in a sandbox without network and without API keys. It talks HTTP to a
relay inside the sandbox (``runtime.sandbox.netrelay``), which hands every connection, byte for
byte, to this proxy's Unix socket (mode 0600, bound read-only into the sandbox like the model
broker's). The proxy forwards each request to the upstream Anthropic API (the task's
``[agent] api-base``, else ``https://api.anthropic.com``) with the orchestrator's own credentials
in place of whatever ``x-api-key``/``authorization`` the agent sent, and streams the answer back
chunk by chunk, so server-sent events reach the CLI as the model produces them.

Only ``POST /v1/messages`` and ``/v1/messages/count_tokens`` are forwarded, and only with this
run's secret (the CLI's "API key", made per spawn; anything else gets 401 and never leaves): the
key buys this agent's model calls and nothing else. Requests are held to the model API's shape,
allowlisted: request headers, ``anthropic-beta`` features, body fields, custom (client-side)
tools only — server-side web search or fetch only within the role's egress allowlist, never MCP
servers, code containers, Files API or URL sources the provider would download. Requests are counted, and the token usage the upstream reports in its
``message_start``/``message_delta`` events (or a plain JSON body) is summed, as a
``runtime.models.broker.Usage``, so the parent can enforce turns and token limits while the agent
runs. Cost is not known here (no price table); the CLI reports its own.

On a cluster's worker node the proxy has no credentials and no way out: ``forward`` hands each
checked request to the orchestrator, which checks it again with a proxy of its own for the job
(``fetch``: same allowlists, its credentials) and sends the whole answer back, replayed here to the
CLI. Nothing streams across the cluster; the usage is still counted here, from the replayed answer.

Standard library only: ``socketserver`` threads over AF_UNIX, ``http.server`` to parse requests,
``http.client`` upstream. ``start()``/``close()`` as the model broker.
"""

from __future__ import annotations

import hmac
import http.client
import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from typing import Any, TypedDict
from urllib.parse import urlsplit

from runtime.errors import FatalError
from runtime.ipc.unix_service import TrackedServer, UnixService
from runtime.lang.domains import domain_allowed
from runtime.lang.jsontypes import JSON, JSONObject
from runtime.models.broker import Usage
from runtime.spawn.remote import Forwarded

DEFAULT_UPSTREAM = "https://api.anthropic.com"
FORWARDED = ("/v1/messages", "/v1/messages/count_tokens")
# What a model call may carry, as Claude Code 2.1.330 sends it plus the Messages API's documented
# fields. Anything else is refused, not passed on: the key must buy model calls and nothing that
# reaches the network on the agent's behalf (server-side fetch, search, MCP servers, code containers,
# URL sources), whatever the agent's sandbox says.
REQUEST_HEADERS = frozenset({"accept", "content-type", "user-agent", "anthropic-version", "anthropic-beta", "x-app",
                             "x-claude-code-session-id"})
REQUEST_HEADER_PREFIXES = ("x-stainless-",)  # the SDK's description of itself
BODY_FIELDS = frozenset({"model", "messages", "system", "max_tokens", "metadata", "stop_sequences", "stream",
                         "temperature", "top_k", "top_p", "tools", "tool_choice", "thinking", "context_management",
                         "output_config", "service_tier"})
# Betas by name without their date: features of the model call itself, none that fetches or runs anything.
SAFE_BETAS = frozenset({"claude-code", "interleaved-thinking", "context-management", "per-turn-control",
                        "mid-conversation-tool-changes", "thinking-token-count", "effort", "thinking-display-updates",
                        "fine-grained-tool-streaming", "token-efficient-tools", "prompt-caching", "output-128k",
                        "context-1m", "extended-cache-ttl", "redact-thinking", "token-counting"})
WEB_SERVER_TOOLS = ("web_search_", "web_fetch_")
MAX_BODY = 64 * 1024 * 1024
_CHUNK = 64 * 1024
# Never passed on: hop-by-hop headers, the agent's (placeholder) credentials, what we recompute.
_DROP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
                   "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
                   "x-api-key", "authorization", "accept-encoding"})


class ForwardCall(TypedDict):
    """A request of the CLI as a worker node's proxy relays it to the orchestrator (`fetch` answers it)."""

    path: str
    body: bytes
    headers: dict[str, str]  # the allowlisted ones, without credentials


class ForwardAnswer(TypedDict, total=False):
    """The orchestrator's answer to a relayed request: the upstream's whole `Forwarded` answer, or why there
    is none (``error`` alone)."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    error: str


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

    def _event(self, event: JSONObject) -> None:
        message = event.get("message")
        if event.get("type") == "message_start" and isinstance(message, dict):
            self._usage(message.get("usage"), start=True)
        elif event.get("type") == "message_delta":
            self._usage(event.get("usage"), start=False)

    def _usage(self, usage: JSON, start: bool) -> None:
        if not isinstance(usage, dict):
            return
        def num(key: str) -> int:
            value = usage.get(key)
            return value if isinstance(value, int) and value >= 0 else 0
        if start:
            self.prompt = num("input_tokens") + num("cache_creation_input_tokens") + num("cache_read_input_tokens")
        self.completion = max(self.completion, num("output_tokens"))  # message_delta's count is cumulative


def _beta_name(beta: str) -> str:
    """`interleaved-thinking-2025-05-14` -> `interleaved-thinking` (the feature, whatever its date)."""
    parts = beta.split("-")
    while len(parts) > 1 and parts[-1].isdigit():
        parts.pop()
    return "-".join(parts)


def _url_source(value: JSON, egress: tuple[str, ...], depth: int = 0) -> str | None:
    """The first URL the model provider would fetch (an image, a document) that the allowlist does not cover."""
    if depth > 64:
        return "a nesting too deep to check"
    if isinstance(value, dict):
        if value.get("type") == "file":  # the Files API: stored content, maybe uploaded from anywhere
            return f"file {value.get('file_id')}"
        if value.get("type") == "url":  # an image or document source the provider downloads
            url = value.get("url")
            try:
                host = urlsplit(url).hostname if isinstance(url, str) else None
            except ValueError:
                host = None
            if host is None or not domain_allowed(egress, host):
                return str(url)
        for item in value.values():
            if (found := _url_source(item, egress, depth + 1)) is not None:
                return found
    elif isinstance(value, list):
        for item in value:
            if (found := _url_source(item, egress, depth + 1)) is not None:
                return found
    return None


def _json(raw: bytes) -> JSONObject:
    try:
        value: JSON = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


class AnthropicProxy(UnixService):
    """Forwards one agent's model calls from a Unix socket to the upstream API, with our key."""

    thread_name = "anthropic-proxy"

    def __init__(self, socket_path: str | os.PathLike[str], upstream: str = DEFAULT_UPSTREAM,
                 credentials: Mapping[str, str] | None = None, *, timeout_s: float = 600.0,
                 token: str | None = None, egress: tuple[str, ...] = (),
                 forward: Callable[[str, bytes, dict[str, str]], Forwarded] | None = None) -> None:
        super().__init__(socket_path)
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the upstream must be an http(s) URL, not {upstream!r}")
        self.upstream = upstream
        self._scheme, self._netloc, self._prefix = parts.scheme, parts.netloc, parts.path.rstrip("/")
        self._credentials = dict(credentials or {})
        self.timeout_s = timeout_s
        self.token = token  # the per-run secret the agent's client must present (None: not checked)
        self.egress = egress  # the domains the role may reach: what server-side web tools may cover
        self.forward = forward  # who makes the call when this machine does not (a worker node's proxy)
        self.refused = 0
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
        headers = {}
        for name, value in incoming.items():
            low = name.lower()
            if low == "anthropic-beta":
                value = ",".join(b for b in (x.strip() for x in value.split(",")) if _beta_name(b) in SAFE_BETAS)
                if not value:
                    continue
            if low in REQUEST_HEADERS or low.startswith(REQUEST_HEADER_PREFIXES):
                headers[name] = value
        headers.update(self._credentials)
        headers["Accept-Encoding"] = "identity"  # the usage is read from the stream as it passes
        return headers

    def fetch(self, path: str, body: bytes, incoming: Mapping[str, str]) -> Forwarded:
        """The whole answer to a request a worker node's proxy forwarded, checked again here as if the
        agent had sent it to this proxy (the node is not trusted to have checked it). Raises OSError
        or http.client.HTTPException when the upstream cannot be reached."""
        if path.split("?", 1)[0] not in FORWARDED:
            return _refusal(403, "permission_error", f"the runtime's proxy does not forward {path.split('?', 1)[0]}")
        why = self.body_refusal(body)
        if why is not None:
            self.refused += 1
            return _refusal(400, "invalid_request_error", why)
        conn = self._connect()
        try:
            conn.request("POST", self._prefix + path, body=body, headers=self._headers(incoming))
            response = conn.getresponse()
            data = response.read(MAX_BODY)
        finally:
            conn.close()
        headers = [(name, value) for name, value in response.getheaders() if name.lower() not in _DROP]
        return Forwarded(response.status, response.reason, headers, data)

    def authorised(self, incoming: Any) -> bool:
        """Whether the request carries this run's secret (as x-api-key or a bearer token)."""
        if self.token is None:
            return True
        offered = incoming.get("x-api-key") or ""
        bearer = incoming.get("authorization") or ""
        if bearer.lower().startswith("bearer "):
            offered = offered or bearer[7:]
        return hmac.compare_digest(offered.encode(), self.token.encode())

    def body_refusal(self, body: bytes) -> str | None:
        """Why the request body is not a plain model call, or None."""
        try:
            doc: JSON = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return "the request body is not JSON"
        if not isinstance(doc, dict):
            return "the request body is not a JSON object"
        extra = sorted(set(doc) - BODY_FIELDS)
        if extra:
            return f"the runtime's proxy does not forward these request fields: {', '.join(extra)}"
        tools = doc.get("tools") or []
        if not isinstance(tools, list):
            return "`tools` must be a list"
        for tool in tools:
            if not isinstance(tool, dict):
                return "a tool must be an object"
            kind = tool.get("type", "custom")
            if kind == "custom":
                continue
            if not isinstance(kind, str) or not kind.startswith(WEB_SERVER_TOOLS):
                return f"server-side tool `{kind}` is not forwarded"
            wanted = tool.get("allowed_domains")
            if not isinstance(wanted, list) or not wanted:
                return f"server-side tool `{kind}` needs allowed_domains within this agent's egress allowlist"
            outside = [d for d in wanted if not isinstance(d, str) or not domain_allowed(self.egress, d)]
            if outside:
                return f"server-side tool `{kind}` would reach {outside}, outside this agent's egress allowlist"
        url = _url_source(doc.get("messages"), self.egress) or _url_source(doc.get("system"), self.egress)
        if url:
            return f"content fetched by the model provider from {url} is outside this agent's egress allowlist"
        return None


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
        if not proxy.authorised(self.headers):
            proxy.refused += 1
            self.close_connection = True
            self._refuse(401, "authentication_error", "the runtime's proxy serves only the agent it was started for")
            return
        why = proxy.body_refusal(body)
        if why is not None:
            proxy.refused += 1
            self._refuse(400, "invalid_request_error", why)
            return
        conn: http.client.HTTPConnection | None = None
        try:
            if proxy.forward is not None:  # a worker node's proxy: the orchestrator makes the call
                response: Any = _Replay(proxy.forward(self.path, body, proxy._headers(self.headers)))
            else:
                conn = proxy._connect()
                conn.request("POST", proxy._prefix + self.path, body=body, headers=proxy._headers(self.headers))
                response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            if conn is not None:
                conn.close()
            if path == FORWARDED[0]:
                proxy._count(None, failed=True)
            self._refuse(502, "api_error", f"the upstream model API is unreachable: {type(exc).__name__}: {exc}")
            return
        try:
            tokens = self._relay(response)
        finally:
            if conn is not None:
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
        elif not bodyless and length is not None:  # not chunked: a length was given
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


def _refusal(status: int, kind: str, message: str) -> Forwarded:
    payload = json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return Forwarded(status, "", [("Content-Type", "application/json")], payload)


class _Replay:
    """A `Forwarded` answer read as the upstream's HTTP response (what `_relay` reads)."""

    def __init__(self, answer: Forwarded) -> None:
        self.status, self.reason, self._headers = answer.status, answer.reason, answer.headers
        self._body, self._at = answer.body, 0

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return next((v for n, v in self._headers if n.lower() == name.lower()), default)

    def getheaders(self) -> list[tuple[str, str]]:
        return list(self._headers)

    def read1(self, n: int) -> bytes:
        piece = self._body[self._at:self._at + n]
        self._at += len(piece)
        return piece


class _Server(TrackedServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # An agent that drops its connection mid-request is no error of ours; anything else is.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)
