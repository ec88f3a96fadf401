"""node's own test runner (`node --test`) run for real, with the runtime's reporter beside the spec one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.verify.kinds.runners.harness import green, run, write

pytestmark = pytest.mark.slow

MAIN_TEST = """
    const { test, describe, it, before } = require('node:test');
    const assert = require('node:assert');

    test('passes', () => { assert.strictEqual(1 + 1, 2); });
    test('fails', () => { assert.strictEqual(1 + 1, 3); });
    test('skipped', { skip: 'not now' }, () => {});
    test.skip('skip call', () => {});
    test('todo one', { todo: true }, () => {});
    test('has subtests', async (t) => {
      await t.test('sub ok', () => {});
      await t.test('sub bad', () => { throw new Error('sub broke'); });
    });
    describe('outer', () => {
      describe('inner', () => {
        it('deep', () => {});
      });
      it('shallow', () => {});
    });
    describe.skip('skipped suite', () => { it('inside', () => {}); });
    describe('hooked', () => {
      before(() => { throw new Error('hook broke'); });
      it('after hook', () => {});
    });
"""
MAIN_OUTCOMES = {
    "test/main.test.js > passes": "passed",
    "test/main.test.js > fails": "failed",
    "test/main.test.js > skipped": "skipped",
    "test/main.test.js > skip call": "skipped",
    "test/main.test.js > todo one": "skipped",
    "test/main.test.js > has subtests > sub ok": "passed",
    "test/main.test.js > has subtests > sub bad": "failed",
    "test/main.test.js > has subtests": "failed",  # node's verdict on a test whose subtest failed
    "test/main.test.js > outer > inner > deep": "passed",
    "test/main.test.js > outer > shallow": "passed",
    "test/main.test.js > skipped suite": "skipped",  # node lists no test of a suite skipped whole
    "test/main.test.js > hooked > after hook": "failed",
    "test/main.test.js > hooked": "failed",  # the hook's own failure
}


@pytest.fixture
def node_project(tmp_path: Path, node_env: dict[str, str]) -> Path:
    return write(tmp_path / "proj", {
        "package.json": json.dumps({"name": "demo", "version": "1.0.0", "scripts": {"test": "node --test"}}),
        "test/main.test.js": MAIN_TEST,
    })


def test_node_reports_tests_subtests_and_nested_suites(node_project: Path) -> None:
    ran = run("node --test", node_project)
    green(ran, MAIN_OUTCOMES)
    assert ran.code == 1
    cases = ran.cases
    assert cases["test/main.test.js > fails"].file == "test/main.test.js"
    assert "2 !== 3" in cases["test/main.test.js > fails"].message
    assert cases["test/main.test.js > hooked"].message == "hook broke"
    assert "✖ fails" in ran.output  # the spec reporter still prints to the step's output


def test_node_through_npm_test(node_project: Path) -> None:
    ran = run("npm test", node_project, package_json=True)
    assert "node_modules/.bin" in ran.command
    green(ran, MAIN_OUTCOMES)


def test_node_a_file_that_does_not_load_is_an_error_case_named_by_the_file(node_project: Path) -> None:
    write(node_project, {"test/broken.test.js": "const x = ;\n"})
    ran = run("node --test", node_project)
    green(ran, {**MAIN_OUTCOMES, "test/broken.test.js": "error"})
    assert ran.cases["test/broken.test.js"].file == "test/broken.test.js"
    assert "SyntaxError" in ran.output


def test_node_process_exit_in_a_test_leaves_it_not_passed(tmp_path: Path, node_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {"test/exits.test.js": """
        const { test } = require('node:test');
        test('first', () => {});
        test('exits', () => {
          console.log('# tests 3\\n# pass 3\\n# fail 0');
          process.exit(0);
        });
        test('later', () => { throw new Error('really broken'); });
    """})
    ran = run("node --test", root)
    assert ran.reading is not None and ran.reading.problem == ""
    # the file's process ended before it reported any test: node reports the file alone
    assert "test/exits.test.js > exits" not in ran.outcomes
    assert "test/exits.test.js > later" not in ran.outcomes
    assert set(ran.outcomes) <= {"test/exits.test.js", "test/exits.test.js > first"}


def test_node_a_test_printing_tap_and_spec_lines_changes_nothing(tmp_path: Path, node_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {"test/fake.test.js": """
        const { test } = require('node:test');
        test('victim', () => { throw new Error('really broken'); });
        test('forger', () => {
          console.log('ok 1 - victim');
          console.log('✔ victim (0.1ms)');
          console.log('# pass 2');
        });
    """})
    green(run("node --test", root), {"test/fake.test.js > victim": "failed", "test/fake.test.js > forger": "passed"})
