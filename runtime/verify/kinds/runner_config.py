"""runner-config: what defines "green" comes from the base; the work does not configure what judges it.

Found, in what the change touched (verify's copy of the work holds nothing else: ignored files are left
out of it):

- configuration of a test runner, linter or type checker, wherever it lies (a nearer `ruff.toml` or a
  `pytest.ini` in a test folder governs that folder): whole files (`pytest.ini`, `tox.ini`, `.flake8`,
  `mypy.ini`, `ruff.toml`, `jest.config.js`, `.mocharc.yml`, `.c8rc`, `.golangci.yml`, `.cargo/config.toml`,
  `build.rs`, `.npmrc`, ...) and the sections of shared files (`[tool.pytest...]`, `[tool.ruff]`,
  `[tool.mypy]` of pyproject.toml; `[flake8]`, `[tool:pytest]`, `[mypy...]` of setup.cfg; `scripts`,
  `jest`, `mocha`, `c8`, `eslintConfig` of package.json; `[lib]`, `[[test]]`, `[profile]`, `[lints]` of
  Cargo.toml);
- code the interpreter or the runner loads before any test: a new `conftest.py` outside the test
  folders (a bare `pytest` collects from the root), `sitecustomize` and `usercustomize` (a module or a
  package), `*.pth`,
  package metadata (`*.dist-info`, `*.egg-info`: entry points autoload plugins), a `node_modules` or
  `vendor` folder of the work's own;
- a new Python module that shadows one the tests import: a name of the standard library, of a test
  runner, or of a package the base has elsewhere, put where it comes first on `sys.path` (a folder that
  is no package: the tree's top, `src/`, a test folder).

Each is a finding unless the task names it (``may-change``, the task's `[scope] test-edits`).
"""

from __future__ import annotations

import configparser
import json
import posixpath
import re
import sys
import tomllib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.verify.kinds.base import take_str_list
from runtime.verify.kinds.findings import TEST_FOLDERS, Finding, Findings, judge_findings, matches
from runtime.verify.kinds.kind import Change, Gathering, Kind
from runtime.verify.kinds.result import VerifyResult

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

# Whole files that configure a runner, a linter, a type checker or a build the tests run through.
CONFIG_FILES = re.compile(r"^(?:pytest\.ini|\.pytest\.ini|tox\.ini|noxfile\.py|\.flake8|\.pylintrc|pylintrc|"
                          r"mypy\.ini|\.mypy\.ini|ruff\.toml|\.ruff\.toml|\.coveragerc|pyrightconfig\.json|\.isort\.cfg|"
                          r"jest\.config\.[cm]?[jt]s(?:on)?|vitest\.config\.[cm]?[jt]s|vitest\.workspace\.[cm]?[jt]s|"
                          r"vite\.config\.[cm]?[jt]s|\.mocharc(?:\.[a-z]+)?|\.c8rc(?:\.json)?|\.nycrc(?:\.[a-z]+)?|"
                          r"\.taprc|babel\.config\.[cm]?[jt]s(?:on)?|\.babelrc(?:\.[a-z]+)?|tsconfig(?:\.[\w-]+)?\.json|"
                          r"eslint\.config\.[cm]?[jt]s|\.eslintrc(?:\.[a-z]+)?|\.eslintignore|\.npmrc|\.yarnrc(?:\.yml)?|"
                          r"\.golangci\.(?:ya?ml|toml|json)|clippy\.toml|\.clippy\.toml|rustfmt\.toml|\.rustfmt\.toml|"
                          r"build\.rs)$")
# Python loads these at start-up, or as plugins, before any test.
STARTUP_FILES = re.compile(r"^(?:sitecustomize\.py|usercustomize\.py|[^/]*\.pth)$")
METADATA = re.compile(r"(?:^|/)[^/]+\.(?:dist-info|egg-info)(?:/|$)")
THIRD_PARTY = re.compile(r"(?:^|/)(?:node_modules|vendor)(?:/|$)")
CARGO_CONFIG = re.compile(r"(?:^|/)\.cargo/")
# Sections of shared files: (file name, the path of keys that configures a tool).
PYPROJECT_TOOLS = ("pytest", "ruff", "mypy", "coverage", "pyright", "pylint", "flake8", "black", "isort", "tox",
                   "poe", "nox", "pytest-cov", "basedpyright", "ty")
# Tools whose table also builds or packages: only the part that runs tests or checks configures what judges.
PYPROJECT_PARTS = {"hatch": "envs", "pdm": "scripts"}
SETUP_CFG_SECTIONS = re.compile(r"^(?:tool:pytest|pytest|flake8|pycodestyle|pydocstyle|isort|pylint.*|mypy.*|"
                                r"coverage:.*|tox:.*|testenv.*)$")
