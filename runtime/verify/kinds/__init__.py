"""The registry of verify kinds: pure evaluators of gathered evidence, looked up by name.

Each evaluator takes the kind's parameter values and the evidence (plain data,
gathered elsewhere) and returns a ``VerifyResult``; it runs nothing and reads
no files. Evaluators raise ``MalformedInput`` on input of the wrong shape;
``evaluate`` is the entry point that never raises, so a broken check can never
be mistaken for a pass or crash the orchestrator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.change_size import change_size
from runtime.verify.kinds.checks_green import checks_green
from runtime.verify.kinds.dep_stable import dep_stable
from runtime.verify.kinds.report_fields import report_fields
from runtime.verify.kinds.scope import no_changes, scope_denylist, scope_whitelist
from runtime.verify.kinds.severity_grades import severity_grades
from runtime.verify.kinds.size_limits import size_limits
from runtime.verify.kinds.tests_green import tests_green
from runtime.verify.result import VerifyResult, error

Evaluator = Callable[[dict[str, Any], dict[str, Any]], VerifyResult]

EVALUATORS: dict[str, Evaluator] = {
    "scope-whitelist": scope_whitelist,
    "scope-denylist": scope_denylist,
    "no-changes": no_changes,
    "dep-stable": dep_stable,
    "tests-green": tests_green,
    "checks-green": checks_green,
    "size-limits": size_limits,
    "report-fields": report_fields,
    "severity-grades": severity_grades,
    "change-size": change_size,
}


def evaluate(kind: str, params: dict[str, Any], evidence: dict[str, Any]) -> VerifyResult:
    """Run one verify kind; any failure of the check itself is an ``error`` result, never an exception."""
    evaluator = EVALUATORS.get(kind)
    if evaluator is None:
        return error(f"unknown verify kind `{kind}` (known: {', '.join(sorted(EVALUATORS))})")
    if not isinstance(params, dict) or not isinstance(evidence, dict):
        return error(f"cannot check `{kind}`: parameters and evidence must be tables")
    try:
        result = evaluator(params, evidence)
    except MalformedInput as exc:
        return error(f"cannot check `{kind}`: {exc}")
    except Exception as exc:  # a bug in an evaluator must not pass the work or crash the run
        return error(f"the `{kind}` check failed unexpectedly: {type(exc).__name__}: {exc}")
    if not isinstance(result, VerifyResult):
        return error(f"the `{kind}` check returned {type(result).__name__}, not a VerifyResult")
    return result
