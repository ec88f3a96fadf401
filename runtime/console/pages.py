"""The console's pages, rendered on the server. Everything a run or an agent wrote (ids, roles, goals,
messages, labels) is hostile input here: it passes through ``printable`` (no terminal escapes, bidi
overrides or invisible characters) and then ``html.escape``, and is never put in a script or an
attribute without quotes."""

from __future__ import annotations

import html
import json
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
            f"<body><header><nav><a href=\"/\">runs</a> · <a href=\"/approvals\">waiting for you</a></nav>"
            f"<h1>{text(title)}</h1></header><main>{body}</main></body></html>\n")


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
            parts.append(f"<tr><td><a href=\"/agents/{text(r.agent_id)}\">{text(r.agent_id)}</a></td><td>{text(r.role)}</td>"
                         f"<td class=\"status\">{text(r.label or r.status)}</td><td>{len(r.attempts)}</td>"
                         f"<td>{turns}</td><td>{calls}</td><td>{denials}</td><td>{tokens}</td><td>${cost:.4f}</td>"
                         f"<td>{text((r.commit or '')[:12])}</td><td>{text(r.updated)}</td></tr>")
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "".join(parts)


def _pre(value: object) -> str:
    return f"<pre>{html.escape(printable('' if value is None else str(value), multiline=True), quote=True)}</pre>"


def agent_page(record: RunRecord, decisions: list[dict[str, Any]]) -> str:
    """One agent's run: what it is, each attempt with its spend and its checks' evidence, and every tool call
    the gate decided, with the atom and rule that decided it."""
    facts = [("role", record.role), ("status", record.label or record.status), ("message", record.message),
             ("branch", record.branch), ("base", record.base_branch or record.base[:12]),
             ("commit", (record.commit or "")[:12]), ("merged", (record.merged or "")[:12]), ("updated", record.updated)]
    parts = [f"<p><a href=\"/\">all runs</a> · <a href=\"/agents/{text(record.agent_id)}/diff\">the change</a></p>"
             "<dl class=\"facts\">"]
    parts += [f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in facts if v]
    parts.append("</dl><h2>attempts</h2><table class=\"attempts\"><thead><tr><th>#</th><th>duration</th><th>exit</th>"
                 "<th>breach</th><th>turns</th><th>tool calls</th><th>denials</th><th>tokens</th><th>cost</th>"
                 "<th>peak memory</th><th>peak processes</th><th>disk</th></tr></thead><tbody>")
    for a in record.attempts:
        parts.append(f"<tr><td>{a.number}</td><td>{a.duration_s:.1f} s</td><td>{text(a.exit_code)}</td>"
                     f"<td>{text(a.breach or '')}</td><td>{a.turns}</td><td>{a.tool_calls}</td><td>{a.denials}</td>"
                     f"<td>{a.tokens}</td><td>${a.cost_usd:.4f}</td><td>{a.peak_memory_mb:.0f} MB</td>"
                     f"<td>{a.peak_processes}</td><td>{a.disk_mb:.1f} MB</td></tr>")
    parts.append("</tbody></table>")
    for a in record.attempts:
        if not a.checks:
            continue
        parts.append(f"<h3>attempt {a.number}: checks</h3><table class=\"checks\"><thead><tr><th>atom</th><th>kind</th>"
                     "<th>status</th><th>evidence</th></tr></thead><tbody>")
        for c in a.checks:
            evidence = _pre(c.feedback) if c.feedback else ""
            if c.tests is not None:
                evidence += _pre(json.dumps(c.tests.model_dump(mode="json", by_alias=True), indent=1))
            if c.test_edits:
                evidence += f"<p class=\"test-edits\">test edits: {text(', '.join(c.test_edits))}</p>"
            parts.append(f"<tr><td>{text(c.atom)}</td><td>{text(c.kind)}</td><td class=\"status\">{text(c.status)}</td>"
                         f"<td>{evidence}</td></tr>")
        parts.append("</tbody></table>")
    parts.append("<h2>tool calls, as the gate decided them</h2>")
    if not decisions:
        parts.append("<p class=\"empty\">no tool call recorded</p>")
    else:
        parts.append("<table class=\"decisions\"><thead><tr><th>time</th><th>tool</th><th>input</th><th>decision</th>"
                     "<th>atom</th><th>rule</th><th>reason</th></tr></thead><tbody>")
        for d in decisions:
            data = d.get("data", {})
            shown = json.dumps(data.get("input"), ensure_ascii=False)
            shown = shown if len(shown) <= 400 else shown[:399] + "…"
            parts.append(f"<tr class=\"{text(_verdict(data.get('decision')))}\"><td>{text(d.get('time'))}</td>"
                         f"<td>{text(data.get('tool'))}</td><td><code>{text(shown)}</code></td>"
                         f"<td class=\"status\">{text(data.get('decision'))}</td><td>{text(data.get('atom') or '')}</td>"
                         f"<td>{text(data.get('rule') or '')}</td><td>{text(data.get('reason') or '')}</td></tr>")
        parts.append("</tbody></table>")
    return "".join(parts)


