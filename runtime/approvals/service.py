"""The approvals socket: an agent asks, the orchestrator holds the call pending, a person decides.

``ApprovalService`` (orchestrator side) serves one agent on one Unix socket (mode 0600, in the
short temporary folder of the agent's model broker, bound read-only into its sandbox). The socket
is the agent's identity: the agent id is the service's own and is never read from a request.

Wire format: UTF-8 JSON, one object per line each way, any number of requests per connection,
answered in order::

    -> {"tool": "Bash", "input": {...the exact tool input...}, "reason": "why the gate said ask",
        "timeout_s": 25}                                  # optional: the asker's own wait bound
    <- {"decision": "allow" | "deny", "reason": "one line", "id": "1a2b3c4d" | null,
        "status": "approved" | "denied" | "expired" | null}

A request is a question, never a decision: no message approves anything, and a request with any
other field (``agent``, ``decision``, ...) is answered ``deny``. The service records the call in
the ``ApprovalStore`` (the same pending request when the same call is asked again), audits it
(``approval-request``), calls ``on_pending(approval)`` once for a new request (the CLI prints it
with the command that approves it, or prompts on a terminal; the hook must return promptly), then
waits until the request is decided or expires, audits the decision (``approval-decision``) and
answers. ``timeout_s`` can only shorten the wait (it is how ``runtime check`` stays inside Claude
Code's hook timeout). When the asker hangs up before a decision and no one else waits for the same
request, it is withdrawn (expired); when the service closes (the spawn ended), its pending
requests expire.

``ask_orchestrator`` is the agent's side: standard library only, it runs inside the sandbox.
Every failure there (no socket, no answer in time, nonsense) is a deny.
"""

from __future__ import annotations

import getpass
import json
import os
import queue
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Self, TextIO, TypedDict

from runtime.approvals import ANSWER_GRACE_S
from runtime.approvals.store import Approval, ApprovalError, ApprovalStatus, ApprovalStore, iso
from runtime.audit.records import ApprovalDecided, ApprovalRequested
from runtime.ipc.unix_service import JsonLinesHandler, TrackedServer, UnixService
from runtime.lang.jsontypes import JSON, JSONObject
from runtime.printable import printable

if TYPE_CHECKING:
    from runtime.audit.log import AuditLog

MAX_LINE_BYTES = 4 * 1024 * 1024
_KEYS = {"tool", "input", "reason", "timeout_s"}
_SLICE_S = 0.25  # how often a waiting handler looks at its connection and the service's stop flag


class ApprovalAsk(TypedDict):
    """A request as the service has checked it: what a worker node's service forwards to the orchestrator."""

    tool: str
    input: JSONObject  # the exact tool input
    reason: str  # why the gate said ask
    timeout_s: float  # how long the asker waits


class ApprovalAnswer(TypedDict):
    """What the agent is told: the wire format's answer line."""

    decision: Literal["allow", "deny"]
    reason: str
    id: str | None  # the request's, once it was recorded
    status: str | None  # the request's `ApprovalStatus`, by its value (the wire's), once it was recorded


def _deny(reason: str, approval: Approval | None = None) -> ApprovalAnswer:
    return {"decision": "deny", "reason": " ".join(reason.split()),
            "id": approval.id if approval else None, "status": approval.status.value if approval else None}


def answer_for(approval: Approval) -> ApprovalAnswer:
    """What the agent is told about a request that is no longer pending."""
    if approval.status == ApprovalStatus.APPROVED:
        why = f": {approval.reason}" if approval.reason else ""
        return {"decision": "allow", "reason": f"approved by {approval.decided_by} (approval {approval.id}){why}",
                "id": approval.id, "status": approval.status.value}
    if approval.status == ApprovalStatus.DENIED:
        return _deny(f"denied by {approval.decided_by} (approval {approval.id}): {approval.reason}", approval)
    if approval.status == ApprovalStatus.PENDING:
        return _deny(f"approval {approval.id} was not decided within the time this call could wait; "
                     "the call is denied", approval)
    return _deny(f"approval {approval.id} expired ({approval.reason}); the call is denied", approval)


