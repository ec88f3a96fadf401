"""Write the Claude Code plugin's generated files (marketplace, manifest, hooks) from the code; `--check` writes
nothing and exits 1 naming each file that differs (`make lint`).

    python scripts/claude_plugin.py [--check]
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

from runtime.tooling.claude_plugin import generated_files, stale_files

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str], root: Path = ROOT) -> int:
    if argv not in ([], ["--check"]):
        print("usage: python scripts/claude_plugin.py [--check]", file=sys.stderr)
        return 1
    stale = stale_files(root)
    files = generated_files()
    if argv == ["--check"]:
        for rel in stale:
            path = root / rel
            have = path.read_text(encoding="utf-8").splitlines(keepends=True) if path.is_file() else []
            sys.stdout.writelines(difflib.unified_diff(have, files[rel].splitlines(keepends=True), rel, rel + " (generated)"))
            print(f"error: {rel}: differs from what the code writes; run `python scripts/claude_plugin.py`", file=sys.stderr)
        return 1 if stale else 0
    for rel in stale:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[rel], encoding="utf-8")
        print(f"wrote {rel}")
    if not stale:
        print("the plugin's generated files are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
