"""Reading a test command (`words.split`) and planning it (`plan_tests`): which runner each step starts, under
which wrapper, through which package.json script, and what the orchestrator adds. Pure: no process runs."""

from __future__ import annotations

import json

import pytest

from runtime.verify.kinds.runners.base import ReportPaths
from runtime.verify.kinds.runners.plan import MAX_SCRIPT_DEPTH, plan_tests
from runtime.verify.kinds.runners.words import Opaque, Word, render, split

PATHS = ReportPaths("/reports/step-0/report", "/support", "agent_runtime_abc", channel="/rts/report.sock",
                    key="/reports/step-0/key")
ROOT = "/work/tree"


# --- words ---------------------------------------------------------------------------------------------


def test_split_keeps_each_word_s_value_and_source() -> None:
    [simple] = split("""FOO=1 BAR='x y' pytest 'a b' "c d" e\\ f -k "not slow" """)
    assert [w.source for w in simple.assignments] == ["FOO=1", "BAR='x y'"]
    assert [w.value for w in simple.assignments] == ["FOO=1", "BAR=x y"]
    assert simple.argv == ["pytest", "a b", "c d", "e f", "-k", "not slow"]
    assert [w.source for w in simple.words] == ["pytest", "'a b'", '"c d"', "e\\ f", "-k", '"not slow"']
    assert simple.render() == """FOO=1 BAR='x y' pytest 'a b' "c d" e\\ f -k "not slow\""""


def test_split_reads_escapes_inside_double_quotes_and_adjacent_quotes_as_one_word() -> None:
    [simple] = split('''echo "a \\"b\\" \\\\ c" 'x'"y"z''')
    assert simple.argv == ["echo", 'a "b" \\ c', "xyz"]


@pytest.mark.parametrize("command, value, source", [
    ("pytest tests/test_*.py", "tests/test_*.py", "tests/test_*.py"),
    ("pytest tests/test_?.py", "tests/test_?.py", "tests/test_?.py"),
    ("pytest tests/[ab].py", "tests/[ab].py", "tests/[ab].py"),
    ("pytest tests/{a,b}.py", "tests/{a,b}.py", "tests/{a,b}.py"),
])
def test_split_keeps_a_glob_as_its_source_for_bash_to_expand(command: str, value: str, source: str) -> None:
    [simple] = split(command)
    word = simple.words[1]
    assert (word.value, word.source, word.glob) == (value, source, True)
    assert simple.render() == command


def test_a_quoted_glob_is_no_glob() -> None:
    [simple] = split("pytest 'tests/test_*.py'")
    assert simple.words[1].glob is False
    assert simple.words[1].value == "tests/test_*.py"


def test_split_joins_commands_by_and() -> None:
    commands = split("npm ci && X=1 pytest -q&&go test ./...")
    assert [c.argv for c in commands] == [["npm", "ci"], ["pytest", "-q"], ["go", "test", "./..."]]
    assert [w.source for w in commands[1].assignments] == ["X=1"]
    assert render(commands) == "npm ci && X=1 pytest -q && go test ./..."


@pytest.mark.parametrize("command, why", [
    ("pytest | tee out", "`|`"),
    ("pytest || true", "`|`"),
    ("pytest; echo done", "`;`"),
    ("pytest &", "`&`"),
    ("(pytest)", "`(`"),
    ("pytest > out.txt", "`>`"),
    ("pytest 2>&1", "`>`"),
    ("pytest < in.txt", "`<`"),
    ("pytest $(cat args)", "expands `$`"),
    ("pytest $1", "expands `$`"),
    ('pytest "$(cat args)"', "expands `$` inside double quotes"),
    ("pytest `cat args`", "expands `` ` ``"),
    ('pytest "`cat args`"', "inside double quotes"),
    ("pytest\ngo test ./...", "several lines"),
    ("pytest \\\n -q", "continues a line"),
    ("pytest # all of them", "comment"),
    ("X=1", "only sets variables"),
    ("pytest && ", "empty command"),
    ("&& pytest", "empty command"),
    ("pytest ~/tests", "`~`"),
    ("pytest 'open", "unclosed single quote"),
    ('pytest "open', "unclosed double quote"),
])
def test_split_refuses_what_it_cannot_read_exactly(command: str, why: str) -> None:
    with pytest.raises(Opaque) as caught:
        split(command)
    assert why.replace("`` ` ``", "```") in str(caught.value)