def _verdict(decision: object) -> str:
    return decision if decision in ("allow", "deny", "ask") else "other"


def approvals_fragment(pending: list[Any], now: float) -> str:
    """What waits for a person: each call the gate asked about, its reason (which says what rule would allow
    it), its expiry ticking, and the buttons that decide it."""
    if not pending:
        return "<section id=\"approvals\"><p class=\"empty\">nothing waits for you</p></section>"
    parts = ["<section id=\"approvals\"><table class=\"approvals\"><thead><tr><th>agent</th><th>call</th>"
             "<th>why it is asked</th><th>expires in</th><th></th></tr></thead><tbody>"]
    for a in pending:
        left = max(0, int(a.expires - now))
        parts.append(f"<tr data-id=\"{text(a.id)}\"><td><a href=\"/agents/{text(a.agent)}\">{text(a.agent)}</a></td>"
                     f"<td><code>{text(a.summary)}</code></td><td>{text(a.gate_reason)}</td>"
                     f"<td class=\"expiry\" data-expires=\"{int(a.expires)}\">{left} s</td>"
                     f"<td><button class=\"decide\" data-id=\"{text(a.id)}\" data-decision=\"approve\">approve</button> "
                     f"<button class=\"decide\" data-id=\"{text(a.id)}\" data-decision=\"deny\">deny</button></td></tr>")
    parts.append("</tbody></table></section>")
    return "".join(parts)


def diff_page(agent_id: str, base: str, head: str, diff: str, test_edits: set[str]) -> str:
    """The agent's branch against its base, file by file: each line escaped and marked as added, removed or
    context; the existing test files the task let it change (verify's `test-edits`) marked apart."""
    parts = [f"<p><a href=\"/agents/{text(agent_id)}\">agent {text(agent_id)}</a> · {text(base[:12])}..{text(head[:12])}</p>"]
    if not diff.strip():
        return "".join([*parts, "<p class=\"empty\">no change against the base</p>"])
    for block in _files(diff):
        path = block[0]
        edited = path in test_edits
        badge = ' <span class="badge">test edit</span>' if edited else ""
        kind = "file test-edit" if edited else "file"
        parts.append(f'<section class="{kind}"><h2>{text(path)}{badge}</h2><pre class="diff">')
        for line in block[1]:
            kind = ("add" if line.startswith("+") else "del" if line.startswith("-") else
                    "hunk" if line.startswith("@@") else "ctx")
            parts.append(f"<span class=\"{kind}\">{html.escape(printable(line), quote=True)}</span>\n")
        parts.append("</pre></section>")
    return "".join(parts)


def _files(diff: str) -> list[tuple[str, list[str]]]:
    """A unified diff (`git diff`) split by file: its path after the change, and its lines from the first hunk."""
    out: list[tuple[str, list[str]]] = []
    path, in_hunks = "", False
    lines: list[str] = []
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            if path or lines:
                out.append((path, lines))
            path, lines, in_hunks = "", [], False
        elif line.startswith("+++ ") and not in_hunks:
            target = line[4:]
            path = target[2:] if target.startswith("b/") else target
        elif line.startswith("--- ") and not in_hunks:
            source = line[4:]
            path = path or (source[2:] if source.startswith("a/") else source)
        elif line.startswith("@@"):
            in_hunks = True
            lines.append(line)
        elif in_hunks:
            lines.append(line)
    if path or lines:
        out.append((path, lines))
    return out
