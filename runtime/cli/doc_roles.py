"""runtime doc-roles [--check]: regenerate docs/AGENT-ROLES.md."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.tooling.claude import write_atomic
from runtime.tooling.doc_roles import render

if TYPE_CHECKING:
    from runtime.cli.settings import DocRoles


def run(args: DocRoles) -> int:
    catalog = Catalog(Path(find_catalog(args.catalog)))
    path = Path(args.out) if args.out else catalog.root / "docs" / "AGENT-ROLES.md"
    text = render(catalog)
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    if args.json:
        import json

        stale = current != text
        if stale and not args.check:
            write_atomic(path, text)
        print(json.dumps({"path": str(path), "up_to_date": not stale, "written": stale and not args.check}))
        return 1 if stale and args.check else 0
    if args.check:
        if current == text:
            print(f"{path}: up to date")
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(keepends=True), text.splitlines(keepends=True), str(path), f"{path} (generated)"))
        print(f"{path}: stale; run `runtime doc-roles` to regenerate", file=sys.stderr)
        return 1
    if current != text:
        write_atomic(path, text)
        print(f"wrote {path}")
    else:
        print(f"{path}: up to date")
    return 0
