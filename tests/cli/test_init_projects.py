"""`runtime init` on repositories laid out like real projects: the role it writes works the first time.

Each repository declares its own test, lint, type and format commands where
such projects do (tox.ini and setup.cfg; pyproject with hatch scripts and
tool sections; package.json; Cargo.toml; go.mod; pre-commit and a GitHub
workflow). Its `.venv` holds the real tools (this installation's pytest,
flake8, mypy, ruff, black, coverage), so what init finds installed is what
is. For each: init writes the role, the toolchain and a task template whose
commands are the repository's own; `runtime lint` passes; `runtime explain
--role project` allows every command init says it allowed, and refuses the
neighbours its rules must not let through; lint refuses a task whose check
command the role refuses.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import require, run_cli

# Each test builds a real project with its own toolchain (uv, npm, cargo, go) before runtime init reads it.
pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def _repo(tmp_path: Path, files: dict[str, str], tools: tuple[str, ...] = (), uv: bool = False) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if tools:
        (repo / ".venv/bin").mkdir(parents=True)
        (repo / ".venv/pyvenv.cfg").write_text(f"home = {Path(sys.base_prefix) / 'bin'}\n")
        for tool in tools:
            (repo / ".venv/bin" / tool).symlink_to(BIN / tool)
    if uv:
        (repo / "uv.lock").write_text("version = 1\n")
    return repo


def _init(repo: Path) -> dict:
    proc = run_cli("init", "--json", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _task(repo: Path) -> dict:
    return tomllib.loads((repo / ".agent-runtime/tasks/example.toml").read_text())["verification"]


def _explain(repo: Path, command: str) -> subprocess.CompletedProcess:
    return run_cli("explain", "--role", "project", command, cwd=repo)


def _works(repo: Path, report: dict) -> dict:
    """The catalog init wrote lints clean, and every command it reports allowed is allowed by the gate."""
    folder = repo / ".agent-runtime"
    assert {p for p in ("roles/project.toml", "toolchain.toml", "tasks/example.toml", "programs/README")
            if (folder / p).is_file()} == {"roles/project.toml", "toolchain.toml", "tasks/example.toml", "programs/README"}
    lint = run_cli("lint", cwd=repo)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "1 task" in lint.stdout  # the template in tasks/ is linted by default
    allowed = [c["command"] for c in report["commands"] if c["allowed"] != "refused"]
    for command in allowed:
        proc = _explain(repo, command)
        assert proc.returncode == 0, f"{command}: {proc.stdout}"
    task = _task(repo)
    assert {task["test-command"], *task.get("check-commands", [])} <= set(allowed)
    return task


def _by_command(report: dict) -> dict[str, dict]:
    return {c["command"]: c for c in report["commands"]}


TOX_INI = """[tox]
envlist = py{311,312}, lint, typing, docs

[testenv]
deps =
    pytest
commands =
    pytest {posargs:tests}

[testenv:lint]
deps = flake8
commands =
    flake8 src tests
    codespell src

[testenv:typing]
commands = mypy {posargs:src}

[testenv:docs]
commands = sphinx-build -W -b html docs docs/_build
"""

SETUP_CFG = """[metadata]
name = pkg

[tool:pytest]
testpaths = tests

