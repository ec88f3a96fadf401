"""Atoms test themselves: every example in a capability.toml is run by lint.

A tool-call example runs the real gate on a policy holding only that atom,
anchored at an empty temporary worktree. Other atoms are replaced by a
scaffold that grants writes and commands, so an example shows what this atom
decides on its own. A verify example runs the atom's evaluator on its evidence
(a table checked against its kind's evidence model when the atom
loaded); its ``says``, when given, is words the feedback must hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import JsonValue

from runtime.errors import ManifestError
from runtime.gate.decision import allow
from runtime.gate.engine import decide
from runtime.gate.kinds.base import Gate
from runtime.gate.policy import Policy
from runtime.manifests.atom import Atom, GateExample
from runtime.manifests.catalog import display_path
from runtime.manifests.kinds import TOOLS
from runtime.manifests.params import ParamValue, check_value, param_json
from runtime.manifests.program import EXAMPLE_SCOPE, ProgramGrammar
from runtime.policy.compile import gate_params
from runtime.policy.document import seal
from runtime.verify.kinds.registry import KINDS, evaluate

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.shell_types import Command


class _Scaffold(Gate):
    kind = "example-scaffold"
    grants = True

    def on_write(self, resolved: str, rel: str | None, ctx: Context) -> GateDecision:
        return allow("granted by the example scaffold")

    def on_command(self, cmd: Command, ctx: Context) -> GateDecision:
        return allow("granted by the example scaffold")


def _values(atom: Atom, overrides: Mapping[str, JsonValue]) -> dict[str, ParamValue]:
    values = dict(atom.defaults)
    values.update({p: check_value(atom.params[p].type, v) for p, v in overrides.items()})
    return values


def example_policy(atom: Atom, values: Mapping[str, ParamValue], root: str) -> Policy:
    assert atom.gate is not None  # a tool-call example needs a gate kind, checked when the atom loaded
    policy = Policy(seal(role=f"example of {atom.name}", root=root, tools=TOOLS, gates=[
        {"atom": atom.name, "kind": atom.gate, "params": gate_params(atom.gate, values, root)}]))
    scaffold = _Scaffold("example-scaffold", {})
    if atom.gate != "write-whitelist":
        policy.write_gates.append(scaffold)
    if atom.gate != "bash-allowlist":
        policy.command_gates.append(scaffold)
    return policy


def run_examples(atom: Atom, root: str) -> list[ManifestError]:
    """Run every example of ``atom``; each mismatch is one error at its line."""
    failures = []
    where = display_path(atom.toml_path)
    for n, ex in enumerate(atom.examples):
        values = _values(atom, ex.params)
        if isinstance(ex, GateExample):
            decision = decide(example_policy(atom, values, root), ex.tool, ex.input, root)
            got: str = decision.verdict  # a gate's verdict, or below a check's status
            why = decision.reason
        else:
            assert atom.verify is not None  # a verify example needs a verify kind, checked when the atom loaded
            missing = [p for p in KINDS[atom.verify].params if p not in values]
            if missing:
                failures.append(ManifestError(where, atom.example_line(n), f"example {n + 1}: set {', '.join(missing)} in its params"))
                continue
            result = evaluate(atom.verify, {p: param_json(values[p]) for p in KINDS[atom.verify].params}, ex.evidence)
            got, why = result.status, result.feedback
            if got == ex.expect and ex.says is not None and ex.says not in why:
                failures.append(ManifestError(where, atom.example_line(n), f"example {n + 1}: the feedback does not say "
                                                                           f"{ex.says!r}: {why}"))
                continue
        if got != ex.expect:
            failures.append(ManifestError(where, atom.example_line(n), f"example {n + 1}: expected {ex.expect}, got {got}: {why}"))
    return failures


def run_program_examples(grammar: ProgramGrammar, root: str) -> list[ManifestError]:
    """Run every example command of a program grammar through the real gate.

    The policy holds one rule, for the example's ``program`` (the grammar's
    name unless it says another: ``python`` for ``python -m unittest``) with
    this grammar and the example's subcommands, and a write scope of
    ``out/**`` under an empty worktree.
    """
    where = display_path(grammar.path)
    failures = []
    for n, ex in enumerate(grammar.examples):
        policy = _program_policy(grammar, ex.program or grammar.name, ex.subcommands, root)
        decision = decide(policy, "Bash", {"command": ex.command}, root)
        if decision.verdict != ex.expect:
            line = grammar.src.line_of(("examples", n))
            failures.append(ManifestError(where, line, f"example {n + 1} (`{ex.command}`): expected {ex.expect}, "
                                                       f"got {decision.verdict}: {decision.reason}"))
    return failures


def _program_policy(grammar: ProgramGrammar, program: str, subcommands: list[str], root: str) -> Policy:
    rule = {"program": program, "subcommands": subcommands, **grammar.grammar.grammar_json(),
            "inline-code": False, "arg-files": False, "ask": False}
    return Policy(seal(role=f"example of programs/{grammar.path.name}", root=root, tools=["Bash"], gates=[
        {"atom": "tools::bash-allowlist", "kind": "bash-allowlist", "params": {"rules": [rule]}},
        {"atom": "scope::files-whitelist", "kind": "write-whitelist", "params": {"globs": [EXAMPLE_SCOPE]}},
    ]))
