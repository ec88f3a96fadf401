"""runtime roles: the roles of the catalog, as a table or JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.tooling.doc_roles import ordered_roles

if TYPE_CHECKING:
    from runtime.cli.settings import Roles


def run(args: Roles) -> int:
    catalog = Catalog(Path(find_catalog(args.catalog)))
    roles = ordered_roles(catalog)
    if args.json:
        print(json.dumps([{
            "name": r.name, "display_name": r.display_name, "spawnable": r.spawnable,
            "escalation": r.escalation, "extends": r.chain[-2] if len(r.chain) > 1 else None,
            "tools": list(r.tools), "atoms": list(r.atom_names()),
        } for r in roles], indent=2))
        return 0
    from rich.table import Table

    from runtime.cli.show import console, text

    table = Table(title=text(f"Roles in {catalog.root}"))
    for col in ("role", "spawnable", "escalation", "extends", "tools", "atoms"):
        table.add_column(col, overflow="fold")
    for r in roles:  # a project catalog's names and paths are text, never markup
        table.add_row(
            text(r.name), text("yes") if r.spawnable else text("no", "red"), text(r.escalation),
            text(r.chain[-2] if len(r.chain) > 1 else "—"), text(", ".join(r.tools)), text(len(r.atoms)),
        )
    console().print(table)
    return 0
