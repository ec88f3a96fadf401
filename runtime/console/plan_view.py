"""A plan run's page: its goal and state, its subtasks by sequence group with what each used, a timeline of
when each ran (so what ran in parallel shows as bars side by side), the merges into its integration branch,
the plan's checks, the judge's verdict, the replans and the run's report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.console.pages import live, pre, spend, text

if TYPE_CHECKING:
    from runtime.console.reading import PlanView
    from runtime.spawn.state import RunRecord

WIDTH, ROW = 600, 22


def plan_body(view: PlanView, agents: dict[str, RunRecord]) -> str:
    facts = [("status", view.status), ("goal", view.goal), ("base", view.base_branch or view.base[:12]),
             ("integration", view.integration), ("detail", view.detail or "")]
    parts = ["<dl class=\"facts\">" + "".join(f"<dt>{text(k)}</dt><dd class=\"{text(k)}\">{text(v)}</dd>"
                                               for k, v in facts if v) + "</dl>"]
    parts.append("<h2>subtasks</h2><table class=\"subtasks\"><thead><tr><th>group</th><th>subtask</th><th>uses</th>"
                 "<th>ran alongside</th><th>agent</th><th>outcome</th><th>attempts</th><th>tool calls</th><th>denials</th>"
                 "<th>cost</th><th>merged as</th></tr></thead><tbody>")
    for s in sorted(view.subtasks, key=lambda s: (s.round, s.sequence, s.id)):
        record = agents.get(s.agent)
        n, _turns, calls, denials, _tokens, cost = spend([record] if record else [])
        agent = f"<a href=\"/agents/{text(s.agent)}\">{text(s.agent)}</a>" if record else text(s.agent)
        parts.append(f"<tr data-subtask=\"{text(s.id)}\"><td>round {s.round + 1}, sequence {s.sequence}</td>"
                     f"<td>{text(s.id)}</td><td>{text(', '.join(s.uses))}</td><td>{text(', '.join(s.alongside))}</td>"
                     f"<td>{agent}</td><td class=\"status\">{text(s.label)}</td><td>{n}</td><td>{calls}</td>"
                     f"<td>{denials}</td><td>${cost:.4f}</td><td>{text((s.merged_as or '')[:12])}</td></tr>")
    parts.append("</tbody></table>")
    parts.append(_timeline(view))
    if view.checks:
        parts.append("<h2>plan checks</h2><table class=\"plan-checks\"><tbody>"
                     + "".join(f"<tr class=\"{'passed' if code == 0 else 'rejected'}\"><td><code>{text(cmd)}</code></td>"
                               f"<td>exit {code}</td></tr>" for cmd, code in view.checks) + "</tbody></table>")
    if view.judgements:
        parts.append("<h2>the judge's verdict</h2><ul class=\"judgements\">"
                     + "".join(f"<li><strong class=\"status\">{text(st)}</strong>: {text(why)}</li>"
                               for st, why in view.judgements) + "</ul>")
    if view.replans:
        parts.append("<h2>replans</h2><ul>" + "".join(f"<li>{text(r)}</li>" for r in view.replans) + "</ul>")
    if view.merged is not None:
        into, commit = view.merged
        parts.append(f"<p class=\"merged\">merged into {text(into or '—')} as {text((commit or '')[:12])}</p>")
    if view.report:
        parts.append(f"<details><summary>the run's report</summary>{pre(view.report)}</details>")
    return "".join(parts)


def _timeline(view: PlanView) -> str:
    """When each subtask ran, as bars on one time axis: an SVG (no style attributes: the console's CSP)."""
    ran = [s for s in view.subtasks if s.started is not None]
    if not ran:
        return ""
    scale = WIDTH / view.duration
    height = ROW * len(ran) + 24
    bars = []
    for i, s in enumerate(sorted(ran, key=lambda s: (s.started or 0.0, s.id))):
        start = s.started or 0.0
        end = s.ended if s.ended is not None else view.duration
        x, w, y = 120 + start * scale, max((end - start) * scale, 2.0), 4 + i * ROW
        bars.append(f"<text x=\"0\" y=\"{y + 14}\">{text(s.id[:18])}</text>"
                    f"<rect class=\"bar {text(s.status)}\" x=\"{x:.1f}\" y=\"{y}\" width=\"{w:.1f}\" height=\"16\">"
                    f"<title>{text(s.id)}: {start:.1f} s to {end:.1f} s ({text(s.label)})</title></rect>")
    return (f"<h2>timeline</h2><svg class=\"timeline\" width=\"{WIDTH + 130}\" height=\"{height}\" "
            f"viewBox=\"0 0 {WIDTH + 130} {height}\" role=\"img\" aria-label=\"when each subtask ran\">"
            + "".join(bars) + f"<text x=\"120\" y=\"{height - 4}\">0 s</text>"
            f"<text x=\"{WIDTH + 80}\" y=\"{height - 4}\">{view.duration:.1f} s</text></svg>")


def plan_page(view: PlanView, body: str) -> str:
    return ("<p class=\"links\"><a href=\"/\">all runs</a></p>"
            + live("plan", f"/plans/{view.run_id}/live", [f"plan:{view.run_id}", "runs"], body))