@pytest.mark.parametrize("command", ["pytest $ARGS", "pytest ${ARGS}", 'pytest -q tests && cat "$HOME/ran"'])
def test_a_variable_goes_to_bash_as_written_and_names_no_program(command: str) -> None:
    simple = split(command)
    assert render(simple) == command
    expanding = [w for s in simple for w in s.words if "$" in w.source]
    assert expanding and all(w.expands for w in expanding)
    assert plan_tests(command).steps[0].runner == "pytest"


def test_an_added_word_is_quoted_so_bash_gives_the_program_its_value() -> None:
    word = Word.added("output=/reports/a b/report")
    assert word.value == "output=/reports/a b/report"
    [simple] = split(f"mocha {word.source}")
    assert simple.argv == ["mocha", "output=/reports/a b/report"]


# --- plans ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command, runner, rendered", [
    ("pytest", "pytest", "PYTHONPATH=/support${PYTHONPATH:+:$PYTHONPATH} AGENT_RUNTIME_TEST_REPORT=/rts/report.sock AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key "
                         "pytest -p agent_runtime_abc"),
    ("uv run pytest -q", "pytest", "PYTHONPATH=/support${PYTHONPATH:+:$PYTHONPATH} "
                                   "AGENT_RUNTIME_TEST_REPORT=/rts/report.sock AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key uv run pytest -p agent_runtime_abc -q"),
    ("coverage run -m pytest tests", "pytest", "PYTHONPATH=/support${PYTHONPATH:+:$PYTHONPATH} "
                                              "AGENT_RUNTIME_TEST_REPORT=/rts/report.sock AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key coverage run -m pytest "
                                              "-p agent_runtime_abc tests"),
    ("/usr/bin/python3.11 -m pytest -x", "pytest", "PYTHONPATH=/support${PYTHONPATH:+:$PYTHONPATH} "
                                                  "AGENT_RUNTIME_TEST_REPORT=/rts/report.sock AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key /usr/bin/python3.11 -m "
                                                  "pytest -p agent_runtime_abc -x"),
    ("py.test tests/test_*.py", "pytest", "PYTHONPATH=/support${PYTHONPATH:+:$PYTHONPATH} "
                                          "AGENT_RUNTIME_TEST_REPORT=/rts/report.sock AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key py.test -p agent_runtime_abc "
                                          "tests/test_*.py"),
    ("python3 -m unittest discover", "unittest", "AGENT_RUNTIME_TEST_REPORT=/rts/report.sock AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key python3 "
                                                 "/support/agent_runtime_abc_unittest.py discover"),
    ("python -munittest -v", "unittest", "AGENT_RUNTIME_TEST_REPORT=/rts/report.sock AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key python "
                                         "/support/agent_runtime_abc_unittest.py -v"),
    ("coverage run -m unittest", "unittest", "AGENT_RUNTIME_TEST_REPORT=/rts/report.sock AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key coverage run "
                                             "/support/agent_runtime_abc_unittest.py"),
    ("c8 --100 node --test", "node --test", "AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key c8 --100 node --test --test-reporter=spec --test-reporter-destination=stdout "
                                            "--test-reporter=/support/agent_runtime_abc_node.mjs "
                                            "--test-reporter-destination=/reports/step-0/report"),
    ("node --experimental-vm-modules --test test/", "node --test",
     "AGENT_RUNTIME_REPORT_KEY=/reports/step-0/key node --experimental-vm-modules --test --test-reporter=spec --test-reporter-destination=stdout "
     "--test-reporter=/support/agent_runtime_abc_node.mjs --test-reporter-destination=/reports/step-0/report test/"),
    ("npx jest", "jest", "npx jest --json --outputFile=/reports/step-0/report"),
    ("node_modules/.bin/jest --ci", "jest", "node_modules/.bin/jest --json --outputFile=/reports/step-0/report --ci"),
    ("npx vitest run", "vitest", "npx vitest run --run --reporter=default --reporter=json "
                                 "--outputFile.json=/reports/step-0/report"),
    ("vitest", "vitest", "vitest --run --reporter=default --reporter=json --outputFile.json=/reports/step-0/report"),
    ("npx mocha -R dot --reporter-option x=1 test", "mocha",
     "npx mocha --reporter json --reporter-option output=/reports/step-0/report test 3>>/reports/step-0/report 3>&-"),
    ("_mocha", "mocha", "_mocha --reporter json --reporter-option output=/reports/step-0/report "
                        "3>>/reports/step-0/report 3>&-"),
    ("npx tape test/*.js", "tape", "npx tape test/*.js"),
    ("cargo test", "cargo test", "cargo test --no-fail-fast"),
    ("cargo +stable test", "cargo test", "cargo +stable test --no-fail-fast"),
    ("cargo test -q --workspace -- -q --format=terse --exact x", "cargo test",
     "cargo test --no-fail-fast --workspace -- --exact x"),
    ("go test ./...", "go test", "{ go test -json ./... >/reports/step-0/report; }"),
    ("go test -run X ./...", "go test", "{ go test -json -run X ./... >/reports/step-0/report; }"),
    ("go test -json -v ./...", "go test", "{ go test -json -v ./... >/reports/step-0/report; }"),
])
def test_each_runner_is_recognised_under_its_wrappers(command: str, runner: str, rendered: str) -> None:
    plan = plan_tests(command)
    assert plan.opaque == ""
    [step] = plan.steps
    assert step.runner == runner
    assert plan.runners == [runner]
    assert step.render(ROOT, PATHS) == rendered


