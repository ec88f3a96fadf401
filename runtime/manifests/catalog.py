"""The catalog: a folder holding ``capabilities/`` and ``roles/``.

Finding one is ``runtime.manifests.locate`` (standard library, for the hook).
"""

from __future__ import annotations

import sys
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import ManifestError
from runtime.manifests.atom import Alias, Atom, load_atom_folder
from runtime.manifests.locate import CATALOG_PARTS, GRAMMAR_SUFFIX, catalog_layers, grammar_name, role_file
from runtime.manifests.notify import FILE as NOTIFY_FILE
from runtime.manifests.notify import Notify, load_notify
from runtime.manifests.params import GrammarFields
from runtime.manifests.program import ProgramGrammar, load_program
from runtime.manifests.toolchain import FILE as TOOLCHAIN_FILE
from runtime.manifests.toolchain import Toolchain, load_toolchain

if TYPE_CHECKING:
    from runtime.manifests.role import ResolvedRole

_WARNED: set[str] = set()


def display_path(path: Path) -> str:
    """A path as messages show it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def warn_once(key: str, message: str) -> None:
    """Print a warning on stderr once per process for ``key``."""
    if key not in _WARNED:
        _WARNED.add(key)
        print(f"warning: {message}", file=sys.stderr)


def warn_deprecated(alias: Alias, used_in: str, line: int) -> None:
    """One warning per alias per process, naming where it was used and the new name."""
    warn_once(f"alias:{alias.name}", f"{used_in}:{line}: `{alias.name}` is deprecated, use `{alias.target}` ({alias.note})")


class Catalog:
    """A catalog, possibly in layers (``runtime.manifests.locate.catalog_layers``): the shipped one,
    then a project's, whose atoms, roles and grammars are added and replace those of the same name."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.layers = [Path(p) for p in catalog_layers(str(self.root))]
        self.cap_dir = self.root / "capabilities"
        self.role_dir = self.root / "roles"
        self.program_dir = self.root / "programs"
        self.resolved_roles: dict[str, ResolvedRole] = {}  # by name (runtime.manifests.role.load_role)

    def _layered(self, part: str, pattern: str) -> list[Path]:
        """Files matching ``pattern`` under ``part`` of every layer; a later layer's file of the same
        relative path replaces an earlier one."""
        found: dict[Path, Path] = {}
        for layer in self.layers:
            top = layer / part
            for path in sorted(top.glob(pattern)):
                found[path.relative_to(top)] = path
        return [found[k] for k in sorted(found)]

    def atom_folders(self) -> list[Path]:
        return [p.parent for p in self._layered("capabilities", "*/*/capability.toml")]

    def load_entries(self, collect: list[ManifestError] | None = None) -> tuple[dict[str, Atom], dict[str, Alias]]:
        """Every atom and alias. Errors raise, or are appended to ``collect``."""
        atoms: dict[str, Atom] = {}
        aliases: dict[str, Alias] = {}
        for folder in self.atom_folders():
            try:
                entry = load_atom_folder(folder, display_path(folder / "capability.toml"))
            except ManifestError as exc:
                if collect is None:
                    raise
                collect.append(exc)
                continue
            if isinstance(entry, Alias):
                aliases[entry.name] = entry
            else:
                atoms[entry.name] = entry
        for alias in aliases.values():
            where = display_path(alias.toml_path)
            line = alias.src.line_of(("alias",))
            err = None
            if alias.target in aliases:
                err = ManifestError(where, line, f"alias `{alias.name}` points to another alias `{alias.target}`; alias chains are not allowed")
            elif alias.target not in atoms:
                err = ManifestError(where, line, f"alias `{alias.name}` points to `{alias.target}`, which does not exist")
            if err:
                if collect is None:
                    raise err
                collect.append(err)
        return atoms, aliases

    @cached_property
    def entries(self) -> tuple[dict[str, Atom], dict[str, Alias]]:
        return self.load_entries()

    @property
    def atoms(self) -> dict[str, Atom]:
        return self.entries[0]

    @property
    def aliases(self) -> dict[str, Alias]:
        return self.entries[1]

    def canonical(self, name: str, used_in: str, line: int) -> str:
        """The atom name that ``name`` stands for (aliases resolved, with a warning)."""
        atoms, aliases = self.entries
        if name in atoms:
            return name
        if name in aliases:
            alias = aliases[name]
            warn_deprecated(alias, used_in, line)
            return alias.target
        raise ManifestError(used_in, line, f"unknown atom `{name}`")

    def load_programs(self, collect: list[ManifestError] | None = None) -> dict[str, ProgramGrammar]:
        """Every program grammar in ``programs/`` (a catalog may have none), ``<name>.program.toml`` each.

        A ``<name>.toml`` there is a grammar of the old naming, which its program would read as its own
        configuration: an error naming the new name, never silently skipped (a rule naming it would then
        fail as an unknown grammar, far from the cause)."""
        out: dict[str, ProgramGrammar] = {}
        for path in self.old_grammar_files():
            err = ManifestError(display_path(path), 1, f"a grammar's file is named `<name>{GRAMMAR_SUFFIX}`: rename it to "
                                f"`{path.stem}{GRAMMAR_SUFFIX}` (`runtime migrate` does), since `{path.stem}` and other "
                                "tools read a file named like this as their own configuration")
            if collect is None:
                raise err
            collect.append(err)
        for path in self._layered("programs", f"*{GRAMMAR_SUFFIX}"):
            try:
                grammar = load_program(path, display_path(path))
            except ManifestError as exc:
                if collect is None:
                    raise
                collect.append(exc)
                continue
            out[grammar.name] = grammar
        return out

    def old_grammar_files(self) -> list[Path]:
        """Files of ``programs/`` named ``<name>.toml``, the naming before ``<name>.program.toml``."""
        return [p for p in self._layered("programs", "*.toml") if grammar_name(p.name) is None]

    @cached_property
    def programs(self) -> dict[str, ProgramGrammar]:
        return self.load_programs()

    @cached_property
    def grammars(self) -> dict[str, GrammarFields]:
        """Named grammars, compiled, as program rules take them."""
        return {name: g.grammar for name, g in self.programs.items()}

    @cached_property
    def toolchain(self) -> Toolchain:
        """The repository's toolchain (``toolchain.toml`` of the top layer); empty when none is declared."""
        path = self.layers[-1] / TOOLCHAIN_FILE
        return load_toolchain(path, display_path(path))

    @cached_property
    def notify(self) -> Notify:
        """Who else is told when an agent waits or a run ends (``notify.toml`` of the top layer); none
        when it is not declared."""
        path = self.layers[-1] / NOTIFY_FILE
        return load_notify(path, display_path(path))

    def digest(self) -> str:
        """sha256 over every file of every layer (names and bytes): two machines holding the same
        catalog agree on it, so a job can name its catalog by folder and hash."""
        import hashlib

        h = hashlib.sha256()
        for layer in self.layers:
            files = [p for part in CATALOG_PARTS for p in sorted((layer / part).rglob("*"))
                     if p.is_file() and "__pycache__" not in p.parts]
            files += [layer / TOOLCHAIN_FILE] if (layer / TOOLCHAIN_FILE).is_file() else []
            for path in files:
                data = path.read_bytes()
                h.update(f"{path.relative_to(layer)}\0{len(data)}\0".encode())
                h.update(data)
        return h.hexdigest()

    def role_path(self, name: str) -> Path:
        return Path(role_file(str(self.root), name))

    def role_names(self) -> list[str]:
        return sorted(p.stem for p in self._layered("roles", "*.toml"))
