"""Write the generated reference from the code: the command reference of docs/CLI.md (from the argument parser)
and docs/REFERENCE.md (the registries: tools, gate kinds, verify kinds, sandbox contributions, task fields,
backends, verbs). `--check` writes nothing and exits 1 with a diff for each file that differs (`make lint`,
and a test of the suite), so neither can go stale.

    python scripts/reference.py [--check]

docs/CLI.md keeps its hand-written part: what is above the marker line is the page's own, what follows it
is generated.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI_PAGE = "docs/CLI.md"
REFERENCE_PAGE = "docs/REFERENCE.md"
MARKER = "<!-- Everything below is generated from the argument parser (runtime/cli/main.py): python scripts/reference.py -->"
WIDTH = "100"  # usage lines wrapped as on a terminal this wide, whatever the terminal generating them is


def _cell(text: str) -> str:
    """One table cell of prose: on one line, its pipes escaped, and its angle brackets outside code spans."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    return "`".join(p if n % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for n, p in enumerate(parts))


def _first_line(module: str) -> str:
    doc = importlib.import_module(module).__doc__ or ""
    return _cell(doc.strip().split("\n\n")[0])


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """The parser's commands in the order they are declared: (name, help, parser)."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            out += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return out


def _arguments(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or "--catalog" in action.option_strings:
            continue  # help, the commands (each its own heading) and --catalog, which every command takes (above)
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += f" {action.metavar or action.dest.upper()}"
        else:
            name = action.metavar or action.dest
        text = action.help or ""
        if action.choices is not None:
            text += f" (one of: {', '.join(map(str, action.choices))})"
        rows.append((name, text))
    return rows


def _command(name: str, help_text: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    lines = [f"{'#' * level} `{parser.prog}`", "", _cell(help_text) if help_text else "", ""]
    if name == "check" and not parser._actions:
        # The hook parses its own options by hand (a fresh process per tool call, no argparse): its usage
        # and description are the module's own.
        from runtime.cli import check

        lines += ["```", check.USAGE.strip(), "```", ""]
        return lines
    if parser.description:
        lines += [parser.description.strip(), ""]
    usage = parser.format_usage().strip()
    lines += ["```", usage, "```", ""]
    rows = _arguments(parser)
    if rows:
        lines += ["| argument | |", "|---|---|"] + [f"| `{arg}` | {_cell(text)} |" for arg, text in rows] + [""]
    for sub_name, sub_help, sub in _subparsers(parser):
        lines += _command(sub_name, sub_help, sub, level + 1)
    return lines


def cli_reference() -> str:
    from runtime.cli.main import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser()
        lines = ["## Commands", "", "```", parser.format_usage().strip(), "```", ""]
        for name, help_text, sub in _subparsers(parser):
            lines += _command(name, help_text, sub, 3)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(lines).rstrip("\n") + "\n"


def registries() -> str:
    from runtime.cli.main import VERBS
    from runtime.manifests import kinds
    from runtime.verify.kinds.registry import KINDS as VERIFY

    out = [
        "# Reference: the registries",
        "",
        "Generated from the code by `python scripts/reference.py` (CI checks it is current). What each kind is",
        "for, and how to add one: [CONTRIBUTING.md](../CONTRIBUTING.md).",
        "",
        "## Tools",
        "",
        "The tools a role may show (`[tools] shown`); any other tool is denied.",
        "",
        "| tool | shown by |",
        "|---|---|",
    ]
    out += [f"| `{tool}` | `[tools] shown` |" for tool in kinds.WORK_TOOLS]
    out += [f"| `{tool}` | `[tools] session = true` (fields: {', '.join(f'`{f}`' for f in sorted(fields)) or 'none'}) |"
            for tool, fields in kinds.SESSION_TOOLS.items()]
    out += [f"| `{tool}` | a role for a person's session (fields: {', '.join(f'`{f}`' for f in sorted(fields)) or 'none'}) |"
            for tool, fields in kinds.PERSON_TOOLS.items()]
    out += [f"| `{tool}` | a person's session: starts a subagent, held to a role |" for tool in kinds.SUBAGENT_TOOLS]
    out += ["", "Claude Code's own subagent types and the role each is held to:", "",
            "| subagent type | role |", "|---|---|"]
    out += [f"| `{name}` | {f'`{role}`' if role else 'the session' + chr(39) + 's own rules; refused without one'} |"
            for name, role in kinds.BUILTIN_SUBAGENTS.items()]
    out += ["", "## Gate kinds", "", "An atom's `gate = \"KIND\"`: a class of a module of `runtime/gate/kinds/` each,",
            "registered in `GATE_KINDS` (`runtime/manifests/kinds.py`).", "",
            "| kind | parameters | class | what it does |", "|---|---|---|---|"]
    for kind, spec in kinds.GATE_KINDS.items():
        module, _, name = spec.implementation.partition(":")
        shown = ", ".join(f"`{p}` ({t})" for p, t in spec.params.items()) or "none"
        out.append(f"| `{kind}` | {shown} | `{module}.{name}` | {_first_line(module)} |")
    out += ["", "## Verify kinds", "", "An atom's `verify = \"KIND\"`: one `Kind` of a module of `runtime/verify/kinds/` each.", "",
            "| kind | parameters | module | what it judges |", "|---|---|---|---|"]
    for name, kind in VERIFY.items():
        module = kind.judge.__module__
        shown = ", ".join(f"`{p}` ({t})" for p, t in kind.params.items()) or "none"
        out.append(f"| `{name}` | {shown} | `{module.rsplit('.', 1)[1]}.py` | {_first_line(module)} |")
    out += ["", "## Sandbox contributions", "", "An atom's `sandbox = [\"KIND\", ...]`, read by `runtime/sandbox/`.", "",
            "| kind | parameters |", "|---|---|"]
    out += [f"| `{kind}` | {', '.join(params) or 'none'} |" for kind, params in kinds.SANDBOX_KINDS.items()]
    out += ["", "## Task fields", "", "The task manifest's fields an atom parameter may be bound to.", "",
            "| field | type |", "|---|---|"]
    out += [f"| `{field}` | {kind} |" for field, kind in kinds.TASK_FIELDS.items()]
    out += ["", "## Agent backends", "", "A task's `[agent] backend`: one folder of `runtime/spawn/backends/` each,",
            "registered in `AGENT_BACKENDS` (`runtime/manifests/kinds.py`).", "",
            "| backend | class | its `[agent]` table | what it runs |", "|---|---|---|---|"]
    for name, backend in kinds.AGENT_BACKENDS.items():
        module, _, cls = backend.implementation.partition(":")
        holds = "`command`" if backend.command else {"required": "`model` (required)", "optional": "`model` (optional)",
                                                     "none": "no model"}[backend.model]
        holds += "; approvals inside its hook" if backend.approval_in_hook else ""
        out.append(f"| `{name}` | `{module}.{cls}` | {holds} | {_first_line(module)} |")
    out += ["", "## Commands", "", "`runtime VERB`: one module of `runtime/cli/` each; see [CLI.md](CLI.md).", "",
            "| verb | module |", "|---|---|"]
    out += [f"| `{verb}` | `{module.replace('.', '/')}.py` |" for verb, module in VERBS.items()]
    return "\n".join(out) + "\n"


