"""jest, vitest, mocha and tape run for real, at the pinned versions the `js_runners` fixture installs, each
project's `node_modules` a link to that install."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.verify.kinds.runners.conftest import link_js_runners
from tests.verify.kinds.runners.harness import green, run, write

pytestmark = pytest.mark.slow

BDD = """
    describe('outer', () => {
      describe('inner', () => {
        it('deep', () => {});
      });
      it('passes', () => { if (1 + 1 !== 2) throw new Error('math'); });
      it('fails', () => { throw new Error('really broken'); });
      it.skip('skipped', () => {});
      %s
    });
    it('top level', () => {});
"""
SYNTAX_ERROR = "const x = ;\n"


def _project(root: Path, node_modules: Path, script: str, files: dict[str, str]) -> Path:
    link_js_runners(root, node_modules)
    return write(root, {"package.json": json.dumps({"name": "demo", "version": "1.0.0", "scripts": {"test": script}}),
                        **files})


# --- jest ----------------------------------------------------------------------------------------------

JEST_OUTCOMES = {
    "test/a.test.js > outer > inner > deep": "passed",
    "test/a.test.js > outer > passes": "passed",
    "test/a.test.js > outer > fails": "failed",
    "test/a.test.js > outer > skipped": "skipped",
    "test/a.test.js > outer > later": "skipped",
    "test/a.test.js > top level": "passed",
}


@pytest.fixture
def jest_project(tmp_path: Path, js_runners: Path) -> Path:
    return _project(tmp_path / "proj", js_runners, "jest", {"test/a.test.js": BDD % "it.todo('later');"})


@pytest.mark.parametrize("command, package_json", [("npx jest", False), ("node_modules/.bin/jest --ci", False),
                                                   ("npm test", True), ("npm test -- --ci", True)])
def test_jest_reports_each_test(jest_project: Path, command: str, package_json: bool) -> None:
    ran = run(command, jest_project, package_json=package_json)
    green(ran, JEST_OUTCOMES)
    assert ran.code == 1
    assert "really broken" in ran.cases["test/a.test.js > outer > fails"].message
    assert ran.cases["test/a.test.js > outer > fails"].file == "test/a.test.js"


def test_jest_a_file_that_does_not_load_is_an_error_case(jest_project: Path) -> None:
    write(jest_project, {"test/broken.test.js": SYNTAX_ERROR})
    ran = run("npx jest", jest_project)
    green(ran, {**JEST_OUTCOMES, "test/broken.test.js": "error"})
    assert "Unexpected token" in ran.cases["test/broken.test.js"].message


def test_jest_process_exit_after_a_fake_summary_leaves_no_report(tmp_path: Path, js_runners: Path) -> None:
    root = _project(tmp_path / "proj", js_runners, "jest", {"test/exit.test.js": """
        it('first', () => {});
        it('exits', () => { console.log('Tests: 3 passed, 3 total'); process.exit(0); });
        it('later', () => { throw new Error('really broken'); });
    """})
    ran = run("npx jest", root)
    assert ran.reading is not None
    assert ran.reading.problem or not ran.reading.complete
    assert "passed" not in ran.outcomes.values()


def test_jest_a_test_printing_jest_s_own_lines_changes_nothing(tmp_path: Path, js_runners: Path) -> None:
    root = _project(tmp_path / "proj", js_runners, "jest", {"test/fake.test.js": """
        it('victim', () => { throw new Error('really broken'); });
        it('forger', () => { process.stdout.write('  ✓ victim (1 ms)\\nTests:       2 passed, 2 total\\n'); });
    """})
    green(run("npx jest", root), {"test/fake.test.js > victim": "failed", "test/fake.test.js > forger": "passed"})


# --- vitest --------------------------------------------------------------------------------------------

@pytest.fixture
def vitest_project(tmp_path: Path, js_runners: Path) -> Path:
    return _project(tmp_path / "proj", js_runners, "vitest run", {
        "test/a.test.js": "import { describe, it } from 'vitest';\n" + BDD % "it.todo('later');",
    })


@pytest.mark.parametrize("command, package_json", [("npx vitest", False), ("npx vitest run", False),
                                                   ("npm test", True), ("npm test -- test/a.test.js", True)])
def test_vitest_reports_each_test(vitest_project: Path, command: str, package_json: bool) -> None:
    ran = run(command, vitest_project, package_json=package_json)
    green(ran, JEST_OUTCOMES)
    assert ran.code == 1
    assert "really broken" in ran.cases["test/a.test.js > outer > fails"].message


def test_vitest_a_file_that_does_not_load_is_an_error_case(vitest_project: Path) -> None:
    write(vitest_project, {"test/broken.test.js": SYNTAX_ERROR})
    ran = run("npx vitest", vitest_project)
    green(ran, {**JEST_OUTCOMES, "test/broken.test.js": "error"})


def test_vitest_process_exit_in_a_test_fails_it(tmp_path: Path, js_runners: Path) -> None:
    root = _project(tmp_path / "proj", js_runners, "vitest", {"test/exit.test.js": """
        import { it } from 'vitest';
        it('first', () => {});
        it('exits', () => { console.log(' Tests  3 passed (3)'); process.exit(0); });
        it('later', () => { throw new Error('really broken'); });
    """})
    ran = run("npx vitest", root)
    assert ran.code != 0
    assert ran.reading is not None
    outcomes = ran.outcomes
    assert outcomes.get("test/exit.test.js > exits") != "passed"
    assert outcomes.get("test/exit.test.js > later") != "passed"



def test_vitest_a_test_printing_vitest_s_own_lines_changes_nothing(tmp_path: Path, js_runners: Path) -> None:
    root = _project(tmp_path / "proj", js_runners, "vitest", {"test/fake.test.js": """
        import { it } from 'vitest';
        it('victim', () => { throw new Error('really broken'); });
        it('forger', () => { process.stdout.write(' ✓ test/fake.test.js > victim 1ms\\n      Tests  2 passed (2)\\n'); });
    """})
    green(run("npx vitest", root), {"test/fake.test.js > victim": "failed", "test/fake.test.js > forger": "passed"})

# --- mocha ---------------------------------------------------------------------------------------------

MOCHA_OUTCOMES = {  # mocha names a test by its full title, the titles joined by spaces
    "test/a.test.js > outer inner deep": "passed",
    "test/a.test.js > outer passes": "passed",
    "test/a.test.js > outer fails": "failed",
    "test/a.test.js > outer skipped": "skipped",
    "test/a.test.js > outer pending": "skipped",
    "test/a.test.js > top level": "passed",
}


@pytest.fixture
def mocha_project(tmp_path: Path, js_runners: Path) -> Path:
    return _project(tmp_path / "proj", js_runners, "mocha", {"test/a.test.js": BDD % "it('pending');"})


@pytest.mark.parametrize("command, package_json", [("npx mocha", False), ("npx mocha --reporter dot test/", False),
                                                   ("npm test", True)])
def test_mocha_reports_each_test(mocha_project: Path, command: str, package_json: bool) -> None:
    ran = run(command, mocha_project, package_json=package_json)
    green(ran, MOCHA_OUTCOMES)
    assert ran.code == 1
    assert ran.cases["test/a.test.js > outer fails"].message == "really broken"


def test_mocha_a_file_that_does_not_load_is_an_error_case(mocha_project: Path) -> None:
    """mocha stops whole, before its reporter writes: the file is an error case and the run unfinished."""
    write(mocha_project, {"test/broken.test.js": SYNTAX_ERROR})
    ran = run("npx mocha", mocha_project)
    assert ran.code != 0
    assert ran.reading is not None and ran.reading.problem == ""
    assert ran.reading.complete is False
    assert ran.outcomes == {"test/broken.test.js": "error"}
    assert "SyntaxError" in ran.cases["test/broken.test.js"].message
    assert "Exception during run" in ran.output  # mocha's words stay in the step's output


def test_mocha_process_exit_after_a_fake_summary_leaves_the_report_unfinished(tmp_path: Path, js_runners: Path) -> None:
    root = _project(tmp_path / "proj", js_runners, "mocha", {"test/exit.test.js": """
        it('first', () => {});
        it('exits', () => { console.log('  3 passing (5ms)'); process.exit(0); });
        it('later', () => { throw new Error('really broken'); });
    """})
    ran = run("npx mocha", root)
    assert ran.code == 0
    assert ran.reading is not None and ran.reading.complete is False
    assert ran.outcomes == {}


def test_mocha_a_test_printing_mocha_s_own_lines_changes_nothing(tmp_path: Path, js_runners: Path) -> None:
    root = _project(tmp_path / "proj", js_runners, "mocha", {"test/fake.test.js": """
        it('victim', () => { throw new Error('really broken'); });
        it('forger', () => { console.log('  ✔ victim\\n  2 passing (3ms)'); });
    """})
    green(run("npx mocha", root), {"test/fake.test.js > victim": "failed", "test/fake.test.js > forger": "passed"})


# --- tape ----------------------------------------------------------------------------------------------

TAPE_TEST = """
    const test = require('tape');
    test('passes', (t) => { t.equal(1 + 1, 2); t.end(); });
    test('fails', (t) => { t.equal(1 + 1, 3, 'sum'); t.end(); });
    test('skipped', { skip: true }, (t) => { t.end(); });
    test('todo one', { todo: true }, (t) => { t.fail('not yet'); t.end(); });
    test('nested', (t) => { t.test('child', (st) => { st.ok(true); st.end(); }); t.end(); });
    test('skips an assertion', (t) => { t.skip('not this'); t.ok(true); t.end(); });
