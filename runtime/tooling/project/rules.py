"""The project role's shell rules: the repository's commands that `edit-local` refuses, allowed, and no more.

A found command `edit-local` already allows needs nothing. One it refuses gets
a rule, narrowest first:

- a program the catalog has a grammar for, whose parent rules name its
  subcommands (`npm run format`, `cargo nextest`): the grammar, with that
  subcommand added. Where the parent's rules take every subcommand, the
  grammar itself refused the arguments (an option it does not declare, a
  path that writes outside the scope): that refusal stands, since the grammar
  is what knows which of the program's options write or load code;
- `python -m MODULE` with a grammar named MODULE: that grammar;
- a program no grammar describes (`codespell`, `pyright`): exactly the words
  found (`subcommands` the whole argument list, nothing more accepted).

A role's rules for a program replace its parent's, so the parent's rules for
each program given new ones are restated first. Never a rule for a shell, a
wrapper or a script file the agent could rewrite (`python setup.py test`).
Then the gate, compiled from the written role as `runtime explain --role
project` compiles it, judges every found command in strict mode at the
repository's root: a rule that still does not get its command allowed is
dropped, and the command reported with the gate's reason.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.gate.decision import ALLOW
from runtime.gate.policy import Policy
from runtime.gate.undecided import rule_refusal
from runtime.lang.shapes import is_interpreter
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import PROJECT_FOLDER

if TYPE_CHECKING:
    from collections.abc import Iterator

    from runtime.lang.jsontypes import JSONDict, JSONObject
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from runtime.policy.document import STRICT
from runtime.tooling.commands_allowed import Verdict, judge
from runtime.tooling.project.found import Allowance, Found, Outcome

PARENT = "edit-local"
ATOM = "tools::bash-allowlist"


@dataclass(frozen=True)
class NewRule:
    command: str
    rule: JSONDict  # a shell rule's table, as the role file gets it


def inherited_rules(catalog: Catalog, role: str) -> list[JSONDict]:
    """The shell rules ``role`` holds, as their role files write them (grammar names, not compiled grammars)."""
    resolved = load_role(catalog, role)
    rules: list[JSONDict] = []
    for path in resolved.paths:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        params = data.get("params", {})
        mine = next((v.get("rules") for k, v in params.items()
                     if catalog.canonical(k, str(path), 1) == ATOM and isinstance(v, dict)), None)
        if mine:
            programs = {r["program"] for r in mine}
            rules = [r for r in rules if r["program"] not in programs] + [dict(r) for r in mine]
    return rules


def _leading_words(args: list[str]) -> list[str]:
    out = []
    for word in args:
        if word.startswith("-") or "/" in word or "." in word:
            break
        out.append(word)
    return out[:2]


def candidate(command: str, grammars: set[str], parent: list[JSONDict]) -> JSONDict | str:
    """The narrowest rule that could allow ``command``, or why there is none."""
    words = shlex.split(command)
    if words[:3] == ["uv", "run", "--no-sync"]:
        words = words[3:]  # the gate judges what `uv run --no-sync` runs
    if words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        return "a rule cannot give a program variables its grammar does not list"
    program, args = words[0], words[1:]
    refusal = rule_refusal(program, args)  # shells, runners, paths, scripts, patterns: what no rule may allow
    if refusal is not None:
        return refusal
    if is_interpreter(program):  # `python -m MODULE`: rule_refusal let nothing else through
        if args[1] in grammars:
            return {"program": program, "grammar": args[1], "subcommands": [f"-m {args[1]}"]}
        return {"program": program, "subcommands": [" ".join(args)], "positionals": []}
    mine = [r for r in parent if r["program"] == program]
    grammar = program if program in grammars else next((r["grammar"] for r in mine if r.get("grammar")), None)
    if mine and all(not r.get("subcommands") for r in mine):
        # The parent takes every subcommand of the program, so what refused the command is its grammar, or the
        # arguments its inline rule declares: that refusal stands.
        return "the program's grammar refuses these arguments" if grammar is not None else \
            "the parent role's rule for the program refuses these arguments"
    if grammar is not None:
        sub = _leading_words(args)
        rule: JSONDict = {"program": program, "grammar": grammar, **({"subcommands": [" ".join(sub)]} if sub else {})}
        if rule in mine:  # the parent has this very rule, and it refused the command: its grammar did
            return "the program's grammar refuses these arguments"
        return rule
    # No grammar describes the program, though the parent may declare it inline for some subcommands: exactly
    # the words found (the parent's rules are restated beside it, see rules_text).
    return {"program": program, **({"subcommands": [" ".join(args)]} if args else {}), "positionals": []}


def _value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(type(value).__name__)


def rule_toml(rule: JSONObject, comment: str = "") -> str:
    lines = [f"# {comment}"] if comment else []
    lines.append(f'[[params."{ATOM}".rules]]')
    lines += [f"{key} = {_value(value)}" for key, value in rule.items()]
    return "\n".join(lines) + "\n"


def rules_text(parent_rules: list[JSONDict], new: list[NewRule]) -> str:
    """The role's shell rules: the parent's restated for each program given new ones, then the new ones."""
    programs = list(dict.fromkeys(n.rule["program"] for n in new))
    parts = []
    for program in programs:
        kept = [r for r in parent_rules if r["program"] == program]
        if kept:
            parts.append(f"# {PARENT}'s rules for `{program}`, restated: a role's rules for a program replace its "
                         "parent's.\n" + "\n".join(rule_toml(r) for r in kept))
        for item in (n for n in new if n.rule["program"] == program):
            parts.append(rule_toml(item.rule, f"`{item.command}`"))
    return "\n".join(parts)


@contextlib.contextmanager
def scratch_layer(repo: Path, files: dict[str, str]) -> Iterator[Path]:
    """A scratch copy of the repository's project catalog (`.agent-runtime`, with a `roles` folder), with
    ``files`` (paths inside it) written over it: a catalog to compile a candidate against, nothing written."""
    with tempfile.TemporaryDirectory(prefix="runtime-catalog-") as tmp:
        layer = Path(tmp) / PROJECT_FOLDER
        existing = repo / PROJECT_FOLDER
        if existing.is_dir():
            shutil.copytree(existing, layer, symlinks=True)
        (layer / "roles").mkdir(parents=True, exist_ok=True)
        for rel, text in files.items():
            (layer / rel).write_text(text, encoding="utf-8")
        yield layer


class Judge:
    """Compiles a candidate project layer (role, toolchain, and whatever the project catalog holds already)
    and asks the gate, in strict mode at the repository's root, about each command."""

    def __init__(self, root: Path, toolchain: str) -> None:
        self.root = root
        self.toolchain = toolchain

    def verdicts(self, role: str, role_text: str | None, commands: list[str]) -> dict[str, Verdict]:
        files = {"toolchain.toml": self.toolchain, **({f"roles/{role}.toml": role_text} if role_text is not None else {})}
        with scratch_layer(self.root, files) as layer:
            catalog = Catalog(layer)
            policy = Policy(compile_policy(load_role(catalog, role), None, self.root, catalog, mode=STRICT))
            return {v.command: v for v in judge(policy, commands, self.root)}

    def catalog(self) -> tuple[set[str], list[JSONDict]]:
        """The grammars the project sees, and the parent role's rules."""
        with scratch_layer(self.root, {"toolchain.toml": self.toolchain}) as layer:
            catalog = Catalog(layer)
            return set(catalog.programs), inherited_rules(catalog, PARENT)


