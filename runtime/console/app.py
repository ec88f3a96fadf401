"""The console's web application: an ASGI app (Starlette) over one state folder, behind its guard.

Pages: the runs (`/`), a plan run (`/plans/ID`), an agent (`/agents/ID`), its change (`/agents/ID/diff`),
what waits for a person (`/approvals`). Each live part of a page has a fragment URL (`.../live`, `/runs`)
that the page fetches again when the event stream (`/events`, one `Watcher` for every open page) names
its topic. What changes anything is a POST behind the CSRF token: a decision on a waiting call (approve,
deny, or always: approve and write the rule, as `runtime allow`) and sending an agent's work back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from runtime.approvals.service import decided_by
from runtime.approvals.store import ApprovalError, ApprovalStore, store_path
from runtime.console.agent_view import agent_body, agent_page
from runtime.console.change import Renderer, read_change
from runtime.console.diff_view import highlight_styles
from runtime.console.guard import HEADERS, TOKEN_HEADER, Guard
from runtime.console.pages import approvals_fragment, page, pre, runs_fragment, shell, text, waiting_link
from runtime.console.plan_view import plan_body, plan_page
from runtime.console.reading import AuditIndex, limits_of, live_calls, plan_view, policy_of, state_text, transcript
from runtime.console.send_back import Refused, SendBack, comments_from, feedback
from runtime.console.watch import Watcher
from runtime.manifests.names import AGENT_ID
from runtime.orchestration.overview import runs_overview

if TYPE_CHECKING:
    import socket
    from collections.abc import AsyncIterator, Callable

    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from runtime.spawn.state import RunRecord, StateDir

STATIC = Path(__file__).with_name("static")
KEEPALIVE_S = 15.0
RECENT_S = 600  # the calls decided this long ago or less are shown under what waits
MAX_BODY = 256 * 1024
RUN_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _well_formed(agent_id: str) -> bool:
    return bool(AGENT_ID.fullmatch(agent_id)) and ".." not in agent_id


def build_app(state: StateDir, guard: Guard, repo: Path | None = None) -> Guarded:
    watcher = Watcher(state)
    audit = AuditIndex(state.audit)
    # The audit log read once, in the background, as the console starts: the first agent page a person opens
    # does not parse a long log while every other page waits for the interpreter.
    threading.Thread(target=audit.of, args=("",), name="audit-index", daemon=True).start()
    sender = SendBack(state, repo)
    renderer = Renderer()

    async def html_page(title: str, body: str) -> HTMLResponse:
        waiting = await asyncio.to_thread(_waiting)
        return HTMLResponse(page(title, body, guard.csrf, sum(waiting.values())))

    def _waiting() -> dict[str, int]:
        """How many calls of each agent wait for the person."""
        found = store()
        out: dict[str, int] = {}
        for asked in found.pending() if found is not None else []:
            out[asked.agent] = out.get(asked.agent, 0) + 1
        return out

    async def waiting(request: Request) -> Response:
        return HTMLResponse(waiting_link(sum((await asyncio.to_thread(_waiting)).values())))

    def run_of(agent_id: str) -> RunRecord | None:
        """The run of an agent id from a URL: only a well-formed id is looked up in the state folder."""
        return state.read(agent_id) if _well_formed(agent_id) else None

    # -- the runs --------------------------------------------------------------------------
    async def home(request: Request) -> Response:
        return await html_page("runs", await asyncio.to_thread(_runs))

    def _runs() -> str:
        agents, plans = runs_overview(state)
        going = {r.agent_id: live_calls(audit.of(r.agent_id), r) for r in agents if not r.final}
        return runs_fragment(str(state.root), agents, plans, _waiting(), going)

    async def runs(request: Request) -> Response:
        return HTMLResponse(await asyncio.to_thread(_runs))

    async def events(request: Request) -> Response:
        queue = watcher.subscribe()

        async def stream() -> AsyncIterator[bytes]:
            try:
                yield b"retry: 1000\n: the runs of this state folder, each change an event\n\n"
                while True:
                    try:
                        change = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                    except TimeoutError:
                        yield b": still here\n\n"
                        continue
                    yield change.events()
            finally:
                watcher.unsubscribe(queue)

        return StreamingResponse(stream(), media_type="text/event-stream")

    # -- one agent -------------------------------------------------------------------------
    def _start(request: Request) -> int | None:
        given = request.query_params.get("from", "")
        return int(given) if given.isdigit() and len(given) < 10 else None

    def _agent_body(record: RunRecord, start: int | None = None) -> str:
        logs = {}
        for a in record.attempts:
            folder = state.attempt(record.agent_id, a.number) / "commands"
            logs[a.number] = sorted(p.name for p in folder.glob("*.log")) if folder.is_dir() else []
        return agent_body(record, transcript(audit.of(record.agent_id)), limits_of(state, record),
                          policy_of(state, record.agent_id), logs, start)

    async def agent(request: Request) -> Response:
        record = run_of(request.path_params["agent_id"])
        if record is None:
            return PlainTextResponse("no run of that agent here\n", status_code=404)
        start = _start(request)
        body = await asyncio.to_thread(_agent_body, record, start)
        return await html_page(f"agent {record.agent_id}",
                               agent_page(record, body, sender.why_not(record.agent_id) is None, start))

    async def agent_live(request: Request) -> Response:
        record = run_of(request.path_params["agent_id"])
        if record is None:
            return PlainTextResponse("no run of that agent here\n", status_code=404)
        start = _start(request)
        body = await asyncio.to_thread(_agent_body, record, start)
        return HTMLResponse(agent_page(record, body, sender.why_not(record.agent_id) is None, start))

    async def command_log(request: Request) -> Response:
        record = run_of(request.path_params["agent_id"])
        name = request.path_params["name"]
        if record is None or not name.endswith(".log") or "/" in name or name.startswith("."):
            return PlainTextResponse("no such log\n", status_code=404)
        path = state.attempt(record.agent_id, int(request.path_params["number"])) / "commands" / name
        shown = await asyncio.to_thread(state_text, state, path)  # no link on the way is followed
        if shown is None:
            return PlainTextResponse("no such log\n", status_code=404)
        return await html_page(f"agent {record.agent_id}: {name}", f"<p><a href=\"/agents/{text(record.agent_id)}\">agent "
                                                              f"{text(record.agent_id)}</a></p>{pre(shown)}")

    async def diff(request: Request) -> Response:
        record = run_of(request.path_params["agent_id"])
        if record is None:
            return PlainTextResponse("no change of that agent here\n", status_code=404)
        # Read, parsed and highlighted in a worker process: a change of megabytes holds up no other page.
        status, body = await renderer.change_page(repo, record, sender.why_not(record.agent_id),
                                                  request.query_params.get("file", ""))
        if status != 200:
            return PlainTextResponse(body + "\n", status_code=status)
        return await html_page(f"agent {record.agent_id}: the change", body)

    async def send_back(request: Request) -> Response:
        record = run_of(request.path_params["agent_id"])
        if record is None:
            return JSONResponse({"sent": False, "message": "no run of that agent here"}, status_code=404)
        try:
            payload = json.loads((await _body(request)).decode("utf-8"))
            comments, note = comments_from(payload)
            found = await asyncio.to_thread(read_change, repo, record)
            if isinstance(found, str):
                raise Refused(found)
            text_sent = feedback(comments, note, found[2])
            log = await asyncio.to_thread(sender.start, record.agent_id, text_sent)
        except (ValueError, Refused) as exc:
            return JSONResponse({"sent": False, "message": str(exc)}, status_code=409)
        return JSONResponse({"sent": True, "message": f"sent back: agent {record.agent_id} starts series "
                                                      f"{record.series + 1} on its work", "log": str(log),
                             "agent": f"/agents/{record.agent_id}"})

    # -- plan runs -------------------------------------------------------------------------
    def _plan(run_id: str) -> tuple[str, str] | None:
        if not run_id or set(run_id) - RUN_ID_CHARS:
            return None
        view = plan_view(state, run_id)
        if view is None:
            return None
        agents = {r.agent_id: r for r in state.all_runs()}
        return view.run_id, plan_page(view, plan_body(view, agents))

    async def plan(request: Request) -> Response:
        found = await asyncio.to_thread(_plan, request.path_params["run_id"])
        if found is None:
            return PlainTextResponse("no plan run of that id here\n", status_code=404)
        return await html_page(f"plan run {found[0]}", found[1])

    async def plan_live(request: Request) -> Response:
        found = await asyncio.to_thread(_plan, request.path_params["run_id"])
        if found is None:
            return PlainTextResponse("no plan run of that id here\n", status_code=404)
        return HTMLResponse(found[1])

    # -- approvals -------------------------------------------------------------------------
    def store() -> ApprovalStore | None:
        return ApprovalStore.for_state(state.root) if store_path(state.root).is_file() else None

    def _pending() -> str:
        found, now = store(), time.time()
        if found is None:
            return approvals_fragment([], [], now)
        recent = [a for a in found.all(limit=50) if not a.pending and a.decided and now - a.decided < RECENT_S]
        return approvals_fragment(found.pending(), recent, now)

    async def approvals(request: Request) -> Response:
        return await html_page("waiting for you", await asyncio.to_thread(_pending))

    async def approvals_live(request: Request) -> Response:
        return HTMLResponse(await asyncio.to_thread(_pending))

    async def decide(request: Request) -> Response:
        """Approve or deny one pending call (a console button): the same store `runtime approve` writes. Always:
        write the rule that allows the command for the agent's role first (`runtime allow`), then approve."""
        found = store()
        decision = request.path_params["decision"]
        if found is None:
            return PlainTextResponse("no approval requests here\n", status_code=404)
        if decision not in ("approve", "deny", "always"):
            return PlainTextResponse("approve, deny or always\n", status_code=404)
        reason = None if decision != "deny" else "denied in the console by the person watching; do it another way"
        said = ""
        if decision == "always":
            try:
                said = await asyncio.to_thread(_always, found, request.path_params["request_id"])
            except Refused as exc:
                return PlainTextResponse(f"{exc}\n", status_code=409)
            reason = f"approved always in the console: {said}"
        try:
            taken = found.decide(request.path_params["request_id"], decision != "deny", reason, decided_by("console"))
        except ApprovalError as exc:
            return PlainTextResponse(f"{exc}\n", status_code=409)
        return PlainTextResponse(f"{taken.status}{'; ' + said if said else ''}\n")

    def _always(found: ApprovalStore, request_id: str) -> str:
        from runtime.tooling.allow import AllowRefused, plan_allow, write

        asked = found.get(request_id)
        if asked is None or not asked.pending:
            raise Refused("that call is no longer waiting")
        if asked.command is None:
            raise Refused("always writes a rule for a shell command shown in full; approve this call, and write "
                          "its rule with `runtime allow`")
        record = run_of(asked.agent)
        if repo is None or record is None:
            raise Refused("always needs the agent's run and the repository the console was opened in")
        try:
            allowed = plan_allow(repo, asked.command, record.role)
        except AllowRefused as exc:
            raise Refused(f"no rule written: {exc}") from None
        if isinstance(allowed, str):
            return allowed
        write(allowed)
        shown = allowed.path.relative_to(repo) if allowed.path.is_relative_to(repo) else allowed.path
        return f"rule added to {shown} for role {record.role} (review and commit it)"

    async def highlight_css(request: Request) -> Response:
        return Response(highlight_styles(), media_type="text/css")

    app = Starlette(routes=[
        Route("/", home), Route("/runs", runs), Route("/events", events), Route("/waiting", waiting),
        Route("/agents/{agent_id}", agent), Route("/agents/{agent_id}/live", agent_live),
        Route("/agents/{agent_id}/diff", diff),
        Route("/agents/{agent_id}/send-back", send_back, methods=["POST"]),
        Route("/agents/{agent_id}/attempts/{number:int}/commands/{name}", command_log),
        Route("/plans/{run_id}", plan), Route("/plans/{run_id}/live", plan_live),
        Route("/approvals", approvals), Route("/approvals/live", approvals_live),
        Route("/approvals/{request_id}/{decision:str}", decide, methods=["POST"]),
        Route("/highlight.css", highlight_css),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ])
    return Guarded(app, guard, close=renderer.close)


