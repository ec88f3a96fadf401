"""runtime migrate [--check] [--diff] [PATHS]: deprecated atom names to new names, shell rules to grammars,
grammar files of the old naming (``programs/<name>.toml``) to ``<name>.program.toml``."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

from runtime.errors import ManifestError, ManifestErrors
from runtime.manifests.catalog import Catalog, display_path
from runtime.manifests.locate import GRAMMAR_SUFFIX, find_catalog, grammar_name
from runtime.tooling.claude import write_atomic
from runtime.tooling.migrate import rewrite
from runtime.tooling.migrate_grammars import apply, grammar_renames
from runtime.tooling.migrate_rules import migrate_rules


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        out += sorted(p.rglob("*.toml")) if p.is_dir() else [p]
    return out


def _grammar_names(catalog: Catalog) -> set[str]:
    """The grammars of every layer, by file name: loading them would refuse the old names this command renames."""
    names: set[str] = set()
    for layer in catalog.layers:
        for path in (layer / "programs").glob("*.toml"):
            names.add(grammar_name(path.name) or path.stem)
    return names


def run(args) -> int:
    catalog = Catalog(Path(find_catalog(args.catalog)))
    aliases = {a.name: a.target for a in catalog.aliases.values()}
    grammars = _grammar_names(catalog)
    renames, errors = grammar_renames(catalog.program_dir)
    defaults = [catalog.role_dir, catalog.root / "manifests"]
    paths = [Path(p) for p in args.paths] or [p for p in defaults if p.exists()]
    changes = []
    found = len(renames)
    for path in _files(paths):
        where = display_path(path)
        if path.parent.resolve() == catalog.program_dir.resolve():
            continue  # grammars hold no atom names or rules; their files are renamed above
        try:
            text = path.read_text(encoding="utf-8")
            new, uses = rewrite(text, aliases, where)
            new, rules = migrate_rules(new, grammars, where)
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(ManifestError(where, 1, f"cannot read: {exc}"))
            continue
        except ManifestError as exc:
            errors.append(exc)
            continue
        found += len(uses) + len(rules)
        if args.check:
            for use in uses:
                print(f"{where}:{use.line}: `{use.old}` is deprecated, use `{use.new}`")
            for rule in rules:
                print(f"{where}:{rule.line}: the shell rule for `{rule.program}` has the old form; it {rule.summary}")
        if uses or rules:
            changes.append((path, where, text, new, uses, rules))
    if errors:
        raise ManifestErrors(errors)
    if args.check:
        for rename in renames:
            print(f"{display_path(rename.old)}:1: a grammar's file is named `<name>{GRAMMAR_SUFFIX}` now "
                  f"(its program reads `{rename.old.name}` as its configuration); rename it to `{rename.new.name}`")
    write = not args.check and not args.diff
    if write:
        apply(renames)
    if args.json:
        import json

        if write:
            for path, _where, _text, new, _uses, _rules in changes:
                write_atomic(path, new)
        print(json.dumps({
            "names": [{"file": w, "line": u.line, "old": u.old, "new": u.new} for _p, w, _t, _n, us, _r in changes for u in us],
            "rules": [{"file": w, "line": r.line, "program": r.program, "change": r.summary}
                      for _p, w, _t, _n, _u, rs in changes for r in rs],
            "renamed": [{"old": display_path(r.old), "new": display_path(r.new)} for r in renames],
            "written": bool(changes or renames) and write,
        }, indent=2))
        return 1 if args.check and found else 0
    if args.check:
        return 1 if found else 0
    for rename in renames:
        if args.diff:
            print(f"rename from {display_path(rename.old)}\nrename to {display_path(rename.new)}")
        else:
            print(f"{display_path(rename.old)}: renamed to {rename.new.name} (its program would read the old name "
                  "as its configuration)")
    for path, where, text, new, uses, rules in changes:
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True), where, where))
        else:
            write_atomic(path, new)
            print(f"{where}: {len(uses)} name(s) rewritten, {len(rules)} shell rule(s) moved to grammars")
            for rule in rules:
                print(f"  {where}:{rule.line}: `{rule.program}` {rule.summary}")
    if not changes and not renames:
        print("no deprecated names, old shell rules or old grammar file names found")
    return 0