[flake8]
max-line-length = 100
"""


def test_a_tox_and_setup_cfg_project(tmp_path):
    repo = _repo(tmp_path, {"tox.ini": TOX_INI, "setup.cfg": SETUP_CFG, "src/pkg/__init__.py": "",
                            "tests/test_pkg.py": "def test_a():\n    pass\n"}, tools=("pytest", "flake8", "mypy"))
    report = _init(repo)
    assert report["read"] == ["tox.ini", "setup.cfg"]
    found = _by_command(report)
    assert found["pytest tests"]["written"] == "pytest {posargs:tests}" and found["pytest tests"]["from"] == "tox.ini:8"
    assert found["flake8 src tests"]["what"] == "tox env lint" and found["mypy src"]["kind"] == "type"
    assert "sphinx-build -W -b html docs docs/_build" not in found  # the docs environment builds, it does not check
    # codespell has no grammar: a rule for exactly what tox runs; it is not installed, so no task runs it.
    assert found["codespell src"]["allowed"] == "rule" and found["codespell src"]["task"] is None
    assert found["codespell src"]["rule"] == {"program": "codespell", "subcommands": ["src"], "positionals": []}
    assert "not installed" in found["codespell src"]["reason"]
    task = _works(repo, report)
    assert task == {"test-command": "pytest tests", "check-commands": ["flake8 src tests", "mypy src"]}
    assert (repo / ".agent-runtime/toolchain.toml").read_text().count('presets = ["python"]') == 1
    assert _explain(repo, "codespell src --write-changes").returncode == 3  # exactly the command found; any other is asked
    assert _explain(repo, "codespell").returncode == 3
    # A task whose check command the role refuses does not lint.
    bad = (repo / ".agent-runtime/tasks/example.toml").read_text().replace(
        '"flake8 src tests",', '"flake8 src tests",\n    "codespell --write-changes src",')
    (repo / "bad.toml").write_text(bad)
    lint = run_cli("lint", "bad.toml", cwd=repo)
    assert lint.returncode == 1
    (error,) = [line for line in lint.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: bad.toml:17: no rule of role `project` decides the check command "
                            "`codespell --write-changes src` (strict mode)")
    assert "`runtime allow 'codespell --write-changes src' --role project` writes the rule" in error


PYPROJECT_HATCH = """[project]
name = "pkg"
version = "0.1"

[project.scripts]
pkg = "pkg:main"

[tool.hatch.envs.default]
dependencies = ["pytest", "coverage"]

[tool.hatch.envs.default.scripts]
test = "pytest {args:tests}"
test-cov = "coverage run -m pytest {args:tests}"
cov = ["test-cov", "coverage report"]

[tool.hatch.envs.lint.scripts]
typing = "mypy --install-types --non-interactive {args:src/pkg tests}"
style = ["ruff check {args:.}", "black --check --diff {args:.}"]
fmt = ["black {args:.}", "ruff check --fix {args:.}", "style"]

[tool.pytest.ini_options]
addopts = "-ra"

[tool.ruff]
line-length = 100

[tool.ruff.format]
quote-style = "double"

