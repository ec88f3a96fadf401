"""migrate: grammar files of the old naming renamed.

A grammar was ``programs/<name>.toml``, named after its program, and the
program then read it as its own configuration (``ruff check .`` fails on a
``programs/ruff.toml``: "unknown field `examples`"). It is now
``programs/<name>.program.toml`` (``runtime.manifests.locate.GRAMMAR_SUFFIX``),
which no tool reads. Rules name grammars, not files, so nothing else changes.
Only the catalog's own layer is renamed: the shipped catalog beneath a
project's is the installation's, not the project's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import ManifestError
from runtime.manifests.catalog import display_path
from runtime.manifests.locate import GRAMMAR_SUFFIX, grammar_name


@dataclass(frozen=True)
class Rename:
    old: Path
    new: Path


def grammar_renames(folder: Path) -> tuple[list[Rename], list[ManifestError]]:
    """The renames ``folder`` (a catalog layer's ``programs/``) needs, and the files that cannot be renamed."""
    renames: list[Rename] = []
    errors: list[ManifestError] = []
    if not folder.is_dir():
        return renames, errors
    for path in sorted(folder.glob("*.toml")):
        if grammar_name(path.name) is not None:
            continue
        new = path.with_name(path.stem + GRAMMAR_SUFFIX)
        if os.path.lexists(new):
            errors.append(ManifestError(display_path(path), 1, f"has the old name, and `{new.name}` exists too: keep one "
                                        "of them (the grammar is read from the new name only)"))
        elif path.is_symlink() or not path.is_file():
            errors.append(ManifestError(display_path(path), 1, "has a grammar's old name but is not a regular file: "
                                        f"rename it to `{new.name}` by hand"))
        else:
            renames.append(Rename(path, new))
    return renames, errors


def apply(renames: list[Rename]) -> None:
    for rename in renames:
        # os.link then unlink refuses to replace a file made meanwhile, which os.rename would overwrite.
        os.link(rename.old, rename.new)
        os.unlink(rename.old)
