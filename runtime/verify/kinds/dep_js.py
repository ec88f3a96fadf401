"""JavaScript dependency files for dep-stable: package.json, package-lock.json, yarn.lock, pnpm-lock.yaml.

yarn.lock and pnpm-lock.yaml are YAML-like and the standard library has no
YAML parser, so they are compared as sets of stripped, non-comment lines: a
version, resolution or integrity change alters a line, while re-indentation
and reordering do not. The same line set is the fallback for any dependency
file whose format is not known.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from runtime.verify.kinds.dep_view import View, add_entries, canonical

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject

PACKAGE_JSON_SECTIONS = (
    "dependencies", "devDependencies", "peerDependencies", "peerDependenciesMeta", "optionalDependencies",
    "bundleDependencies", "bundledDependencies", "overrides", "resolutions", "engines", "packageManager",
)
# The project's own identity and the lock format are not dependencies.
LOCK_NOISE = ("name", "version", "lockfileVersion", "requires")


def _object(text: str) -> JSONObject:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"the top level should be a JSON object, not {type(data).__name__}")
    return data


def package_json(text: str) -> View:
    data = _object(text)
    view: View = {}
    for section in PACKAGE_JSON_SECTIONS:
        if section in data:
            add_entries(view, section, data[section])
    return view


def package_lock(text: str) -> View:
    """package-lock.json or npm-shrinkwrap.json: one entry per installed package path and version."""
    data = _object(text)
    view: View = {}
    packages = data.get("packages")
    if packages is not None:
        # lockfileVersion 2 and 3; version 2 also repeats the tree under `dependencies`, ignored here.
        if not isinstance(packages, dict) or not all(isinstance(p, dict) for p in packages.values()):
            raise ValueError("`packages` should map install paths to objects")
        for path, entry in packages.items():
            _add_package(view, " > ".join(p.strip("/") for p in path.split("node_modules/") if p.strip("/")), entry)
    else:
        _add_tree(view, "", data.get("dependencies", {}))
    for key, value in data.items():
        if key not in LOCK_NOISE and key not in ("packages", "dependencies"):
            add_entries(view, key, value)
    return view


def _add_package(view: View, path: str, entry: JSONObject) -> None:
    if not path:  # the root project: its own name and version may change freely
        view["package `(root)`"] = canonical({k: v for k, v in entry.items() if k not in ("name", "version")})
        return
    details = {k: v for k, v in entry.items() if k != "version"}
    view[f"package `{path}@{entry.get('version', '?')}`"] = canonical(details)


def _add_tree(view: View, parent: str, tree: JSON) -> None:
    # lockfileVersion 1: packages nest under `dependencies`, as node_modules does.
    if not isinstance(tree, dict) or not all(isinstance(e, dict) for e in tree.values()):
        raise ValueError("`dependencies` should map package names to objects")
    for name, entry in tree.items():
        path = f"{parent} > {name}" if parent else name
        _add_package(view, path, {k: v for k, v in entry.items() if k != "dependencies"})
        _add_tree(view, path, entry.get("dependencies", {}))


def line_set(text: str) -> View:
    return {f"line `{line}`": "" for line in (raw.strip() for raw in text.splitlines()) if line and not line.startswith("#")}