[tool.mypy]
files = ["src/pkg"]
"""


def test_a_pyproject_project_with_hatch_scripts_and_tool_sections(tmp_path):
    repo = _repo(tmp_path, {"pyproject.toml": PYPROJECT_HATCH, "src/pkg/__init__.py": "", "tests/test_pkg.py": ""},
                 tools=("pytest", "ruff", "mypy", "coverage", "black"))
    report = _init(repo)
    found = _by_command(report)
    assert found["pytest tests"]["what"] == "hatch script default:test"
    assert found["coverage run -m pytest tests"]["kind"] == "test"  # through `cov`, which names `test-cov`
    # `fmt` runs black and ruff --fix, which rewrite: their checking forms; `style` is a script of its environment.
    assert found["black --check ."]["written"] == "black {args:.}"
    assert found["ruff check ."]["written"] == "ruff check {args:.}"
    # mypy's grammar does not take --install-types (it installs packages): refused, with the gate's reason.
    typing = found["mypy --install-types --non-interactive src/pkg tests"]
    assert typing["allowed"] == "refused" and "--install-types" in typing["reason"]
    assert found["mypy"]["from"].startswith("pyproject.toml:") and found["mypy"]["what"] == "[tool.mypy]"
    assert "pkg" not in {c["command"] for c in report["commands"]}  # [project.scripts] are no test commands
    task = _works(repo, report)
    assert task == {"test-command": "pytest tests",
                    "check-commands": ["ruff check .", "black --check --diff .", "ruff format --check .", "mypy"]}
    assert _explain(repo, "mypy --install-types --non-interactive src/pkg tests").returncode == 3
    role = (repo / ".agent-runtime/roles/project.toml").read_text()
    assert '[[params."tools::bash-allowlist".rules]]\nprogram' not in role  # edit-local allows all the rest


PACKAGE_JSON = {
    "name": "probe", "version": "1.0.0", "private": True,
    "scripts": {"test": "node --test", "lint": "eslint .", "format": "prettier --write .",
                "format:check": "prettier --check .", "typecheck": "tsc --noEmit", "build": "tsc",
                "deploy": "node scripts/deploy.js"},
    "devDependencies": {"eslint": "^9.0.0", "prettier": "^3.0.0", "typescript": "^5.0.0"},
}


def test_a_package_json_project(tmp_path):
    require(shutil.which("npm") is not None, "npm is not installed")
    tools = {f"node_modules/.bin/{name}": "" for name in ("eslint", "prettier", "tsc")}
    repo = _repo(tmp_path, {"package.json": json.dumps(PACKAGE_JSON, indent=2), "src/index.js": "",
                            "test/index.test.js": "", **tools})
    report = _init(repo)
    found = _by_command(report)
    assert found["npm run format:check"]["allowed"] == "rule"
    assert found["npm run format:check"]["rule"] == {"program": "npm", "grammar": "npm", "subcommands": ["run format:check"]}
    assert found["npm run format"]["allowed"] == "rule" and found["npm run format"]["task"] is None  # it writes
    assert found["npm run format"]["from"] == "package.json:8"
    task = _works(repo, report)
    assert task == {"test-command": "npm test", "check-commands": ["npm run lint", "npm run typecheck", "npm run format:check"]}
    assert _explain(repo, "npm run build").returncode == 0  # edit-local's npm rules are restated, not lost
    assert _explain(repo, "npm ls").returncode == 0
    assert _explain(repo, "npm run deploy").returncode == 3  # only the scripts found; any other is asked
    assert 'presets = ["node"]' in (repo / ".agent-runtime/toolchain.toml").read_text()


def test_a_script_whose_tools_are_not_installed_is_left_out_of_the_task_saying_why(tmp_path):
    require(shutil.which("npm") is not None, "npm is not installed")
    repo = _repo(tmp_path, {"package.json": json.dumps(PACKAGE_JSON, indent=2), "src/index.js": "",
                            "node_modules/.bin/tsc": ""})
    found = _by_command(_init(repo))
    assert found["npm test"]["task"] == "test"  # node is the system's
    assert found["npm run typecheck"]["task"] == "check"
    assert found["npm run lint"]["task"] is None
    assert "the script `lint` runs `eslint`, which node_modules/.bin does not have" in found["npm run lint"]["reason"]


def test_a_cargo_project(tmp_path):
    require(shutil.which("cargo") is not None, "cargo is not installed")
    repo = _repo(tmp_path, {"Cargo.toml": '[package]\nname = "probe"\nversion = "0.1.0"\nedition = "2021"\n',
                            "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n", "tests/add.rs": "",
                            "rustfmt.toml": "edition = \"2021\"\n"})
    report = _init(repo)
    assert [(c["command"], c["kind"], c["from"]) for c in report["commands"]] == [
        ("cargo test", "test", "Cargo.toml:1"), ("cargo clippy", "lint", "Cargo.toml:1"),
        ("cargo fmt --check", "format", "rustfmt.toml:1")]
    task = _works(repo, report)
    checks = [c for c, helper in (("cargo clippy", "cargo-clippy"), ("cargo fmt --check", "cargo-fmt")) if shutil.which(helper)]
    assert task == {"test-command": "cargo test", "check-commands": checks}
    assert 'presets = ["rust"]' in (repo / ".agent-runtime/toolchain.toml").read_text()
    assert _explain(repo, "cargo install ripgrep").returncode == 3


def test_a_cargo_project_without_rustfmt_configuration_is_not_given_rustfmt_s_check(tmp_path):
    # a crate never formatted by this rustfmt fails `cargo fmt --check` at its base: every change would fail
    repo = _repo(tmp_path, {"Cargo.toml": '[package]\nname = "probe"\nversion = "0.1.0"\nedition = "2021"\n',
                            "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a +\n        b\n}\n"})
    report = _init(repo)
    assert [c["command"] for c in report["commands"]] == ["cargo test", "cargo clippy"]


def test_a_go_module(tmp_path):
    require(shutil.which("go") is not None, "go is not installed")
    repo = _repo(tmp_path, {"go.mod": "module example.com/probe\n\ngo 1.21\n",
                            "probe.go": "package probe\n\nfunc Add(a, b int) int { return a + b }\n"})
    report = _init(repo)
    task = _works(repo, report)
    assert task == {"test-command": "go test -v ./...", "check-commands": ["go vet ./..."]}  # -v: a count to read
    assert 'presets = ["go"]' in (repo / ".agent-runtime/toolchain.toml").read_text()
    assert (repo / ".agent-runtime/tasks/example.toml").read_text().count('files-whitelist = ["**/*.go"]') == 1


def test_a_project_with_a_test_command_and_no_checks_gets_a_template_that_lints(tmp_path):
    """The first spawn starts from the template: with no check found it still names the key its role needs."""
    repo = _repo(tmp_path, {"Makefile": "test:\n\tpython3 -m unittest discover -s tests -v\n",
                            "tests/test_probe.py": "import unittest\n"})
    report = _init(repo)
    task = _works(repo, report)
    assert task == {"test-command": "python3 -m unittest discover -s tests -v", "check-commands": []}


PRE_COMMIT = """repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.4.4
    hooks:
      - id: ruff
        args: [--fix]
      - id: ruff-format
  - repo: https://github.com/pre-commit/mirrors-mypy
    rev: v1.10.0
    hooks:
      - id: mypy
        additional_dependencies:
          - types-requests
  - repo: https://github.com/pre-commit/pre-commit-hooks
    rev: v4.6.0
    hooks:
      - id: trailing-whitespace
