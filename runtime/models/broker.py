"""The model broker: the agent's only way to a model, over a Unix socket.

The agent runs sandboxed, with no network and no API keys. ``BrokerClient`` (agent side) sends
the conversation and the tool schemas; ``Broker`` (orchestrator side) calls the model through
``runtime.models.llm`` with the configuration and keys only the orchestrator holds, and sends the
answer back.

One broker serves one agent on one socket: the socket is the agent's identity. The broker fills
``model``, ``api_base``, ``script``, ``timeout_s`` and ``max_retries`` from its own ``ModelReach``
(``runtime.models.types``; its ``transport_retries``), and ``agent_id`` with its agent's id; whatever
the agent sends for those fields is ignored, so it cannot choose another model, server or script,
nor play another agent's script. It keeps the agent's usage totals (``Usage``: calls, errors,
tokens, cost) for the orchestrator's limits, across connections and attempts for as long as the
broker lives.

Wire format: UTF-8 JSON, one object per line each way, any number of requests per connection,
answered in order::

    -> {"messages": [...OpenAI chat messages...], "tools": [...function-tool schemas...]}
    <- {"ok": true, "reply": {"content": str|null,
                              "tool_calls": [{"id", "name", "arguments": {...}, "error"?: str}],
                              "prompt_tokens": int, "completion_tokens": int, "cost_usd": float}}
    <- {"ok": false, "error": {"kind": "llm"|"request", "message": "one line"}}

A request may carry an ``"id"`` (string or integer), echoed in its reply. A malformed line, or one
over ``max_line_bytes`` (read and discarded up to its newline, never held in memory), gets an
``ok: false`` reply of kind ``request``; the connection goes on, and the broker never stops.

Concurrency: threads, not anyio. ``socketserver`` accepts in one background thread and serves
each connection in its own daemon thread, which calls ``llm.complete`` (a blocking call with its
own timeouts and retries). The orchestrator can start and stop a broker from synchronous or anyio
code alike (``start()``/``close()``, or ``with Broker(...)``), and a slow model call never blocks
the orchestrator's event loop.

This module imports only the standard library and ``runtime.models.types`` at the top:
``BrokerClient`` runs in the agent process, which never imports litellm (``llm`` is imported
only when a ``Broker`` is created without its own ``complete`` function).
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO, NotRequired, TypedDict

from runtime.ipc.unix_service import JsonLinesHandler, TrackedServer, UnixService
from runtime.lang.jsontypes import JSON, JSONDict, JSONObject
from runtime.models.types import ModelError, ModelReach, ModelReply, ModelRequest, check_messages, check_tools, one_line

MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Usage:
    """Model usage so far: an agent's (its broker's), or a planner's or reviewer's."""

    calls: int = 0  # model calls answered (successful or not)
    errors: int = 0  # of which ended in a ModelError
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def plus(self, reply: ModelReply | None) -> Usage:
        """This usage and one more call answered: ``reply``, or None for a call that ended in a ModelError."""
        if reply is None:
            return replace(self, calls=self.calls + 1, errors=self.errors + 1)
        return replace(self, calls=self.calls + 1, prompt_tokens=self.prompt_tokens + reply.prompt_tokens,
                       completion_tokens=self.completion_tokens + reply.completion_tokens,
                       cost_usd=self.cost_usd + reply.cost_usd)


class BrokerRequest(TypedDict):
    """One request line of the wire format, as an agent sends it (the broker reads it by narrowing)."""

    messages: Sequence[JSONObject]
    tools: Sequence[JSONObject]


class BrokerAnswer(TypedDict):
    """One answer line of the wire format: the reply (``ModelReply.to_dict``) or the error
    (``ModelError.to_dict``), and the request's ``id`` when it gave one."""

    ok: bool
    reply: NotRequired[JSONDict]
    error: NotRequired[dict[str, str]]
    id: NotRequired[str | int]


def _error(kind: str, message: str) -> BrokerAnswer:
    return {"ok": False, "error": {"kind": kind, "message": one_line(message)}}