def test_a_step_without_a_runner_runs_as_written_and_a_plan_with_none_is_opaque() -> None:
    plan = plan_tests("pip install -e . && pytest -q")
    assert [s.runner for s in plan.steps] == [None, "pytest"]
    assert plan.steps[0].render(ROOT, None) == "pip install -e ."
    none = plan_tests("make test")
    assert [s.runner for s in none.steps] == [None]
    assert "no test runner" in none.opaque


def test_an_unreadable_command_is_one_opaque_step_as_written() -> None:
    plan = plan_tests("pytest | tee log")
    assert "cannot be read exactly" in plan.opaque and "`|`" in plan.opaque
    [step] = plan.steps
    assert (step.runner, step.render(ROOT, None)) == (None, "pytest | tee log")


SCRIPTS = {
    "pretest": "node scripts/setup.js",
    "test": "jest --ci",
    "posttest": "echo done",
    "unit": "npm run inner",
    "inner": "vitest",
    "both": "npm run unit && mocha",
    "opaque": "jest | tee out",
    "lint": "eslint .",
}


def _plan(command: str, scripts: dict[str, str] | None = None) -> list[tuple[str | None, str]]:
    plan = plan_tests(command, json.dumps({"name": "x", "scripts": SCRIPTS if scripts is None else scripts}))
    assert plan.opaque == "", plan.opaque
    return [(s.runner, s.render(ROOT, PATHS)) for s in plan.steps]


BIN = "PATH=/work/tree/node_modules/.bin${PATH:+:$PATH} "
JEST = BIN + "jest --json --outputFile=/reports/step-0/report --ci"


@pytest.mark.parametrize("command", ["npm test", "npm t", "npm tst", "npm run test", "npm run-script test",
                                     "npm --silent test"])
def test_npm_test_runs_the_script_with_its_pre_and_post_scripts(command: str) -> None:
    assert _plan(command) == [(None, BIN + "node scripts/setup.js"), ("jest", JEST), (None, BIN + "echo done")]


