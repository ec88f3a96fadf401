"""The hook's policy cache: keyed on every input, found again by stat alone, compiled only on a miss."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from runtime.gate import cache
from runtime.gate.cache import cache_dir, cache_key, cached_policy, catalog_files
from runtime.lang.audience import SESSION
from runtime.manifests.locate import TOOLCHAIN_FILE
from runtime.policy import build
from tests.conftest import REPO

# ---------------------------------------------------------------- cache_dir


def test_cache_dir_is_runtime_cache_dir_when_set(monkeypatch, tmp_path):
    monkeypatch.setenv("RUNTIME_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == str(tmp_path / "explicit")


def test_cache_dir_falls_back_to_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("RUNTIME_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == str(tmp_path / "xdg" / "agent-runtime" / "policies")


@pytest.mark.parametrize("xdg", [None, ""])
def test_cache_dir_falls_back_to_the_home_cache(monkeypatch, tmp_path, xdg):
    monkeypatch.delenv("RUNTIME_CACHE_DIR")
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == str(tmp_path / "home" / ".cache" / "agent-runtime" / "policies")


# ---------------------------------------------------------------- catalog_files and cache_key


@pytest.fixture
def tiny_catalog(tmp_path) -> Path:
    """A full catalog's folders with a few files; nothing here is compiled."""
    root = tmp_path / "cat"
    for rel, text in {"capabilities/b/x.toml": "b", "capabilities/a.toml": "a", "roles/r.toml": "r",
                      "programs/p.program.toml": "p", "docs/guide.md": "d", "manifests/m.toml": "m"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return Path(os.path.realpath(root))


def test_catalog_files_are_the_toolchain_then_each_part_sorted(tiny_catalog):
    r = str(tiny_catalog)
    assert catalog_files(r) == [
        os.path.join(r, TOOLCHAIN_FILE),  # listed though absent: creating one changes the policy
        os.path.join(r, "capabilities", "a.toml"),
        os.path.join(r, "capabilities", "b", "x.toml"),
        os.path.join(r, "roles", "r.toml"),
        os.path.join(r, "programs", "p.program.toml"),
    ]


def test_catalog_files_of_a_project_catalog_include_the_shipped_layer(tmp_path):
    project = tmp_path / "proj"
    (project / "roles").mkdir(parents=True)
    (project / "roles" / "mine.toml").write_text("x")
    files = catalog_files(str(project))
    shipped = os.path.realpath(REPO)
    assert files[:2] == [os.path.join(shipped, TOOLCHAIN_FILE), os.path.join(os.path.realpath(project), TOOLCHAIN_FILE)]
    assert os.path.join(shipped, "roles", "read-only.toml") in files
    assert files[-1] == os.path.join(os.path.realpath(project), "roles", "mine.toml")


def key(catalog: Path, role: str = "r", task: str | None = None, root: Path | None = None) -> str:
    return cache_key(str(catalog), role, task, str(root or catalog.parent / "work"))


def test_cache_key_is_stable_for_the_same_inputs(tiny_catalog):
    assert key(tiny_catalog) == key(tiny_catalog)
    assert len(key(tiny_catalog)) == 64


@pytest.mark.parametrize("edit", [
    lambda c: (c / "roles" / "r.toml").write_text("r2"),
    lambda c: (c / "capabilities" / "new.toml").write_text(""),
    lambda c: (c / "programs" / "p.program.toml").unlink(),
    lambda c: (c / TOOLCHAIN_FILE).write_text(""),
])
def test_cache_key_changes_with_any_catalog_input(tiny_catalog, edit):
    before = key(tiny_catalog)
    edit(tiny_catalog)
    assert key(tiny_catalog) != before


def test_cache_key_ignores_folders_that_are_not_catalog_parts(tiny_catalog):
    before = key(tiny_catalog)
    (tiny_catalog / "docs" / "guide.md").write_text("changed")
    (tiny_catalog / "manifests" / "m.toml").unlink()
    assert key(tiny_catalog) == before


def test_cache_key_changes_with_role_root_and_task(tiny_catalog, tmp_path):
    task = tmp_path / "task.toml"
    task.write_text("one")
    base = key(tiny_catalog, task=str(task))
    assert key(tiny_catalog, role="other", task=str(task)) != base
    assert key(tiny_catalog, task=str(task), root=tmp_path / "elsewhere") != base
    assert key(tiny_catalog) != base
    task.write_text("two")
    assert key(tiny_catalog, task=str(task)) != base


def test_cache_key_reads_the_roots_package_json(tiny_catalog, tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    absent = key(tiny_catalog, root=root)
    (root / "package.json").write_text('{"scripts": {"test": "vitest"}}')
    present = key(tiny_catalog, root=root)
    assert present != absent
    (root / "package.json").write_text('{"scripts": {"test": "jest"}}')
    assert key(tiny_catalog, root=root) != present
    (root / "README.md").write_text("other files do not count")
    (root / "package.json").write_text('{"scripts": {"test": "jest"}}')
    assert key(tiny_catalog, root=root) == key(tiny_catalog, root=root)


def test_a_missing_task_file_is_hashed_as_absent(tiny_catalog, tmp_path):
    missing = str(tmp_path / "missing.toml")
    assert key(tiny_catalog, task=missing) == key(tiny_catalog, task=missing)
    assert key(tiny_catalog, task=missing) != key(tiny_catalog)


# ---------------------------------------------------------------- cached_policy


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, dict]:
    """The shipped catalog's policies, compiled once for the module."""
    root = str(tmp_path_factory.mktemp("work"))
    return {role: build.build_policy(str(REPO), role, None, root, audience=SESSION) for role in ("read-only", "explorer")}


@pytest.fixture
def builds(monkeypatch, compiled) -> list[tuple]:
    """Every compile cached_policy asks for; each answers with a policy compiled beforehand."""
    calls: list[tuple] = []

    def counting(catalog_root, role, task_path, root, audience):
        calls.append((catalog_root, role, task_path, root, audience))
        return copy.deepcopy(compiled[role])

    monkeypatch.setattr(build, "build_policy", counting)
    return calls


@pytest.fixture
def work(tmp_path) -> str:
    root = tmp_path / "work"
    root.mkdir()
    return str(root)


def cache_files() -> list[str]:
    return sorted(os.listdir(cache_dir()))


def test_a_miss_compiles_for_the_session_and_writes_the_policy_and_its_index(monkeypatch, work):
    calls = []
    real = build.build_policy
    monkeypatch.setattr(build, "build_policy", lambda *a, **k: calls.append((a, k)) or real(*a, **k))
    policy = cached_policy(str(REPO), "read-only", None, work)
    assert calls == [((str(REPO), "read-only", None, work), {"audience": SESSION})]
    assert policy.role == "read-only"
    files = cache_files()
    assert len(files) == 2
    [index] = [f for f in files if f.startswith("index-read-only-")]
    [policy_file] = [f for f in files if f != index]
    assert policy_file.startswith("read-only-") and policy_file.endswith(".json")
    with open(os.path.join(cache_dir(), index)) as fh:
        doc = json.load(fh)
    assert doc["policy"] == policy_file
    paths, taken = doc["paths"].split("\0"), doc["stamps"].split(" ")
    assert taken[paths.index(os.path.join(work, "package.json"))] == "-"  # absent, and watched
    assert os.path.realpath(cache_dir()) == policy.protected[-1]


def test_a_hit_compiles_nothing(builds, work):
    first = cached_policy(str(REPO), "read-only", None, work)
    again = cached_policy(str(REPO), "read-only", None, work)
    assert len(builds) == 1
    assert again.hash == first.hash and again.protected == first.protected


def test_a_new_index_finds_an_existing_policy_without_compiling(builds, work):
    cached_policy(str(REPO), "read-only", None, work)
    for name in cache_files():
        if name.startswith("index-"):
            os.unlink(os.path.join(cache_dir(), name))
    cached_policy(str(REPO), "read-only", None, work)
    assert len(builds) == 1
    assert any(name.startswith("index-") for name in cache_files())


def test_roles_are_cached_apart(builds, work):
    a = cached_policy(str(REPO), "read-only", None, work)
    b = cached_policy(str(REPO), "explorer", None, work)
    assert [call[1] for call in builds] == ["read-only", "explorer"]
    assert a.hash != b.hash


def test_a_package_json_appearing_in_the_root_compiles_afresh(builds, work):
    cached_policy(str(REPO), "read-only", None, work)
    Path(work, "package.json").write_text('{"scripts": {"test": "vitest run"}}')
    cached_policy(str(REPO), "read-only", None, work)
    assert len(builds) == 2


def test_an_edited_catalog_file_compiles_afresh(builds, work, catalog_copy):
    cached_policy(str(catalog_copy), "read-only", None, work)
    role = catalog_copy / "roles" / "read-only.toml"
    role.write_text(role.read_text() + "\n# edited\n")
    cached_policy(str(catalog_copy), "read-only", None, work)
    assert len(builds) == 2
    assert len([f for f in cache_files() if not f.startswith("index-")]) == 2


def test_a_damaged_index_is_a_miss_not_a_crash(builds, work):
    cached_policy(str(REPO), "read-only", None, work)
    [index] = [f for f in cache_files() if f.startswith("index-")]
    Path(cache_dir(), index).write_text("{not json")
    policy = cached_policy(str(REPO), "read-only", None, work)
    assert policy.role == "read-only"
    with open(os.path.join(cache_dir(), index)) as fh:
        assert json.load(fh)["policy"].startswith("read-only-")  # rewritten


def write_index(tmp_path: Path, doc) -> str:
    path = tmp_path / "index.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_an_index_whose_stamps_still_hold_names_its_policy(tmp_path):
    watched = tmp_path / "input.toml"
    watched.write_text("x")
    paths = [str(watched), str(tmp_path / "absent")]
    index = write_index(tmp_path, {"policy": "p.json", "paths": "\0".join(paths), "stamps": cache.stamps(paths)})
    assert cache._from_index(index) == "p.json"


@pytest.mark.parametrize("change", [
    lambda p: p.write_text("xy"),  # size
    lambda p: os.utime(p, ns=(1, 1)),  # mtime
    lambda p: p.unlink(),  # gone
])
def test_an_index_whose_input_changed_names_nothing(tmp_path, change):
    watched = tmp_path / "input.toml"
    watched.write_text("x")
    index = write_index(tmp_path, {"policy": "p.json", "paths": str(watched), "stamps": cache.stamps([str(watched)])})
    change(watched)
    assert cache._from_index(index) is None


def test_an_index_stamped_absent_names_nothing_once_the_file_exists(tmp_path):
    index = write_index(tmp_path, {"policy": "p.json", "paths": str(tmp_path / "toolchain.toml"), "stamps": "-"})
    (tmp_path / "toolchain.toml").write_text("")
    assert cache._from_index(index) is None


@pytest.mark.parametrize("doc", [
    "{not json", "[]", "null", {"policy": "p.json"}, {"paths": "", "stamps": ""}, {"policy": 3, "paths": "", "stamps": ""},
    {"policy": "p.json", "paths": "", "stamps": {}}, {"policy": "p.json", "paths": [], "stamps": ""},
    {"policy": "../escape.json", "paths": "", "stamps": ""}, {"policy": "sub/p.json", "paths": "", "stamps": ""},
    {"policy": "p.json", "paths": "/a\0/b", "stamps": "-"}, {"policy": "p.json", "stamps": "-"},
])
def test_a_damaged_index_names_nothing(tmp_path, doc):
    assert cache._from_index(write_index(tmp_path, doc)) is None


def test_a_missing_index_names_nothing(tmp_path):
    assert cache._from_index(str(tmp_path / "none.json")) is None


def test_an_index_naming_a_deleted_policy_compiles_it_again(builds, work):
    cached_policy(str(REPO), "read-only", None, work)
    for name in cache_files():
        if not name.startswith("index-"):
            os.unlink(os.path.join(cache_dir(), name))
    cached_policy(str(REPO), "read-only", None, work)
    assert len(builds) == 2


def test_the_stamp_of_a_missing_path_is_a_dash(tmp_path):
    assert cache._stamp(str(tmp_path / "missing")) == "-"
    path = tmp_path / "f"
    path.write_text("abc")
    st = os.stat(path)
    assert cache._stamp(str(path)) == f"3:{st.st_mtime_ns}:{st.st_ino}"
    assert cache.stamps([str(path), str(tmp_path / "missing")]) == f"3:{st.st_mtime_ns}:{st.st_ino} -"
