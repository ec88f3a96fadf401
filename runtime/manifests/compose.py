"""Compose: the prompt bundle an agent receives, byte-for-byte deterministic.

Each atom's ``text.md`` in resolved order, then a generated scope block, then
the task body, joined by ``\\n\\n---\\n\\n``.
"""

from __future__ import annotations

from runtime.manifests.atom import Atom
from runtime.manifests.params import ParamValue, ProgramRule, param_list
from runtime.manifests.role import ResolvedRole
from runtime.manifests.task import Task

SEPARATOR = "\n\n---\n\n"
_ESCALATION = {
    "ask-via-return": "If you need a decision, do not stop to ask: put the question in your final report.",
    "orchestrator-notify": "If you change a shared path, say so first in your report: the orchestrator is notified of shared-path edits.",
    "fail-fast": "If you cannot proceed, stop at once and report why.",
}


def param_values(role: ResolvedRole, task: Task | None) -> dict[str, dict[str, ParamValue]]:
    """Each atom's parameter values: default, then the role's, then the task's."""
    out: dict[str, dict[str, ParamValue]] = {}
    for atom in role.atoms:
        values: dict[str, ParamValue] = {}
        for pname, spec in atom.params.items():
            value = role.params.get(atom.name, {}).get(pname, atom.defaults.get(pname))
            if task is not None and spec.task_field and (given := task.value_of(spec.task_field)) is not None:
                value = given
            if value is not None:
                values[pname] = value
        out[atom.name] = values
    return out


def _code_list(items: list[str]) -> str:
    return ", ".join(f"`{i}`" for i in items)


def _shell_summary(rules: list[ProgramRule]) -> str:
    parts = []
    for rule in rules:
        subs = rule.subcommands
        parts.append(f"`{rule.program}`" + (f" ({', '.join(subs)})" if subs else ""))
    return ", ".join(parts)


def scope_block(role: ResolvedRole, task: Task | None, values: dict[str, dict[str, ParamValue]]) -> str:
    lines = ["## Your task's scope", ""]
    if task is not None:
        parent = f", reporting to `{task.parent_agent}`" if task.parent_agent else ""
        lines.append(f"- Agent: `{task.agent_id}`{parent}")
    lines.append(f"- Role: `{role.name}` ({role.display_name})")
    lines.append(f"- Goal: {task.goal.strip()}" if task is not None else "- Goal: given by each task.")
    lines.append(f"- Tools you can use: {', '.join(role.tools)}")
    by_gate = {a.gate: a for a in role.atoms if a.gate}
    by_verify = {a.verify: a for a in role.atoms if a.verify}

    def v(atom: Atom, name: str) -> ParamValue | None:
        return values[atom.name].get(name)

    def strs(atom: Atom, name: str) -> list[str]:
        return param_list(v(atom, name), str)

    if "bash-allowlist" in by_gate:
        rules = param_list(v(by_gate["bash-allowlist"], "rules"), ProgramRule)
        lines.append(f"- Shell programs you may run: {_shell_summary(rules) or 'none'}")
    if "read-only" in by_gate or "write-whitelist" not in by_gate:
        lines.append("- You may not write any file.")
    else:
        globs = strs(by_gate["write-whitelist"], "globs")
        lines.append(f"- You may write only inside: {_code_list(globs)}" if globs else "- You may not write any file: no write scope is given.")
    if "write-denylist" in by_gate and v(by_gate["write-denylist"], "globs"):
        lines.append(f"- Never write inside: {_code_list(strs(by_gate['write-denylist'], 'globs'))}")
    if "dep-files" in by_gate:
        lines.append("- Leave dependency declarations and lock files unchanged.")
    if "tests-green" in by_verify and v(by_verify["tests-green"], "command"):
        atom = by_verify["tests-green"]
        lines.append(f"- Before you finish, `{v(atom, 'command')}` must pass with at least {v(atom, 'min-count')} tests, "
                     "and every test the base runs must still run and pass.")
    if "checks-green" in by_verify and v(by_verify["checks-green"], "commands"):
        lines.append(f"- These checks must pass: {_code_list(strs(by_verify['checks-green'], 'commands'))}")
    if "report-fields" in by_verify and v(by_verify["report-fields"], "fields"):
        lines.append(f"- Your final report must include the fields: {', '.join(strs(by_verify['report-fields'], 'fields'))}")
    if "severity-grades" in by_verify:
        lines.append(f"- Grade every finding: {', '.join(strs(by_verify['severity-grades'], 'grades'))}")
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