class ApprovalService(UnixService):
    """Serves one agent's approval requests on a Unix socket (mode 0600)."""

    def __init__(self, socket_path: str | os.PathLike[str], agent_id: str, store: ApprovalStore, *,
                 timeout_s: float, audit: AuditLog | None = None, on_pending: Callable[[Approval], None] | None = None,
                 attempt: int | None = None, max_line_bytes: int = MAX_LINE_BYTES,
                 forward: Callable[[ApprovalAsk], ApprovalAnswer] | None = None,
                 on_allowed: Callable[[Approval], object] | None = None) -> None:
        super().__init__(socket_path)
        if not timeout_s > 0:
            raise ValueError("the approval timeout must be positive")
        self.agent_id = agent_id
        self.thread_name = f"approvals-{agent_id}"
        self.store = store
        self.timeout_s = float(timeout_s)
        self.audit = audit
        self.on_pending = on_pending
        # Called when a person allows a call, before the answer goes back: a rule they wrote with it ("always")
        # is compiled into the policy the agent's next call is judged by.
        self.on_allowed = on_allowed
        self.attempt = attempt
        self.max_line_bytes = max_line_bytes
        # On a cluster's worker node: who records, shows and decides the request (the orchestrator,
        # where `runtime approve` finds it); this service only checks it and passes it on.
        self.forward = forward
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._waiters: dict[str, int] = {}
        self._mine: set[str] = set()
        self._audited: set[str] = set()
        self._audit_lock = threading.Lock()

    def make_server(self) -> TrackedServer:
        return TrackedServer(self.socket_path, _Handler, self)

    def start(self) -> Self:
        self._stop.clear()
        return super().start()

    def close(self) -> None:
        """Stop serving; every request of this service still pending expires (and is audited)."""
        self._stop.set()
        super().close()
        with self._lock:
            mine = sorted(self._mine)
        for request_id in mine:
            # Expired here, or by its own waiting thread just before: audited before close returns either way
            # (`_audit_decision` writes each decision once).
            ended = self.store.expire(request_id, "the agent's run ended before a decision", by="orchestrator") \
                or self.store.get(request_id)
            if ended is not None and ended.status != ApprovalStatus.PENDING:
                self._audit_decision(ended)

    # -- audit ------------------------------------------------------------------------------
    def _append(self, record: ApprovalRequested | ApprovalDecided) -> None:
        if self.audit is None:
            return
        try:
            self.audit.append(record, self.agent_id)
        except Exception:  # noqa: BLE001 - a broken log must not approve anything; the answer still goes out
            pass

    def _audit_decision(self, approval: Approval) -> None:
        # Written under a lock of its own: a second caller (`close`, beside the request's waiting thread) returns
        # once the record is on disk, never while the first is still writing it.
        with self._audit_lock:
            if approval.id in self._audited:
                return
            answer = answer_for(approval)
            self._append(ApprovalDecided(attempt=self.attempt, id=approval.id, tool=approval.tool,
                                         input_hash=approval.input_hash, status=approval.status,
                                         decision=answer["decision"], by=approval.decided_by, reason=approval.reason,
                                         decided_at=iso(approval.decided)))
            self._audited.add(approval.id)

    # -- one request ------------------------------------------------------------------------
    def handle_line(self, line: bytes | str, gone: Callable[[], bool] = lambda: False) -> ApprovalAnswer:
        """The answer to one request line (never raises). Blocks until the request is decided."""
        try:
            try:
                data = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                return _deny(f"the approval request is not JSON ({exc}); the call is denied")
            return self.ask(data, gone)
        except Exception as exc:  # noqa: BLE001 - fail closed
            return _deny(f"the approvals service failed ({type(exc).__name__}: {exc}); the call is denied")

    def ask(self, data: JSON, gone: Callable[[], bool] = lambda: False) -> ApprovalAnswer:
        if not isinstance(data, dict):
            return _deny("an approval request must be a JSON object with `tool`, `input` and `reason`")
        extra = set(data) - _KEYS
        if extra:
            return _deny(f"an approval request may carry only tool, input, reason and timeout_s, not "
                         f"{', '.join(sorted(map(str, extra)))}; the call is denied")
        tool, tool_input, reason = data.get("tool"), data.get("input"), data.get("reason", "")
        if not isinstance(tool, str) or not tool or len(tool) > 200:
            return _deny("an approval request needs `tool` as a tool name")
        if not isinstance(tool_input, dict):
            return _deny("an approval request needs `input` as the call's JSON object")
        if not isinstance(reason, str):
            return _deny("`reason` must be a string")
        wait_s = self.timeout_s
        asked = data.get("timeout_s")
        if asked is not None:
            if isinstance(asked, bool) or not isinstance(asked, (int, float)) or not asked > 0:
                return _deny("`timeout_s` must be a positive number of seconds")
            wait_s = min(wait_s, float(asked))
        if self._stop.is_set():
            return _deny("the agent's run is ending; the call is denied")
        if self.forward is not None:
            answer = self.forward({"tool": tool, "input": tool_input, "reason": reason, "timeout_s": wait_s})
            if not isinstance(answer, dict) or answer.get("decision") not in ("allow", "deny"):
                return _deny("the orchestrator sent a malformed approval answer; the call is denied")
            return answer
        redactor = getattr(self.audit, "redactor", None)
        approval, new = self.store.request(self.agent_id, tool, tool_input, reason or "the gate asked for approval",
                                           wait_s, redactor=redactor)
        with self._lock:
            self._mine.add(approval.id)
            self._waiters[approval.id] = self._waiters.get(approval.id, 0) + 1
        self._append(ApprovalRequested(attempt=self.attempt, id=approval.id, tool=tool, input_hash=approval.input_hash,
                                       summary=approval.summary, gate_reason=approval.gate_reason,
                                       expires_at=iso(approval.expires), new=new))
        if new and self.on_pending is not None:
            try:
                self.on_pending(approval)
            except Exception:  # noqa: BLE001 - showing it failed; the request still waits (and expires)
                pass
        try:
            final = self._wait(approval, time.monotonic() + wait_s, gone)
        finally:
            with self._lock:
                self._waiters[approval.id] -= 1
        if final.status != ApprovalStatus.PENDING:
            self._audit_decision(final)
        if final.allowed and self.on_allowed is not None:
            try:
                self.on_allowed(final)
            except Exception:  # noqa: BLE001 - the call is allowed whatever; the policy in force stays as it was
                pass
        return answer_for(final)

    def _wait(self, approval: Approval, deadline: float, gone: Callable[[], bool]) -> Approval:
        current = approval
        while True:
            left = deadline - time.monotonic()
            current = self.store.wait(approval.id, max(0.0, min(_SLICE_S, left)), stop=self._stop)
            if current.status != ApprovalStatus.PENDING:
                return current
            if self._stop.is_set():
                return self.store.expire(approval.id, "the agent's run ended before a decision",
                                         by="orchestrator") or self.store.get(approval.id) or current
            if gone():
                with self._lock:
                    alone = self._waiters.get(approval.id, 0) <= 1
                if alone:
                    return self.store.expire(approval.id, "the agent stopped waiting for a decision",
                                             by="withdrawn") or self.store.get(approval.id) or current
                return current
            if left <= 0:
                return current  # this asker's own bound passed; the request may still be decided for another


