"""runner-config: the work does not configure what judges it (runner and checker configuration, startup
code, package metadata, dependency folders, new conftests, shadowing modules)."""

from __future__ import annotations

import json

import anyio
import pytest

from runtime.verify.kinds import runner_config
from runtime.verify.kinds.findings import Finding
from runtime.verify.kinds.registry import evaluate
from runtime.verify.kinds.runner_config import CONFIG_FILES
from tests.verify.kinds.test_tests_green import FakeGathering


def gather(base: dict[str, str], work: dict[str, str], renames: dict[str, str] | None = None,
           **params: object) -> list[Finding]:
    fake = FakeGathering(base=base, work=work, renames=renames or {})
    given = {"may-change": [], **{k.replace("_", "-"): v for k, v in params.items()}}
    return anyio.run(runner_config.gather, runner_config.KIND.read_params(given), fake).findings


def found(base: dict[str, str], work: dict[str, str], **params: object) -> list[tuple[str, str]]:
    return [(f.path, f.what) for f in gather(base, work, **params)]


# ---------------------------------------------------------------- whole configuration files


@pytest.mark.parametrize("path", [
    "pytest.ini", "tests/pytest.ini", "src/ruff.toml", "tox.ini", ".flake8", "mypy.ini", "jest.config.js", ".mocharc.yml",
    ".c8rc", "build.rs", ".npmrc", "tsconfig.json", "packages/web/tsconfig.build.json", "eslint.config.js",
    ".golangci.yml", "noxfile.py", ".coveragerc", "vitest.config.ts",
])
def test_a_configuration_file_at_any_depth_is_a_finding_added_changed_or_deleted(path):
    name = path.rsplit("/", 1)[-1]
    assert CONFIG_FILES.match(name)
    head = f"a configuration of what judges the work ({name}) was"
    assert found({}, {path: "x"}) == [(path, f"{head} added")]
    assert found({path: "x"}, {path: "y"}) == [(path, f"{head} changed")]
    assert found({path: "x"}, {}) == [(path, f"{head} deleted")]


def test_a_renamed_configuration_file_is_a_finding_at_both_names():
    assert found({"pytest.ini": "x"}, {"cfg/pytest.ini": "x"}, renames={"cfg/pytest.ini": "pytest.ini"}) == [
        ("cfg/pytest.ini", "a configuration of what judges the work (pytest.ini) was made by a rename"),
        ("pytest.ini", "a configuration of what judges the work (pytest.ini) was renamed"),
    ]


def test_cargo_s_configuration_folder_is_a_finding():
    # `.cargo/` is also a dependency folder (THIRD_PARTY), which is what the finding says
    assert [p for p, _ in found({}, {".cargo/config.toml": "[build]\nrustflags = []\n"})] == [".cargo/config.toml"]


@pytest.mark.parametrize("path", ["README.md", "src/config.py", "docs/pytest.md", "src/app/settings.toml"])
def test_other_files_are_no_finding(path):
    assert found({}, {path: "x"}) == []
    assert found({path: "x"}, {path: "y"}) == []


# ---------------------------------------------------------------- sections of shared files

PYPROJECT = '''[project]
name = "calc"
dependencies = ["requests>=2"]

[tool.pytest.ini_options]
addopts = "-q"

[tool.ruff]
line-length = 100
'''


@pytest.mark.parametrize("old,new,what", [
    ('addopts = "-q"', 'addopts = "-q -p no:randomly --deselect tests/test_calc.py::test_mean"',
     "`pyproject.toml`: [tool.pytest] was changed"),
    ("line-length = 100", "line-length = 200", "`pyproject.toml`: [tool.ruff] was changed"),
    ("[tool.ruff]", "[tool.coverage.run]\nomit = ['src/*']\n\n[tool.ruff]", "`pyproject.toml`: [tool.coverage] was added"),
    ('[tool.ruff]\nline-length = 100\n', "", "`pyproject.toml`: [tool.ruff] was removed"),
    ("[tool.ruff]", "[tool.ruff", "`pyproject.toml` no longer parses"),
])
def test_pyproject_tool_sections_are_findings(old, new, what):
    assert found({"pyproject.toml": PYPROJECT}, {"pyproject.toml": PYPROJECT.replace(old, new)}) == [("pyproject.toml", what)]


def test_pyproject_project_and_dependency_changes_are_not_this_kind_s():
    after = PYPROJECT.replace('["requests>=2"]', '["requests>=2", "httpx"]').replace('name = "calc"', 'name = "calc2"')
    assert found({"pyproject.toml": PYPROJECT}, {"pyproject.toml": after}) == []


