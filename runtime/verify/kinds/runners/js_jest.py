"""jest: started with `--json --outputFile=<report>` (its own JSON results, written by the parent process
once every test file has run; its usual output stays on standard error). Recognised as `jest` (also under
`npx` or a path to `node_modules/.bin/jest`)."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.verify.kinds.runners.base import Reading, ReportPaths, after_program, insert, not_sealed
from runtime.verify.kinds.runners.js_report import read_jest_form
from runtime.verify.kinds.runners.words import Simple


class Jest:
    name = "jest"
    output_is_report = False
    keyed = False
    last_event = ''
    channel = 'file'
    sealed_stub = staticmethod(not_sealed)

    def locate(self, argv: Sequence[str]) -> int | None:
        return after_program(argv, "jest")

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        return insert(command, at, ["--json", f"--outputFile={paths.report}"])

    def read(self, data: bytes, output: str, root: str) -> Reading:
        return read_jest_form(data, root, "jest, with the options of the test command and the base's configuration")


RUNNER = Jest()
