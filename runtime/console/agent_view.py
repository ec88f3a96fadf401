"""One agent's page: what it is, every attempt with its spend and peaks against its limits, verify's checks
with their evidence and command logs, its transcript (each tool call with the gate's decision, the atom and
rule that decided, and what the call returned), the role and compiled policy it ran under, and the way to
its change."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from runtime.console.pages import live, pre, text
from runtime.console.reading import Call

if TYPE_CHECKING:
    from runtime.console.reading import Limit, Note, PolicyView
    from runtime.spawn.state import RunRecord

INPUT_SHOWN = 400
RESULT_SHOWN = 2000
WINDOW = 300  # transcript entries on one page: a run of 20,000 records is read a window at a time


def agent_body(record: RunRecord, calls: list[Call | Note], limits: list[Limit], policy: PolicyView | None,
               logs: dict[int, list[str]], start: int | None = None) -> str:
    """The live part of an agent's page (all of it but the links): replaced as the run goes on. The transcript
    shows ``WINDOW`` entries from ``start`` (None: the latest), with links to the others."""
    facts = [("role", record.role), ("status", record.label or record.status), ("series", record.series),
             ("subtask", record.subtask), ("branch", record.branch), ("base", record.base_branch or record.base[:12]),
             ("commit", (record.commit or "")[:12]), ("kept for inspection", (record.work or "")[:12]),
             ("merged", (record.merged or "")[:12]), ("sandbox", "bubblewrap" if record.sandboxed else "none (gate only)"),
             ("updated", record.updated)]
    parts = ["<dl class=\"facts\">"]
    parts += [f"<dt>{text(k)}</dt><dd class=\"{text(k.replace(' ', '-'))}\">{text(v)}</dd>" for k, v in facts if v]
    parts.append("</dl>")
    if record.message:
        parts.append(f"<h2>message</h2>{pre(record.message, 'message')}")
    parts.append(_attempts(record))
    if limits:
        parts.append("<h2>limits</h2><table class=\"limits\"><thead><tr><th></th><th>peak</th><th>limit</th></tr></thead><tbody>")
        parts += [f"<tr><td>{text(m.name)}</td><td>{text(m.peak)}</td><td>{text(m.limit or '—')}</td></tr>" for m in limits]
        parts.append("</tbody></table>")
    parts.append(_checks(record, logs))
    parts.append(_transcript(record, calls, start))
    parts.append(_policy(policy))
    return "".join(parts)


def agent_page(record: RunRecord, body: str, sendable: bool, start: int | None = None) -> str:
    links = ["<a href=\"/\">all runs</a>", f"<a href=\"/agents/{text(record.agent_id)}/diff\">the change</a>"]
    if record.subtask and "." in record.agent_id:
        links.append(f"<a href=\"/plans/{text(record.agent_id.split('.', 1)[0])}\">its plan run</a>")
    if sendable:
        links.append(f"<a href=\"/agents/{text(record.agent_id)}/diff#send-back\">review and send back</a>")
    return (f"<p class=\"links\">{' · '.join(links)}</p>"
            + live("agent", f"/agents/{record.agent_id}/live" + ("" if start is None else f"?from={start}"),
                   ["runs", f"agent:{record.agent_id}"], body))


def _attempts(record: RunRecord) -> str:
    parts = ["<h2>attempts</h2><table class=\"attempts\"><thead><tr><th>#</th><th>series</th><th>duration</th>"
             "<th>exit</th><th>breach</th><th>turns</th><th>tool calls</th><th>denials</th><th>tokens</th><th>cost</th>"
             "<th>peak memory</th><th>peak processes</th><th>disk</th><th>ended</th><th>policy</th></tr></thead><tbody>"]
    for a in record.attempts:
        ended = f"stopped: {a.breach}" if a.breach else ("rejected, retried" if a.feedback else "finished")
        parts.append(f"<tr data-attempt=\"{a.number}\"><td>{a.number}</td><td>{a.series}</td><td>{a.duration_s:.1f} s</td>"
                     f"<td>{text(a.exit_code)}</td><td>{text(a.breach or '')}</td><td>{a.turns}</td><td>{a.tool_calls}</td>"
                     f"<td>{a.denials}</td><td>{a.tokens}</td><td>${a.cost_usd:.4f}</td><td>{a.peak_memory_mb:.0f} MB</td>"
                     f"<td>{a.peak_processes}</td><td>{a.disk_mb:.1f} MB</td><td>{text(ended)}</td>"
                     f"<td title=\"the compiled policy it ran under\"><code>{text(a.policy.rpartition(':')[2][:12])}</code></td></tr>")
    if not record.attempts:
        parts.append("<tr><td colspan=\"15\" class=\"empty\">no attempt has ended yet</td></tr>")
    parts.append("</tbody></table>")
    for a in record.attempts:
        if a.sent_back:
            parts.append(f"<h3>attempt {a.number}: sent back by a person</h3>{pre(a.sent_back, 'sent-back')}")
        if a.report:
            parts.append(f"<details><summary>attempt {a.number}: the agent's report</summary>{pre(a.report)}</details>")
    return "".join(parts)


def _checks(record: RunRecord, logs: dict[int, list[str]]) -> str:
    parts = []
    for a in record.attempts:
        if not a.checks:
            continue
        parts.append(f"<h3>attempt {a.number}: checks</h3><table class=\"checks\"><thead><tr><th>atom</th><th>kind</th>"
                     "<th>status</th><th>evidence</th></tr></thead><tbody>")
        for c in a.checks:
            evidence = pre(c.feedback) if c.feedback else ""
            if c.tests is not None:
                evidence += readable(c.tests.model_dump(mode="json", by_alias=True, exclude_defaults=True))
            for name, found in (("tampering", c.tampering), ("the reviewer's findings", c.review)):
                if found:
                    evidence += f"<p class=\"findings\">{text(name)}:</p>" + readable(found)
            if c.test_edits:
                evidence += f"<p class=\"test-edits\">test edits: {text(', '.join(c.test_edits))}</p>"
            parts.append(f"<tr class=\"{text(c.status)}\"><td>{text(c.atom)}</td><td>{text(c.kind)}</td>"
                         f"<td class=\"status\">{text(c.status)}</td><td>{evidence}</td></tr>")
        parts.append("</tbody></table>")
        names = logs.get(a.number) or []
        if names:
            links = " · ".join(f"<a href=\"/agents/{text(record.agent_id)}/attempts/{a.number}/commands/{text(n)}\">"
                               f"{text(n)}</a>" for n in names)
            parts.append(f"<p class=\"command-logs\">the checks' command logs: {links}</p>")
    return "".join(parts)


ROWS_SHOWN = 50


def readable(value: object, depth: int = 0) -> str:
    """Evidence as a person reads it: a mapping as a table of its keys, a list of mappings as a table with a
    column per key, a list of values as a list, a value as text (escaped); past a few levels, as JSON text."""
    if depth > 3:
        return f"<code>{text(json.dumps(value, ensure_ascii=False)[:2000])}</code>"
    if isinstance(value, dict):
        if not value:
            return "<span class=\"empty\">none</span>"
        rows = "".join(f"<tr><th>{text(k)}</th><td>{readable(v, depth + 1)}</td></tr>" for k, v in value.items())
        return f"<table class=\"evidence\"><tbody>{rows}</tbody></table>"
    if isinstance(value, list):
        if not value:
            return "<span class=\"empty\">none</span>"
        more = f"<p class=\"empty\">and {len(value) - ROWS_SHOWN} more</p>" if len(value) > ROWS_SHOWN else ""
        shown = value[:ROWS_SHOWN]
        if all(isinstance(v, dict) for v in shown):
            keys = list(dict.fromkeys(k for v in shown for k in v))
            head = "".join(f"<th>{text(k)}</th>" for k in keys)
            body = "".join("<tr>" + "".join(f"<td>{readable(v.get(k, ''), depth + 1)}</td>" for k in keys) + "</tr>"
                           for v in shown)
            return f"<table class=\"evidence\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"
        return "<ul class=\"evidence\">" + "".join(f"<li>{readable(v, depth + 1)}</li>" for v in shown) + f"</ul>{more}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return text(value)


def window(total: int, start: int | None) -> int:
    """Where the transcript's window starts: ``start`` within the entries, or the latest window."""
    latest = max(0, total - WINDOW)
    return latest if start is None else max(0, min(start, latest))


