"""Finding the catalog and its layers: explicit, environment, the working directory upward, the shipped one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.errors import UsageError
from runtime.manifests import locate
from runtime.manifests.locate import (
    PROJECT_FOLDER,
    TOOLCHAIN_FILE,
    catalog_layers,
    find_catalog,
    grammar_name,
    role_file,
    shipped_catalog,
)
from tests.conftest import REPO

SHIPPED = os.path.realpath(REPO)


def make(folder: Path, *parts: str) -> Path:
    for part in parts:
        (folder / part).mkdir(parents=True, exist_ok=True)
    return folder


def real(path: Path) -> str:
    return os.path.realpath(path)


@pytest.mark.parametrize("filename,name", [
    ("ruff.program.toml", "ruff"),
    ("python-m.program.toml", "python-m"),
    ("a.b.program.toml", "a.b"),
    (".program.toml", None),
    ("ruff.toml", None),
    ("ruff.program.toml.bak", None),
    ("program.toml", None),
])
def test_grammar_name(filename, name):
    assert grammar_name(filename) == name


def test_the_shipped_catalog_of_a_checkout_is_the_repository():
    assert shipped_catalog() == SHIPPED


# ---------------------------------------------------------------- layers


def test_a_full_catalog_is_one_layer(tmp_path):
    root = make(tmp_path / "cat", "capabilities", "roles")
    assert catalog_layers(str(root)) == [real(root)]


@pytest.mark.parametrize("parts", [("roles",), ("capabilities",), ("programs",), ("capabilities", "programs")])
def test_a_project_catalog_extends_the_shipped_one(tmp_path, parts):
    root = make(tmp_path / "proj", *parts)
    assert catalog_layers(str(root)) == [SHIPPED, real(root)]


def test_without_a_shipped_catalog_a_project_catalog_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setattr(locate, "shipped_catalog", lambda: None)
    root = make(tmp_path / "proj", "roles")
    with pytest.raises(UsageError) as exc:
        catalog_layers(str(root))
    assert str(exc.value) == f"{real(root)} extends the shipped catalog, which this installation lacks"


def test_role_file_prefers_the_top_layer(tmp_path):
    root = make(tmp_path / "proj", "roles")
    (root / "roles" / "read-only.toml").write_text("")
    assert role_file(str(root), "read-only") == os.path.join(real(root), "roles", "read-only.toml")


def test_role_file_falls_back_to_a_lower_layer(tmp_path):
    root = make(tmp_path / "proj", "roles")
    assert role_file(str(root), "read-only") == os.path.join(SHIPPED, "roles", "read-only.toml")


def test_role_file_of_an_unknown_role_is_in_the_top_layer(tmp_path):
    root = make(tmp_path / "proj", "roles")
    assert role_file(str(root), "nobody") == os.path.join(real(root), "roles", "nobody.toml")
    full = make(tmp_path / "cat", "capabilities", "roles")
    assert role_file(str(full), "read-only") == os.path.join(real(full), "roles", "read-only.toml")


# ---------------------------------------------------------------- find_catalog


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """A working directory with no catalog on its way up."""
    folder = tmp_path / "empty" / "deeper"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    return folder


def test_explicit_catalog_wins(tmp_path, elsewhere, monkeypatch):
    full = make(tmp_path / "cat", "capabilities", "roles")
    monkeypatch.setenv("RUNTIME_CATALOG", str(make(tmp_path / "env", "roles")))
    assert find_catalog(str(full)) == real(full)


@pytest.mark.parametrize("parts", [("roles",), ("programs",)])
def test_an_explicit_project_catalog_is_accepted(tmp_path, elsewhere, parts):
    root = make(tmp_path / "proj", *parts)
    assert find_catalog(str(root)) == real(root)


def test_an_explicit_toolchain_only_folder_is_a_catalog(tmp_path, elsewhere):
    (tmp_path / "tc").mkdir()
    (tmp_path / "tc" / TOOLCHAIN_FILE).write_text("")
    assert find_catalog(str(tmp_path / "tc")) == real(tmp_path / "tc")


def test_an_explicit_folder_that_is_no_catalog_is_a_usage_error_naming_it(tmp_path, elsewhere):
    folder = make(tmp_path / "plain", "docs")
    with pytest.raises(UsageError) as exc:
        find_catalog(str(folder))
    assert str(exc.value).startswith(f"{folder}: not a catalog (needs capabilities/ and roles/")


def test_the_environment_comes_next_and_ignores_the_working_directory(tmp_path, monkeypatch):
    env = make(tmp_path / "env", "capabilities", "roles")
    cwd = make(tmp_path / "here", "capabilities", "roles")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("RUNTIME_CATALOG", str(env))
    assert find_catalog() == real(env)


def test_a_bad_environment_catalog_is_a_usage_error_naming_it(tmp_path, elsewhere, monkeypatch):
    monkeypatch.setenv("RUNTIME_CATALOG", str(tmp_path / "missing"))
    with pytest.raises(UsageError, match="missing: not a catalog"):
        find_catalog()


def test_the_nearest_full_catalog_upward_is_found(tmp_path, monkeypatch):
    outer = make(tmp_path / "outer", "capabilities", "roles")
    inner = make(outer / "inner", "capabilities", "roles")
    work = inner / "src" / "pkg"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    assert find_catalog() == real(inner)


def test_a_project_folder_upward_is_found(tmp_path, monkeypatch):
    project = make(tmp_path / "repo" / PROJECT_FOLDER, "roles")
    work = tmp_path / "repo" / "src"
    work.mkdir()
    monkeypatch.chdir(work)
    assert find_catalog() == real(project)


def test_an_empty_project_folder_is_not_a_catalog(tmp_path, monkeypatch):
    (tmp_path / "repo" / PROJECT_FOLDER).mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "repo")
    assert find_catalog() == SHIPPED


def test_upward_a_partial_catalog_counts_only_as_agent_runtime(tmp_path, monkeypatch):
    # a folder holding only roles/ is a project catalog when named, but the search looks for .agent-runtime
    make(tmp_path / "repo", "roles")
    monkeypatch.chdir(tmp_path / "repo")
    assert find_catalog() == SHIPPED


def test_the_hook_never_searches_the_working_directory(tmp_path, monkeypatch):
    make(tmp_path / "planted", "capabilities", "roles")
    make(tmp_path / "planted" / PROJECT_FOLDER, "roles")
    monkeypatch.chdir(tmp_path / "planted")
    assert find_catalog(search_cwd=False) == SHIPPED


def test_nothing_found_is_the_shipped_catalog(elsewhere):
    assert find_catalog() == SHIPPED


def test_nothing_found_without_a_shipped_catalog_is_a_usage_error(elsewhere, monkeypatch):
    monkeypatch.setattr(locate, "shipped_catalog", lambda: None)
    with pytest.raises(UsageError, match="no catalog found: pass --catalog DIR"):
        find_catalog()