PACKAGE_JSON_KEYS = ("jest", "mocha", "c8", "nyc", "ava", "tap", "vitest", "eslintConfig", "eslintIgnore", "prettier",
                     "babel")
# The scripts of package.json that run tests and checks (the others build, publish, serve).
JUDGING_SCRIPTS = re.compile(r"^(?:pre|post)?(?:test|lint|check|typecheck|type-check|types|coverage|unit|spec)\b")
CARGO_TABLES = ("lib", "test", "bench", "profile", "lints", "badges", "target")
# Modules of the runners and their plugins: a module of the tree named so stands in for the runner.
RUNNER_MODULES = frozenset({"pytest", "_pytest", "pluggy", "py", "unittest", "coverage", "pytest_cov", "xdist",
                            "hypothesis", "doctest", "nose", "nose2", "iniconfig", "_hypothesis_pytestplugin"})


@dataclass(frozen=True, slots=True)
class RunnerConfigParams:
    """runner-config: the files the task lets change (none when the atom does not say), and where the tests are
    (the ecosystems' test folders when it does not say)."""

    may_change: tuple[str, ...] = ()
    test_globs: tuple[str, ...] = TEST_FOLDERS

    @classmethod
    def read(cls, data: JSONObject) -> RunnerConfigParams:
        return cls(tuple(take_str_list(data, "may-change", "parameter")) if "may-change" in data else (),
                   tuple(take_str_list(data, "test-globs", "parameter")) if "test-globs" in data else TEST_FOLDERS)


async def gather(params: RunnerConfigParams, gathering: Gathering) -> Findings:
    tests = list(params.test_globs)
    findings: list[Finding] = []
    base_packages = _base_packages(gathering)
    for change in gathering.changes:
        for path in dict.fromkeys(p for p in (change.path, change.old_path) if p):
            findings += _file_findings(change, path, gathering, tests, base_packages)
    return Findings(findings=findings)


def _file_findings(change: Change, path: str, gathering: Gathering, tests: list[str],
                   base_packages: dict[str, set[str]]) -> list[Finding]:
    name = posixpath.basename(path)
    folder = posixpath.dirname(path)
    if CONFIG_FILES.match(name):
        return [Finding(path=path, what=f"a configuration of what judges the work ({name}) was {_verb(change, path)}")]
    if STARTUP_FILES.match(name):
        return [Finding(path=path, what=f"`{name}` runs in every Python process before any test")]
    startup = next((p for p in path.split("/")[:-1] if p in ("sitecustomize", "usercustomize")), None)
    if startup is not None:
        return [Finding(path=path, what=f"a `{startup}` package runs in every Python process whose path holds it, "
                                        "before any test")]
    if METADATA.search(path):
        return [Finding(path=path, what="package metadata in the tree (its entry points load plugins into the runner)")]
    if CARGO_CONFIG.search(path):
        return [Finding(path=path, what="cargo's own configuration (it sets how tests build and run: a runner, flags)")]
    if THIRD_PARTY.search(path):
        return [Finding(path=path, what="a dependency folder of the work's own (the tests would import it instead)")]
    if name == "conftest.py" and change.kind == "added" and not matches(tests, path):
        return [Finding(path=path, what="a new conftest.py outside the test folders (pytest loads it when it collects "
                                        "the folder, and its hooks configure the run)")]
    if name in ("pyproject.toml", "setup.cfg", "package.json", "Cargo.toml") and change.kind != "deleted":
        return [Finding(path=path, what=what) for what in _sections(path, change, gathering)]
    module = _module_name(path)
    if path.endswith("/__init__.py"):
        folder = posixpath.dirname(folder)  # a package: where its name is looked up is the folder above it
    if module and change.kind in ("added", "renamed") and not _is_package(gathering, folder):
        shadowed = _shadows(module, folder, base_packages)
        if shadowed:
            return [Finding(path=path, what=f"a new module `{module}` that shadows {shadowed}")]
    return []


def _verb(change: Change, path: str) -> str:
    if change.kind == "renamed":
        return "renamed" if path == change.old_path else "made by a rename"
    return {"added": "added", "deleted": "deleted"}.get(change.kind, "changed")


def _sections(path: str, change: Change, gathering: Gathering) -> list[str]:
    before = gathering.base_text(change.old_path or path) if change.kind != "added" else None
    after = gathering.text(path)
    if after is None:
        return [f"`{posixpath.basename(path)}` changed and cannot be read"]
    name = posixpath.basename(path)
    try:
        old, new = _parse(name, before), _parse(name, after)
    except ValueError:
        return [f"`{name}` no longer parses"]
    return [f"`{name}`: {key} was {'added' if key not in old else 'removed' if key not in new else 'changed'}"
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]