async def _body(request: Request) -> bytes:
    out = b""
    async for chunk in request.stream():
        out += chunk
        if len(out) > MAX_BODY:
            raise Refused(f"a request of over {MAX_BODY} bytes")
    return out


def serve(state: StateDir, guard: Guard, listener: socket.socket, repo: Path | None = None) -> None:
    """Serve the console on ``listener`` (bound to loopback, listening) until interrupted; no access log (the
    URL of the first request holds the token)."""
    import uvicorn

    # An open page holds its event stream open: on a stop, it is cut after a second rather than waited for.
    app = build_app(state, guard, repo)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            uvicorn.Server(config).run(sockets=[listener])
    finally:
        app.close()  # the change pages' worker process


class Guarded:
    """The guard in front of every request (``runtime.console.guard``), and its headers on every answer."""

    def __init__(self, app: ASGIApp, guard: Guard, close: Callable[[], None] = lambda: None) -> None:
        self.app = app
        self.guard = guard
        self.close = close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        method, host, path, token = scope["method"], headers.get("host"), scope["path"], headers.get(TOKEN_HEADER)
        opening = self.guard.shell(method, host, token, path, headers.get("accept"), headers.get("sec-fetch-dest"))
        why = None if opening or self.guard.public(method, host, path) else self.guard.refusal(
            method, host, token, headers.get("x-csrf-token"), headers.get("origin"))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                present = {k.lower() for k, _ in message["headers"]}
                message["headers"] = [*message["headers"], *((k.encode(), v.encode()) for k, v in HEADERS.items()
                                                               if k.encode() not in present)]
            await send(message)

        if why is not None:
            await PlainTextResponse(f"refused: {why}\n", status_code=403)(scope, receive, with_headers)
            return
        if opening:  # the browser opening a page: the shell, which fetches the page with the token
            await HTMLResponse(shell())(scope, receive, with_headers)
            return
        await self.app(scope, receive, with_headers)
