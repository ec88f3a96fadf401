"""The egress proxy: the only way out of a sandbox, for roles that may reach the web.

Every sandbox has its own network namespace. For a role whose policy declares
domains (`net::egress-allowlist`), the orchestrator runs this proxy on a Unix
socket in the agent's socket folder, and `runtime.sandbox.netrelay` inside the
sandbox exposes it as `http://127.0.0.1:3128` (`HTTP_PROXY`/`HTTPS_PROXY`).
It speaks `CONNECT host:port` (a tunnel, for https) and absolute-form plain
HTTP requests (`GET http://host/path`).

For each request: the host must be a name the allowlist covers (never an IP
literal), the port 80 or 443; the name is resolved once, every address it
resolves to must be public (`runtime.sandbox.addresses`: loopback, private,
link-local and metadata such as 169.254.169.254, CGNAT, multicast, reserved,
documentation and unique-local addresses are refused, IPv4 carried in IPv6
judged as IPv4) unless a catalog author opened its range in the atom's
`addresses`; and the connection goes to the address that was checked, never
to the name again, so a DNS answer that changes in between (rebinding) cannot
redirect it. A refusal is a 403 with one line saying why. Every request,
allowed or refused, is handed to `audit`.

A small threaded proxy written here rather than a proxy library: the part
that matters is exactly the resolve-check-pin sequence above, which general
proxies (proxy.py, mitmproxy) do not do and would have to be bent to; what is
left (a request line, headers, a byte pump) is a few dozen lines of the
standard library, with bounded headers, timeouts and a cap on connections.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from runtime.errors import FatalError
from runtime.models.unix_service import TrackedServer, UnixService
from runtime.sandbox.addresses import address_refusal, parse
from runtime.sandbox.domains import WEB_PORTS, domain_allowed, is_ip_literal, normalise_host, pattern_error
from runtime.sandbox.netrelay import pump

MAX_HEADER_BYTES = 64 * 1024
MAX_CONNECTIONS = 64
CONNECT_TIMEOUT_S = 15.0
IDLE_TIMEOUT_S = 300.0
_CHUNK = 64 * 1024
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
                         "te", "trailer", "transfer-encoding", "upgrade"})
Audit = Callable[[dict[str, Any]], None]
Resolver = Callable[[str, int], Sequence[str]]


class EgressConfigError(FatalError):
    """A malformed domain pattern or address range."""


@dataclass(frozen=True)
class EgressRules:
    """What one agent may reach: names, and the non-global ranges a catalog author opened explicitly."""

    domains: tuple[str, ...]
    addresses: tuple[str, ...] = ()
    ports: tuple[int, ...] = WEB_PORTS

    def __post_init__(self) -> None:
        for pattern in self.domains:
            if (why := pattern_error(pattern)) is not None:
                raise EgressConfigError(why)
        for cidr in self.addresses:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise EgressConfigError(f"`{cidr}` is not an address or an address range (CIDR)") from None

    def host_refusal(self, host: str, port: int) -> str | None:
        if port not in self.ports:
            return f"port {port} is not reachable (only {', '.join(map(str, self.ports))})"
        if is_ip_literal(host):
            return f"`{host}` is an address; only the names this agent may reach are ({', '.join(self.domains)})"
        if not domain_allowed(self.domains, host):
            return f"`{host}` is not in the domains this agent may reach ({', '.join(self.domains) or 'none'})"
        return None

    def address_refusal(self, address: str) -> str | None:
        """Why the proxy may not connect to ``address``: a range the role opened wins over the public-only rule."""
        try:
            ip = parse(address)
        except ValueError:
            return f"`{address}` is not an address"
        # An IPv4-mapped address is the IPv4 host itself to the kernel: an opened IPv4 range covers it.
        reached = [ip] if not isinstance(ip, ipaddress.IPv6Address) or ip.ipv4_mapped is None else [ip, ip.ipv4_mapped]
        if any(a in ipaddress.ip_network(cidr, strict=False) for a in reached for cidr in self.addresses):
            return None
        return address_refusal(ip)


def egress_rules(policy: dict[str, Any]) -> EgressRules | None:
    """The rules of a compiled policy: None when the role shows no web tool or declares no domain."""
    if not {"WebFetch", "WebSearch"} & set(policy.get("tools", [])):
        return None
    domains: list[str] = []
    addresses: list[str] = []
    ports: list[int] = []
    for gate in policy.get("gates", []):
        if gate.get("kind") == "egress-allowlist":
            domains += gate["params"]["domains"]
            addresses += gate["params"]["addresses"]
            ports += gate["params"]["ports"]
    if not domains:
        return None
    return EgressRules(tuple(dict.fromkeys(domains)), tuple(dict.fromkeys(addresses)), tuple(dict.fromkeys(ports)))


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class EgressProxy(UnixService):
    """One agent's proxy; `start()`/`close()` like the model broker."""

    thread_name = "egress-proxy"

    def __init__(self, socket_path: Any, rules: EgressRules, audit: Audit | None = None,
                 resolver: Resolver = system_resolver) -> None:
        super().__init__(socket_path)
        self.rules, self.audit, self.resolver = rules, audit, resolver
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def make_server(self) -> TrackedServer:
        return _Server(self.socket_path, _Handler, self)

    def record(self, **fields: Any) -> None:
        if self.audit is not None:
            try:
                self.audit(fields)
            except Exception:  # noqa: BLE001 - a broken audit sink must not open or hang the proxy
                pass

    def open_upstream(self, host: str, port: int) -> tuple[socket.socket | None, str | None, str | None]:
        """(connection, address, None) to an allowed destination, or (None, address, why not)."""
        why = self.rules.host_refusal(host, port)
        if why:
            return None, None, why
        try:
            addresses = self.resolver(host, port)
        except OSError as exc:
            return None, None, f"`{host}` does not resolve ({exc})"
        if not addresses:
            return None, None, f"`{host}` does not resolve"
        for address in addresses:  # one bad answer refuses the name: it may be a rebinding attempt
            if (why := self.rules.address_refusal(address)) is not None:
                return None, address, f"`{host}`: {why}"
        last = None
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(CONNECT_TIMEOUT_S)
            try:
                sock.connect((address, port))  # the checked address itself: the name is not resolved again
            except OSError as exc:
                sock.close()
                last = exc
                continue
            sock.settimeout(IDLE_TIMEOUT_S)
            return sock, address, None
        return None, addresses[0], f"`{host}` is unreachable ({last})"


