"""The console's pages, rendered on the server. Everything a run or an agent wrote (ids, roles, goals,
messages, labels) is hostile input here: it passes through ``printable`` (no terminal escapes, bidi
overrides or invisible characters) and then ``html.escape``, and is never put in a script or an
attribute without quotes."""

from __future__ import annotations

import html
from typing import Any

from runtime.printable import printable
from runtime.spawn.state import RunRecord


def text(value: object) -> str:
    """Any value shown on a page: made printable, then escaped for HTML (quotes too)."""
    return html.escape(printable("" if value is None else str(value)), quote=True)


def page(title: str, body: str, csrf: str) -> str:
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"csrf-token\" content=\"{text(csrf)}\"><title>{text(title)}</title>"
            "<link rel=\"stylesheet\" href=\"/static/console.css\">"
            "<script src=\"/static/console.js\" defer></script></head>\n"
            f"<body><header><h1>{text(title)}</h1></header><main>{body}</main></body></html>\n")


def runs_fragment(state_root: str, agents: list[RunRecord], plans: list[dict[str, Any]]) -> str:
    """The runs, as the home page shows them and the live updates replace them."""
    if not agents and not plans:
        return f"<section id=\"runs\" data-live=\"/runs\"><p class=\"empty\">no runs in {text(state_root)} yet</p></section>"
    parts = ["<section id=\"runs\" data-live=\"/runs\">"]
    if plans:
        parts.append("<h2>plan runs</h2><table class=\"plans\"><thead><tr><th>run</th><th>status</th><th>subtasks</th>"
                     "<th>integration</th><th>updated</th><th>goal</th></tr></thead><tbody>")
        for p in plans:
            subtasks = p["subtasks"]
            ok = sum(1 for s in subtasks if s["status"] == "ok")
            parts.append(f"<tr><td>{text(p['run_id'])}</td><td class=\"status\">{text(p['status'])}</td>"
                         f"<td>{ok} of {len(subtasks)} ok</td><td>{text(p['integration'] or '')}</td>"
                         f"<td>{text(p['updated'])}</td><td>{text(p['goal'])}</td></tr>")
        parts.append("</tbody></table>")
    if agents:
        parts.append("<h2>agent runs</h2><table class=\"agents\"><thead><tr><th>agent</th><th>role</th><th>status</th>"
                     "<th>attempts</th><th>turns</th><th>tool calls</th><th>denials</th><th>tokens</th><th>cost</th>"
                     "<th>commit</th><th>updated</th></tr></thead><tbody>")
        for r in agents:
            turns = sum(a.turns for a in r.attempts)
            calls = sum(a.tool_calls for a in r.attempts)
            denials = sum(a.denials for a in r.attempts)
            tokens = sum(a.tokens for a in r.attempts)
            cost = sum(a.cost_usd for a in r.attempts)
            parts.append(f"<tr><td>{text(r.agent_id)}</td><td>{text(r.role)}</td>"
                         f"<td class=\"status\">{text(r.label or r.status)}</td><td>{len(r.attempts)}</td>"
                         f"<td>{turns}</td><td>{calls}</td><td>{denials}</td><td>{tokens}</td><td>${cost:.4f}</td>"
                         f"<td>{text((r.commit or '')[:12])}</td><td>{text(r.updated)}</td></tr>")
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "".join(parts)
