"""Finding the catalog (a folder with ``capabilities/`` and ``roles/``), and its layers.

Order: ``--catalog``, then ``RUNTIME_CATALOG``, then (for commands a person
runs, never for the hook) the nearest folder upward from the working
directory that is a catalog or holds a project catalog (``.agent-runtime/``),
then the catalog shipped with the package. The hook never searches the
working directory: that folder belongs to the agent, and a catalog planted
there must not become its policy. Standard library only.

A full catalog (both ``capabilities/`` and ``roles/``) stands alone. A
project catalog, a folder with any of ``capabilities/``, ``roles/`` and
``programs/`` but not both of the first two, extends the shipped one: its
atoms, roles and grammars are added to the shipped ones, and one of the same
name replaces the shipped one (``catalog_layers``).
"""

from __future__ import annotations

import os

from runtime.errors import UsageError

PROJECT_FOLDER = ".agent-runtime"
CATALOG_PARTS = ("capabilities", "roles", "programs")  # the folders of a catalog layer
TOOLCHAIN_FILE = "toolchain.toml"  # a project layer's declaration of the repository's tools
# A grammar is `programs/<name>.program.toml`, never `<name>.toml`: tools find their configuration by
# file name in the folders they walk (ruff reads every `ruff.toml` under the folder it checks, pytest
# 9 a `pytest.toml` beside what it runs, cargo a `Cargo.toml`, which is `cargo.toml` on a file system
# that ignores case), and a grammar is named after its program. No tool reads `*.program.toml`.
GRAMMAR_SUFFIX = ".program.toml"


def grammar_name(filename: str) -> str | None:
    """The grammar a file of ``programs/`` holds (``ruff.program.toml`` -> ``ruff``), or None for any other name."""
    if filename.endswith(GRAMMAR_SUFFIX) and len(filename) > len(GRAMMAR_SUFFIX):
        return filename[: -len(GRAMMAR_SUFFIX)]
    return None


def _is_full(folder: str) -> bool:
    return os.path.isdir(os.path.join(folder, "capabilities")) and os.path.isdir(os.path.join(folder, "roles"))


def _is_layer(folder: str) -> bool:
    return not _is_full(folder) and (any(os.path.isdir(os.path.join(folder, p)) for p in CATALOG_PARTS)
                                     or os.path.isfile(os.path.join(folder, TOOLCHAIN_FILE)))


def _is_catalog(folder: str) -> bool:
    return _is_full(folder) or _is_layer(folder)


def project_catalog(folder: str) -> str | None:
    """``folder`` (a repository's `.agent-runtime`), resolved, when it is a catalog layer; else None."""
    return os.path.realpath(folder) if _is_catalog(folder) else None


def catalog_layers(root: str) -> list[str]:
    """The folders a catalog is made of, base first: [root] for a full catalog, [shipped, root] for a project one."""
    root = os.path.realpath(root)
    if _is_full(root):
        return [root]
    shipped = shipped_catalog()
    if shipped is None:
        raise UsageError(f"{root} extends the shipped catalog, which this installation lacks")
    return [os.path.realpath(shipped), root]


def role_file(catalog_root: str, name: str) -> str:
    """The file of role ``name``: the top layer that has it (the top layer's path when none does)."""
    layers = catalog_layers(catalog_root)
    for layer in reversed(layers):
        path = os.path.join(layer, "roles", f"{name}.toml")
        if os.path.isfile(path):
            return path
    return os.path.join(layers[-1], "roles", f"{name}.toml")


def role_file_below(catalog_root: str, name: str, path: str) -> str | None:
    """The file of role ``name`` in a layer below the one holding ``path``: what a project role that extends a
    role of its own name adds to (`.agent-runtime/roles/session.toml` over the shipped `session`); None if none."""
    layers = catalog_layers(catalog_root)
    folder = os.path.dirname(os.path.dirname(os.path.realpath(path)))
    below = layers[: layers.index(folder)] if folder in layers else []
    for layer in reversed(below):
        candidate = os.path.join(layer, "roles", f"{name}.toml")
        if os.path.isfile(candidate):
            return candidate
    return None


def shipped_catalog() -> str | None:
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for candidate in (os.path.join(package, "_catalog"), os.path.dirname(package)):
        if _is_full(candidate):
            return candidate
    return None


def find_catalog(explicit: str | None = None, search_cwd: bool = True) -> str:
    if explicit:
        root = os.path.realpath(explicit)
        if not _is_catalog(root):
            raise UsageError(f"{explicit}: not a catalog (needs capabilities/ and roles/ folders, or, for a project "
                             "catalog extending the shipped one, any of capabilities/, roles/, programs/)")
        return root
    env = os.environ.get("RUNTIME_CATALOG")
    if env:
        return find_catalog(env, search_cwd=False)
    if search_cwd:
        folder = os.path.realpath(os.getcwd())
        while True:
            if _is_full(folder):
                return folder
            project = os.path.join(folder, PROJECT_FOLDER)
            if _is_catalog(project):
                return project
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    shipped = shipped_catalog()
    if shipped is None:
        raise UsageError("no catalog found: pass --catalog DIR (a folder with capabilities/ and roles/)")
    return shipped


def catalog_now(recorded: str | os.PathLike[str], repo: str | os.PathLike[str]) -> str:
    """The catalog a run compiled from, as a run started in ``repo`` now finds it: the one it recorded, unless
    that was the shipped catalog and the repository has a project catalog since (`runtime allow` and "always" in
    the console write one), which layers over the shipped one: a rule a person just added is read."""
    project = project_catalog(os.path.join(os.fspath(repo), PROJECT_FOLDER))
    shipped = shipped_catalog()
    if project and shipped and os.path.realpath(recorded) == os.path.realpath(shipped):
        return project
    return os.fspath(recorded)
