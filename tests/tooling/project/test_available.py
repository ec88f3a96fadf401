"""runtime.tooling.project.available: whether a command's program is there to run, found without running anything."""

import json
import shutil

import pytest

from runtime.tooling.project import available
from runtime.tooling.project.available import SYSTEM_PATH, missing


class Host(set):
    """The programs the host has, by name, and what was asked of `shutil.which`."""

    def __init__(self):
        super().__init__()
        self.calls: list[tuple[str, str | None]] = []

    def which(self, name, mode=None, path=None):
        self.calls.append((name, path))
        return f"/usr/bin/{name}" if name in self else None


@pytest.fixture
def system(monkeypatch):
    """The host has nothing but what a test puts here."""
    host = Host()
    monkeypatch.setattr(shutil, "which", host.which)
    return host


def _files(root, *names):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def test_a_program_in_the_venv_or_node_modules_is_there(tmp_path, system):
    _files(tmp_path, ".venv/bin/pytest", "node_modules/.bin/eslint")
    assert missing(tmp_path, "pytest -q") is None
    assert missing(tmp_path, "eslint .") is None
    assert system.calls == []  # found in the repository's folders: the system is not asked


def test_a_program_of_the_system_is_looked_for_in_the_sandbox_s_path_only(tmp_path, system):
    system.add("shellcheck")
    assert missing(tmp_path, "shellcheck scripts") is None
    assert system.calls == [("shellcheck", SYSTEM_PATH)]


@pytest.mark.parametrize(("folders", "where"), [
    ((), "no .venv or node_modules"),
    ((".venv",), ".venv/bin, node_modules/.bin"),
    (("node_modules",), ".venv/bin, node_modules/.bin"),
])
def test_a_missing_program_says_where_it_was_looked_for(tmp_path, system, folders, where):
    for folder in folders:
        (tmp_path / folder).mkdir()
    assert missing(tmp_path, "codespell src") == f"`codespell` is not installed here ({where}, /usr/local/bin, /usr/bin, /bin)"


@pytest.mark.parametrize("command", ["FOO=1 pytest", "A=1 B=2 uv run --no-sync pytest -q", "uv run --no-sync pytest"])
def test_variables_and_uv_run_are_not_the_program(tmp_path, system, command):
    _files(tmp_path, ".venv/bin/pytest")
    assert missing(tmp_path, command) is None


@pytest.mark.parametrize("command", ["", "FOO=1", "uv run --no-sync"])
def test_a_command_of_no_program_has_nothing_to_run(tmp_path, system, command):
    assert missing(tmp_path, command) == "nothing to run"


@pytest.mark.parametrize("module", ["json.tool", "unittest", "venv_pkg", "venv_pkg.sub", "venv_single"])
def test_a_module_run_with_m_is_found_in_the_standard_library_or_the_venv(tmp_path, system, module):
    _files(tmp_path, ".venv/bin/python3", ".venv/lib/python3.11/site-packages/venv_pkg/__init__.py",
           ".venv/lib/python3.11/site-packages/venv_single.py")
    assert missing(tmp_path, f"python3 -m {module} -v") is None


def test_a_module_not_in_the_venv_is_missing(tmp_path, system):
    _files(tmp_path, ".venv/bin/python", ".venv/lib/python3.12/site-packages/other/__init__.py")
    assert missing(tmp_path, "python -m pytest") == "the module `pytest` is not installed in .venv"


def test_without_a_venv_a_module_is_looked_for_in_the_system_s_python(tmp_path, system):
    system.add("python3")
    assert missing(tmp_path, "python3 -m zz_no_such_module") == (
        "the module `zz_no_such_module` is not installed in the system's Python (no .venv)")


def test_python_that_is_not_there_runs_no_module(tmp_path, system):
    assert missing(tmp_path, "python -m json.tool") == "python is not installed"


