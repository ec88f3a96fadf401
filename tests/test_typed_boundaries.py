"""What crosses a package is typed once: no `dict[str, Any]` (or `Mapping[str, Any]`) in a public signature or
field another package uses, and few left anywhere.

Our own shapes are records; someone else's JSON (a model's messages, a hook's payload, a JSON schema) is
`runtime.lang.jsontypes.JSON`, read by narrowing. Read from the source, as `tests/test_layers.py` reads imports.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "runtime"
UNTYPED = re.compile(r"\b(?:dict|Mapping)\[str, ?Any\]")
# The most there may be, in private helpers where a record would be ceremony: lower it as records replace them.
MOST = 10


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        found[name] = (path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def _package(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    args = fn.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]
    return " ".join([*(ast.unparse(a.annotation) for a in every if a.annotation is not None),
                     *([ast.unparse(fn.returns)] if fn.returns is not None else [])])


def _public_untyped(tree: ast.Module) -> list[tuple[str, str]]:
    """(exported name, what carries the untyped dict) for the module's public functions, and its public
    classes' public methods, constructors and annotated fields."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            if UNTYPED.search(_signature(node)):
                found.append((node.name, node.name))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        not item.name.startswith("_") or item.name == "__init__"):
                    if UNTYPED.search(_signature(item)):
                        found.append((node.name, f"{node.name}.{item.name}"))
                elif isinstance(item, ast.AnnAssign) and UNTYPED.search(ast.unparse(item.annotation)):
                    found.append((node.name, f"{node.name}.{ast.unparse(item.target)}"))
    return found


def test_no_public_signature_another_package_uses_carries_an_untyped_dict():
    modules = _modules()
    users: dict[tuple[str, str], set[str]] = defaultdict(set)
    for name, (_path, tree) in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("runtime"):
                for alias in node.names:
                    users[(node.module or "", alias.name)].add(name)
    crossing = []
    for name, (_path, tree) in modules.items():
        for exported, where in _public_untyped(tree):
            others = sorted(u for u in users[(name, exported)] if _package(u) != _package(name))
            if others:
                crossing.append(f"{name}.{where} (used by {', '.join(others)})")
    assert not crossing, "typed once, as a record or as JSON:\n" + "\n".join(crossing)


def test_untyped_dicts_are_few():
    count = sum(len(UNTYPED.findall(path.read_text(encoding="utf-8"))) for path, _tree in _modules().values())
    assert count <= MOST, f"{count} `dict[str, Any]`/`Mapping[str, Any]` in runtime/ (at most {MOST})"


def test_the_check_finds_what_it_names():
    """The reading above is not vacuous: a public function and a field of the untyped kind are found."""
    tree = ast.parse("from typing import Any\n"
                     "def load(x: dict[str, Any]) -> int: ...\n"
                     "def _private(x: dict[str, Any]) -> None: ...\n"
                     "class Row:\n    data: Mapping[str, Any]\n    def to_json(self) -> dict[str, Any]: ...\n")
    assert _public_untyped(tree) == [("load", "load"), ("Row", "Row.data"), ("Row", "Row.to_json")]
