"""The egress proxy: the only way out of a sandbox, for roles that may reach the web.

Every sandbox has its own network namespace. For a role whose policy declares
domains (`net::egress-allowlist`), the orchestrator runs this proxy on a Unix
socket in the agent's socket folder, and `runtime.sandbox.netrelay` inside the
sandbox exposes it as `http://127.0.0.1:3128` (`HTTP_PROXY`/`HTTPS_PROXY`).
It speaks `CONNECT host:port` (a tunnel, for https) and absolute-form plain
HTTP requests (`GET http://host/path`), one request per connection.

For each request: the host must be a name the allowlist covers (never an IP
literal), the port 80 or 443; the name is resolved once, every address it
resolves to must be public (`runtime.sandbox.addresses`: loopback, private,
link-local and metadata such as 169.254.169.254, CGNAT, multicast, reserved,
documentation and unique-local addresses are refused, IPv4 carried in IPv6
judged as IPv4) unless a catalog author opened its range in the atom's
`addresses`; and the connection goes to the address that was checked, never
to the name again, so a DNS answer that changes in between (rebinding) cannot
redirect it. A refusal is answered with its status (403 refused, 400
malformed, 408 head too slow, 431 head too large, 502 no way to the site, 503
too many connections) and one line saying why.

Bounded whatever the agent does: one thread runs an asyncio loop that accepts
and serves every connection; a connection over `Limits.max_connections` is
answered 503 and closed by the accepting code itself, before any task exists
for it. The only other threads are a fixed pool for name lookups (blocking
`getaddrinfo`) and one that writes audit records, so threads and descriptors
of the orchestrator stay under a constant whatever is thrown at the socket.

Every request is handed to `audit` when it is decided, as an `event:
"request"` record (`decision`, `status`, `reason`, and `host`, `port`, the
`address` connected to or refused). An allowed request's record is written
before the client hears 200 (a sink that fails refuses the request: nothing
leaves unaudited), and an `event: "end"` record with the same `id` completes
it (`bytes_up`, `bytes_down`, `duration_s`, `ended`), so an orchestrator that
dies mid-tunnel has still left the first. Connections turned away over the
bound are audited as 503 records carrying a `count`: while one such record
waits to be written, later ones add to its count, so a flood cannot queue
records without end.

Requests are read by a real HTTP/1.1 parser (h11), and held stricter than it
is: a head with a bare LF or CR, obsolete line folding, a second Host, a
Transfer-Encoding beside a Content-Length (or any Transfer-Encoding on a
forwarded request), or anything h11 itself refuses is answered 400 and
audited. A forwarded request is written anew by h11 from what was parsed
(the URL's own Host, the end-to-end headers, `Connection: close`), and only
its declared body follows it: nothing the client sends after that reaches
the site, so no second request can be smuggled behind the first.

A small proxy written here rather than a proxy library: the part that matters
is exactly the resolve-check-pin sequence above, which general proxies
(proxy.py, mitmproxy) do not do and would have to be bent to; what is left (a
parser, which is h11, and a byte pump) is little code on asyncio streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import secrets
import socket
import ssl
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

import h11

from runtime.errors import FatalError
from runtime.ipc.unix_service import SUN_PATH_MAX, bind_private, remove_if_ours
from runtime.lang.domains import WEB_PORTS, domain_allowed, is_ip_literal, normalise_host, pattern_error
from runtime.policy.document import PolicyDocument
from runtime.sandbox.addresses import address_refusal, parse
from runtime.sandbox.credentials import Credential
from runtime.sandbox.egress_ca import RunCA

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONDict, JSONObject

# Timeouts are `asyncio.timeout` blocks, never `asyncio.wait_for`: on Python 3.11 a wait_for whose
# awaitable completes just as its task is cancelled returns the result and drops the cancellation, which
# left a tunnel running after `close()`.
MAX_HEADER_BYTES = 64 * 1024
_CHUNK = 64 * 1024
_HOST_CLIP = 255  # a host is at most 253 characters: longer junk is recorded cut
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
                         "te", "trailer", "transfer-encoding", "upgrade"})
_REASONS = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}
# Takes each record as the audit log's `egress` kind holds it (`runtime.audit.records.Egress`).
Audit = Callable[["JSONObject"], None]
Resolver = Callable[[str, int], Sequence[str]]


class EgressConfigError(FatalError):
    """A malformed domain pattern or address range."""


@dataclass(frozen=True)
class Limits:
    """The proxy's bounds. The defaults are the runtime's; tests shorten the timeouts."""

    max_connections: int = 64  # served at once; the next is answered 503 at accept
    resolver_threads: int = 4  # name lookups at once (getaddrinfo blocks a thread)
    header_timeout_s: float = 30.0  # for the whole request head to arrive
    resolve_timeout_s: float = 30.0
    connect_timeout_s: float = 15.0  # per address tried
    idle_timeout_s: float = 300.0  # a tunnel where no byte moved either way for this long is closed
    audit_timeout_s: float = 30.0  # an allowed request whose record is not written by then is refused
    linger_s: float = 1.0  # after an error answer, for the client to read it


@dataclass(frozen=True)
class EgressRules:
    """What one agent may reach: names, and the non-global ranges a catalog author opened explicitly."""

    domains: tuple[str, ...]
    addresses: tuple[str, ...] = ()
    ports: tuple[int, ...] = WEB_PORTS
    credentials: tuple[Credential, ...] = ()  # added by the proxy for their hosts (TLS terminated there alone)

    def __post_init__(self) -> None:
        for pattern in self.domains:
            if (why := pattern_error(pattern)) is not None:
                raise EgressConfigError(why)
        for credential in self.credentials:
            if not domain_allowed(self.domains, credential.host):
                raise EgressConfigError(f"a credential is declared for `{credential.host}`, which is not among the "
                                        f"domains this agent may reach ({', '.join(self.domains) or 'none'})")

    def credential_for(self, host: str) -> Credential | None:
        name = normalise_host(host)
        return next((c for c in self.credentials if c.host == name), None)
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


def egress_rules(policy: PolicyDocument, credentials: tuple[Credential, ...] = ()) -> EgressRules | None:
    """The rules of a compiled policy, with the credentials resolved for it (`runtime.sandbox.credentials`): None
    when the role shows no web tool or declares no domain."""
    rules = policy.egress()
    return None if rules is None else EgressRules(rules.domains, rules.addresses, rules.ports, credentials)


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass
class _Exchange:
    """One request as its audit records name it."""

    id: str = field(default_factory=lambda: secrets.token_hex(6))
    method: str | None = None
    host: str | None = None
    port: int | None = None
    address: str | None = None
    decided: bool = False

    def fields(self, event: str) -> JSONDict:
        host = self.host if self.host is None or len(self.host) <= _HOST_CLIP else self.host[:_HOST_CLIP] + "..."
        return {"event": event, "id": self.id, "method": self.method, "host": host, "port": self.port,
                "address": self.address}


def parse_head(head: bytes) -> h11.Request | str:
    """A request head (through its blank line) parsed by h11 and held stricter than h11 holds it; or why it is
    refused. h11 takes a bare LF as a line's end and joins folded lines; a site or another proxy may read
    either otherwise (a second Host, a hidden Transfer-Encoding), so neither is taken here."""
    body = head[:-4]
    if b"\n" in body.replace(b"\r\n", b"") or b"\r" in body.replace(b"\r\n", b""):
        return "malformed request: a line of its head ends in a bare LF or CR"
    if any(line[:1] in (b" ", b"\t") for line in body.split(b"\r\n")[1:]):
        return "malformed request: obsolete line folding (a header line starting with a space or a tab)"
    parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
    try:
        parser.receive_data(head)
        event = parser.next_event()
    except h11.RemoteProtocolError as exc:
        return f"malformed request: {exc}"
    if not isinstance(event, h11.Request):
        return "malformed request line"
    names = [name for name, _ in event.headers]
    if b"transfer-encoding" in names and b"content-length" in names:
        return "malformed request: both Transfer-Encoding and Content-Length (which one frames the body is ambiguous)"
    return event


def _answer_bytes(status: int, message: str) -> bytes:
    body = (message + "\n").encode("utf-8", "replace")
    return (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


@dataclass
class _Stream:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def answer(self, status: int, message: str, linger: float) -> None:
        """Send an error answer and end our side, then read (a bounded amount, for ``linger`` seconds) what
        the client still sends: closing with unread bytes queued would reset the connection and could lose
        the answer."""
        try:
            async with asyncio.timeout(linger):
                self.writer.write(_answer_bytes(status, message))
                await self.writer.drain()
                if self.writer.can_write_eof():
                    self.writer.write_eof()
                left = MAX_HEADER_BYTES * 16
                while left > 0 and (chunk := await self.reader.read(_CHUNK)):
                    left -= len(chunk)
        except (OSError, TimeoutError):
            pass


class EgressProxy:
    """One agent's proxy, on a thread of its own; `start()`/`close()` like the model broker."""

    thread_name = "egress-proxy"

    def __init__(self, socket_path: str | os.PathLike[str], rules: EgressRules, audit: Audit | None = None,
                 resolver: Resolver = system_resolver, limits: Limits = Limits(),
                 upstream_tls: ssl.SSLContext | None = None) -> None:
        self.socket_path = Path(socket_path)
        if len(os.fsencode(self.socket_path)) > SUN_PATH_MAX:
            raise ValueError(f"socket path too long for a Unix socket ({len(os.fsencode(self.socket_path))} "
                             f"bytes, at most {SUN_PATH_MAX}): {self.socket_path}")
        self.rules, self.audit, self.resolver, self.limits = rules, audit, resolver, limits
        # the hosts with a credential: TLS terminated with this run's CA (`runtime.sandbox.egress_ca`)
        self.ca = RunCA.make(tuple(c.host for c in rules.credentials)) if rules.credentials else None
        self.upstream_tls = upstream_tls
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._inode: tuple[int, int] | None = None
        self._lookups: ThreadPoolExecutor | None = None
        self._auditor: ThreadPoolExecutor | None = None
        self._turned_away, self._turned_away_queued = 0, False
        self._turned_away_lock = threading.Lock()

    # -- life cycle ------------------------------------------------------------------------------------

    def start(self) -> EgressProxy:
        if self._thread is not None:
            return self
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._inode = bind_private(listener, self.socket_path, backlog=128)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(listener, ready), name=self.thread_name, daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def close(self) -> None:
        """Stop accepting, cut open connections (their end records are written) and remove the socket
        (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        remove_if_ours(self.socket_path, self._inode)

    def __enter__(self) -> EgressProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, listener: socket.socket, ready: threading.Event) -> None:
        try:
            asyncio.run(self._serve(listener, ready))
        finally:
            listener.close()
            ready.set()

    async def _serve(self, listener: socket.socket, ready: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        self._loop, self._stop = loop, asyncio.Event()
        self._lookups = ThreadPoolExecutor(self.limits.resolver_threads, thread_name_prefix="egress-lookup")
        self._auditor = ThreadPoolExecutor(1, thread_name_prefix="egress-audit")  # one writer: records in order
        connections: set[asyncio.Task[None]] = set()
        acceptor = loop.create_task(self._accept(listener, connections))
        ready.set()
        try:
            await self._stop.wait()
        finally:
            acceptor.cancel()
            for task in list(connections):
                task.cancel()
            await asyncio.gather(acceptor, *connections, return_exceptions=True)
            self._lookups.shutdown(wait=False, cancel_futures=True)
            self._auditor.shutdown(wait=True)  # the end records of the tunnels just cut, the last 503 count

    async def _accept(self, listener: socket.socket, connections: set[asyncio.Task[None]]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(listener)
            except OSError:  # out of descriptors, say: the client waits in the backlog meanwhile
                await asyncio.sleep(0.05)
                continue
            if len(connections) >= self.limits.max_connections:
                self._turn_away(conn)
            else:
                task = loop.create_task(self._connection(conn))
                connections.add(task)
                task.add_done_callback(connections.discard)
            # An accept that succeeds at once does not yield: a backlog kept full would starve the tunnels.
            await asyncio.sleep(0)

    def _turn_away(self, conn: socket.socket) -> None:
        """Over the bound: answered 503 and closed here and now, with no task and no thread; counted for
        the audit record."""
        with conn:
            with contextlib.suppress(OSError):
                conn.send(_answer_bytes(503, "the runtime's egress proxy refused this: too many connections "
                                             f"(at most {self.limits.max_connections} at once)"))
                conn.recv(_CHUNK, socket.MSG_DONTWAIT)  # what already came, so the close does not reset
        with self._turned_away_lock:
            self._turned_away += 1
            if self._turned_away_queued:
                return
            self._turned_away_queued = True
        if self._auditor is not None:
            self._auditor.submit(self._write_turned_away)

    def _write_turned_away(self) -> None:
        with self._turned_away_lock:
            count, self._turned_away, self._turned_away_queued = self._turned_away, 0, False
        self._sink({**_Exchange().fields("request"), "decision": "deny", "status": 503, "count": count,
                    "reason": f"too many connections (at most {self.limits.max_connections} at once)"})

    # -- audit -----------------------------------------------------------------------------------------

    def _sink(self, record: JSONObject) -> bool:
        if self.audit is None:
            return True
        try:
            self.audit(record)
        except Exception:  # noqa: BLE001 - a broken sink must neither open nor hang the proxy: callers refuse
            return False
        return True

    async def _record(self, exchange: _Exchange, event: str, **fields: JSON) -> bool:
        """Write one record on the audit thread; False when it could not be written in time."""
        if event == "request":
            exchange.decided = True
        if self.audit is None or self._auditor is None:
            return True
        loop = asyncio.get_running_loop()
        record = {**exchange.fields(event), **fields}
        try:
            async with asyncio.timeout(self.limits.audit_timeout_s):
                # shielded: a connection cut by `close()` while its end record waits for the writer still has it
                # written (the writer's queue is drained before the proxy ends)
                return await asyncio.shield(loop.run_in_executor(self._auditor, self._sink, record))
        except (TimeoutError, RuntimeError):
            return False

    # -- one connection --------------------------------------------------------------------------------

    async def _connection(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_HEADER_BYTES)
        protocol = asyncio.StreamReaderProtocol(reader)
        try:
            transport, _ = await loop.connect_accepted_socket(lambda: protocol, conn)
        except OSError:
            conn.close()
            return
        client = _Stream(reader, asyncio.StreamWriter(transport, protocol, reader, loop))
        exchange = _Exchange()
        try:
            await self._handle(client, exchange)
        except OSError:
            pass  # the client or the site went away
        except Exception as exc:  # noqa: BLE001 - our own failure refuses the request (fail closed)
            if not exchange.decided:
                await self._refuse(client, exchange, 500, f"internal error ({type(exc).__name__})")
        finally:
            transport.abort()

    async def _refuse(self, client: _Stream, exchange: _Exchange, status: int, why: str) -> None:
        await self._record(exchange, "request", decision="deny", status=status, reason=why)
        await client.answer(status, f"the runtime's egress proxy refused this: {why}", self.limits.linger_s)

    async def _handle(self, client: _Stream, exchange: _Exchange) -> None:
        try:
            async with asyncio.timeout(self.limits.header_timeout_s):
                head = await client.reader.readuntil(b"\r\n\r\n")
        except TimeoutError:
            await self._refuse(client, exchange, 408,
                               f"the request head did not arrive within {self.limits.header_timeout_s:g} s")
            return
        except asyncio.LimitOverrunError:
            await self._refuse(client, exchange, 431, f"the request head is larger than {MAX_HEADER_BYTES} bytes")
            return
        except asyncio.IncompleteReadError as exc:
            if exc.partial:  # a connection that sent nothing is no request
                await self._refuse(client, exchange, 400, "the connection ended inside the request head")
            return
        request = parse_head(head)
        if isinstance(request, str):
            first = head.split(b"\r\n", 1)[0].split(b" ")
            exchange.method = first[0][:32].decode("latin-1") if len(first) == 3 else None
            await self._refuse(client, exchange, 400, request)
            return
        exchange.method, target = request.method.decode("ascii")[:32], request.target.decode("ascii")
        if exchange.method == "CONNECT":
            await self._connect(client, exchange, target)
        else:
            await self._forward(client, exchange, target, request)

    async def _connect(self, client: _Stream, exchange: _Exchange, target: str) -> None:
        host, sep, port_text = target.rpartition(":")
        if not sep or not (port_text.isascii() and port_text.isdigit()) or len(port_text) > 5:
            exchange.host = target
            await self._refuse(client, exchange, 403, "CONNECT needs host:port")
            return
        exchange.host, exchange.port = host.strip("[]"), int(port_text)
        credential = self.rules.credential_for(exchange.host)
        upstream = await self._open_upstream(client, exchange)
        if upstream is None:
            return
        if credential is not None:
            try:
                await self._credentialed(client, upstream, exchange, credential)
            finally:
                upstream.writer.transport.abort()
            return
        try:
            if not await self._record(exchange, "request", decision="allow", status=200, reason="in the allowlist"):
                await client.answer(500, "the runtime's egress proxy cannot write its audit record; nothing was "
                                         "sent", self.limits.linger_s)
                return
            client.writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await self._tunnel(client, upstream, exchange)
        finally:
            upstream.writer.transport.abort()

    # -- a host the proxy adds a credential for ---------------------------------------------------------

    async def _credentialed(self, client: _Stream, upstream: _Stream, exchange: _Exchange, credential: Credential) -> None:
        """TLS terminated here with the run's CA (the sandbox trusts it, for these names alone), each request
        read by h11, refused if it brings a credential of its own, given the declared one, and sent on over TLS
        to the checked address, the site's certificate verified for the declared name with the system's roots."""
        assert self.ca is not None
        host = credential.host
        if not await self._record(exchange, "request", decision="allow", status=200,
                                  reason="in the allowlist; its credential added by the proxy"):
            await client.answer(500, "the runtime's egress proxy cannot write its audit record; nothing was sent",
                                self.limits.linger_s)
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        counts = {"up": 0, "down": 0, "requests": 0}
        ended = "closed"
        try:
            client.writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            # no await between the answer and the handshake: the client's first TLS bytes reach the TLS layer
            async with asyncio.timeout(self.limits.header_timeout_s):
                inner = await _server_tls(client, self.ca.server_context(host))
            ended = await self._relay(inner, upstream, host, exchange.port or 443, credential, counts)
        except ssl.SSLError as exc:
            ended = f"tls: {exc.reason or exc}"
        except TimeoutError:
            ended = "idle"
        except asyncio.CancelledError:
            ended = "proxy closed"
            raise
        finally:
            await self._record(exchange, "end", bytes_up=counts["up"], bytes_down=counts["down"],
                               duration_s=round(loop.time() - started, 3), ended=ended,
                               credentialed=counts["requests"])

    async def _relay(self, client: _Stream, upstream: _Stream, host: str, port: int, credential: Credential,
                     counts: dict[str, int]) -> str:
        """HTTP/1.1 requests one after another on the terminated connection; how it ended. What goes each way is
        gathered and written when the relay next waits (one TLS record where the site's answer came in one)."""
        inbound = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        outbound = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)
        to_client, to_site = _Out(client, inbound, counts), _Out(upstream, outbound)
        sides = (to_client, to_site)
        site_tls = False
        while True:
            request = await self._next(inbound, client, counts, "up", sides)
            if not isinstance(request, h11.Request):
                return "closed"
            refusal = _inner_refusal(request, host, port, credential)
            if refusal is not None:
                await _answer_inside(to_client, 403, refusal)
                return f"refused: {refusal}"
            if not site_tls:  # the site's TLS, at the first request: a site that fails it is answered 502 inside
                try:
                    async with asyncio.timeout(self.limits.connect_timeout_s):
                        await upstream.writer.start_tls(self.upstream_tls or _upstream_tls(), server_hostname=host)
                except (ssl.SSLError, OSError, TimeoutError) as exc:
                    why = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
                    await _answer_inside(to_client, 502, f"the runtime's egress proxy could not reach `{host}` over "
                                                         f"TLS verified with the system's roots ({why}); nothing was sent")
                    return f"tls: {why}"
                site_tls = True
            await to_site.put(_credited(request, credential))
            counts["requests"] += 1
            if inbound.they_are_waiting_for_100_continue:
                await to_client.put(h11.InformationalResponse(status_code=100, headers=[]))
            while True:  # the request's body, as its framing says
                event = await self._next(inbound, client, counts, "up", sides)
                if isinstance(event, h11.Data):
                    await to_site.put(h11.Data(data=event.data))
                elif isinstance(event, h11.EndOfMessage):
                    await to_site.put(h11.EndOfMessage())
                    break
                else:
                    return "closed"
            blank = _Blanker(credential.echoes())  # the secret, were the site to send it back
            while True:  # the site's answer
                event = await self._next(outbound, upstream, None, None, sides)
                if isinstance(event, h11.InformationalResponse):
                    continue
                if isinstance(event, h11.Response):
                    headers = [(n, blank.whole(v)) for n, v in event.headers
                               if n.decode("latin-1") not in _HOP_BY_HOP or n == b"transfer-encoding"]
                    await to_client.put(h11.Response(status_code=event.status_code, headers=headers, reason=event.reason))
                elif isinstance(event, h11.Data):
                    if data := blank.feed(event.data):
                        await to_client.put(h11.Data(data=data))
                elif isinstance(event, h11.EndOfMessage):
                    if data := blank.rest():
                        await to_client.put(h11.Data(data=data))
                    await to_client.put(h11.EndOfMessage())
                    await to_client.flush()
                    break
                else:
                    return "the site closed"
            if inbound.our_state is not h11.DONE or outbound.our_state is not h11.DONE \
                    or inbound.their_state is not h11.DONE or outbound.their_state is not h11.DONE:
                return "closed"
            inbound.start_next_cycle()
            outbound.start_next_cycle()

    async def _next(self, conn: h11.Connection, stream: _Stream, counts: dict[str, int] | None, key: str | None,
                    sides: tuple[_Out, ...]) -> h11.Event | None:
        """The next h11 event of ``conn``, reading ``stream`` as needed (what waits to go either way is written
        first); malformed input ends it (None)."""
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError:
                return None
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]
            for side in sides:
                await side.flush()
            async with asyncio.timeout(self.limits.idle_timeout_s):
                data = await stream.reader.read(_CHUNK)
            if counts is not None and key is not None:
                counts[key] += len(data)
            conn.receive_data(data)  # b"": the peer closed; h11 says what that means

    async def _forward(self, client: _Stream, exchange: _Exchange, target: str, parsed: h11.Request) -> None:
        try:
            url = urlsplit(target)
            port = url.port or 80
        except ValueError:
            exchange.host = target
            await self._refuse(client, exchange, 403, "the URL cannot be parsed")
            return
        exchange.host = url.hostname or target.rpartition("@")[2]  # never a user:password of the URL
        if url.scheme != "http" or not url.hostname or url.username or url.password:
            await self._refuse(client, exchange, 403, "only absolute http:// URLs without credentials are "
                                                      "forwarded (https goes through CONNECT)")
            return
        exchange.host, exchange.port = url.hostname, port
        if normalise_host(url.hostname) is None and not is_ip_literal(url.hostname):
            await self._refuse(client, exchange, 403, f"`{url.hostname}` is not a host name")
            return
        names = [name.decode("latin-1") for name, _ in parsed.headers]
        if "transfer-encoding" in names:
            await self._refuse(client, exchange, 403, "chunked request bodies are not forwarded; send Content-Length")
            return
        length = int(next((v for n, v in parsed.headers if n == b"content-length"), b"0"))
        kept = [(n, v) for n, v in parsed.headers if n.decode("latin-1") not in _HOP_BY_HOP | {"host"}]
        upstream = await self._open_upstream(client, exchange)
        if upstream is None:
            return
        path = (url.path or "/") + ("?" + url.query if url.query else "")
        try:
            if not await self._record(exchange, "request", decision="allow", status=None, reason="in the allowlist"):
                await client.answer(500, "the runtime's egress proxy cannot write its audit record; nothing was "
                                         "sent", self.limits.linger_s)
                return
            writer = h11.Connection(h11.CLIENT)
            head = writer.send(h11.Request(method=parsed.method, target=path.encode("ascii", "replace"),
                                           headers=[(b"host", url.netloc.encode("ascii", "replace")), *kept,
                                                    (b"connection", b"close")]))
            upstream.writer.write(head or b"")
            sent = len(head or b"") + await self._body(client, upstream, length)
            await self._tunnel(client, upstream, exchange, sent=sent, upload=False)
        finally:
            upstream.writer.transport.abort()

    async def _body(self, client: _Stream, upstream: _Stream, length: int) -> int:
        """Copy exactly the request's declared body to the site; what the client sends after it goes nowhere."""
        left = length
        while left > 0:
            async with asyncio.timeout(self.limits.idle_timeout_s):
                chunk = await client.reader.read(min(left, _CHUNK))
            if not chunk:
                break
            upstream.writer.write(chunk)
            await upstream.writer.drain()
            left -= len(chunk)
        return length - left

    async def _open_upstream(self, client: _Stream, exchange: _Exchange) -> _Stream | None:
        """A connection to the checked address of an allowed destination, or None once refused."""
        host, port = exchange.host or "", exchange.port or 0
        if (why := self.rules.host_refusal(host, port)) is not None:
            await self._refuse(client, exchange, 403, why)
            return None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.limits.resolve_timeout_s):
                addresses = list(await loop.run_in_executor(self._lookups, self.resolver, host, port))
        except TimeoutError:
            await self._refuse(client, exchange, 502, f"`{host}` did not resolve within "
                                                      f"{self.limits.resolve_timeout_s:g} s")
            return None
        except Exception as exc:  # noqa: BLE001 - OSError from getaddrinfo; anything else refuses too
            await self._refuse(client, exchange, 502, f"`{host}` does not resolve ({exc})")
            return None
        if not addresses:
            await self._refuse(client, exchange, 502, f"`{host}` does not resolve")
            return None
        for address in addresses:  # one bad answer refuses the name: it may be a rebinding attempt
            if (why := self.rules.address_refusal(address)) is not None:
                exchange.address = address
                await self._refuse(client, exchange, 403, f"`{host}`: {why}")
                return None
        last: BaseException | None = None
        for address in addresses:
            ip = str(parse(address))
            sock = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                # The checked address itself: the name is not resolved again.
                async with asyncio.timeout(self.limits.connect_timeout_s):
                    await loop.sock_connect(sock, (ip, port))
                reader, writer = await asyncio.open_connection(sock=sock, limit=_CHUNK)
            except (OSError, TimeoutError) as exc:
                sock.close()
                last = exc
                continue
            except BaseException:
                sock.close()
                raise
            exchange.address = ip
            return _Stream(reader, writer)
        exchange.address = addresses[0]
        detail = (str(last) if last is not None else "") or f"no connection within {self.limits.connect_timeout_s:g} s"
        await self._refuse(client, exchange, 502, f"`{host}` is unreachable ({detail})")
        return None

    async def _tunnel(self, client: _Stream, upstream: _Stream, exchange: _Exchange, sent: int = 0,
                      upload: bool = True) -> None:
        """Copy both ways (only the site's answer without ``upload``) until both ends have finished, one fails,
        or nothing moved for the idle timeout; then the end record (``sent``: bytes the site already got, a
        forwarded request's head and body)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        up, down, activity = [sent], [0], [started]
        pumps = [loop.create_task(self._pump(upstream.reader, client.writer, down, activity))]
        if upload:
            pumps.append(loop.create_task(self._pump(client.reader, upstream.writer, up, activity)))
        ended = "closed"
        try:
            pending = set(pumps)
            while pending and ended == "closed":
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if (result := task.result()) != "closed":
                        ended = result
        except asyncio.CancelledError:
            ended = "proxy closed"
            raise
        finally:
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            await self._record(exchange, "end", bytes_up=up[0], bytes_down=down[0],
                               duration_s=round(loop.time() - started, 3), ended=ended)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counter: list[int],
                    activity: list[float]) -> str:
        """Copy until ``reader`` ends ("closed": ``writer`` is told no more comes), the other side fails
        ("error"), or neither direction moved for the idle timeout ("idle")."""
        loop = asyncio.get_running_loop()
        idle = self.limits.idle_timeout_s
        try:
            while True:
                left = activity[0] + idle - loop.time()
                if left <= 0:
                    return "idle"
                try:
                    async with asyncio.timeout(left):
                        chunk = await reader.read(_CHUNK)
                except TimeoutError:
                    continue  # the other direction may have moved meanwhile
                if not chunk:
                    # What this side still buffers is handed to the kernel before the connection is closed
                    # (an abort drops it: the tail of a download the client reads slowly). With no low-water
                    # mark, drain() waits for the buffer to empty, bounded like any other wait here.
                    writer.transport.set_write_buffer_limits(high=0)
                    async with asyncio.timeout(idle):
                        await writer.drain()
                    if writer.can_write_eof():
                        writer.write_eof()
                    return "closed"
                counter[0] += len(chunk)
                activity[0] = loop.time()
                writer.write(chunk)
                async with asyncio.timeout(idle):  # a side that stops reading counts as idle
                    await writer.drain()
                activity[0] = loop.time()
        except TimeoutError:
            return "idle"
        except OSError:
            return "error"


def _upstream_tls() -> ssl.SSLContext:
    """The system's roots, as they are now (made per connection)."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


