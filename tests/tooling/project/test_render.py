"""runtime.tooling.project.render: the toolchain presets, which found commands a task template runs, and the files."""

import json
import tomllib

import pytest

from runtime.tooling.project.found import Found, Origin, Outcome
from runtime.tooling.project.render import GRAMMARS, ROLE_HEAD, _scope, choose, presets, task_text, toolchain_text


def _files(root, *names):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


@pytest.mark.parametrize(("names", "expected"), [
    ((".venv/pyvenv.cfg",), ["python"]),
    ((".venv/pyvenv.cfg", "uv.lock"), ["uv"]),
    ((".venv/bin/python", "uv.lock"), []),  # a folder named .venv that is no virtualenv
    (("node_modules/.bin/x",), ["node"]),
    (("go.mod",), ["go"]),
    (("Cargo.toml",), ["rust"]),
    (("Cargo.toml", "go.mod", "node_modules/x", ".venv/pyvenv.cfg"), ["python", "node", "go", "rust"]),
    (("package.json", "pyproject.toml", "requirements.txt"), []),
])
def test_presets_are_the_toolchains_the_repository_has(tmp_path, names, expected):
    _files(tmp_path, *names)
    assert presets(tmp_path) == expected


def test_toolchain_text_is_toml_declaring_the_presets_found(tmp_path):
    _files(tmp_path, "go.mod", "Cargo.toml")
    text = toolchain_text(tmp_path)
    assert tomllib.loads(text) == {"toolchain": {"presets": ["go", "rust"]}}
    assert "make-targets" not in text


def test_toolchain_text_offers_the_makefile_s_common_targets_commented_out(tmp_path):
    (tmp_path / "Makefile").write_text("deploy:\n\t./ship\ncheck: lint\nlint:\n\truff check .\n")
    text = toolchain_text(tmp_path)
    assert tomllib.loads(text) == {"toolchain": {"presets": []}}
    assert text.endswith('# make-targets = ["check", "lint"]\n')


def _outcome(command, kind, what="tox env x", status="edit-local", check=True, family=None, file="tox.ini", line=3):
    return Outcome(Found(command, kind, Origin(file, line, what), command, check, family or command.split()[0]), status)


@pytest.fixture
def repo(tmp_path):
    _files(tmp_path, ".venv/pyvenv.cfg", *(f".venv/bin/{t}" for t in ("pytest", "flake8", "black", "mypy")))
    return tmp_path


def test_choose_prefers_a_command_the_repository_writes_out_to_one_a_section_implies(repo):
    implied = _outcome("flake8", "lint", "[flake8]", file="setup.cfg")
    written = _outcome("flake8 --exclude .venv .", "lint", "make lint", file="Makefile")
    choose(repo, [implied, written])
    assert (implied.in_task, written.in_task) == ("", "check")


def test_choose_takes_the_first_test_and_one_check_per_family(repo):
    outcomes = [_outcome("pytest tests", "test"), _outcome("python3 -m pytest", "test", family="pytest"),
                _outcome("flake8 src", "lint"), _outcome("flake8 tests", "lint"), _outcome("mypy src", "type")]
    choose(repo, outcomes)
    assert [o.in_task for o in outcomes] == ["test", "", "check", "", "check"]
    assert all(o.reason == "" for o in outcomes)


def test_choose_makes_another_suite_s_tests_a_check(repo):
    _files(repo, "node_modules/.bin/jest")
    outcomes = [_outcome("pytest", "test"), _outcome("jest --ci", "test")]
    choose(repo, outcomes)
    assert [o.in_task for o in outcomes] == ["test", "check"]


def test_choose_leaves_out_what_is_refused_rewrites_files_or_is_not_installed_saying_why(repo):
    refused = _outcome("pytest -p evil", "test", status="refused")
    refused.reason = "the gate's reason"
    writes = _outcome("black .", "format", check=False)
    absent = _outcome("zz-not-installed src", "lint")
    checking = _outcome("black --check .", "format")
    test = _outcome("pytest", "test")
    choose(repo, [refused, writes, absent, checking, test])
    assert (refused.in_task, refused.reason) == ("", "the gate's reason")
    assert (writes.in_task, writes.reason) == ("", "it rewrites files, so it is no check")
    assert absent.in_task == "" and absent.reason.startswith("`zz-not-installed` is not installed here")
    assert (checking.in_task, test.in_task) == ("check", "test")  # the family black is still free


