"""The bundle is deterministic and carries texts, scope block and body in order."""

from pathlib import Path

from runtime.manifests.catalog import Catalog
from runtime.manifests.compose import SEPARATOR, compose_bundle
from runtime.manifests.role import load_role
from runtime.manifests.task import load_task
from tests.conftest import REPO, run_cli

TASK = REPO / "manifests" / "examples" / "fix-tokenizer.toml"


def test_bundle_is_atom_texts_then_scope_then_body():
    task = load_task(Catalog(REPO), TASK)
    parts = compose_bundle(task.role, task).split(SEPARATOR)
    assert len(parts) == len(task.role.atoms) + 2
    for atom, part in zip(task.role.atoms, parts[:len(task.role.atoms)], strict=True):
        assert part == atom.text.strip()
    scope = parts[-2]
    assert scope.startswith("## Your task's scope")
    assert "- You may write only inside: `src/tokenizer/**`, `tests/test_tokenizer.py`" in scope
    assert "- Never write inside: `src/tokenizer/generated/**`" in scope
    assert "`pytest -q tests/test_tokenizer.py` must pass with at least 5 tests" in scope
    assert "- Agent: `ag-fix-tokenizer`, reporting to `orchestrator`" in scope
    assert parts[-1] == task.body.strip() + "\n"


def test_compose_is_byte_for_byte_deterministic(tmp_path):
    first = run_cli("compose", str(TASK), cwd=REPO)
    second = run_cli("compose", str(TASK), cwd=tmp_path, env={"RUNTIME_CATALOG": str(REPO)})
    assert first.returncode == 0 and first.stdout == second.stdout and first.stdout.endswith("\n")


def test_role_without_task_says_scope_comes_from_the_task():
    role = load_role(Catalog(REPO), "read-only")
    bundle = compose_bundle(role, None)
    assert "- Goal: given by each task." in bundle
    assert "- You may not write any file." in bundle
    assert "Shell programs" not in bundle


def test_aliases_resolve_in_compose(catalog_copy: Path):
    role = catalog_copy / "roles" / "read-only.toml"
    role.write_text(role.read_text().replace('"tools::deny-tools"', '"tools::read-only"'))
    old = compose_bundle(load_role(Catalog(catalog_copy), "read-only"), None)
    assert old == compose_bundle(load_role(Catalog(REPO), "read-only"), None)
