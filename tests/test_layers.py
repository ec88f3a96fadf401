"""Dependencies point one way, for every package of the runtime: a module imports only packages of its
own layer or below (at any depth: lazy imports inside functions count too).

    lang, the top-level modules (errors, pids, printable, timeouts)
    manifests, verify.kinds (what each check reads and how it judges it: data the manifests and the
        policy validate against, below the running of a verify), audit, memory, ipc
    policy and gate, models, approvals
    sandbox, workspace, verify (a verify pass: its runs in the sandbox, its gathering, its reviewer),
        agent (the builtin agent's loop, run inside the sandbox)
    spawn
    orchestration
    tooling
    cli, console
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "runtime"
LAYERS = [
    {"lang", ""},  # "": the modules at the package's top
    {"manifests", "verify.kinds", "audit", "memory", "ipc"},
    {"policy", "gate", "models", "approvals"},
    {"sandbox", "workspace", "verify", "agent"},
    {"spawn"},
    {"orchestration"},
    {"tooling"},
    {"cli", "console"},
]
RANK = {package: n for n, layer in enumerate(LAYERS) for package in layer}
# Sub-packages ranked apart from their package: verify owns its kinds, which sit lower than its running.
SUBPACKAGES = {name for name in RANK if "." in name}


def _package_of(module: str) -> str:
    """``runtime.gate.policy`` -> gate; ``runtime.verify.kinds.scope`` -> verify.kinds; ``runtime.errors`` -> ""
    (a top-level module)."""
    parts = module.split(".")
    if len(parts) > 2 and f"{parts[1]}.{parts[2]}" in SUBPACKAGES:
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def _modules_of(package: str) -> list[Path]:
    if package == "":
        return sorted(PACKAGE.glob("*.py"))
    folder = PACKAGE.joinpath(*package.split("."))
    inner = [PACKAGE.joinpath(*sub.split(".")) for sub in SUBPACKAGES if sub.startswith(package + ".")]
    return sorted(p for p in folder.rglob("*.py") if not any(p.is_relative_to(i) for i in inner))


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "runtime" or name.startswith("runtime.")}


def test_every_package_has_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages - set(RANK) == set()
    assert all((PACKAGE.joinpath(*sub.split(".")) / "__init__.py").exists() for sub in SUBPACKAGES)


@pytest.mark.parametrize("package", sorted(RANK))
def test_no_module_imports_a_layer_above_its_own(package):
    wrong = []
    for path in _modules_of(package):
        for name in _imports(path):
            if RANK[_package_of(name)] > RANK[package]:
                wrong.append(f"{path.relative_to(REPO)} imports {name}")
    assert wrong == []


def test_lang_imports_nothing_of_the_runtime_but_itself():
    """The languages sit below the manifests that are written in them: a rule is read the same way by
    every layer because there is one reading, which depends on nothing."""
    for path in sorted((PACKAGE / "lang").glob("*.py")):
        assert {_package_of(name) for name in _imports(path)} <= {"lang"}, path


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