def test_a_new_pyproject_with_a_tool_section_is_a_finding():
    assert found({}, {"pyproject.toml": PYPROJECT}) == [
        ("pyproject.toml", "`pyproject.toml`: [tool.pytest] was added"),
        ("pyproject.toml", "`pyproject.toml`: [tool.ruff] was added"),
    ]


SETUP_CFG = "[metadata]\nname = calc\n\n[flake8]\nmax-line-length = 100\n"


def test_setup_cfg_flake8_section_is_a_finding_but_metadata_is_not():
    assert found({"setup.cfg": SETUP_CFG}, {"setup.cfg": SETUP_CFG.replace("100", "200")}) == [
        ("setup.cfg", "`setup.cfg`: [flake8] was changed")]
    assert found({"setup.cfg": SETUP_CFG}, {"setup.cfg": SETUP_CFG.replace("name = calc", "name = calc2")}) == []
    assert found({"setup.cfg": SETUP_CFG}, {"setup.cfg": SETUP_CFG + "\n[tool:pytest]\naddopts = -x\n"}) == [
        ("setup.cfg", "`setup.cfg`: [tool:pytest] was added")]


PACKAGE = {"name": "web", "scripts": {"test": "jest", "build": "tsc"}, "dependencies": {"react": "^18"}}


def package_json(**changes: object) -> str:
    return json.dumps({**PACKAGE, **changes})


def test_package_json_test_script_is_a_finding_but_the_build_script_is_not():
    base = {"package.json": package_json()}
    assert found(base, {"package.json": package_json(scripts={"test": "jest --passWithNoTests", "build": "tsc"})}) == [
        ("package.json", '`package.json`: the script "test" was changed')]
    assert found(base, {"package.json": package_json(scripts={"test": "jest", "build": "tsc -b"})}) == []
    assert found(base, {"package.json": package_json(dependencies={"react": "^19"})}) == []


def test_package_json_runner_configuration_is_a_finding():
    assert found({"package.json": package_json()}, {"package.json": package_json(jest={"testMatch": []})}) == [
        ("package.json", '`package.json`: "jest" was added')]


CARGO = '[package]\nname = "calc"\n\n[dependencies]\nserde = "1"\n\n[profile.test]\nopt-level = 0\n'


def test_cargo_toml_profile_is_a_finding_but_dependencies_are_not():
    assert found({"Cargo.toml": CARGO}, {"Cargo.toml": CARGO.replace("opt-level = 0", "opt-level = 3")}) == [
        ("Cargo.toml", "`Cargo.toml`: [profile] was changed")]
    assert found({"Cargo.toml": CARGO}, {"Cargo.toml": CARGO.replace('serde = "1"', 'serde = "2"')}) == []
    assert found({"Cargo.toml": CARGO}, {"Cargo.toml": CARGO.replace('name = "calc"', 'name = "calc"\nbuild = "gen.rs"')}) == [
        ("Cargo.toml", "`Cargo.toml`: package.build was added")]


# ---------------------------------------------------------------- what loads before any test


@pytest.mark.parametrize("path,what", [
    ("sitecustomize.py", "`sitecustomize.py` runs in every Python process before any test"),
    ("src/usercustomize.py", "`usercustomize.py` runs in every Python process before any test"),
    ("x.pth", "`x.pth` runs in every Python process before any test"),
    ("foo.dist-info/entry_points.txt", "package metadata in the tree (its entry points load plugins into the runner)"),
    ("src/foo.egg-info/entry_points.txt", "package metadata in the tree (its entry points load plugins into the runner)"),
    ("node_modules/x/index.js", "a dependency folder of the work's own (the tests would import it instead)"),
    ("vendor/github.com/x/y/y.go", "a dependency folder of the work's own (the tests would import it instead)"),
])
def test_startup_files_metadata_and_dependency_folders_are_findings(path, what):
    assert found({}, {path: "x"}) == [(path, what)]


NEW_CONFTEST = ("a new conftest.py outside the test folders (pytest loads it when it collects the folder, and its hooks "
                "configure the run)")


@pytest.mark.parametrize("path", ["src/conftest.py", "conftest.py"])
def test_a_new_conftest_outside_the_test_folders_is_a_finding(path):
    assert found({}, {path: "def pytest_collection_modifyitems(items):\n    items.clear()\n"}, test_globs=["tests/**"]) == [
        (path, NEW_CONFTEST)]


def test_a_new_conftest_in_a_test_folder_or_a_changed_one_is_not():
    assert found({}, {"tests/conftest.py": "x"}, test_globs=["tests/**"]) == []
    assert found({"src/conftest.py": "x"}, {"src/conftest.py": "y"}, test_globs=["tests/**"]) == []