class _Handler(JsonLinesHandler[ApprovalAnswer]):
    def answer(self, line: bytes) -> ApprovalAnswer:
        owner: ApprovalService = self.server.owner  # the server's owner is typed Any in runtime.ipc
        return owner.handle_line(line, self._gone)

    def too_long(self, limit: int) -> ApprovalAnswer:
        return _deny(f"the approval request is longer than {limit} bytes; the call is denied")

    def _gone(self) -> bool:
        """Has the asker hung up? (EOF waiting on the socket.)"""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)  # a socket, typed Any by socketserver
            return peeked == b""
        except (OSError, ValueError):
            return True


# -- the agent's side -------------------------------------------------------------------------

def ask_orchestrator(socket_path: str | os.PathLike[str], tool: str, tool_input: JSON, reason: str,
                     timeout: float) -> tuple[str, str]:
    """Ask the orchestrator to approve one call; ``("allow" | "deny", reason)``. Never raises.

    Waits at most ``timeout`` seconds for a decision (the service expires the request by then)
    plus ``ANSWER_GRACE_S`` for the answer to arrive; anything else than a clear allow is a deny.
    """
    try:
        timeout = float(timeout)
        if not timeout > 0:
            raise ValueError("the wait must be positive")
        line = json.dumps({"tool": tool, "input": tool_input, "reason": reason, "timeout_s": timeout},
                          separators=(",", ":"), allow_nan=False).encode() + b"\n"
    except (TypeError, ValueError) as exc:
        return "deny", f"the call cannot be sent for approval ({exc}); it is denied"
    path = os.fspath(socket_path)
    deadline = time.monotonic() + timeout + ANSWER_GRACE_S
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        sock.connect(path)
        sock.sendall(line)
        buf = b""
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                return "deny", "the orchestrator closed the approvals connection without a decision; the call is denied"
            buf += chunk
            if len(buf) > MAX_LINE_BYTES:
                return "deny", "the approvals service sent an oversized answer; the call is denied"
    except TimeoutError:
        return "deny", f"no decision within {timeout:g} s; the call is denied (an expired request is a deny)"
    except OSError as exc:
        return "deny", f"the orchestrator's approvals service cannot be reached ({path}: {exc}); the call is denied"
    finally:
        sock.close()
    try:
        data = json.loads(buf)
        decision, why = data.get("decision"), data.get("reason")
    except (ValueError, AttributeError):
        return "deny", "the approvals service sent a malformed answer; the call is denied"
    why = why if isinstance(why, str) and why else "no reason given"
    if decision == "allow":
        return "allow", why
    return "deny", why