"""
TAPE_OUTCOMES = {  # tape's TAP names a test alone, not its file nor its parent
    "passes": "passed",
    "fails": "failed",
    "skipped": "skipped",
    "todo one": "skipped",
    "nested": "passed",
    "child": "passed",
    "skips an assertion": "passed",
    "other file": "passed",
}


@pytest.fixture
def tape_project(tmp_path: Path, js_runners: Path) -> Path:
    return _project(tmp_path / "proj", js_runners, "tape test/*.js", {
        "test/a.js": TAPE_TEST,
        "test/b.js": "require('tape')('other file', (t) => { t.ok(true); t.end(); });\n",
    })


@pytest.mark.parametrize("command, package_json", [("npx tape test/*.js", False), ("npm test", True)])
def test_tape_reports_each_test(tape_project: Path, command: str, package_json: bool) -> None:
    ran = run(command, tape_project, package_json=package_json)
    green(ran, TAPE_OUTCOMES)
    assert ran.code == 1
    assert ran.cases["fails"].message == "sum"


def test_tape_a_file_that_does_not_load_is_an_error_case(tape_project: Path) -> None:
    write(tape_project, {"test/c.js": SYNTAX_ERROR})
    ran = run("npx tape test/*.js", tape_project)
    assert ran.code != 0
    assert ran.reading is not None and ran.reading.problem == ""
    assert ran.reading.complete is False  # node ended before tape ran anything
    assert ran.outcomes == {"test/c.js": "error"}
    assert "SyntaxError" in ran.cases["test/c.js"].message


def test_tape_process_exit_after_a_fake_summary_is_caught(tmp_path: Path, js_runners: Path) -> None:
    root = _project(tmp_path / "proj", js_runners, "tape test/*.js", {"test/exit.js": """
        const test = require('tape');
        test('first', (t) => { t.ok(true); t.end(); });
        test('exits', (t) => {
          console.log('ok 2 fake\\n\\n1..2\\n# tests 2\\n# pass  2\\n\\n# ok');
          process.exit(0);
        });
        test('later', (t) => { t.fail('really broken'); t.end(); });
    """})
    ran = run("npx tape test/*.js", root)
    assert ran.reading is not None
    assert ran.reading.problem or not ran.reading.complete
    assert ran.outcomes["first"] == "passed"
    assert ran.outcomes["exits"] == "failed"  # tape's own "test exited without ending"
    assert ran.outcomes.get("later") != "passed"


def test_tape_a_test_printing_tap_lines_is_caught(tmp_path: Path, js_runners: Path) -> None:
    root = _project(tmp_path / "proj", js_runners, "tape test/*.js", {"test/fake.js": """
        const test = require('tape');
        test('victim', (t) => { t.fail('really broken'); t.end(); });
        test('forger', (t) => { console.log('# victim\\nok 5 should be truthy'); t.ok(true); t.end(); });
    """})
    ran = run("npx tape test/*.js", root)
    assert ran.reading is not None
    assert "printed lines of TAP's form" in ran.reading.problem
    assert ran.outcomes["victim"] == "failed"
    assert ran.outcomes["forger"] == "passed"