def test_choose_with_no_test_command_makes_checks_only(repo):
    outcomes = [_outcome("zz-no-runner", "test"), _outcome("mypy src", "type")]
    choose(repo, outcomes)
    assert [o.in_task for o in outcomes] == ["", "check"]
    assert task_text(repo, outcomes) is None  # no task template without a test command


@pytest.mark.parametrize(("names", "scope"), [
    ((), ["src/**"]),
    (("src/a.py", "tests/test_a.py"), ["src/**", "tests/**"]),
    (("lib/a.js", "test/a.js", "__tests__/b.js", "spec/c.js"), ["lib/**", "test/**", "__tests__/**", "spec/**"]),
    (("zpkg/__init__.py", "apkg/__init__.py", ".hidden/__init__.py", "scripts/run.py"), ["apkg/**", "zpkg/**"]),
    (("tests/__init__.py", "pkg/__init__.py"), ["tests/**", "pkg/**"]),  # each once
    (("go.mod", "cmd/main.go"), ["**/*.go"]),
    (("src/x.go", "go.mod"), ["src/**", "**/*.go"]),
])
def test_scope_is_the_sources_and_tests_an_agent_would_write(tmp_path, names, scope):
    _files(tmp_path, *names)
    assert _scope(tmp_path) == scope


def test_task_text_is_a_task_running_the_chosen_commands_each_with_its_origin(repo):
    _files(repo, "src/pkg/__init__.py", "tests/test_pkg.py")
    test = _outcome("pytest -q", "test", "tox: every environment", line=8)
    test.in_task = "test"
    lint = _outcome("flake8 src", "lint", "[flake8]", file="setup.cfg", line=4)
    lint.in_task = "check"
    typing = _outcome('mypy "src dir"', "type", "make typing", file="Makefile", line=12)
    typing.in_task = "check"
    left_out = _outcome("black .", "format")
    text = task_text(repo, [lint, left_out, test, typing])
    data = tomllib.loads(text)
    assert data["task"] == {"role": "project", "goal": "Say in one line what the change is."}
    # the base's tests are protected by default: adding tests is free, changing one needs the task's word
    assert data["scope"] == {"files-whitelist": ["src/**", "tests/**"], "test-edits": []}
    assert data["verification"] == {"test-command": "pytest -q", "check-commands": ["flake8 src", 'mypy "src dir"']}
    assert data["agent"] == {"backend": "claude-code"} and data["body"]["text"].strip()
    assert 'test-command = "pytest -q"  # tox.ini:8 (tox: every environment)' in text
    assert "test-edits = []  # add tests, do not change existing ones" in text
    assert '    "flake8 src",  # setup.cfg:4 ([flake8])' in text
    assert '    "mypy \\"src dir\\"",  # Makefile:12 (make typing)' in text


def test_the_role_head_is_a_role_extending_edit_local_and_the_grammars_readme_names_the_suffix():
    role = tomllib.loads(ROLE_HEAD)
    assert role["role"]["name"] == "project" and role["capabilities"] == {"extends": "edit-local"}
    assert "params" not in role  # the example rule is a comment
    assert "<name>.program.toml" in GRAMMARS


def _scripts(root):
    """package.json's scripts, as the scan gives them to choose."""
    return json.loads((root / "package.json").read_text())["scripts"]


