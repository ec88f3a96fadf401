"""node's own test runner (`node --test`): started with the runtime's reporter beside a spec reporter on
standard output (`--test-reporter`, `--test-reporter-destination`), from the parent process, which runs
each test file in a process of its own. Recognised as `node [options] --test`, under any wrapper
(`c8 --100 node --test`).

A test is `file > suite > name`. A `describe` is no test of its own (node counts suites apart): it is read only
when it was skipped whole (node lists none of its tests) or failed for itself (a hook), not for its tests. A
file that gave no result of its own (it did not load, or its process ended before any test did) is the
file's own test, which node names by the file's absolute path: it is read as the file alone, an error when
it failed. A test file that ends its process (`process.exit(0)`) loses its unfinished tests: they are
absent, never passed."""

from __future__ import annotations

import json
from collections.abc import Sequence

from runtime.verify.kinds.runners.base import Reading, ReportPaths, cut, insert, program, relative
from runtime.verify.kinds.runners.jsonlines import Unreadable, records, text
from runtime.verify.kinds.runners.results import TestCase
from runtime.verify.kinds.runners.words import Simple

SUPPORT_FILE = "node_reporter.mjs"  # copied as `<module>_node.mjs`
SUFFIX = "_node.mjs"
SEALED_FILE = "sealed_load.cjs"  # the loader of sealed test files, copied as `<module>_sealed.cjs`
SEALED_SUFFIX = "_sealed.cjs"
SEPARATOR = " > "


class NodeTest:
    name = "node --test"
    output_is_report = False
    keyed = True
    last_event = 'end'
    channel = 'fifo'

    def sealed_stub(self, path: str, server: str, ident: str, paths: ReportPaths, esm: bool) -> bytes | None:
        # node runs each test file as a module of its own kind: the loader compiles CommonJS, so an ES module
        # (`.mjs`, or `.js` in a package of `"type": "module"`) is laid as a file.
        if not (path.endswith(".cjs") or (path.endswith(".js") and not esm)):
            return None
        loader = json.dumps(paths.support_file(SEALED_SUFFIX))
        return (f"// A sealed test: the runtime serves its source to the test runner alone.\n"
                f"require({loader}).load(module, {json.dumps(server)}, {json.dumps(ident)})\n").encode()

    def locate(self, argv: Sequence[str]) -> int | None:
        for i, word in enumerate(argv):
            if program(word) == "node" and not word.startswith("-"):
                for j in range(i + 1, len(argv)):
                    if argv[j] == "--test":
                        return j + 1
                    if not argv[j].startswith("-"):
                        break
        return None

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        return insert(command, at, ["--test-reporter=spec", "--test-reporter-destination=stdout",
                                    f"--test-reporter={paths.support_file(SUFFIX)}",
                                    f"--test-reporter-destination={paths.report}"]).with_assignment(
            "AGENT_RUNTIME_REPORT_KEY", paths.key)

    def read(self, data: bytes, output: str, root: str) -> Reading:
        try:
            events = records(data)
        except Unreadable as exc:
            return Reading(problem=str(exc))
        stacks: dict[str, list[str]] = {}
        tests: list[TestCase] = []
        seen: dict[str, int] = {}
        complete = False
        for event in events:
            kind = event.get("event")
            file = text(event, "file")
            nesting = event.get("nesting")
            depth = nesting if isinstance(nesting, int) and 0 <= nesting < 64 else 0
            stack = stacks.setdefault(file, [])
            if kind == "start":
                del stack[depth:]
                stack.append(text(event, "name"))
            elif kind in ("pass", "fail"):
                skipped = event.get("skip") is True or event.get("todo") is True
                if event.get("suite") is True and not skipped and (
                        kind == "pass" or text(event, "failureType") == "subtestsFailed"):
                    # a `describe` is no test of its own: its tests say how it went (node counts suites apart);
                    # one skipped whole, whose tests node does not list, and a hook's failure stay
                    continue
                where = relative(file, root)
                name = text(event, "name")
                if depth == 0 and file and (name == file or relative(name, root) == where):
                    # the file's own test, which node reports when the file gave no results of its own (it did
                    # not load, or its process ended before any test did): named by the file alone
                    test_id = where
                    outcome = "error" if kind == "fail" else "passed"
                else:
                    names = [*stack[:depth], name]
                    test_id = SEPARATOR.join([where, *names]) if where else SEPARATOR.join(names)
                    if kind == "fail":
                        outcome = "failed"
                    elif skipped:
                        outcome = "skipped"
                    else:
                        outcome = "passed"
                # the same name twice in one place (two `test('x')`): each is a test of its own
                seen[test_id] = seen.get(test_id, 0) + 1
                if seen[test_id] > 1:
                    test_id += f" #{seen[test_id]}"
                tests.append(TestCase(id=test_id, outcome=outcome, file=where,  # type: ignore[arg-type]
                                      message=cut(text(event, "message"))))
            elif kind == "end":
                complete = True
        return Reading(tests, complete, "node's test runner, with the options of the test command")


RUNNER = NodeTest()