class Broker(UnixService):
    """Serves one agent's model calls on a Unix socket (mode 0600)."""

    def __init__(self, socket_path: str | os.PathLike[str], agent_id: str, config: ModelReach, *,
                 complete: Callable[[ModelRequest], ModelReply] | None = None,
                 on_usage: Callable[[str, Usage], None] | None = None,
                 max_line_bytes: int = MAX_LINE_BYTES) -> None:
        super().__init__(socket_path)
        self.agent_id = agent_id
        self.thread_name = f"broker-{agent_id}"
        self.config = config
        if complete is None:
            from runtime.models import llm  # no litellm import until a call is made

            def complete(request: ModelRequest) -> ModelReply:
                return llm.complete(request, api_key=config.api_key, backoff_s=config.backoff_s)
        self._complete = complete
        self._on_usage = on_usage
        self.max_line_bytes = max_line_bytes
        self._usage = Usage()
        self._lock = threading.Lock()

    def make_server(self) -> TrackedServer:
        return TrackedServer(self.socket_path, _Handler, self)

    # -- accounting -------------------------------------------------------------------------
    def usage(self) -> Usage:
        with self._lock:
            return self._usage

    def _record(self, reply: ModelReply | None) -> Usage:
        with self._lock:
            u = self._usage = self._usage.plus(reply)
        if self._on_usage is not None:
            try:
                self._on_usage(self.agent_id, u)
            except Exception:  # noqa: BLE001 - the orchestrator's hook must not break the agent's call
                pass
        return u

    # -- one request --------------------------------------------------------------------------
    def handle_line(self, line: bytes | str) -> BrokerAnswer:
        """The reply to one request line (never raises)."""
        try:
            data: JSON = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            return _error("request", f"the request is not JSON: {exc}")
        if not isinstance(data, dict):
            return _error("request", "the request must be a JSON object with `messages` and `tools`")
        reply = self._handle(data)
        request_id = data.get("id")
        if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
            reply["id"] = request_id
        return reply

    def _handle(self, data: JSONObject) -> BrokerAnswer:
        try:
            messages = check_messages(data.get("messages"))
            tools = check_tools(data.get("tools"))
        except ValueError as exc:
            return _error("request", str(exc))
        cfg = self.config
        request = cfg.request(messages, tools, agent_id=self.agent_id)  # all else comes from the broker
        try:
            reply = self._complete(request)
        except ModelError as exc:
            self._record(None)
            return {"ok": False, "error": exc.to_dict()}
        except Exception as exc:  # noqa: BLE001 - a bug in a model call is still an answer
            self._record(None)
            return _error("llm", f"{cfg.model}: unexpected {type(exc).__name__}: {exc}")
        self._record(reply)
        return {"ok": True, "reply": reply.to_dict()}


class _Handler(JsonLinesHandler[BrokerAnswer]):
    def answer(self, line: bytes) -> BrokerAnswer:
        broker: Broker = self.server.owner  # the owner `Broker.make_server` gave its server
        return broker.handle_line(line)

    def too_long(self, limit: int) -> BrokerAnswer:
        return _error("request", f"the request line is longer than {limit} bytes")


class BrokerClient:
    """The agent's side: standard library only (no litellm, no anyio).

    One connection, opened on first use and reopened after a failure. ``complete`` raises
    ``ModelError``: the broker's own error (kind ``llm`` or ``request``), or kind ``broker`` when
    the connection breaks or the reply makes no sense.
    """

    def __init__(self, socket_path: str | os.PathLike[str], timeout_s: float | None = None) -> None:
        self.socket_path = os.fspath(socket_path)
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._rfile: BinaryIO | None = None
        self._lock = threading.Lock()

    def complete(self, messages: Sequence[JSONObject], tools: Sequence[JSONObject] | None = None) -> ModelReply:
        request: BrokerRequest = {"messages": messages, "tools": tools or []}
        line = json.dumps(request, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            try:
                if self._sock is None:
                    self._connect()
                assert self._sock is not None and self._rfile is not None
                self._sock.sendall(line)
                raw = self._rfile.readline()
            except OSError as exc:
                self._disconnect()
                raise ModelError(f"broker connection failed ({self.socket_path}): {exc}", kind="broker") from None
            if not raw:
                self._disconnect()
                raise ModelError(f"the broker closed the connection ({self.socket_path})", kind="broker")
        try:
            data: JSON = json.loads(raw)
            if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
                raise ValueError("no `ok` field")
            if not data["ok"]:
                raise ModelError.from_dict(data.get("error"))
            return ModelReply.from_dict(data.get("reply"))
        except ValueError as exc:
            raise ModelError(f"malformed reply from the broker: {exc}", kind="broker") from None

    def _connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout_s)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self._sock, self._rfile = sock, sock.makefile("rb")

    def _disconnect(self) -> None:
        sock, rfile, self._sock, self._rfile = self._sock, self._rfile, None, None
        for closable in (rfile, sock):
            if closable is not None:
                try:
                    closable.close()
                except OSError:
                    pass

    def close(self) -> None:
        with self._lock:
            self._disconnect()

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