async def _server_tls(client: _Stream, context: ssl.SSLContext) -> _Stream:
    """The client's connection turned into TLS, this side the server; a new stream over it."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_HEADER_BYTES)
    protocol = asyncio.StreamReaderProtocol(reader)
    transport = await loop.start_tls(client.writer.transport, protocol, context, server_side=True)
    if transport is None:
        raise OSError("the client went away during the TLS handshake")
    protocol.connection_made(transport)
    return _Stream(reader, asyncio.StreamWriter(transport, protocol, reader, loop))


async def _answer_inside(out: _Out, status: int, message: str) -> None:
    """An answer of the proxy's own on a terminated connection, which it then closes."""
    body = message.encode() + b"\n"
    await out.put(h11.Response(status_code=status, headers=[(b"content-type", b"text/plain"),
                                                            (b"content-length", str(len(body)).encode()),
                                                            (b"connection", b"close")]))
    await out.put(h11.Data(data=body))
    await out.put(h11.EndOfMessage())
    await out.flush()


class _Out:
    """One direction of a terminated connection: events made bytes by its h11 connection, gathered until the
    relay waits (or a chunk's worth is there), then written at once."""

    def __init__(self, stream: _Stream, conn: h11.Connection, counts: dict[str, int] | None = None) -> None:
        self.stream, self.conn, self.counts, self.pending = stream, conn, counts, bytearray()

    async def put(self, event: h11.Event) -> None:
        data = self.conn.send(event)
        if data:
            self.pending += data
            if self.counts is not None:
                self.counts["down"] += len(data)
        if len(self.pending) >= _CHUNK:
            await self.flush()

    async def flush(self) -> None:
        if self.pending:
            self.stream.writer.write(bytes(self.pending))
            self.pending.clear()
            await self.stream.writer.drain()