def _parse(name: str, text: str | None) -> dict[str, Any]:
    """The configuring sections of a shared file, by a name for each."""
    if text is None:
        return {}
    if name == "pyproject.toml":
        try:
            tool = tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(str(exc)) from None
        if not isinstance(tool, dict):
            return {}
        out = {f"[tool.{k}]": v for k, v in tool.items() if k in PYPROJECT_TOOLS}
        for name, part in PYPROJECT_PARTS.items():
            table = tool.get(name)
            if isinstance(table, dict) and part in table:
                out[f"[tool.{name}.{part}]"] = table[part]
        return out
    if name == "setup.cfg":
        parser = configparser.RawConfigParser()
        try:
            parser.read_string(text)
        except configparser.Error as exc:
            raise ValueError(str(exc)) from None
        return {f"[{s}]": dict(parser.items(s)) for s in parser.sections() if SETUP_CFG_SECTIONS.match(s)}
    if name == "package.json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        if not isinstance(data, dict):
            return {}
        scripts = data.get("scripts")
        scripts = scripts if isinstance(scripts, dict) else {}
        return {**{f'"{k}"': data[k] for k in PACKAGE_JSON_KEYS if k in data},
                **{f'the script "{k}"': v for k, v in scripts.items() if JUDGING_SCRIPTS.match(k)}}
    try:
        cargo = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None
    out = {f"[{k}]": cargo[k] for k in CARGO_TABLES if k in cargo}
    package = cargo.get("package")
    if isinstance(package, dict) and "build" in package:
        out["package.build"] = package["build"]
    workspace = cargo.get("workspace")
    if isinstance(workspace, dict) and "lints" in workspace:
        out["[workspace.lints]"] = workspace["lints"]
    return out


def _module_name(path: str) -> str | None:
    """The module a file makes where its folder is on `sys.path`: `json.py` -> json, `json/__init__.py` -> json."""
    if path.endswith("/__init__.py"):
        return posixpath.basename(posixpath.dirname(path))
    if path.endswith(".py") or path.endswith(".so"):
        return posixpath.basename(path).split(".", 1)[0]
    return None


def _is_package(gathering: Gathering, folder: str) -> bool:
    """Whether ``folder`` (the folder a new module lies in; for a package, the folder above it) is itself a
    package: its modules are then named under it and shadow nothing."""
    return False if not folder else gathering.size(f"{folder}/__init__.py") is not None


def _shadows(module: str, folder: str, base_packages: dict[str, set[str]]) -> str:
    if module.startswith("test_") or module == "conftest" or module.endswith("_test"):
        return ""
    if module in RUNNER_MODULES:
        return f"the test runner's own `{module}`"
    if module in sys.stdlib_module_names and module not in ("__main__",):
        return f"the standard library's `{module}`"
    elsewhere = base_packages.get(module, set()) - {folder}
    if elsewhere:
        return f"the package `{module}` of the base (in {', '.join(sorted(elsewhere)) or 'the top'})"
    return ""


def _base_packages(gathering: Gathering) -> dict[str, set[str]]:
    """Top-level Python packages and modules of the base, by name: the folders they lie in."""
    out: dict[str, set[str]] = {}
    for path in gathering.base_files(["**/__init__.py", "*.py", "src/*.py"]):
        if path.endswith("/__init__.py"):
            package = posixpath.dirname(path)
            parent = posixpath.dirname(package)
            if parent in ("", "src", "lib"):
                out.setdefault(posixpath.basename(package), set()).add(parent)
        elif posixpath.dirname(path) in ("", "src"):
            out.setdefault(posixpath.basename(path)[:-3], set()).add(posixpath.dirname(path))
    return out


def runner_config(params: RunnerConfigParams, evidence: Findings) -> VerifyResult:
    return judge_findings(
        params.may_change, evidence,
        head="The change configures what judges it (the test runner, the linters, what the interpreter loads first); "
             "verify uses the base's",
        advice="Restore these files and sections as the base has them, or remove what you added. If the task needs a "
               "configuration change, say so in your report; a person can let the task make it (`[scope] test-edits`).",
        ok="the runners' and checkers' configuration is the base's")


KIND = Kind("runner-config", {"may-change": "glob-list", "test-globs": "glob-list"}, RunnerConfigParams.read, Findings, gather,
            runner_config,
            optional=frozenset({"may-change", "test-globs"}))

__all__ = ["CONFIG_FILES", "KIND", "TEST_FOLDERS"]
