"""The ``runtime`` command: one module per verb, each a ``run(settings) -> int``.

The arguments become the verb's settings once, here: ``runtime.cli.settings``
declares each verb's arguments as a typed record and derives the parser from
them, and the verb's ``run`` takes its record. Verb modules are imported only
when their verb runs, so ``runtime --help`` and ``runtime check`` (a fresh
process per tool call, parsed by hand) stay light. Errors become one line and
an exit code here, in one place: the user's to fix (``FatalError``) exit 1, a
run that ended badly (``RunFailure``, a model call that failed among them)
exits 2 as its outcome.
"""

from __future__ import annotations

import os
import sys


def printable(text: str) -> str:
    """runtime.printable's, imported only when an error is printed: the hook's calls never need unicodedata."""
    from runtime.printable import printable as made_safe

    return made_safe(text)

TYPE_CHECKING = False  # typing's, without importing typing: `runtime check` is a fresh process per call
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from runtime.cli.settings import Settings

VERBS = {
    "lint": "runtime.cli.lint",
    "schema": "runtime.cli.schema",
    "roles": "runtime.cli.roles",
    "compose": "runtime.cli.compose",
    "hook": "runtime.cli.hook",
    "export": "runtime.cli.export",
    "doc-roles": "runtime.cli.doc_roles",
    "migrate": "runtime.cli.migrate",
    "explain": "runtime.cli.explain",
    "init": "runtime.cli.init",
    "spawn": "runtime.cli.spawn",
    "again": "runtime.cli.again",
    "run": "runtime.cli.run",
    "memory": "runtime.cli.memory",
    "verify": "runtime.cli.verify",
    "audit": "runtime.cli.audit",
    "attest": "runtime.cli.attest",
    "status": "runtime.cli.status",
    "show": "runtime.cli.show_agent",
    "doctor": "runtime.cli.doctor",
    "prune": "runtime.cli.prune",
    "approve": "runtime.cli.approve",
    "deny": "runtime.cli.approve",
    "approvals": "runtime.cli.approve",
    "allow": "runtime.cli.allow",
    "console": "runtime.cli.console",
}


def build_parser() -> argparse.ArgumentParser:
    """The parser derived from the verbs' settings (`runtime.cli.settings`); docs/CLI.md is generated from it."""
    from runtime.cli.settings import parser

    return parser()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:  # the hook: a fresh process per tool call, which imports only what it needs
        from runtime.cli import check

        return check.main(argv[1:])
    import importlib

    from runtime.cli.settings import parse
    from runtime.errors import INTERNAL_ERROR, FatalError, ManifestErrors, RunFailure

    settings = parse(argv)  # a usage error exits 1 here
    try:
        module = importlib.import_module(VERBS[settings.verb])
        run: Callable[[Settings], int] = module.run  # every verb module's `run`, taking its verb's settings
        return run(settings)
    except ManifestErrors as exc:
        for err in exc.errors:
            print(printable(f"error: {err}"), file=sys.stderr)
        return exc.exit_code
    except FatalError as exc:
        print(printable(f"error: {exc}"), file=sys.stderr)
        return exc.exit_code
    except RunFailure as exc:  # met outside a spawn, which records its own (a planner's model, say)
        print(printable(f"error: {exc.outcome}({exc.detail}): {exc.message}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - one line for the user; the traceback in a file
        if os.environ.get("RUNTIME_DEBUG"):
            raise
        log = _crash_log(argv)
        where = f"the traceback is in {log}" if log else "set RUNTIME_DEBUG=1 for the traceback"
        print(printable(f"error: internal error ({type(exc).__name__}: {exc}); {where}"), file=sys.stderr)
        return INTERNAL_ERROR


def _crash_log(argv: list[str]) -> str | None:
    """Write the traceback being handled to a new file of this user's (0600), for a bug report."""
    import tempfile
    import traceback

    from runtime.cli.settings import version

    try:
        fd, path = tempfile.mkstemp(prefix="runtime-internal-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"runtime {version()}: {' '.join(argv)}\n\n{traceback.format_exc()}")
    except OSError:
        return None
    return path


if __name__ == "__main__":
    sys.exit(main())
