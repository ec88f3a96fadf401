"""vitest: run once (`--run`) with its json reporter writing to the report (`--outputFile.json=`) beside its
default one. Recognised as `vitest` (also `vitest run`, under `npx`, or a path to `node_modules/.bin/vitest`)."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.verify.kinds.runners.base import Reading, ReportPaths, after_program, insert, not_sealed
from runtime.verify.kinds.runners.js_report import read_jest_form
from runtime.verify.kinds.runners.words import Simple


class Vitest:
    name = "vitest"
    output_is_report = False
    keyed = False
    last_event = ''
    channel = 'file'
    sealed_stub = staticmethod(not_sealed)

    def locate(self, argv: Sequence[str]) -> int | None:
        at = after_program(argv, "vitest")
        if at is not None and at < len(argv) and argv[at] == "run":
            return at + 1
        return at

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        return insert(command, at, ["--run", "--reporter=default", "--reporter=json", f"--outputFile.json={paths.report}"])

    def read(self, data: bytes, output: str, root: str) -> Reading:
        return read_jest_form(data, root, "vitest, with the options of the test command and the base's configuration")


RUNNER = Vitest()