@pytest.mark.parametrize(("present", "command", "why"), [
    ({"cargo", "cargo-clippy", "cargo-fmt"}, "cargo clippy", None),
    ({"cargo"}, "cargo test", None),
    (set(), "cargo test", "cargo is not installed on this machine"),
    ({"cargo"}, "cargo clippy -- -D warnings",
     "`cargo clippy` needs cargo-clippy, which is not installed (rustup component add clippy)"),
    ({"cargo"}, "cargo --locked fmt --check",
     "`cargo fmt` needs cargo-fmt, which is not installed (rustup component add rustfmt)"),
    ({"go"}, "go test -v ./...", None),
    (set(), "go vet ./...", "go is not installed on this machine"),
    (set(), "npm test", "npm is not installed on this machine"),
])
def test_cargo_go_and_npm_are_the_host_s(tmp_path, system, present, command, why):
    system.update(present)
    assert missing(tmp_path, command) == why


def _package(root, scripts, dev=True):
    data = {"name": "x", "scripts": scripts, **({"devDependencies": {"eslint": "^9"}} if dev else {})}
    (root / "package.json").write_text(json.dumps(data))


def test_npm_with_dev_dependencies_never_installed_says_to_install_them(tmp_path, system):
    system.add("npm")
    _package(tmp_path, {"test": "node --test"})
    assert missing(tmp_path, "npm test") == ("node_modules is missing: install the packages (npm install), then run "
                                             "`runtime init` again")
    (tmp_path / "node_modules").mkdir()
    system.add("node")
    assert missing(tmp_path, "npm test") is None


@pytest.mark.parametrize(("scripts", "command", "name", "absent"), [
    ({"lint": "eslint ."}, "npm run lint", "lint", "eslint"),
    ({"test": "c8 --reporter=text mocha"}, "npm test", "test", "c8"),
    ({"test": "node --test", "lint": "tsc --noEmit && eslint ."}, "npm run lint", "lint", "eslint"),
    # scripts calling scripts: the one that runs it is named
    ({"check": "npm run lint", "lint": "FORCE_COLOR=0 eslint ."}, "npm run check", "lint", "eslint"),
])
def test_npm_script_running_a_program_nobody_installed_says_which(tmp_path, system, scripts, command, name, absent):
    system.update({"npm", "node"})
    _files(tmp_path, "node_modules/.bin/tsc")
    _package(tmp_path, scripts)
    assert missing(tmp_path, command) == (f"the script `{name}` runs `{absent}`, which node_modules/.bin does not "
                                          "have: install the dev dependencies (npm install), then run `runtime init` again")


@pytest.mark.parametrize(("scripts", "command"), [
    ({"lint": "eslint ."}, "npm run lint"),  # installed
    ({"lint": "./scripts/lint.sh"}, "npm run lint"),  # not a plain program name: left to the run
    ({"lint": "echo 'a && b' | grep -q a"}, "npm run lint"),  # what does not split into plain commands
    ({"lint": "npm run lint"}, "npm run lint"),  # a cycle is not followed forever
    ({"lint": "eslint ."}, "npm run nothing"),  # no such script: left to the run
    ({"lint": "eslint ."}, "npm ls"),  # runs no script
])
def test_npm_scripts_that_can_start_or_cannot_be_judged_are_not_missing(tmp_path, system, scripts, command):
    system.update({"npm", "echo", "grep"})
    _files(tmp_path, "node_modules/.bin/eslint")
    _package(tmp_path, scripts)
    assert missing(tmp_path, command) is None


def test_npm_script_of_a_package_json_that_cannot_be_read_is_left_to_the_run(tmp_path, system):
    system.add("npm")
    (tmp_path / "package.json").write_text("{not json")
    assert available._npm_script(tmp_path, ["run", "lint"]) is None
    (tmp_path / "package.json").write_text('["no", "table"]')
    assert available._npm_script(tmp_path, ["run", "lint"]) is None
