"""What the runtime imports is what it declares: the core install carries every module the core
imports, and the optional parts (litellm for model calls, Ray for clusters) are imported by one module
each, behind their extra. `bench/install.py` measures what the core install weighs."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from runtime import DISTRIBUTION
from tests.conftest import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# Extra -> the one module that may import it (lazily, turning its absence into one line).
OPTIONAL = {"litellm": ("models", "runtime/models/llm.py"), "ray": ("ray", "runtime/orchestration/ray_executor.py"),
            "starlette": ("console", "runtime/console/app.py"), "uvicorn": ("console", "runtime/console/app.py"),
            "pygments": ("console", "runtime/console/diff_view.py"),
            "cryptography": ("credentials", "runtime/sandbox/egress_ca.py")}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _third_party(path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return {m for m in found if m != "runtime" and m not in sys.stdlib_module_names}


def test_the_distribution_is_named_in_one_place():
    assert PROJECT["name"] == DISTRIBUTION == "agent-role-runtime"
    # The one command, `runtime`: a hand-written launcher the wheel installs as a script (bin/runtime says why),
    # calling the same entry point a console script would.
    assert "scripts" not in PROJECT
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["shared-scripts"] == {"bin/runtime": "runtime"}
    launcher = (REPO / "bin/runtime").read_text()
    assert launcher.startswith("#!/usr/bin/env python3\n") and "from runtime.cli.main import main" in launcher
    assert "import re" not in launcher


def test_the_core_declares_no_model_sdk_and_the_extras_hold_them():
    core = {_name(r) for r in PROJECT["dependencies"]}
    assert not core & {"litellm", "openai", "anthropic", "mcp", "tokenizers", "huggingface-hub", "boto3"}
    extras = PROJECT["optional-dependencies"]
    assert [_name(r) for r in extras["models"]] == ["litellm", "mcp"]  # litellm imports mcp without declaring it
    # The suite exercises model calls through litellm, the console on uvicorn, and the egress CA on cryptography.
    assert f"{DISTRIBUTION}[models,console,credentials]" in extras["dev"]
    assert [_name(r) for r in extras["console"]] == ["starlette", "uvicorn", "pygments"]


def test_every_module_the_runtime_imports_is_a_declared_dependency_or_behind_its_extra():
    core = {_name(r) for r in PROJECT["dependencies"]}
    providers = packages_distributions()
    wrong = []
    support = REPO / "runtime" / "verify" / "kinds" / "runners" / "support"
    for path in sorted((REPO / "runtime").rglob("*.py")):
        where = str(path.relative_to(REPO))
        if path.is_relative_to(support):
            continue  # the reporters and the sealed loader run under the project's interpreter, beside its runner
        for module in sorted(_third_party(path)):
            if module in OPTIONAL:
                extra, allowed = OPTIONAL[module]
                if where != allowed:
                    wrong.append(f"{where} imports {module}, which only {allowed} may (the `{extra}` extra)")
                continue
            dists = {_name(d) for d in providers.get(module, [])}
            if not dists & core:
                wrong.append(f"{where} imports {module} ({', '.join(sorted(dists)) or 'not installed'}), "
                             "which the core dependencies do not declare")
    assert wrong == []
