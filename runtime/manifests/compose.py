"""Compose: the prompt bundle an agent receives, byte-for-byte deterministic.

Each atom's ``text.md`` in resolved order, then a generated scope block, then
the task body, joined by ``\\n\\n---\\n\\n``.
"""

from __future__ import annotations

from typing import Any

from runtime.manifests.atom import Atom
from runtime.manifests.role import ResolvedRole
from runtime.manifests.task import Task

SEPARATOR = "\n\n---\n\n"
_ESCALATION = {
    "ask-via-return": "If you need a decision, do not stop to ask: put the question in your final report.",
    "orchestrator-notify": "If you change a shared path, say so first in your report: the orchestrator is notified of shared-path edits.",
    "fail-fast": "If you cannot proceed, stop at once and report why.",
}


def param_values(role: ResolvedRole, task: Task | None) -> dict[str, dict[str, Any]]:
    """Each atom's parameter values: default, then the role's, then the task's."""
    out: dict[str, dict[str, Any]] = {}
    for atom in role.atoms:
        values: dict[str, Any] = {}
        for pname, spec in atom.params.items():
            value = role.params.get(atom.name, {}).get(pname, spec.default)
            if task is not None and spec.task_field in task.fields:
                value = task.fields[spec.task_field]
            if value is not None:
                values[pname] = value
        out[atom.name] = values
    return out


def _code_list(items: list[str]) -> str:
    return ", ".join(f"`{i}`" for i in items)


def _shell_summary(rules: list[dict[str, Any]]) -> str:
    parts = []
    for rule in rules:
        subs = rule["subcommands"]
        parts.append(f"`{rule['program']}`" + (f" ({', '.join(subs)})" if subs else ""))
    return ", ".join(parts)


def scope_block(role: ResolvedRole, task: Task | None, values: dict[str, dict[str, Any]]) -> str:
    lines = ["## Your task's scope", ""]
    if task is not None:
        parent = f", reporting to `{task.parent_agent}`" if task.parent_agent else ""
        lines.append(f"- Agent: `{task.agent_id}`{parent}")
    lines.append(f"- Role: `{role.name}` ({role.display_name})")
    lines.append(f"- Goal: {task.goal.strip()}" if task is not None else "- Goal: given by each task.")
    lines.append(f"- Tools you can use: {', '.join(role.tools)}")
    by_gate = {a.gate: a for a in role.atoms if a.gate}
    by_verify = {a.verify: a for a in role.atoms if a.verify}

    def v(atom: Atom, name: str) -> Any:
        return values[atom.name].get(name)

    if "bash-allowlist" in by_gate:
        rules = v(by_gate["bash-allowlist"], "rules") or []
        lines.append(f"- Shell programs you may run: {_shell_summary(rules) or 'none'}")
    if "read-only" in by_gate or "write-whitelist" not in by_gate:
        lines.append("- You may not write any file.")
    else:
        globs = v(by_gate["write-whitelist"], "globs") or []
        lines.append(f"- You may write only inside: {_code_list(globs)}" if globs else "- You may not write any file: no write scope is given.")
    if "write-denylist" in by_gate and v(by_gate["write-denylist"], "globs"):
        lines.append(f"- Never write inside: {_code_list(v(by_gate['write-denylist'], 'globs'))}")
    if "dep-files" in by_gate:
        lines.append("- Leave dependency declarations and lock files unchanged.")
    if "tests-green" in by_verify and v(by_verify["tests-green"], "command"):
        atom = by_verify["tests-green"]
        lines.append(f"- Before you finish, `{v(atom, 'command')}` must pass with at least {v(atom, 'min-count')} tests, "
                     "and every test the base runs must still run and pass.")
    if "checks-green" in by_verify and v(by_verify["checks-green"], "commands"):
        lines.append(f"- These checks must pass: {_code_list(v(by_verify['checks-green'], 'commands'))}")
    if "report-fields" in by_verify and v(by_verify["report-fields"], "fields"):
        lines.append(f"- Your final report must include the fields: {', '.join(v(by_verify['report-fields'], 'fields'))}")
    if "severity-grades" in by_verify:
        lines.append(f"- Grade every finding: {', '.join(v(by_verify['severity-grades'], 'grades'))}")
    lines.append(f"- {_ESCALATION[role.escalation]}")
    return "\n".join(lines)


def compose_bundle(role: ResolvedRole, task: Task | None, context: str | None = None) -> str:
    """The bundle; ``context`` (outputs of earlier subtasks of a plan) goes before the body."""
    values = param_values(role, task)
    parts = [atom.text.strip() for atom in role.atoms]
    parts.append(scope_block(role, task, values))
    if context:
        parts.append("## Results of earlier subtasks\n\n" + context.strip())
    if task is not None:
        parts.append(task.body.strip())
    return SEPARATOR.join(parts) + "\n"