def test_choose_leaves_out_a_script_the_test_script_already_runs(tmp_path):
    """`npm test` runs `npm run test:unit && npm run test:typescript`: a check of the second would run its
    type checker twice in every verify, when a lint check is there to take its place."""
    _files(tmp_path, "node_modules/.bin/tsd", "node_modules/.bin/eslint")
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {
        "test": "npm run test:unit && npm run test:typescript", "test:unit": "node --test",
        "test:typescript": "tsd", "lint": "eslint"}}))
    test = _outcome("npm test", "test", file="package.json")
    types = _outcome("npm run test:typescript", "type", file="package.json", family="tsd")
    lint = _outcome("npm run lint", "lint", file="package.json", family="eslint")
    choose(tmp_path, [test, types, lint], _scripts(tmp_path))
    assert [o.in_task for o in (test, types, lint)] == ["test", "", "check"]
    assert types.reason == "`npm test` already runs the script `test:typescript`"


def test_choose_leaves_out_a_doubled_script_even_as_the_only_check_and_the_template_says_why(tmp_path):
    """quality::check-green passes an empty list: running tsd twice in every verify buys nothing."""
    _files(tmp_path, "node_modules/.bin/tsd")
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {
        "test": "node --test && npm run test:typescript", "test:typescript": "tsd"}}))
    test = _outcome("npm test", "test", file="package.json")
    types = _outcome("npm run test:typescript", "type", file="package.json", family="tsd")
    choose(tmp_path, [test, types], _scripts(tmp_path))
    assert [(o.in_task, o.doubled) for o in (test, types)] == [("test", False), ("", True)]
    assert types.reason == "`npm test` already runs the script `test:typescript`"
    text = task_text(tmp_path, [test, types])
    assert tomllib.loads(text)["verification"] == {"test-command": "npm test", "check-commands": []}
    assert "check-commands = []  # `npm test` runs `npm run test:typescript` already" in text


def test_the_template_with_no_check_found_asks_for_one(tmp_path):
    test = _outcome("npm test", "test", file="package.json")
    test.in_task = "test"
    assert "check-commands = []  # none found: the repository's lint or type checks go here" in task_text(tmp_path, [test])


@pytest.mark.parametrize("scripts", [
    {"test": "node --test"},  # runs no other script
    {"test": "node --test; echo npm run test:typescript"},  # names it only as an argument
    {"test": "npm run test", "test:typescript": "tsd"},  # a loop, and never the check's script
])
def test_choose_keeps_a_check_the_test_script_does_not_run(tmp_path, scripts):
    _files(tmp_path, "node_modules/.bin/tsd")
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {**scripts, "test:typescript": "tsd"}}))
    test = _outcome("npm test", "test", file="package.json")
    types = _outcome("npm run test:typescript", "type", file="package.json", family="tsd")
    choose(tmp_path, [test, types], _scripts(tmp_path))
    assert [o.in_task for o in (test, types)] == ["test", "check"]


def test_a_test_command_no_runner_reads_is_judged_by_its_exit_code_and_the_template_says_why(repo):
    _files(repo, "src/pkg/__init__.py", "tests/test_pkg.py")
    test = _outcome("make check", "test", "make check", file="Makefile", line=3)
    test.in_task = "test"
    text = task_text(repo, [test])
    data = tomllib.loads(text)
    assert data["verification"]["test-results"] == "exit-code"
    assert "no test runner the runtime can read was found in `make check`" in text


def test_an_npm_test_script_the_runtime_reads_is_judged_per_test(repo):
    (repo / "package.json").write_text('{"scripts": {"test": "node --test"}}')
    test = _outcome("npm test", "test", "package.json scripts.test", file="package.json", line=1)
    test.in_task = "test"
    data = tomllib.loads(task_text(repo, [test]))
    assert "test-results" not in data["verification"]


def test_the_project_role_asks_for_each_mcp_server_the_repository_configures(repo):
    from runtime.tooling.project.render import mcp_text

    assert mcp_text(repo) == ""
    (repo / ".mcp.json").write_text('{"mcpServers": {"github": {"command": "gh"}, "docs": {"url": "http://x"}}}')
    rules = tomllib.loads(mcp_text(repo))["params"]["tools::mcp-allowlist"]["servers"]
    assert rules == [{"server": "docs", "tools": ["*"], "ask": True}, {"server": "github", "tools": ["*"], "ask": True}]