def _inner_refusal(request: h11.Request, host: str, port: int, credential: Credential) -> str | None:
    """Why a request on a terminated connection is not sent on: another host named inside, or a credential of
    the agent's own."""
    names = {n: v for n, v in request.headers}
    said = names.get(b"host", b"").decode("latin-1").lower()
    if said not in (host, f"{host}:{port}"):
        return f"the request names host `{said[:255]}` inside a connection to `{host}`"
    target = request.target.decode("latin-1")
    if not target.startswith("/"):
        return "only origin-form targets (a path) are sent on a credentialed connection"
    added = credential.header()
    if b"authorization" in names or b"proxy-authorization" in names or (added is not None and added[0] in names):
        return f"the request to `{host}` carries a credential of its own; the runtime adds the declared one"
    if credential.send == "query" and credential.name is not None:
        query = urlsplit(target).query
        if any(part.split("=", 1)[0] == credential.name for part in query.split("&")):
            return f"the request to `{host}` carries the `{credential.name}` parameter itself"
    return None


class _Blanker:
    """Blanks every form of a secret in a stream of bytes with as many `*`: the framing (a Content-Length) holds,
    and a form cut across two chunks is caught, the last bytes of each chunk held back until the next."""

    def __init__(self, forms: tuple[bytes, ...]) -> None:
        self.forms, self.keep, self.held = forms, max((len(f) for f in forms), default=1) - 1, b""

    def whole(self, data: bytes) -> bytes:
        for form in self.forms:
            data = data.replace(form, b"*" * len(form))
        return data

    def feed(self, data: bytes) -> bytes:
        data = self.whole(self.held + data)
        cut = max(len(data) - self.keep, 0)
        out, self.held = data[:cut], data[cut:]
        return out

    def rest(self) -> bytes:
        out, self.held = self.whole(self.held), b""
        return out


def _credited(request: h11.Request, credential: Credential) -> h11.Request:
    """The request as it goes on: hop-by-hop headers dropped (its framing kept), the answer asked uncompressed
    (so that `_Blanker` reads it), the credential added."""
    headers = [(n, v) for n, v in request.headers
               if (n.decode("latin-1") not in _HOP_BY_HOP or n == b"transfer-encoding") and n != b"accept-encoding"]
    added = credential.header()
    if added is not None:
        headers.append(added)
    target = request.target
    if credential.send == "query" and credential.name is not None:
        pair = f"{quote(credential.name)}={quote(credential.secret, safe='')}".encode("ascii")
        target += (b"&" if b"?" in target else b"?") + pair
    return h11.Request(method=request.method, target=target, headers=headers)