def _transcript(record: RunRecord, calls: list[Call | Note], start: int | None = None) -> str:
    parts = ["<h2>transcript: tool calls as the gate decided them</h2>"]
    if not calls:
        return parts[0] + "<p class=\"empty\">no tool call recorded yet</p>"
    first = window(len(calls), start)
    page = calls[first:first + WINDOW]
    if len(calls) > WINDOW:
        here = f"/agents/{text(record.agent_id)}"
        links = [f"entries {first + 1}–{first + len(page)} of {len(calls)}"]
        if first > 0:
            links.append(f"<a href=\"{here}?from=0\">first</a>")
            links.append(f"<a href=\"{here}?from={max(0, first - WINDOW)}\">earlier</a>")
        if first + len(page) < len(calls):
            links.append(f"<a href=\"{here}?from={first + WINDOW}\">later</a>")
            links.append(f"<a href=\"{here}\">latest (live)</a>")
        parts.append(f"<p class=\"pages\">{' · '.join(links)}</p>")
    parts.append("<table class=\"transcript\"><thead><tr><th>attempt</th><th>time</th><th>tool</th><th>input</th>"
                 "<th>decision</th><th>atom</th><th>rule</th><th>reason</th><th>result</th></tr></thead><tbody>")
    for c in page:
        if isinstance(c, Call):
            shown = json.dumps(c.input, ensure_ascii=False)
            shown = shown if len(shown) <= INPUT_SHOWN else shown[:INPUT_SHOWN - 1] + "…"
            result = "" if c.result is None else pre(c.result[:RESULT_SHOWN], "error" if c.is_error else "result")
            parts.append(f"<tr class=\"call {text(_verdict(c.decision))}\"><td>{c.attempt}</td><td>{text(c.time[11:19])}</td>"
                         f"<td>{text(c.tool)}</td><td><code>{text(shown)}</code></td>"
                         f"<td class=\"status\">{text(c.decision)}</td><td>{text(c.atom)}</td><td>{text(c.rule)}</td>"
                         f"<td>{text(c.reason)}</td><td>{result}</td></tr>")
        else:
            parts.append(f"<tr class=\"note {text(c.kind)}\"><td>{c.attempt or ''}</td><td>{text(c.time[11:19])}</td>"
                         f"<td colspan=\"7\">{text(c.text)}</td></tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def _policy(policy: PolicyView | None) -> str:
    if policy is None:
        return "<h2>policy</h2><p class=\"empty\">the compiled policy is not kept for this run</p>"
    rows = [("mode", policy.mode), ("role", policy.role), ("tools", ", ".join(policy.tools)),
            ("the gate's atoms", ", ".join(f"{a} ({k})" for a, k in policy.gates)),
            ("the sandbox's atoms", ", ".join(f"{a} ({k})" for a, k in policy.sandbox)),
            ("verify's atoms", ", ".join(f"{a} ({k})" for a, k in policy.verify)),
            ("protected", ", ".join(policy.protected))]
    return ("<h2>the role and policy it ran under</h2><dl class=\"policy\">"
            + "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in rows if v)
            + f"</dl><details><summary>the compiled policy (policy.json)</summary>{pre(policy.text)}</details>")


def _verdict(decision: object) -> str:
    return decision if decision in ("allow", "deny", "ask") else "other"
