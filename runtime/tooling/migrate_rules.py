"""migrate: shell rules of the denylist form rewritten as argument grammars.

Until grammars, a ``tools::bash-allowlist`` rule listed the flags a program
could not take (``deny-flags``), flags whose value is a path
(``root-path-flags``, ``scope-path-flags``) and ``positional-writes``; any
other option passed. A rule now declares what the program may take. The
rewrite, on the TOML document (tomlkit keeps comments and layout):

- a program the catalog has a grammar for (``pytest``; ``python -m pytest``
  is pytest too) names it: ``grammar = "pytest"``; a ``python`` rule whose
  subcommands run modules of different grammars (``-m pytest``, ``-m
  unittest``) becomes one rule per module, each naming its grammar;
- a rule that names no grammar, options or positionals meant "any
  arguments"; it gets the program's grammar, or ``free...`` operands;
- any other keeps its path flags as typed options (``path-in-root``,
  ``path-in-scope``) and its operands as ``path-in-scope...`` (it wrote them)
  or ``free...``; every other option is now denied until declared, which the
  rewrite says, since the old rule allowed it;
- a rule of today's form but for ``option-style = "exact"`` (gone: options
  are never abbreviated now) loses only the style.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tomlkit
from tomlkit.items import InlineTable

from runtime.errors import ManifestError

OLD_KEYS = ("deny-flags", "root-path-flags", "scope-path-flags", "positional-writes")
ATOM = "tools::bash-allowlist"


@dataclass(frozen=True)
class RuleChange:
    line: int
    program: str
    summary: str  # what became of the rule, for a person


def _line_of(text: str, program: str, nth: int) -> int:
    hits = [m.start() for m in re.finditer(rf'\bprogram\s*=\s*["\']{re.escape(program)}["\']', text)]
    return text.count("\n", 0, hits[nth]) + 1 if nth < len(hits) else 1


def _grammar_for(rule: Any, grammars: set[str]) -> str | None:
    program = str(rule["program"])
    if program in grammars:
        return program
    subs = [str(s) for s in rule.get("subcommands", [])]
    if re.match(r"^python[0-9.]*$", program) and any(s.startswith("-m ") for s in subs):
        module = next(s for s in subs if s.startswith("-m ")).split()[1]
        if module in grammars:
            return module
    return None


def _module_groups(rule: Any, grammars: set[str]) -> list[list[str]]:
    """A `python` rule's subcommands split by the grammar each `-m MODULE` has (`-m pytest`, `-m unittest`);
    subcommands of no module (`--version`) stay with the first. One group when there is nothing to split."""
    subs = [str(s) for s in rule.get("subcommands", [])]
    if not re.match(r"^python[0-9.]*$", str(rule["program"])):
        return [subs]
    groups: dict[str, list[str]] = {}
    for sub in subs:
        words = sub.split()
        key = words[1] if words[0] == "-m" and len(words) > 1 and words[1] in grammars else ""
        groups.setdefault(key, []).append(sub)
    named = [k for k in groups if k]
    if len(named) < 2:
        return [subs]
    out = [groups[k] for k in named]
    out[0] = out[0] + groups.get("", [])
    return out


def _split(rules: Any, index: int, groups: list[list[str]]) -> None:
    """Rule ``index`` keeps the first group of subcommands; a copy of it after it takes each other group,
    so each module's rule can name its own grammar (a role holds several rules for one program)."""
    rule = rules[index]
    rule["subcommands"] = groups[0]
    for n, group in enumerate(groups[1:], 1):
        copy = tomlkit.inline_table() if isinstance(rule, InlineTable) else tomlkit.table()
        for key, value in rule.items():
            copy[key] = value.unwrap() if hasattr(value, "unwrap") else value
        copy["subcommands"] = group
        rules.insert(index + n, copy)


def migrate_rules(text: str, grammars: set[str], where: str) -> tuple[str, list[RuleChange]]:
    """The text with old-form shell rules rewritten, and what changed."""
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises its own ParseError family
        raise ManifestError(where, 1, f"invalid TOML: {exc}") from None
    params = doc.get("params")
    rules = params.get(ATOM, {}).get("rules") if params is not None else None
    if not rules:
        return text, []
    changes: list[RuleChange] = []
    seen: dict[str, int] = {}
    index = 0
    while index < len(rules):
        rule = rules[index]
        index += 1
        program = str(rule.get("program", "?"))
        nth = seen.get(program, 0)
        seen[program] = nth + 1
        old = [k for k in OLD_KEYS if k in rule]
        style = rule.get("option-style")
        bare = not any(k in rule for k in ("grammar", "options", "positionals"))
        if not old and style != "exact" and not bare:
            continue
        line = _line_of(text, program, nth)
        if not old and not bare:
            # Today's form but for the style `exact`, gone (runtime lint sends the person here for it): the style
            # goes and the grammar, options and positionals stay as they are.
            del rule["option-style"]
            changes.append(RuleChange(line, program, 'no longer says `option-style = "exact"`: options are never '
                                                     "abbreviated now"))
            continue
        if "grammar" in rule or "options" in rule or "positionals" in rule:
            raise ManifestError(where, line, f"the rule for `{program}` mixes {', '.join(old)} with a grammar; "
                                             "remove the old keys by hand")
        groups = _module_groups(rule, grammars)
        if len(groups) > 1:
            _split(rules, index - 1, groups)
            seen[program] = nth + len(groups)
            for group in groups:
                module = group[0].split()[1]
                changes.append(RuleChange(line, program, f"now uses the catalog's grammar `{module}` for "
                                          f"{', '.join(f'`{program} {s}`' for s in group)}"))
            for n, group in enumerate(groups):
                target = rules[index - 1 + n]
                for key in (*old, "option-style"):
                    if key in target:
                        del target[key]
                target["grammar"] = group[0].split()[1]
                if n and not isinstance(target, InlineTable):
                    target.add(tomlkit.nl())  # a blank line before the next table, as the rest of the file has
            index += len(groups) - 1
            continue
        named = _grammar_for(rule, grammars)
        roots = [str(f) for f in rule.get("root-path-flags", [])]
        scopes = [str(f) for f in rule.get("scope-path-flags", [])]
        writes = bool(rule.get("positional-writes", False))
        for key in (*old, "option-style"):
            if key in rule:
                del rule[key]
        if named is not None:
            rule["grammar"] = named
            changes.append(RuleChange(line, program, f"now uses the catalog's grammar `{named}`"))
            continue
        if style not in (None, "gnu", "exact"):
            rule["option-style"] = style
        options = tomlkit.inline_table()
        for flag in roots:
            options[flag] = "path-in-root"
        for flag in scopes:
            options[flag] = "path-in-scope"
        rule["options"] = options
        rule["positionals"] = ["path-in-scope..."] if writes else ["free..."]
        declared = f"only {', '.join(roots + scopes)}" if roots or scopes else "no options"
        changes.append(RuleChange(line, program, f"now takes {declared}: declare each other option it needs in `options`"))
    return tomlkit.dumps(doc), changes
