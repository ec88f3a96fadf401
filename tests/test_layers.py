"""Dependencies point one way: manifests -> policy and gate -> sandbox, workspace, verify -> spawn ->
orchestration -> CLI. A module never imports one of a layer above its own (at any depth: lazy
imports inside functions count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "runtime"
# Each package, and the packages it must never import.
ABOVE = {
    "manifests": ["policy", "gate", "sandbox", "workspace", "verify", "spawn", "orchestration", "cli", "approvals",
                  "models", "agent", "tooling", "audit", "memory"],
    "gate": ["spawn", "orchestration", "cli", "tooling", "verify", "workspace"],
    "policy": ["spawn", "orchestration", "cli", "tooling"],
    "verify": ["spawn", "orchestration", "cli"],
    "workspace": ["spawn", "orchestration", "cli"],
    "sandbox": ["spawn", "orchestration", "cli"],
    "spawn": ["orchestration", "cli"],
    "orchestration": ["cli"],
}


# Leaf modules any layer may use: they import nothing of the runtime but each other. Manifest
# validation reads grammars and domain patterns with the very code the gate and the proxy use.
LEAVES = {"runtime.gate.audience", "runtime.gate.grammar", "runtime.gate.lazy_re", "runtime.gate.shell_types", "runtime.sandbox.domains"}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("runtime.")}


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_no_module_imports_a_layer_above_its_own(package):
    wrong = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[1]
            if top in ABOVE[package] and name not in LEAVES:
                wrong.append(f"{path.relative_to(REPO)} imports {name}")
    assert wrong == []


def test_leaves_import_only_leaves():
    for name in sorted(LEAVES):
        path = PACKAGE.parent / (name.replace(".", "/") + ".py")
        assert _imports(path) <= LEAVES, name


def _third_party(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found


def test_only_the_ray_executor_imports_ray():
    """Ray is an optional extra: one module imports it (lazily), and nothing imports that module but
    the CLI, when a run asks for `--executor ray`."""
    importers = sorted(str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py") if "ray" in _third_party(p))
    assert importers == ["runtime/orchestration/ray_executor.py"]
    users = sorted(str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py")
                   if "runtime.orchestration.ray_executor" in _imports(p))
    assert users == ["runtime/cli/run.py"]
