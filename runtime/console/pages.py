"""The console's pages, rendered on the server. Everything a run or an agent wrote (ids, roles, goals,
messages, labels, transcripts, diffs, reports) is hostile input here: it passes through ``printable`` (no
terminal escapes, bidi overrides or invisible characters) and then ``html.escape``, and is never put in a
script, a style or an attribute without quotes.

A part of a page that changes while a run goes on is a live section: ``live(id, url, topics, body)``. The
page's script fetches ``url`` again when the event stream names one of ``topics``
(``runtime.console.watch``) and puts the fresh section in its place.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING

from runtime.outcomes import OutcomeStatus
from runtime.printable import printable

if TYPE_CHECKING:
    from runtime.approvals.store import Approval
    from runtime.orchestration.overview import PlanOverview
    from runtime.spawn.state import RunRecord


def text(value: object) -> str:
    """Any value shown on a page: made printable, then escaped for HTML (quotes too)."""
    return html.escape(printable("" if value is None else str(value)), quote=True)


def pre(value: object, cls: str = "") -> str:
    """A block of text as it was written, lines kept: made printable, escaped."""
    shown = html.escape(printable("" if value is None else str(value), multiline=True), quote=True)
    return f"<pre class=\"{text(cls)}\">{shown}</pre>" if cls else f"<pre>{shown}</pre>"


def live(section_id: str, url: str, topics: list[str], body: str) -> str:
    return (f"<section id=\"{text(section_id)}\" data-live=\"{text(url)}\" data-topics=\"{text(' '.join(topics))}\">"
            f"{body}</section>")


def waiting_link(count: int) -> str:
    """The header's link to what waits for the person, with how many calls wait: on every page, live."""
    badge = f" <span class=\"count\">{count}</span>" if count else ""
    return (f"<a id=\"waiting\" class=\"{'waiting' if count else ''}\" href=\"/approvals\" data-live=\"/waiting\" "
            f"data-topics=\"approvals\">waiting for you{badge}</a>")


def page(title: str, body: str, csrf: str, waiting: int = 0) -> str:
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"csrf-token\" content=\"{text(csrf)}\"><title>{text(title)}</title>"
            "<link rel=\"stylesheet\" href=\"/static/console.css\">"
            "<link rel=\"stylesheet\" href=\"/highlight.css\">"
            "<script src=\"/static/console.js\" defer></script></head>\n"
            f"<body><header><nav><a href=\"/\">runs</a> · {waiting_link(waiting)}"
            "<button id=\"notify\" type=\"button\" hidden>tell me when an agent waits or a run ends</button></nav>"
            f"<h1>{text(title)}</h1></header><main>{body}</main>"
            "<aside id=\"notices\" aria-live=\"polite\"></aside></body></html>\n")


def shell() -> str:
    """What the browser gets when it opens any page: the console's script and styles, no data and no CSRF
    value. The script fetches the page with the token this origin keeps (`runtime.console.guard`)."""
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>runtime console</title>"
            "<link rel=\"stylesheet\" href=\"/static/console.css\">"
            "<link rel=\"stylesheet\" href=\"/highlight.css\">"
            "<script src=\"/static/console.js\" defer></script></head>\n"
            "<body><div id=\"opening\"><p>opening…</p><noscript>The console needs JavaScript: its pages are "
            "fetched with the token this browser keeps for this console alone.</noscript></div></body></html>\n")


def spend(records: list[RunRecord]) -> tuple[int, int, int, int, int, float]:
    """Attempts, turns, tool calls, denials, tokens and cost over runs and all their attempts."""
    attempts = [a for r in records for a in r.attempts]
    return (len(attempts), sum(a.turns for a in attempts), sum(a.tool_calls for a in attempts),
            sum(a.denials for a in attempts), sum(a.tokens for a in attempts), sum(a.cost_usd for a in attempts))


