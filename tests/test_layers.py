"""Dependencies point one way, for every package of the runtime: a module imports only its own package and
packages of the layers below its own (at any depth: lazy imports inside functions count too; imports for type
annotations alone do not). Inside a package, no modules import each other in a circle.

    lang, the top-level modules (errors, model, outcomes, pids, printable, timeouts)
    verify.kinds (what each check reads and how it judges it: data the manifests and the policy validate
        against, below the running of a verify), audit, memory, ipc
    manifests
    policy (the compiled document), models, workspace
    gate (the hook, its policy cache among it), approvals, sandbox, attest (signed provenance of commits)
    agent (the builtin agent's loop, run inside the sandbox), verify (a verify pass: its runs in the sandbox,
        its gathering, its reviewer)
    spawn
    orchestration
    tooling
    console
    cli
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "runtime"
LAYERS = [
    {"lang", ""},  # "": the modules at the package's top
    {"verify.kinds", "audit", "memory", "ipc"},
    {"manifests"},
    {"policy", "models", "workspace"},
    {"gate", "approvals", "sandbox", "attest"},
    {"agent", "verify"},
    {"spawn"},
    {"orchestration"},
    {"tooling"},
    {"console"},
    {"cli"},
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


def _type_only(tree: ast.Module) -> set[int]:
    """The nodes under `if TYPE_CHECKING:`: imports for annotations, which never run."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            found.update(id(inner) for sub in node.body for inner in ast.walk(sub))
    return found


def _imports(path: Path) -> set[str]:
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from runtime.gate import cache` imports the module runtime.gate.cache too
            found.update(f"{node.module}.{alias.name}" for alias in node.names
                         if PACKAGE.parent.joinpath(*f"{node.module}.{alias.name}".split(".")).with_suffix(".py").is_file()
                         or PACKAGE.parent.joinpath(*f"{node.module}.{alias.name}".split("."), "__init__.py").is_file())
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "runtime" or name.startswith("runtime.")}


def test_every_package_has_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages - set(RANK) == set()
    assert all((PACKAGE.joinpath(*sub.split(".")) / "__init__.py").exists() for sub in SUBPACKAGES)


@pytest.mark.parametrize("package", sorted(RANK))
def test_no_module_imports_its_own_layer_or_one_above(package):
    wrong = []
    for path in _modules_of(package):
        for name in _imports(path):
            other = _package_of(name)
            if other != package and RANK[other] >= RANK[package]:
                wrong.append(f"{path.relative_to(REPO)} imports {name}")
    assert wrong == []


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_modules_of_a_package_import_each_other_in_a_circle():
    modules = {_module_of(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for imported in _imports(path):
            # `from runtime.x import y` names module runtime.x.y when y is one, else runtime.x
            target = imported if imported in modules else None
            if target is not None and _package_of(target) == _package_of(name) and target != name:
                graph[name].add(target)
    circles = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(name: str, path: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(graph[name]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    assert circles == []


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