"""

WORKFLOW = """name: CI
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python: ["3.11", "3.12"]
    steps:
      - uses: actions/checkout@v4
      - uses: astral-sh/setup-uv@v5
      - run: uv sync --all-extras
      - name: Test
        run: |
          uv run pytest -q tests
          uv run pytest --cov=pkg --cov-report=xml:${{ runner.temp }}/cov.xml
      - name: Lint
        run: >-
          uv run flake8
          pkg tests
      - run: "uv run pre-commit run --all-files"
      - run: cd docs && make html
      - run: PYTHONPATH=. uv run pytest -q
"""


def test_a_pre_commit_and_github_workflow_project_managed_by_uv(tmp_path):
    repo = _repo(tmp_path, {".pre-commit-config.yaml": PRE_COMMIT, ".github/workflows/ci.yml": WORKFLOW,
                            "pkg/__init__.py": "", "tests/test_pkg.py": ""},
                 tools=("pytest", "ruff", "mypy", "flake8"), uv=True)
    report = _init(repo)
    assert report["read"] == [".pre-commit-config.yaml", ".github/workflows/ci.yml"]
    found = _by_command(report)
    assert found["ruff check ."]["what"] == "pre-commit hook ruff"  # without the hook's --fix
    assert found["mypy pkg"]["kind"] == "type"  # the package found at the root
    test = found["uv run --no-sync pytest -q tests"]
    assert test["written"] == "uv run pytest -q tests" and test["from"] == ".github/workflows/ci.yml:15"
    assert found["uv run --no-sync flake8 pkg tests"]["from"] == ".github/workflows/ci.yml:19"
    assert found["PYTHONPATH=. uv run --no-sync pytest -q"]["allowed"] == "refused"
    left = {item["written"]: item["why"] for item in report["left-out"]}
    assert "`${{ }}`" in left["uv run pytest --cov=pkg --cov-report=xml:${{ runner.temp }}/cov.xml"]
    assert "uv sync --all-extras" not in left and "cd docs && make html" not in left  # not checks: not listed
    task = _works(repo, report)
    assert task == {"test-command": "uv run --no-sync pytest -q tests",
                    "check-commands": ["ruff check .", "ruff format --check .", "mypy pkg",
                                       "uv run --no-sync flake8 pkg tests"]}
    assert 'presets = ["uv"]' in (repo / ".agent-runtime/toolchain.toml").read_text()


NOXFILE = """import nox