def runs_fragment(state_root: str, agents: list[RunRecord], plans: list[PlanOverview],
                  waiting: Mapping[str, int] | None = None, going: Mapping[str, tuple[int, int]] | None = None) -> str:
    """The runs, as the home page shows them and the live updates replace them: every plan run with its
    subtasks' spend, and every agent run (a plan's subtasks among them). ``waiting``: how many calls of each
    agent wait for the person (it reads "waiting for you", first); ``going``: the tool calls and denials of
    an attempt still going (`reading.live_calls`), counted with the finished attempts'."""
    waiting, going = waiting or {}, going or {}
    topics = ["runs", "approvals"]
    if not agents and not plans:
        return live("runs", "/runs", topics, f"<p class=\"empty\">no runs in {text(state_root)} yet</p>")
    parts = []
    if waiting:
        names = ", ".join(f"<a href=\"/agents/{text(a)}\">{text(a)}</a>" for a in sorted(waiting))
        total = sum(waiting.values())
        parts.append(f"<p class=\"waiting\"><a href=\"/approvals\">{total} call{'s' if total > 1 else ''} "
                     f"wait{'' if total > 1 else 's'} for you</a>: {names}</p>")
    by_id = {r.agent_id: r for r in agents}
    if plans:
        parts.append("<h2>plan runs</h2><table class=\"plans\"><thead><tr><th>run</th><th>status</th><th>subtasks</th>"
                     "<th>attempts</th><th>turns</th><th>tool calls</th><th>denials</th><th>tokens</th><th>cost</th>"
                     "<th>integration</th><th>updated</th><th>goal</th></tr></thead><tbody>")
        for p in plans:
            subtasks = p["subtasks"]
            ok = sum(1 for s in subtasks if s["status"] == OutcomeStatus.OK)
            n, turns, calls, denials, tokens, cost = spend([by_id[s["agent_id"]] for s in subtasks if s["agent_id"] in by_id])
            calls += sum(going.get(s["agent_id"], (0, 0))[0] for s in subtasks)
            denials += sum(going.get(s["agent_id"], (0, 0))[1] for s in subtasks)
            parts.append(f"<tr class=\"{status_class(p['status'])}\"><td><a href=\"/plans/{text(p['run_id'])}\">"
                         f"{text(p['run_id'])}</a></td>"
                         f"<td class=\"status\">{text(p['status'])}</td><td>{ok} of {len(subtasks)} ok</td>"
                         f"<td>{n}</td><td>{turns}</td><td>{calls}</td><td>{denials}</td><td>{tokens}</td>"
                         f"<td>${cost:.4f}</td><td>{text(p['integration'] or '')}</td>"
                         f"<td>{text(p['updated'])}</td><td>{text(p['goal'])}</td></tr>")
        parts.append("</tbody></table>")
    if agents:
        parts.append("<h2>agent runs</h2><table class=\"agents\"><thead><tr><th>agent</th><th>role</th><th>status</th>"
                     "<th>attempts</th><th>turns</th><th>tool calls</th><th>denials</th><th>tokens</th><th>cost</th>"
                     "<th>commit</th><th>updated</th></tr></thead><tbody>")
        for r in sorted(agents, key=lambda r: r.agent_id not in waiting):  # who waits for the person first
            n, turns, calls, denials, tokens, cost = spend([r])
            more, refused = going.get(r.agent_id, (0, 0))
            series = f" ({r.series} series)" if r.series > 1 else ""
            status = "waiting for you" if r.agent_id in waiting and not r.final else (r.label or r.status)
            parts.append(f"<tr data-agent=\"{text(r.agent_id)}\" class=\"{status_class(status)}\">"
                         f"<td><a href=\"/agents/{text(r.agent_id)}\">{text(r.agent_id)}</a></td><td>{text(r.role)}</td>"
                         f"<td class=\"status\">{text(status)}</td><td>{n}{text(series)}</td>"
                         f"<td>{turns}</td><td>{calls + more}</td><td>{denials + refused}</td><td>{tokens}</td>"
                         f"<td>${cost:.4f}</td><td>{text((r.commit or '')[:12])}</td><td>{text(r.updated)}</td></tr>")
        parts.append("</tbody></table>")
    return live("runs", "/runs", topics, "".join(parts))


def status_class(status: str) -> str:
    """A row's class from a status or label (`rejected(tampering)` -> `rejected`): what its colour says."""
    head = status.split("(", 1)[0].strip().replace(" ", "-")
    return head if head.replace("-", "").isalpha() else "other"


def approvals_fragment(pending: list[Approval], recent: list[Approval], now: float) -> str:
    """What waits for a person: each call the gate asked about, its reason (which says what rule would allow
    it), its expiry ticking, and the buttons that decide it ("always" writes the rule, as `runtime allow`);
    then the calls decided lately, with how and by whom."""
    parts = [] if pending else ["<p class=\"empty\">nothing waits for you</p>"]
    if pending:
        parts.append("<table class=\"approvals\"><thead><tr><th>agent</th><th>call</th>"
                     "<th>why it is asked</th><th>expires in</th><th></th></tr></thead><tbody>")
    for a in pending:
        left = max(0, int(a.expires - now))
        always = (f"<button class=\"decide\" data-id=\"{text(a.id)}\" data-decision=\"always\" "
                  "title=\"approve, and write the rule that allows this command for the agent's role "
                  "(runtime allow)\">always</button>") if a.command else ""
        parts.append(f"<tr data-id=\"{text(a.id)}\"><td><a href=\"/agents/{text(a.agent)}\">{text(a.agent)}</a></td>"
                     f"<td><code>{text(a.summary)}</code></td><td>{text(a.gate_reason)}</td>"
                     f"<td class=\"expiry\" data-expires=\"{int(a.expires)}\">{left} s</td>"
                     f"<td class=\"buttons\"><button class=\"decide\" data-id=\"{text(a.id)}\" data-decision=\"approve\">"
                     f"approve</button> {always} "
                     f"<button class=\"decide\" data-id=\"{text(a.id)}\" data-decision=\"deny\">deny</button></td></tr>")
    if pending:
        parts.append("</tbody></table><p class=\"keys\">keys: <kbd>j</kbd>/<kbd>k</kbd> the next or previous call, "
                     "<kbd>a</kbd> approve, <kbd>d</kbd> deny, <kbd>A</kbd> always (the first call when none is "
                     "chosen)</p>")
    if recent:
        parts.append("<h2>decided lately</h2><table class=\"decided\"><thead><tr><th>agent</th><th>call</th>"
                     "<th>decision</th><th>by</th><th>reason</th></tr></thead><tbody>")
        parts += [f"<tr data-id=\"{text(a.id)}\" class=\"{text(a.status)}\"><td>{text(a.agent)}</td>"
                  f"<td><code>{text(a.summary)}</code></td><td class=\"status\">{text(a.status)}</td>"
                  f"<td>{text(a.decided_by)}</td><td>{text(a.reason or '')}</td></tr>" for a in reversed(recent)]
        parts.append("</tbody></table>")
    return live("approvals", "/approvals/live", ["approvals"], "".join(parts))
