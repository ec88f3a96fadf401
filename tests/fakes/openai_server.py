"""A scripted fake OpenAI-compatible chat completions server, for litellm's real HTTP path.

Standard library only (``http.server`` in a thread), bound to 127.0.0.1 on an ephemeral port.
Use it as a context manager and point litellm at ``server.url + "/v1"``::

    turns = [
        [{"name": "Bash", "input": {"command": "ls"}}],   # a turn of tool calls
        "all done",                                          # a final content turn
    ]
    with FakeOpenAIServer(turns) as server:
        litellm.completion(model="openai/fake-model", api_base=server.url + "/v1", api_key="x", ...)
        server.chat_requests()[0].body["messages"]

``POST /v1/chat/completions`` (and ``/chat/completions``) answers non-streaming JSON in the real
API's shape. Each successful answer takes the next turn; once the script is used up every further
request gets :data:`FALLBACK_TEXT`. A tool call may give ``"arguments"`` (a raw string, sent as is,
to test malformed JSON) instead of ``"input"``.

Faults, each consumed by the next chat requests and taking no turn:

- ``fail_next(n, status=500)``: answer the next ``n`` requests with ``status`` and an OpenAI-style
  error body (429 and 5xx are what a client should retry; 400 is not).
- ``hang_next(n)``: hold the next ``n`` requests without answering until the server closes (or
  ``hang_s`` passes), so the client's timeout fires.
- ``fail_every(status=500)``: a broken server: from now on every request, of any path and method
  (the model list too), is answered with ``status``.

Every request is recorded (``requests``), failed and hung ones included (``outcome`` says which),
with its ``response_format`` (None when the request had none) for structured-output tests::

    (sent,) = server.chat_requests()
    assert sent.response_format["json_schema"]["strict"] is True

A turn that is a string is answered as the message content, so a JSON document as a string is a
structured reply (``json.dumps({"status": "ok", ...})``).
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = list[dict[str, Any]] | str

FALLBACK_TEXT = "Done (the fake model's script is used up)."
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON when it parses, else the raw text; None without a body
    outcome: str = "other"  # "turn", "fallback", "failed:<status>", "hung", "other"
    turn_index: int | None = None
    response_format: Any = None  # the request's "response_format" as sent (structured output)


class FakeOpenAIServer:
    def __init__(self, turns: list[Turn] | None = None, *, prompt_tokens: int = 11,
                 completion_tokens: int = 7, hang_s: float = 30.0, port: int = 0) -> None:
        self._turns = list(turns or [])
        self._next = 0
        self._faults: list[tuple[str, int]] = []  # ("fail", status) | ("hang", 0), in order
        self._broken: int | None = None  # fail_every's status
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._closing = threading.Event()
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.hang_s = hang_s
        self.requests: list[RecordedRequest] = []
        self._httpd = _QuietServer(("127.0.0.1", port), _make_handler(self))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # releases hung handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- steering ----------------------------------------------------------------------------
    def add_turns(self, *turns: Turn) -> None:
        with self._lock:
            self._turns.extend(turns)

    def fail_next(self, n: int = 1, status: int = 500) -> None:
        with self._lock:
            self._faults.extend([("fail", status)] * n)

    def hang_next(self, n: int = 1) -> None:
        with self._lock:
            self._faults.extend([("hang", 0)] * n)

    def fail_every(self, status: int = 500) -> None:
        with self._lock:
            self._broken = status

    # -- inspection --------------------------------------------------------------------------
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0] in CHAT_PATHS]

    def turns_used(self) -> int:
        with self._lock:
            return self._next

    # -- answering ---------------------------------------------------------------------------
    def _take_fault(self) -> tuple[str, int] | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else None

    def _take_turn(self) -> tuple[int | None, Turn]:
        with self._lock:
            if self._next >= len(self._turns):
                return None, FALLBACK_TEXT
            index = self._next
            self._next += 1
            return index, self._turns[index]

    def _completion(self, turn: Turn, model: str) -> dict[str, Any]:
        with self._lock:
            n = next(self._counter)
        if isinstance(turn, str):
            message: dict[str, Any] = {"role": "assistant", "content": turn}
            finish = "stop"
        else:
            calls = []
            for k, call in enumerate(turn, start=1):
                arguments = call["arguments"] if "arguments" in call else json.dumps(call.get("input", {}))
                calls.append({"id": f"call_fake{n:04d}_{k}", "type": "function",
                              "function": {"name": call["name"], "arguments": arguments}})
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-fake{n:04d}", "object": "chat.completion", "created": 1_700_000_000 + n,
            "model": model, "system_fingerprint": None,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                      "total_tokens": self.prompt_tokens + self.completion_tokens},
        }


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out drop their sockets abruptly; that is no error.
        pass


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self, body: Any) -> RecordedRequest:
            response_format = body.get("response_format") if isinstance(body, dict) else None
            request = RecordedRequest(self.command, self.path, dict(self.headers), body,
                                      response_format=response_format)
            with server._lock:
                server.requests.append(request)
            return request

        def _broken(self, request: RecordedRequest) -> bool:
            with server._lock:
                status = server._broken
            if status is None:
                return False
            request.outcome = f"failed:{status}"
            self._send(status, {"error": {"message": f"fake server error {status}", "type": "server_error",
                                          "param": None, "code": None}})
            return True

        def do_GET(self) -> None:  # noqa: N802 - model lists and the like
            request = self._record(None)
            if not self._broken(request):
                self._send(200, {"object": "list", "data": []})

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = self._record(body)
            if self._broken(request):
                return
            if self.path.split("?", 1)[0] not in CHAT_PATHS:
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            fault = server._take_fault()
            if fault is not None and fault[0] == "hang":
                request.outcome = "hung"
                server._closing.wait(server.hang_s)
                self.close_connection = True
                return
            if fault is not None:
                status = fault[1]
                request.outcome = f"failed:{status}"
                self._send(status, {"error": {"message": f"fake server error {status}",
                                              "type": "server_error" if status >= 500 else "invalid_request_error",
                                              "param": None, "code": None}})
                return
            model = body.get("model", "fake-model") if isinstance(body, dict) else "fake-model"
            request.turn_index, turn = server._take_turn()
            request.outcome = "fallback" if request.turn_index is None else "turn"
            self._send(200, server._completion(turn, model))

    return Handler