# -- the orchestrator's terminal ---------------------------------------------------------------

def decided_by(how: str) -> str:
    """Who decides, as recorded: the OS user and the way the decision was taken."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        user = f"uid {os.getuid()}"
    return f"{user} ({how})"


def console_notifier(store: ApprovalStore, *, hint: str = "", stream: TextIO | None = None,
                     interactive: bool | None = None) -> Callable[[Approval], None]:
    """An ``on_pending`` hook that prints the call and how to decide it.

    ``hint`` is added to the printed commands (``--state-dir DIR`` when the state folder is not
    the default one). With ``interactive`` (default: stdin and the stream are terminals) it also
    asks at the terminal, one request at a time, from a thread of its own: the service keeps
    waiting meanwhile, so ``runtime approve`` from elsewhere and the expiry still apply.
    """
    out = stream if stream is not None else sys.stderr
    if interactive is None:
        try:
            interactive = sys.stdin.isatty() and out.isatty()
        except (AttributeError, ValueError):
            interactive = False
    extra = f" {hint}" if hint else ""
    prompts: queue.Queue[Approval] = queue.Queue()

    def show(approval: Approval) -> None:
        # The summary is the agent's tool input (and the gate's reason quotes it): escaped, one line each.
        left = max(0, round(approval.expires_in()))
        out.write(f"\napproval needed [{printable(approval.id)}] agent {printable(approval.agent)}: "
                  f"{printable(approval.summary)}\n"
                  f"  the gate: {printable(approval.gate_reason)}\n"
                  f"  approve: runtime approve {printable(approval.id)}{printable(extra)}\n"
                  f"  deny:    runtime deny {printable(approval.id)}{printable(extra)} --reason \"...\"\n"
                  f"  denied automatically in {left} s without a decision\n")
        out.flush()
        if interactive:
            prompts.put(approval)
            _ensure_prompter()

    started: list[threading.Thread] = []

    def _ensure_prompter() -> None:
        if not started:
            thread = threading.Thread(target=_prompter, name="approvals-prompt", daemon=True)
            started.append(thread)
            thread.start()

    def _prompter() -> None:
        while True:
            approval = prompts.get()
            current = store.get(approval.id)
            if current is None or current.status != ApprovalStatus.PENDING:
                continue
            try:
                out.write(f"approve [{printable(approval.id)}] {printable(approval.summary)}? "
                          "[y]es / [n]o / Enter: leave it: ")
                out.flush()
                answer = sys.stdin.readline().strip().lower()
                if answer in ("y", "yes"):
                    store.decide(approval.id, True, None, decided_by("prompt"))
                    out.write(f"approved [{approval.id}]\n")
                elif answer in ("n", "no"):
                    out.write("reason (the agent reads it): ")
                    out.flush()
                    why = sys.stdin.readline().strip() or "denied at the orchestrator's prompt"
                    store.decide(approval.id, False, why, decided_by("prompt"))
                    out.write(f"denied [{approval.id}]\n")
            except ApprovalError as exc:
                out.write(f"{printable(exc)}\n")
            except Exception as exc:  # noqa: BLE001 - the prompt is a convenience; the request still expires
                out.write(printable(f"the approval prompt failed ({exc}); use `runtime approve {approval.id}{extra}`")
                          + "\n")
            out.flush()

    return show