def test_arguments_after_a_double_dash_go_to_the_script_s_last_command_quoted() -> None:
    assert _plan("npm test -- -t 'adds up' --verbose")[1] == ("jest", JEST + " -t 'adds up' --verbose")


@pytest.mark.parametrize("command", ["yarn test", "yarn run test", "pnpm test", "pnpm run test"])
def test_yarn_and_pnpm_run_the_script_alone(command: str) -> None:
    assert _plan(command) == [("jest", JEST)]


def test_pnpm_passes_arguments_after_a_double_dash() -> None:
    assert _plan("pnpm test -- x.test.js") == [("jest", JEST + " x.test.js")]


def test_a_script_that_runs_another_is_followed() -> None:
    vitest = BIN + "vitest --run --reporter=default --reporter=json --outputFile.json=/reports/step-0/report"
    assert _plan("npm run unit") == [("vitest", vitest)]
    assert _plan("yarn unit") == [("vitest", vitest)]
    mocha = BIN + "mocha --reporter json --reporter-option output=/reports/step-0/report 3>>/reports/step-0/report 3>&-"
    assert _plan("npm run both") == [("vitest", vitest), ("mocha", mocha)]


def test_the_plan_says_where_its_steps_came_from() -> None:
    plan = plan_tests("npm run unit", json.dumps({"scripts": SCRIPTS}))
    assert "`unit`: `npm run inner`" in plan.source and "`inner`: `vitest`" in plan.source


def test_a_missing_script_makes_the_plan_opaque() -> None:
    plan = plan_tests("npm run nothing", json.dumps({"scripts": SCRIPTS}))
    assert "does not define" in plan.opaque
    assert [s.runner for s in plan.steps] == [None]
    assert "does not define" in plan_tests("npm test", None).opaque
    assert "does not define" in plan_tests("npm test", "not json").opaque
    assert "does not define" in plan_tests("npm test", json.dumps({"scripts": {"test": 3}})).opaque


def test_a_script_that_cannot_be_read_makes_the_plan_opaque() -> None:
    plan = plan_tests("npm run opaque", json.dumps({"scripts": SCRIPTS}))
    assert "`opaque` (`jest | tee out`) cannot be read exactly" in plan.opaque
    assert [(s.runner, s.render(ROOT, None)) for s in plan.steps] == [(None, "npm run opaque")]


def test_a_script_with_no_runner_makes_the_plan_opaque() -> None:
    plan = plan_tests("npm run lint", json.dumps({"scripts": SCRIPTS}))
    assert "no test runner" in plan.opaque and "`lint`: `eslint .`" in plan.opaque


def _chain(length: int) -> dict[str, str]:
    scripts = {f"s{n}": f"npm run s{n + 1}" for n in range(length - 1)}
    scripts[f"s{length - 1}"] = "jest"
    return scripts


def test_scripts_are_followed_up_to_the_depth_bound_and_no_further() -> None:
    assert [r for r, _ in _plan("npm run s0", _chain(MAX_SCRIPT_DEPTH))] == ["jest"]
    plan = plan_tests("npm run s0", json.dumps({"scripts": _chain(MAX_SCRIPT_DEPTH + 1)}))
    assert f"more than {MAX_SCRIPT_DEPTH} deep" in plan.opaque
    loop = plan_tests("npm run a", json.dumps({"scripts": {"a": "npm run b", "b": "npm run a"}}))
    assert "deep" in loop.opaque


def test_other_package_manager_commands_are_no_scripts() -> None:
    plan = plan_tests("npm ci && npm test", json.dumps({"scripts": {"test": "jest"}}))
    assert [s.runner for s in plan.steps] == [None, "jest"]
    assert plan.steps[0].render(ROOT, None) == "npm ci"
    assert [s.runner for s in plan_tests("pnpm install && pnpm test", json.dumps({"scripts": {"test": "jest"}})).steps] == \
        [None, "jest"]
