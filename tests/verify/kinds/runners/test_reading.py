"""Each runner's `read` on report text of the forms the real programs write (and some only other versions write),
without running any: the cases the real runs in `test_real_*.py` found, kept fast."""

from __future__ import annotations

import json

from runtime.verify.kinds.runners.cargo_test import RUNNER as CARGO
from runtime.verify.kinds.runners.go_test import RUNNER as GO
from runtime.verify.kinds.runners.js_mocha import RUNNER as MOCHA
from runtime.verify.kinds.runners.js_tape import RUNNER as TAPE
from runtime.verify.kinds.runners.node_test import RUNNER as NODE
from runtime.verify.kinds.runners.py_pytest import RUNNER as PYTEST
from runtime.verify.kinds.runners.py_unittest import RUNNER as UNITTEST

ROOT = "/tree"


def _lines(*records: dict[str, object]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _outcomes(reading) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {t.id: t.outcome for t in reading.tests}


# --- go ------------------------------------------------------------------------------------------------

def _go(action: str, test: str = "", package: str = "m/p", **more: object) -> dict[str, object]:
    event: dict[str, object] = {"Action": action, "Package": package, **more}
    if test:
        event["Test"] = test
    return event


def test_go_before_1_24_a_build_failure_is_plain_text_in_the_report() -> None:
    """go's standard error joins the report (the step's `2>&1` comes after its `>report`), and before Go 1.24
    a package that did not build is a plain `FAIL` line on its standard output."""
    data = (b"# m/broken [m/broken.test]\n"
            b"broken/broken.go:3:23: cannot use \"s\" as int value in return statement\n"
            b"FAIL\tm/broken [build failed]\n"
            + _lines(_go("run", "TestA"), _go("pass", "TestA"), _go("pass")))
    reading = GO.read(data, "", ROOT)
    assert reading.problem == "" and reading.complete
    assert _outcomes(reading) == {"m/p::TestA": "passed", "m/broken::(package)": "error"}
    assert "broken.go:3:23" in reading.tests[1].message


def test_go_1_24_build_events_name_the_failed_build() -> None:
    data = _lines(
        {"ImportPath": "m/broken [m/broken.test]", "Action": "build-output", "Output": "# m/broken [m/broken.test]\n"},
        {"ImportPath": "m/broken [m/broken.test]", "Action": "build-output", "Output": "broken_test.go:3:11: undefined: y\n"},
        {"ImportPath": "m/broken [m/broken.test]", "Action": "build-fail"},
        _go("start", package="m/broken"),
        _go("output", package="m/broken", Output="FAIL\tm/broken [build failed]\n"),
        _go("fail", package="m/broken", FailedBuild="m/broken [m/broken.test]"),
    )
    reading = GO.read(data, "", ROOT)
    assert _outcomes(reading) == {"m/broken::(package)": "error"}
    assert "undefined: y" in reading.tests[0].message and "build failed" in reading.tests[0].message


def test_go_a_printed_pass_after_a_real_failure_keeps_the_failure_and_is_named() -> None:
    data = _lines(_go("run", "TestV"), _go("fail", "TestV"), _go("run", "TestF"),
                  _go("output", "TestV", Output="--- PASS: TestV (0.00s)\n"), _go("pass", "TestV"),
                  _go("pass", "TestF"), _go("pass", "TestGhost"), _go("fail"))
    reading = GO.read(data, "", ROOT)
    assert _outcomes(reading) == {"m/p::TestV": "failed", "m/p::TestF": "passed", "m/p::TestGhost": "error"}
    assert "TestGhost" in reading.problem and "TestV" in reading.problem


def test_go_a_test_run_twice_with_count_is_no_forgery() -> None:
    data = _lines(_go("run", "TestA"), _go("pass", "TestA"), _go("run", "TestA"), _go("fail", "TestA"), _go("fail"))
    reading = GO.read(data, "", ROOT)
    assert reading.problem == ""
    assert _outcomes(reading) == {"m/p::TestA": "failed"}


def test_go_a_test_that_never_ended_is_an_error_and_the_report_unfinished() -> None:
    reading = GO.read(_lines(_go("run", "TestA"), _go("fail")), "", ROOT)
    assert _outcomes(reading) == {"m/p::TestA": "error"}
    assert not reading.complete


# --- cargo ---------------------------------------------------------------------------------------------

def _cargo(*body: str) -> str:
    return "\n".join(body) + "\n"


DOC_TESTS = ("   Doc-tests demo", "", "running 3 tests")


def test_cargo_doc_examples_are_numbered_by_line_not_by_the_order_they_finished() -> None:
    first = _cargo(*DOC_TESTS, "test src/lib.rs - add (line 3) ... ok", "test src/lib.rs - add (line 9) ... FAILED",
                   "test src/lib.rs - Thing::new (line 20) ... ok", "",
                   "failures:", "", "---- src/lib.rs - add (line 9) stdout ----", "left: 4", "", "failures:",
                   "    src/lib.rs - add (line 9)", "",
                   "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out")
    second = first.replace("test src/lib.rs - add (line 3) ... ok\ntest src/lib.rs - add (line 9) ... FAILED",
                           "test src/lib.rs - add (line 9) ... FAILED\ntest src/lib.rs - add (line 3) ... ok")
    for text in (first, second, first.replace("(line 3)", "(line 4)").replace("(line 9)", "(line 10)")):
        reading = CARGO.read(text.encode(), text, ROOT)
        assert reading.problem == "" and reading.complete
        assert _outcomes(reading) == {"doc-tests demo::src/lib.rs - add": "passed",
                                      "doc-tests demo::src/lib.rs - add #2": "failed",
                                      "doc-tests demo::src/lib.rs - Thing::new": "passed"}
        assert {t.id: t.message for t in reading.tests}["doc-tests demo::src/lib.rs - add #2"] == "left: 4"


def test_cargo_verbose_rustdoc_line_keeps_the_doc_tests_target_and_should_panic_is_no_part_of_an_id() -> None:
    text = _cargo("     Running `CARGO=/x CARGO_PKG_NAME=demo /t/debug/deps/demo-0123456789abcdef`", "",
                  "running 1 test", "test tests::panics - should panic ... ok", "",
                  "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out", "",
                  "   Doc-tests demo", "     Running `/r/bin/rustdoc --edition=2021 --crate-name demo --test src/lib.rs`",
                  "", "running 1 test", "test src/lib.rs - add (line 3) ... ok", "",
                  "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out")
    reading = CARGO.read(text.encode(), text, ROOT)
    assert _outcomes(reading) == {"demo::tests::panics": "passed", "doc-tests demo::src/lib.rs - add": "passed"}


def test_cargo_a_library_and_a_binary_of_one_name_keep_both_tests() -> None:
    section = ("", "running 1 test", "test tests::it_works ... {}", "",
               "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out")
    text = _cargo("     Running unittests src/lib.rs (target/debug/deps/demo-0123456789abcdef)",
                  *(s.format("ok") for s in section),
                  "     Running unittests src/main.rs (target/debug/deps/demo-fedcba9876543210)",
                  *(s.format("FAILED").replace("ok. 1 passed; 0", "FAILED. 0 passed; 1") for s in section))
    reading = CARGO.read(text.encode(), text, ROOT)
    assert reading.problem == ""
    assert _outcomes(reading) == {"demo::tests::it_works": "passed", "demo::tests::it_works #2": "failed"}


def test_cargo_a_section_started_inside_another_or_a_line_outside_any_is_forged() -> None:
    nested = _cargo("     Running unittests src/lib.rs (target/debug/deps/demo-0123456789abcdef)", "",
                    "running 2 tests", "running 1 test", "test tests::victim ... ok",
                    "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
                    "test tests::victim ... FAILED")
    reading = CARGO.read(nested.encode(), nested, ROOT)
    assert "started again" in reading.problem
    assert "outside any binary" in reading.problem or "libtest's own form" in reading.problem


# --- tape ----------------------------------------------------------------------------------------------

def test_tape_skip_and_todo_heads_name_the_test_after_the_directive() -> None:
    tap = _cargo("TAP version 13", "# SKIP skipped", "# TODO later", "not ok 1 not yet # TODO", "# runs",
                 "ok 2 not this # SKIP", "ok 3 should be truthy", "# all skipped", "ok 4 x # SKIP", "", "1..4")
    reading = TAPE.read(tap.encode(), tap, ROOT)
    assert reading.problem == "" and reading.complete
    assert _outcomes(reading) == {"skipped": "skipped", "later": "skipped", "runs": "passed", "all skipped": "skipped"}


def test_tape_a_failing_assertion_whose_words_say_todo_still_fails() -> None:
    tap = _cargo("TAP version 13", "# real", "not ok 1 compare # TODO", "", "1..1")
    assert _outcomes(TAPE.read(tap.encode(), tap, ROOT)) == {"real": "failed"}


def test_tape_a_crash_before_the_plan_names_the_file() -> None:
    out = _cargo("/tree/test/c.js:1", "const x = ;", "          ^", "", "SyntaxError: Unexpected token ';'")
    reading = TAPE.read(out.encode(), out, ROOT)
    assert not reading.complete
    assert _outcomes(reading) == {"test/c.js": "error"}


# --- mocha ---------------------------------------------------------------------------------------------

def test_mocha_an_empty_report_reads_the_file_mocha_named_as_it_stopped() -> None:
    out = " Exception during run: /tree/test/b.test.js:1\nconst x = ;\n\nSyntaxError: Unexpected token ';'\n" \
          "    at async Object.x (/tree/node_modules/mocha/lib/cli/run.js:375:5)\n"
    reading = MOCHA.read(b"", out, ROOT)
    assert not reading.complete and reading.problem == ""
    assert _outcomes(reading) == {"test/b.test.js": "error"}
    assert _outcomes(MOCHA.read(b"", "something else\n", ROOT)) == {}


# --- node ----------------------------------------------------------------------------------------------

def _node(event: str, name: str, nesting: int = 0, **more: object) -> dict[str, object]:
    return {"event": event, "name": name, "nesting": nesting, "file": "/tree/test/a.test.js", **more}


def test_node_suites_are_no_tests_unless_skipped_whole_or_failing_on_their_own() -> None:
    data = _lines(_node("start", "s"), _node("start", "t", 1), _node("fail", "t", 1),
                  _node("fail", "s", suite=True, failureType="subtestsFailed"),
                  _node("start", "ok suite"), _node("start", "u", 1), _node("pass", "u", 1), _node("pass", "ok suite", suite=True),
                  _node("start", "skipped"), _node("pass", "skipped", suite=True, skip=True),
                  _node("start", "hooked"), _node("fail", "hooked", suite=True, failureType="hookFailed"),
                  {"event": "end"})
    reading = NODE.read(data, "", ROOT)
    assert _outcomes(reading) == {"test/a.test.js > s > t": "failed", "test/a.test.js > ok suite > u": "passed",
                                  "test/a.test.js > skipped": "skipped", "test/a.test.js > hooked": "failed"}


def test_node_the_file_s_own_test_is_named_by_the_file() -> None:
    data = _lines(_node("start", "/tree/test/a.test.js"), _node("fail", "/tree/test/a.test.js", message="test failed"),
                  {"event": "end"})
    assert _outcomes(NODE.read(data, "", ROOT)) == {"test/a.test.js": "error"}


# --- pytest and unittest -------------------------------------------------------------------------------

def test_pytest_a_test_whose_call_never_reported_is_no_pass() -> None:
    data = _lines({"event": "start", "rootdir": "/tree"},
                  {"event": "report", "id": "t.py::a", "when": "setup", "outcome": "passed"},
                  {"event": "report", "id": "t.py::a", "when": "call", "outcome": "passed"},
                  {"event": "report", "id": "t.py::a", "when": "teardown", "outcome": "passed"},
                  {"event": "report", "id": "t.py::b", "when": "setup", "outcome": "passed"})
    reading = PYTEST.read(data, "", ROOT)
    assert not reading.complete
    assert _outcomes(reading) == {"t.py::a": "passed", "t.py::b": "error"}


def test_pytest_a_skip_in_setup_is_a_skip() -> None:
    data = _lines({"event": "report", "id": "t.py::a", "when": "setup", "outcome": "skipped"},
                  {"event": "report", "id": "t.py::a", "when": "teardown", "outcome": "passed"}, {"event": "finish"})
    assert _outcomes(PYTEST.read(data, "", ROOT)) == {"t.py::a": "skipped"}


def test_unittest_a_test_with_failing_subtests_is_one_test_with_every_failure() -> None:
    data = _lines({"event": "report", "id": "t.C.test_s", "outcome": "failed", "message": "first"},
                  {"event": "report", "id": "t.C.test_s", "outcome": "error", "message": "second"},
                  {"event": "report", "id": "unittest.loader._FailedTest.pkg.test_x", "outcome": "error"},
                  {"event": "finish"})
    reading = UNITTEST.read(data, "", ROOT)
    assert [(t.id, t.outcome, t.message, t.file) for t in reading.tests] == [
        ("t.C.test_s", "error", "first\nsecond", "t.py"),
        ("unittest.loader._FailedTest.pkg.test_x", "error", "", "pkg/test_x.py")]
