"""Rust and Go dependency files for dep-stable: Cargo.toml, Cargo.lock, go.mod, go.sum.

go.mod is read line by line as the go command does: a directive with its
arguments, or a directive opening a ``(`` block of argument lines; ``//``
comments (including ``// indirect`` markers, which ``go mod tidy`` rewrites
freely) are dropped.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from runtime.verify.kinds.dep_view import View, add_entries, table, toml_lock

# [dependencies], [dev-dependencies], [build-dependencies] and their legacy underscore spellings.
_CARGO_DEP_TABLE = re.compile(r"^(?:dev[-_]|build[-_])?dependencies$")
_GO_BLOCK = re.compile(r"^([a-z]+)\s*\($")
_GO_SINGLE_VALUED = ("module", "go", "toolchain")


def cargo_toml(text: str) -> View:
    data = tomllib.loads(text)
    view: View = {}
    _add_dep_tables(view, "", data)
    for cfg, body in table(data, "target").items():
        _add_dep_tables(view, f"target.{cfg}.", body)
    add_entries(view, "workspace.dependencies", table(table(data, "workspace"), "dependencies"))
    for registry, crates in table(data, "patch").items():
        add_entries(view, f"patch.{registry}", crates)
    add_entries(view, "replace", table(data, "replace"))
    return view


def _add_dep_tables(view: View, prefix: str, data: Any) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"`{prefix.rstrip('.')}` should be a table")
    for key in data:
        if _CARGO_DEP_TABLE.match(key):
            add_entries(view, prefix + key, table(data, key))


def cargo_lock(text: str) -> View:
    return toml_lock(text, {"version"})


def go_mod(text: str) -> View:
    view: View = {}
    block = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block:
            if line == ")":
                block = None
            else:
                _add_directive(view, block, line.split(), number)
            continue
        if opened := _GO_BLOCK.match(line):
            block = opened[1]
            continue
        verb, *args = line.split()
        _add_directive(view, verb, args, number)
    if block:
        raise ValueError(f"the `{block} (` block is never closed")
    return view


def _add_directive(view: View, verb: str, args: list[str], number: int) -> None:
    args = [a.strip('"`') for a in args]
    if not args:
        raise ValueError(f"line {number}: `{verb}` needs arguments")
    if verb in _GO_SINGLE_VALUED:
        view[verb] = " ".join(args)
    elif verb == "require":
        view[f"require `{args[0]}`"] = " ".join(args[1:])
    elif verb == "replace":
        old, arrow, new = " ".join(args).partition("=>")
        if not arrow:
            raise ValueError(f"line {number}: `replace` needs `=>`")
        view[f"replace `{old.strip()}`"] = new.strip()
    else:  # exclude, retract, godebug, tool, ignore: the line is the entry
        view[f"{verb} `{' '.join(args)}`"] = ""


def go_sum(text: str) -> View:
    view: View = {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if len(words) != 3:
            raise ValueError(f"line {number} is not `module version hash`")
        view[f"sum `{words[0]} {words[1]}`"] = words[2]
    return view
