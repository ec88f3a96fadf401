"""runtime schema: write JSON Schemas for capability, role and task files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from runtime.manifests.locate import find_catalog
from runtime.tooling.schemas import manifest_schemas, render

if TYPE_CHECKING:
    from runtime.cli.settings import Schema


def run(args: Schema) -> int:
    out = Path(args.out) if args.out else Path(find_catalog(args.catalog)) / "schemas"
    stale: list[str] = []
    for name, schema in manifest_schemas().items():
        path = out / name
        text = render(schema)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
            continue
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    for stale_path in stale:
        print(f"{stale_path}: stale; run `runtime schema` to regenerate")
    return 1 if stale else 0
