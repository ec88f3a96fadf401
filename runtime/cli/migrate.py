"""runtime migrate [--check] [--diff] [PATHS]: deprecated atom names to new names, shell rules to grammars,
size examples given their base, grammar files of the old naming (``programs/<name>.toml``) renamed to
``<name>.program.toml``."""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import ManifestError, ManifestErrors
from runtime.manifests.catalog import Catalog, display_path
from runtime.manifests.locate import GRAMMAR_SUFFIX, find_catalog, grammar_name
from runtime.tooling.claude import write_atomic
from runtime.tooling.migrate import Use, rewrite
from runtime.tooling.migrate_evidence import EvidenceChange, migrate_evidence
from runtime.tooling.migrate_grammars import Rename, apply, grammar_renames
from runtime.tooling.migrate_rules import RuleChange, migrate_rules

if TYPE_CHECKING:
    from runtime.cli.settings import Migrate


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        out += sorted(p.rglob("*.toml")) if p.is_dir() else [p]
    return out


@dataclass(frozen=True)
class _File:
    path: Path
    where: str
    text: str
    new: str
    uses: list[Use]
    rules: list[RuleChange]
    examples: list[EvidenceChange]


def _migrate(path: Path, aliases: dict[str, str], grammars: set[str]) -> _File:
    where = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(where, 1, f"cannot read: {exc}") from None
    new, uses = rewrite(text, aliases, where)
    new, rules = migrate_rules(new, grammars, where)
    new, examples = migrate_evidence(new, where)
    return _File(path, where, text, new, uses, rules, examples)


def _listing(f: _File) -> list[str]:
    return ([f"{f.where}:{u.line}: `{u.old}` is deprecated, use `{u.new}`" for u in f.uses]
            + [f"{f.where}:{r.line}: the shell rule for `{r.program}` has the old form; it {r.summary}" for r in f.rules]
            + [f"{f.where}:{e.line}: the example gives no `{e.key}`; it gets `{e.key} = {{}}` (every file new, as before)"
               for e in f.examples])


def _grammar_names(catalog: Catalog) -> set[str]:
    """The grammars of every layer, by file name: loading them would refuse the old names this command renames."""
    names: set[str] = set()
    for layer in catalog.layers:
        for path in (layer / "programs").glob("*.toml"):
            names.add(grammar_name(path.name) or path.stem)
    return names


def _rename_line(rename: Rename) -> str:
    return (f"{display_path(rename.old)}:1: a grammar's file is named `<name>{GRAMMAR_SUFFIX}` now (its program reads "
            f"`{rename.old.name}` as its configuration); rename it to `{rename.new.name}`")


def run(args: Migrate) -> int:
    catalog = Catalog(Path(find_catalog(args.catalog)))
    # The atoms this rewrites may not load as they are: their errors are what it fixes.
    _, entries = catalog.load_entries(collect=[])
    aliases = {a.name: a.target for a in entries.values()}
    grammars = _grammar_names(catalog)
    renames, errors = grammar_renames(catalog.program_dir)
    defaults = [catalog.role_dir, catalog.root / "manifests", catalog.cap_dir]
    paths = [Path(p) for p in args.paths] or [p for p in defaults if p.exists()]
    changes: list[_File] = []
    for path in _files(paths):
        if path.parent.resolve() == catalog.program_dir.resolve():
            continue  # grammars hold no atom names, rules or size examples; their files are renamed above
        try:
            migrated = _migrate(path, aliases, grammars)
        except ManifestError as exc:
            errors.append(exc)
            continue
        if migrated.new != migrated.text:
            changes.append(migrated)
    if errors:
        raise ManifestErrors(errors)
    if args.check and not args.json:
        for f in changes:
            print("\n".join(_listing(f)))
        for rename in renames:
            print(_rename_line(rename))
    write = not args.check and not args.diff
    if write:
        apply(renames)
    if args.json:
        import json

        if write:
            for f in changes:
                write_atomic(f.path, f.new)
        print(json.dumps({
            "names": [{"file": f.where, "line": u.line, "old": u.old, "new": u.new} for f in changes for u in f.uses],
            "rules": [{"file": f.where, "line": r.line, "program": r.program, "change": r.summary}
                      for f in changes for r in f.rules],
            "examples": [{"file": f.where, "line": e.line, "added": e.key} for f in changes for e in f.examples],
            "renamed": [{"old": display_path(r.old), "new": display_path(r.new)} for r in renames],
            "written": bool(changes or renames) and write,
        }, indent=2))
        return 1 if args.check and (changes or renames) else 0
    if args.check:
        return 1 if changes or renames else 0
    for rename in renames:
        if args.diff:
            print(f"rename from {display_path(rename.old)}\nrename to {display_path(rename.new)}")
        else:
            print(f"{display_path(rename.old)}: renamed to {rename.new.name} (its program would read the old name "
                  "as its configuration)")
    for f in changes:
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(f.text.splitlines(keepends=True), f.new.splitlines(keepends=True),
                                                       f.where, f.where))
            continue
        write_atomic(f.path, f.new)
        print(f"{f.where}: {len(f.uses)} name(s) rewritten, {len(f.rules)} shell rule(s) moved to grammars"
              + (f", {len(f.examples)} example(s) given their base" if f.examples else ""))
        for rule in f.rules:
            print(f"  {f.where}:{rule.line}: `{rule.program}` {rule.summary}")
    if not changes and not renames:
        print("no deprecated names, old shell rules, old size examples or old grammar file names found")
    return 0