def generated(root: Path = ROOT) -> dict[str, str]:
    """Each generated file's relative path and the content the code gives it."""
    page = root / CLI_PAGE
    have = page.read_text(encoding="utf-8") if page.is_file() else ""
    own = have.split(MARKER, 1)[0].rstrip("\n") if MARKER in have else have.rstrip("\n")
    return {CLI_PAGE: f"{own}\n\n{MARKER}\n\n{cli_reference()}", REFERENCE_PAGE: registries()}


def main(argv: list[str], root: Path = ROOT) -> int:
    if argv not in ([], ["--check"]):
        print("usage: python scripts/reference.py [--check]", file=sys.stderr)
        return 1
    stale = []
    for rel, text in generated(root).items():
        path = root / rel
        have = path.read_text(encoding="utf-8") if path.is_file() else ""
        if have == text:
            continue
        stale.append(rel)
        if argv == ["--check"]:
            sys.stdout.writelines(difflib.unified_diff(have.splitlines(keepends=True), text.splitlines(keepends=True),
                                                       rel, rel + " (generated)"))
            print(f"error: {rel}: differs from what the code writes; run `python scripts/reference.py`", file=sys.stderr)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {rel}")
    if argv == ["--check"]:
        return 1 if stale else 0
    if not stale:
        print("the generated reference is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