def project_rules(root: Path, toolchain: str, head: str, found: list[Found]) -> tuple[str, list[Outcome]]:
    """The project role's text (``head`` and the rules it needs) and what became of each found command."""
    judge = Judge(root, toolchain)
    grammars, parent = judge.catalog()
    commands = [f.command for f in found]
    base = judge.verdicts(PARENT, None, commands)
    outcomes = {f.command: Outcome(f, Allowance.EDIT_LOCAL) for f in found}
    new: list[NewRule] = []
    for f in found:
        if base[f.command].verdict == ALLOW:
            continue
        rule = candidate(f.command, grammars, parent)
        if isinstance(rule, str):
            outcomes[f.command] = Outcome(f, Allowance.REFUSED, f"{base[f.command].reason} (no rule added: {rule})")
        elif all(n.rule != rule for n in new):
            new.append(NewRule(f.command, rule))
    text = head
    for _ in range(len(new) + 1):
        text = head + ("\n" + rules_text(parent, new) if new else "")
        verdicts = judge.verdicts("project", text, commands)
        keep = [n for n in new if verdicts[n.command].verdict == ALLOW]
        if len(keep) == len(new):
            break
        new = keep
    for f in found:
        verdict = verdicts[f.command]
        if verdict.verdict == ALLOW:
            status = Allowance.EDIT_LOCAL if base[f.command].verdict == ALLOW else Allowance.RULE
            outcomes[f.command] = Outcome(f, status, rule=next((n.rule for n in new if n.command == f.command), None))
        elif outcomes[f.command].status != Allowance.REFUSED:
            outcomes[f.command] = Outcome(f, Allowance.REFUSED, verdict.reason)
    return text, [outcomes[f.command] for f in found]