class _Server(TrackedServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a dropped agent connection is no error of ours; refusals are answered in the handler


def _splice(client: socket.socket, upstream: socket.socket) -> tuple[int, int]:
    up, down = [0], [0]
    back = threading.Thread(target=pump, args=(upstream, client, down), daemon=True)
    back.start()
    pump(client, upstream, up)
    back.join(IDLE_TIMEOUT_S)
    return up[0], down[0]


class _Handler:
    """One client connection: one request (CONNECT or absolute-form HTTP), then the connection closes."""

    def __init__(self, request: socket.socket, client_address: Any, server: _Server) -> None:
        self.conn, self.server, self.proxy = request, server, server.owner
        if not self.proxy._slots.acquire(blocking=False):
            self._answer(503, "too many connections through the egress proxy")
            return
        try:
            self.conn.settimeout(IDLE_TIMEOUT_S)
            self.handle()
        except OSError:
            pass
        finally:
            self.proxy._slots.release()

    def _read_head(self) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.conn.recv(4096)
            if not chunk:
                return None
            data += chunk
            if len(data) > MAX_HEADER_BYTES:
                self._answer(431, "the request head is too large")
                return None
        return data

    def handle(self) -> None:
        head = self._read_head()
        if head is None:
            return
        head, _, rest = head.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self._answer(400, "malformed request line")
            return
        method, target, _ = parts
        if method == "CONNECT":
            self._connect(target, rest)
        else:
            self._forward(method, target, lines[1:], rest)

    def _connect(self, target: str, rest: bytes) -> None:
        host, sep, port_text = target.rpartition(":")
        host = host.strip("[]")
        if not sep or not port_text.isdigit():
            self._refuse("CONNECT", target, 0, None, "CONNECT needs host:port")
            return
        port = int(port_text)
        upstream, address, why = self.proxy.open_upstream(host, port)
        if upstream is None:
            self._refuse("CONNECT", host, port, address, why or "refused")
            return
        with upstream:
            self.conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            up, down = _splice(self.conn, upstream)
        self.proxy.record(method="CONNECT", host=host, port=port, address=address, decision="allow",
                          reason="in the allowlist", bytes_up=up + len(rest), bytes_down=down)

    def _forward(self, method: str, target: str, headers: list[str], rest: bytes) -> None:
        try:
            url = urlsplit(target)
            port = url.port or 80
        except ValueError:
            self._refuse(method, target, 0, None, "the URL cannot be parsed")
            return
        if url.scheme != "http" or not url.hostname or url.username or url.password:
            self._refuse(method, target, 0, None, "only absolute http:// URLs without credentials are forwarded "
                                                  "(https goes through CONNECT)")
            return
        host = url.hostname
        if normalise_host(host) is None and not is_ip_literal(host):
            self._refuse(method, host, port, None, f"`{host}` is not a host name")
            return
        kept = [h for h in headers if h and h.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP | {"host"}]
        if any(h.split(":", 1)[0].strip().lower() == "transfer-encoding" for h in headers):
            self._refuse(method, host, port, None, "chunked request bodies are not forwarded; send Content-Length")
            return
        upstream, address, why = self.proxy.open_upstream(host, port)
        if upstream is None:
            self._refuse(method, host, port, address, why or "refused")
            return
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        request = [f"{method} {path} HTTP/1.1", f"Host: {url.netloc}", *kept, "Connection: close", "", ""]
        with upstream:
            upstream.sendall("\r\n".join(request).encode("latin-1") + rest)
            up, down = _splice(self.conn, upstream)
        self.proxy.record(method=method, host=host, port=port, address=address, decision="allow",
                          reason="in the allowlist", bytes_up=up + len(rest), bytes_down=down)

    def _refuse(self, method: str, host: str, port: int, address: str | None, why: str) -> None:
        self.proxy.record(method=method, host=host, port=port, address=address, decision="deny", reason=why)
        self._answer(403, f"the runtime's egress proxy refused this: {why}")

    def _answer(self, status: int, message: str) -> None:
        body = (message + "\n").encode("utf-8", "replace")
        reason = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large",
                  503: "Service Unavailable"}.get(status, "Error")
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        try:
            self.conn.sendall(head + body)
            # Closing with unread bytes queued would reset the connection and could lose the answer:
            # end our side, then read (a bounded amount) what the client still sends.
            self.conn.shutdown(socket.SHUT_WR)
            self.conn.settimeout(1.0)
            left = MAX_HEADER_BYTES * 16
            while left > 0 and (chunk := self.conn.recv(_CHUNK)):
                left -= len(chunk)
        except OSError:
            pass
