"""A scripted fake Anthropic Messages API for driving the real Claude Code CLI offline.

Standard library only. Use it as a context manager::

    turns = [
        [{"name": "Bash", "input": {"command": "git status"}}],  # a turn of tool calls
        "all done",                                               # a final text turn
    ]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("go", cwd, settings, server.url, tools=["Bash"])
    (git_id,) = server.scripted_tool_use_ids()[0]
    server.tool_result_for(git_id)  # {"type": "tool_result", "is_error": True, ...}

Each agent-loop ``POST /v1/messages`` (the CLI adds ``?beta=true``) takes the next turn and gets
it as a server-sent-event stream in the real API's format. Once the script is used up, every
further request gets a final ``end_turn`` text, so the CLI never waits forever.

What Claude Code 2.1.330 was seen to send (``claude -p``, environment as in ``claude_cli``):

- Only ``POST /v1/messages?beta=true``, ``"stream": true``, one per agent-loop step, each with the
  full ``tools`` array and model ``claude-opus-5-5``. No HEAD, no ``/api/...``, no
  ``count_tokens`` and no title/quota/summary side request reached the base URL, and nothing
  tried another host, while ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` and
  ``DISABLE_TELEMETRY=1`` are set.
- Without those two variables it also opens ``CONNECT api.anthropic.com:443`` (three times per
  run). ``claude_cli`` points ``HTTPS_PROXY`` here as a trap: ``CONNECT`` is recorded (see
  ``side_requests()``) and refused at once, so nothing leaves the machine or hangs.
- Side requests are still told apart defensively: only a streamed request that offers tools
  takes a scripted turn (``_is_agent_loop``); anything else gets a harmless "ok".
- A subagent (``Agent`` tool) runs its own loop with the same model, streamed and with tools, so
  its requests DO take scripted turns, in arrival order. ``Agent`` defaults to running in the
  background, interleaving with the main loop; pass ``"run_in_background": false`` for a
  deterministic order.
- Each response needs its own message id: the CLI merges consecutive assistant messages that
  share an id into one, which silently rewrites the conversation it sends back.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A turn is a list of tool calls ({"name": ..., "input": {...}}) or a final text.
Turn = list[dict[str, Any]] | str

FALLBACK_TEXT = "Done (the fake model's script is used up)."


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON when it parses, else the raw text; None without a body
    agent_loop: bool = False  # True when it took a scripted turn (or the fallback)
    turn_index: int | None = None  # the scripted turn that answered it; None for fallback/side


class FakeAnthropicServer:
    def __init__(self, turns: list[Turn]) -> None:
        self._turns = list(turns)
        self._next = 0
        self._ids_per_turn: list[list[str]] = []
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self.requests: list[RecordedRequest] = []
        self._httpd = _QuietServer(("127.0.0.1", 0), _make_handler(self))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeAnthropicServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- inspection for tests ----------------------------------------------------------------
    def agent_requests(self) -> list[RecordedRequest]:
        """Requests of an agent loop (main or subagent), in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.agent_loop]

    def side_requests(self) -> list[RecordedRequest]:
        """Everything else: CONNECTs to other hosts, GET/HEAD, count_tokens, side calls."""
        with self._lock:
            return [r for r in self.requests if not r.agent_loop]

    def turns_used(self) -> int:
        with self._lock:
            return self._next

    def scripted_tool_use_ids(self) -> list[list[str]]:
        """tool_use ids handed out so far, one list per used turn (empty for text turns)."""
        with self._lock:
            return [list(ids) for ids in self._ids_per_turn]

    def tool_result_for(self, tool_use_id: str) -> dict[str, Any] | None:
        """The tool_result block the CLI first sent back for ``tool_use_id``, if any."""
        for request in self.agent_requests():
            for message in request.body.get("messages", []):
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                        return block
        return None

    def offered_tools(self) -> list[str]:
        """Tool names the CLI offered the model in its first request."""
        requests = self.agent_requests()
        return [t.get("name") for t in requests[0].body.get("tools", [])] if requests else []

    # -- answering ---------------------------------------------------------------------------
    def _take_turn(self) -> tuple[int | None, Turn, list[str]]:
        with self._lock:
            if self._next >= len(self._turns):
                return None, FALLBACK_TEXT, []
            index, turn = self._next, self._turns[self._next]
            self._next += 1
            ids = [] if isinstance(turn, str) else [f"toolu_fake{next(self._counter):04d}" for _ in turn]
            self._ids_per_turn.append(ids)
            return index, turn, ids

    def _stream(self, turn: Turn, tool_ids: list[str], model: str) -> bytes:
        with self._lock:
            message_id = f"msg_fake{next(self._counter):04d}"  # unique, or the CLI merges them
        if isinstance(turn, str):
            blocks = [({"type": "text", "text": ""}, {"type": "text_delta", "text": turn})]
            stop_reason = "end_turn"
        else:
            blocks = [({"type": "tool_use", "id": tool_id, "name": call["name"], "input": {}},
                       {"type": "input_json_delta", "partial_json": json.dumps(call.get("input", {}))})
                      for tool_id, call in zip(tool_ids, turn, strict=True)]
            stop_reason = "tool_use"
        events: list[dict[str, Any]] = [{"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}]
        for i, (start, delta) in enumerate(blocks):
            events += [{"type": "content_block_start", "index": i, "content_block": start},
                       {"type": "content_block_delta", "index": i, "delta": delta},
                       {"type": "content_block_stop", "index": i}]
        events += [{"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": 5}},
                   {"type": "message_stop"}]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The CLI drops refused CONNECTs and idle keep-alive sockets abruptly; that is no error.
        pass


def _is_agent_loop(body: Any) -> bool:
    # An agent loop always streams and offers tools; a title/quota/summary call (seen in other
    # versions: no tools, or max_tokens 1) must not take a scripted turn.
    return (isinstance(body, dict) and body.get("stream") is True and bool(body.get("tools"))
            and body.get("max_tokens") != 1)


def _make_handler(server: FakeAnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the CLI's HTTP client expects

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _record(self, body: Any) -> RecordedRequest:
            request = RecordedRequest(self.command, self.path, dict(self.headers), body)
            with server._lock:
                server.requests.append(request)
            return request

        def _send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if payload and self.command != "HEAD":
                self.wfile.write(payload)

        def do_CONNECT(self) -> None:  # noqa: N802 - stray HTTPS through the proxy trap
            self._record(None)
            self._send(403, b"")
            self.close_connection = True

        def do_HEAD(self) -> None:  # noqa: N802 - connectivity checks
            self._record(None)
            self._send(200, b"")

        def do_GET(self) -> None:  # noqa: N802 - /api/... look-ups, model lists
            self._record(None)
            self._send(200, b"{}")

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = self._record(body)
            path = self.path.split("?", 1)[0]
            model = body.get("model", "claude-fake") if isinstance(body, dict) else "claude-fake"
            if path == "/v1/messages/count_tokens":
                self._send(200, b'{"input_tokens": 100}')
            elif path != "/v1/messages":
                self._send(200, b"{}")
            elif _is_agent_loop(body):
                request.agent_loop = True
                request.turn_index, turn, tool_ids = server._take_turn()
                self._send(200, server._stream(turn, tool_ids, model), "text/event-stream")
            elif isinstance(body, dict) and body.get("stream") is True:
                self._send(200, server._stream("ok", [], model), "text/event-stream")
            else:
                self._send(200, json.dumps({
                    "id": "msg_fake_side", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}).encode())

    return Handler