open("imported", "w").write("noxfile.py was run")


@nox.session(python=["3.11", "3.12"])
def tests(session):
    session.install("-e", ".[test]")
    session.run("pytest", "-q", *session.posargs)


@nox.session(name="lint")
def lint_session(s):
    s.run("flake8", "src")
    s.run("pytest", "--basetemp", str(s.create_tmp()))
"""


def test_a_noxfile_is_read_never_run_and_runners_become_what_they_run(tmp_path):
    makefile = "PYTHON ?= python3\n\ntest:\n\t@nox -s tests\n\nlint:\n\tnox -s lint\n\ndeploy:\n\t./ship\n"
    repo = _repo(tmp_path, {"noxfile.py": NOXFILE, "Makefile": makefile, "src/pkg/__init__.py": ""},
                 tools=("pytest", "flake8"))
    report = _init(repo)
    assert not (repo / "imported").exists()
    found = _by_command(report)
    assert found["pytest -q"]["from"] == "noxfile.py:9" and found["pytest -q"]["what"] == "nox session tests"
    assert found["flake8 src"]["what"] == "nox session lint"
    left = {item["written"]: item["why"] for item in report["left-out"]}
    assert left["pytest --basetemp {computed}"] == "an argument is computed when the session runs"
    assert '# make-targets = ["test", "lint"]' in (repo / ".agent-runtime/toolchain.toml").read_text()
    _works(repo, report)


def test_a_file_init_cannot_read_is_one_line_and_nothing_is_written(tmp_path):
    repo = _repo(tmp_path, {"pyproject.toml": '[project]\nname = "pkg"\n\n[tool.pytest.ini_options\n'})
    proc = run_cli("init", cwd=repo)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: pyproject.toml:4: not TOML this runtime can read")
    assert len(proc.stderr.splitlines()) == 1
    assert not (repo / ".agent-runtime").exists()


def test_plain_output_names_each_command_and_where_it_came_from(tmp_path):
    repo = _repo(tmp_path, {"tox.ini": TOX_INI, "src/pkg/__init__.py": ""}, tools=("pytest", "flake8", "mypy"))
    proc = run_cli("init", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "read: tox.ini"
    assert ("test    pytest tests  from tox.ini:8 (tox: every environment); written `pytest {posargs:tests}`; "
            "edit-local allows it; task: test command") in lines
    assert any(line.startswith("lint    codespell src  from tox.ini:14 (tox env lint); a new rule of the role allows it; "
                               "not in the task: `codespell` is not installed here") for line in lines)
    assert "wrote .agent-runtime/tasks/example.toml" in lines


def test_report_options_are_dropped_from_the_repository_s_command_saying_so_on_the_terminal(tmp_path):
    tox = ("[tox]\nenvlist = py\n\n[testenv]\ndeps = pytest\ncommands = pytest --cov=pkg --cov-report html "
           "--cov-report term --junitxml=report.xml {posargs:tests}\n")
    repo = _repo(tmp_path, {"tox.ini": tox, "src/pkg/__init__.py": "", "tests/test_pkg.py": "def test_a():\n    pass\n"},
                 tools=("pytest",))
    report = _init(repo)
    (found,) = [c for c in report["commands"] if c["kind"] == "test"]
    assert found["command"] == "pytest --cov=pkg --cov-report=term tests" and found["allowed"] != "refused"
    assert found["dropped"] == ["--cov-report html", "--junitxml=report.xml"]
    assert _task(repo)["test-command"] == "pytest --cov=pkg --cov-report=term tests"  # kept, not a bare `pytest`
    shutil.rmtree(repo / ".agent-runtime")
    plain = run_cli("init", cwd=repo)
    (said,) = [ln for ln in plain.stdout.splitlines() if ln.startswith("translated: ")]
    assert "runs as `pytest --cov=pkg --cov-report=term tests`" in said
    assert "dropped `--cov-report html`, `--junitxml=report.xml`, a report file verify never reads" in said


def test_init_warns_when_git_would_not_track_what_it_wrote(tmp_path):
    repo = _repo(tmp_path, {".gitignore": ".*\n!.gitignore\n", "tests/test_a.py": "def test_a():\n    pass\n",
                            "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n"}, tools=("pytest",))
    plain = run_cli("init", cwd=repo)
    assert plain.returncode == 0, plain.stderr
    (warning,) = [ln for ln in plain.stdout.splitlines() if ln.startswith("warning: ")]
    assert "git ignores .agent-runtime/" in warning and "(.gitignore:1: `.*`)" in warning
    assert "add `!.agent-runtime/` to the .gitignore" in warning
    shutil.rmtree(repo / ".agent-runtime")
    (repo / ".gitignore").write_text(".*\n!.gitignore\n!.agent-runtime/\n")
    doc = _init(repo)
    assert doc["ignored-by-git"] == []


def test_probe_runs_the_template_at_the_base_and_sets_the_count_and_the_baseline(tmp_path):
    from tests.support import git, have_bwrap

    have_bwrap()
    repo = _repo(tmp_path, {"pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
                            "src/calc.py": "def add(a, b):\n    return a - b\n",
                            "tests/test_calc.py": ("import sys\nsys.path.insert(0, 'src')\nfrom calc import add\n\n\n"
                                                   "def test_zero():\n    assert add(0, 0) == 0\n\n\n"
                                                   "def test_two():\n    assert add(1, 1) == 2\n")},
                 tools=("pytest",))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "src/calc.py").write_text("def add(a, b):\n    return a + b\n")  # not committed: the base is HEAD
    doc = json.loads(run_cli("init", "--json", "--probe", cwd=repo).stdout)
    assert doc["probe"]["passed"] == 1 and doc["probe"]["baseline"] is True
    task = _task(repo)
    assert task["test-count-min"] == 1 and task["baseline"] is True
    assert "1 of 2 pass" in " ".join(doc["probe"]["said"])
    assert git(repo, "worktree", "list").count("\n") == 0  # the probe's tree is gone
    assert (repo / "src/calc.py").read_text().endswith("a + b\n")  # the working folder as it was


def test_probe_names_the_ignored_files_a_worktree_lacks_where_it_passes_fewer_tests_than_the_checkout(tmp_path):
    """Tests that read a file a build step makes and git ignores (compiled translations, a generated parser) pass
    in the person's checkout and fail in every worktree: the probe runs them both ways, names the files and
    offers the `[worktree]` lines; caches and the toolchain's folders are never named."""
    from tests.support import git, have_bwrap

    have_bwrap()
    test = ("import json, pathlib\n\n\ndef test_plain():\n    assert True\n\n\n"
            "def test_messages():\n    data = json.loads(pathlib.Path('locale/fr.json').read_text())\n"
            "    assert data['hello'] == 'bonjour'\n")
    repo = _repo(tmp_path, {"pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
                            ".gitignore": "locale/*.json\n__pycache__/\n.venv/\n",
                            "locale/fr.po": 'msgid "hello"\nmsgstr "bonjour"\n', "tests/test_i18n.py": test},
                 tools=("pytest",))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "locale/fr.json").write_text('{"hello": "bonjour"}')  # what `make messages` writes, ignored by git
    (repo / "tests/__pycache__").mkdir(exist_ok=True)
    (repo / "tests/__pycache__/x.pyc").write_bytes(b"cache")
    doc = json.loads(run_cli("init", "--json", "--probe", cwd=repo).stdout)
    probe = doc["probe"]
    assert probe["passed"] == 1 and probe["with-checkout"] == 2, probe
    assert probe["lacking"] == ["locale/fr.json"], probe
    assert probe["worktree-lines"].startswith('[worktree]\ninclude = ["locale/fr.json"]')
    said = " ".join(probe["said"])
    assert "a fresh worktree passes 1 test(s) fewer than one with the files your checkout has and git ignores" in said
    assert "`runtime init --probe` again sets test-count-min to 2" in said
    assert _task(repo)["test-count-min"] == 1  # what every worktree passes now
    assert git(repo, "worktree", "list").count("\n") == 0
    # The lines declared, the probe run again over the catalog there: every worktree passes them all now.
    toolchain = repo / ".agent-runtime/toolchain.toml"
    toolchain.write_text(toolchain.read_text() + "\n" + probe["worktree-lines"])
    again = json.loads(run_cli("init", "--json", "--probe", cwd=repo).stdout)["probe"]
    assert again["passed"] == 2 and again["lacking"] == [], again
    assert _task(repo)["test-count-min"] == 2