@pytest.mark.parametrize("path", ["src/conftest.py", "conftest.py"])
def test_a_new_conftest_outside_the_test_folders_is_a_finding_with_the_default_test_globs(path):
    assert found({}, {path: "x"}) == [(path, NEW_CONFTEST)]


def test_a_new_conftest_in_tests_is_not_a_finding_with_the_default_test_globs():
    assert found({}, {"tests/conftest.py": "x"}) == []


# ---------------------------------------------------------------- shadowing modules


@pytest.mark.parametrize("path,what", [
    ("json.py", "a new module `json` that shadows the standard library's `json`"),
    ("src/json.py", "a new module `json` that shadows the standard library's `json`"),
    ("tests/json.py", "a new module `json` that shadows the standard library's `json`"),
    ("pytest.py", "a new module `pytest` that shadows the test runner's own `pytest`"),
    ("pluggy.py", "a new module `pluggy` that shadows the test runner's own `pluggy`"),
])
def test_a_new_module_shadowing_the_standard_library_or_the_runner_is_a_finding(path, what):
    assert found({}, {path: "x = 1\n"}) == [(path, what)]


def test_a_new_module_shadowing_a_package_of_the_base_is_a_finding():
    base = {"src/cachetools/__init__.py": "", "src/cachetools/ttl.py": ""}
    assert found(base, {**base, "cachetools.py": "x = 1\n"}) == [
        ("cachetools.py", "a new module `cachetools` that shadows the package `cachetools` of the base (in src)")]


def test_a_module_renamed_to_a_shadowing_name_is_a_finding():
    assert found({"util.py": "x"}, {"json.py": "x"}, renames={"json.py": "util.py"}) == [
        ("json.py", "a new module `json` that shadows the standard library's `json`")]


@pytest.mark.parametrize("base,work", [
    ({"src/pkg/__init__.py": ""}, {"src/pkg/__init__.py": "", "src/pkg/json.py": "x"}),  # inside a package: pkg.json
    ({}, {"tests/test_json.py": "x"}),  # a test module
    ({}, {"src/calc_extra.py": "x"}),  # a name nothing else has
    ({"json.py": "x"}, {"json.py": "y"}),  # the base's own module, changed
])
def test_modules_that_shadow_nothing_are_not_findings(base, work):
    assert found(base, work) == []


def test_a_new_package_shadowing_the_standard_library_is_a_finding():
    assert found({}, {"json/__init__.py": "x = 1\n"}) == [
        ("json/__init__.py", "a new module `json` that shadows the standard library's `json`")]


# ---------------------------------------------------------------- the judge


def test_the_judge_rejects_findings_naming_them_unless_the_task_lets_them_change():
    evidence = {"findings": [{"path": "src/conftest.py", "what": "a new conftest.py outside the test folders"},
                             {"path": "pyproject.toml", "what": "`pyproject.toml`: [tool.ruff] was changed"}]}
    result = evaluate("runner-config", {"may-change": []}, evidence)
    assert result.status == "rejected" and result.evidence == {"findings": 2}
    assert "- `src/conftest.py`: a new conftest.py outside the test folders" in result.feedback
    assert "- `pyproject.toml`: `pyproject.toml`: [tool.ruff] was changed" in result.feedback
    some = evaluate("runner-config", {"may-change": ["pyproject.toml"]}, evidence)
    assert some.status == "rejected" and some.evidence == {"findings": 1}
    assert "- `src/conftest.py`" in some.feedback and "- `pyproject.toml`" not in some.feedback
    every = evaluate("runner-config", {"may-change": ["pyproject.toml", "src/**"]}, evidence)
    assert every.status == "passed" and "(2 the task allows)" in every.feedback


def test_the_judge_passes_no_finding():
    result = evaluate("runner-config", {"may-change": []}, {"findings": []})
    assert result.status == "passed" and result.feedback == "the runners' and checkers' configuration is the base's"


def test_a_build_table_of_a_tool_that_also_runs_tests_is_no_finding_but_its_test_environments_are():
    """hatch builds and packages as well as running environments: a new package in its wheel target is a
    build's business; a change of the environment that runs the tests configures what judges."""
    from runtime.verify.kinds.runner_config import _parse

    base = '[tool.hatch.build.targets.wheel]\npackages = ["src/a"]\n[tool.hatch.envs.default.scripts]\ntest = "pytest"\n'
    build = base.replace('["src/a"]', '["src/a", "src/b"]')
    envs = base.replace('test = "pytest"', 'test = "pytest -k not_slow"')
    assert _parse("pyproject.toml", base) == _parse("pyproject.toml", build)
    assert _parse("pyproject.toml", base) != _parse("pyproject.toml", envs)
