"""runtime lint [PATHS]: validate the catalog and task manifests, run atom examples."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.tooling.lint import lint

if TYPE_CHECKING:
    from runtime.cli.settings import Lint


def run(args: Lint) -> int:
    catalog = Catalog(Path(find_catalog(args.catalog)))
    # A project catalog keeps its task templates in tasks/ (`runtime init` writes one there).
    paths = [Path(p) for p in args.paths] or [p for p in [catalog.root / "manifests", catalog.root / "tasks"] if p.is_dir()]
    report = lint(catalog, paths)
    if args.json:
        print(json.dumps({
            "ok": not report.errors,
            "errors": [{"file": e.path, "line": e.line, "message": e.message} for e in report.errors],
            "warnings": report.warnings,
            "counts": {"atoms": report.atoms, "programs": report.programs, "examples": report.examples, "roles": report.roles, "tasks": report.tasks, "plans": report.plans},
        }, indent=2))
    else:
        for w in report.warnings:
            print(f"warning: {w}", file=sys.stderr)
        for e in report.errors:
            print(f"error: {e}", file=sys.stderr)
        status = "ok" if not report.errors else f"{len(report.errors)} error(s)"
        counts = ", ".join(_count(n, what) for n, what in (
            (report.atoms, "atom"), (report.programs, "program"), (report.examples, "example"), (report.roles, "role"),
            (report.tasks, "task"), (report.plans, "plan")))
        print(f"lint: {counts}: {status}")
    return 1 if report.errors else 0


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