def test_init_declares_the_version_file_a_build_backend_writes_and_offers_the_lockfile_s_install(tmp_path):
    pyproject = ('[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n\n'
                 '[project]\nname = "pkg"\ndynamic = ["version"]\n\n[tool.hatch.build.hooks.vcs]\n'
                 'version-file = "src/pkg/_version.py"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    repo = _repo(tmp_path, {"pyproject.toml": pyproject, ".gitignore": "src/pkg/_version.py\n", "uv.lock": "version = 1\n",
                            "src/pkg/__init__.py": "from pkg._version import version\n",
                            "tests/test_pkg.py": "def test_a():\n    pass\n"}, tools=("pytest",))
    before = run_cli("init", cwd=repo)
    assert "this checkout has none yet: install the project once" in before.stdout  # not made yet: said, not declared
    assert "# include = [\"src/pkg/_version.py\"]" in (repo / ".agent-runtime/toolchain.toml").read_text()
    shutil.rmtree(repo / ".agent-runtime")
    (repo / "src/pkg/_version.py").write_text("version = '0.1'\n")  # as an install writes it
    after = run_cli("init", cwd=repo)
    assert "`src/pkg/_version.py` (pyproject.toml [tool.hatch.build.hooks.vcs] version-file)" in after.stdout
    toolchain = tomllib.loads((repo / ".agent-runtime/toolchain.toml").read_text())
    assert toolchain["worktree"] == {"include": ["src/pkg/_version.py"]}  # setup offered, commented out
    assert '# setup = ["uv sync --frozen"]' in (repo / ".agent-runtime/toolchain.toml").read_text()
    assert run_cli("lint", cwd=repo).returncode == 0


def test_two_commands_of_one_program_whose_grammar_refuses_them_do_not_break_the_role(tmp_path):
    """bleach's tox.ini and Makefile both run black with `--exclude`, which black's grammar refuses: init once
    wrote the parent's own rule again for each, a role that does not compile; now both are reported refused."""
    tox = ("[tox]\nenvlist = py\n\n[testenv]\ndeps = pytest\ncommands = pytest {posargs:-v}\n\n[testenv:format]\n"
           "commands = black --target-version=py38 --check --diff --exclude=_vendor src tests\n")
    make = "lint:\n\tblack --target-version=py37 --exclude=_vendor src tests\n"
    repo = _repo(tmp_path, {"tox.ini": tox, "Makefile": make, "src/pkg/__init__.py": "",
                            "tests/test_a.py": "def test_a():\n    pass\n"}, tools=("pytest", "black"))
    report = _init(repo)
    blacks = [c for c in report["commands"] if c["command"].startswith("black")]
    assert len(blacks) == 2 and all(c["allowed"] == "refused" for c in blacks), blacks
    assert all("the program's grammar refuses these arguments" in c["reason"] for c in blacks)
    assert run_cli("lint", cwd=repo).returncode == 0
