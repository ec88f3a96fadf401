"""The console's web application: an ASGI app (Starlette) over one state folder, behind its guard."""

from __future__ import annotations

import asyncio
import os
import time
from http.cookies import SimpleCookie
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from runtime.approvals.service import decided_by
from runtime.approvals.store import ApprovalError, ApprovalStore, store_path
from runtime.audit.log import records
from runtime.console.guard import COOKIE, HEADERS, Guard
from runtime.console.pages import agent_page, approvals_fragment, diff_page, page, runs_fragment
from runtime.manifests.names import AGENT_ID
from runtime.orchestration.overview import runs_overview
from runtime.workspace.git import Git, GitError

if TYPE_CHECKING:
    import socket
    from collections.abc import AsyncIterator

    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from runtime.spawn.state import RunRecord, StateDir

STATIC = Path(__file__).with_name("static")
WATCH_S = 0.2  # how often the state folder is looked at for a change, per open page


def fingerprint(state: StateDir) -> tuple[tuple[str, int, int], ...]:
    """What changes when any run writes its state: each state file's and the orchestrator database's size
    and modification time."""
    paths = [*(state.root / "runs").glob("*/state.json"), *state.root.glob("orchestrator.sqlite*")]
    out = []
    for path in sorted(paths):
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)


def build_app(state: StateDir, guard: Guard, repo: Path | None = None) -> ASGIApp:
    async def home(request: Request) -> Response:
        if "token" in request.query_params and request.cookies.get(COOKIE) != guard.token:
            # The token leaves the address bar: a cookie only this site is sent, then the page without it.
            answer = RedirectResponse("/", status_code=303)
            answer.set_cookie(COOKIE, guard.token, httponly=True, samesite="strict", path="/")
            return answer
        agents, plans = runs_overview(state)
        body = runs_fragment(str(state.root), agents, plans)
        return HTMLResponse(page("runs", body, guard.csrf))

    async def runs(request: Request) -> Response:
        agents, plans = runs_overview(state)
        return HTMLResponse(runs_fragment(str(state.root), agents, plans))

    def run_of(agent_id: str) -> RunRecord | None:
        """The run of an agent id from a URL: only a well-formed id is looked up in the state folder."""
        return state.read(agent_id) if AGENT_ID.fullmatch(agent_id) and ".." not in agent_id else None

    async def agent(request: Request) -> Response:
        agent_id = request.path_params["agent_id"]
        record = run_of(agent_id)
        if record is None:
            return PlainTextResponse("no run of that agent here\n", status_code=404)
        decisions = list(records(state.audit, agent=agent_id, kind="gate")) if state.audit.exists() else []
        return HTMLResponse(page(f"agent {agent_id}", agent_page(record, decisions), guard.csrf))

    async def diff(request: Request) -> Response:
        """The agent's branch against the base it started from, in the repository the console was opened in."""
        agent_id = request.path_params["agent_id"]
        record = run_of(agent_id)
        if record is None or repo is None or not record.base:
            return PlainTextResponse("no change of that agent here\n", status_code=404)
        git = Git(repo)
        try:
            head = record.commit or git.resolve(f"refs/heads/{record.branch}")
            shown = git.run("diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", record.base, head).stdout
        except GitError as exc:
            return PlainTextResponse(f"the change cannot be read: {exc}\n", status_code=404)
        edits = {e for a in record.attempts for c in a.checks for e in c.test_edits}
        body = diff_page(agent_id, record.base, head, shown.decode("utf-8", errors="replace"), edits)
        return HTMLResponse(page(f"agent {agent_id}: the change", body, guard.csrf))

    def store() -> ApprovalStore | None:
        return ApprovalStore.for_state(state.root) if store_path(state.root).is_file() else None

    async def approvals(request: Request) -> Response:
        found = store()
        pending = found.pending() if found is not None else []
        return HTMLResponse(page("waiting for you", "<p><a href=\"/\">all runs</a></p>"
                                 + approvals_fragment(pending, time.time()), guard.csrf))

    async def decide(request: Request) -> Response:
        """Approve or deny one pending call (a console button): the same store `runtime approve` writes."""
        found = store()
        if found is None:
            return PlainTextResponse("no approval requests here\n", status_code=404)
        if request.path_params["decision"] not in ("approve", "deny"):
            return PlainTextResponse("approve or deny\n", status_code=404)
        approved = request.path_params["decision"] == "approve"
        reason = None if approved else "denied in the console by the person watching; do it another way"
        try:
            taken = found.decide(request.path_params["request_id"], approved, reason, decided_by("console"))
        except ApprovalError as exc:
            return PlainTextResponse(f"{exc}\n", status_code=409)
        return PlainTextResponse(f"{taken.status}\n")

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[bytes]:
            seen = fingerprint(state)
            yield b": the runs of this state folder, each change an event\n\n"
            while not await request.is_disconnected():
                await asyncio.sleep(WATCH_S)
                now = fingerprint(state)
                if now != seen:
                    seen = now
                    yield b"event: runs\ndata: changed\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    app = Starlette(routes=[
        Route("/", home), Route("/runs", runs), Route("/events", events), Route("/agents/{agent_id}", agent), Route("/agents/{agent_id}/diff", diff),
        Route("/approvals", approvals),
        Route("/approvals/{request_id}/{decision:str}", decide, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ])
    return Guarded(app, guard)


def serve(state: StateDir, guard: Guard, listener: socket.socket, repo: Path | None = None) -> None:
    """Serve the console on ``listener`` (bound to loopback, listening) until interrupted; no access log (the
    URL of the first request holds the token)."""
    import uvicorn

    # An open page holds its event stream open: on a stop, it is cut after a second rather than waited for.
    config = uvicorn.Config(build_app(state, guard, repo), log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[listener])


class Guarded:
    """The guard in front of every request (``runtime.console.guard``), and its headers on every answer."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a cookie header that does not parse carries no token
            cookies = SimpleCookie()
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        why = self.guard.refusal(scope["method"], headers.get("host"),
                                 cookies[COOKIE].value if COOKIE in cookies else None,
                                 (query.get("token") or [None])[0], headers.get("x-csrf-token"),
                                 headers.get("origin"))

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
        await self.app(scope, receive, with_headers)


