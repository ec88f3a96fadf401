"""The registry of verify kinds: one entry per kind, each a ``Kind`` its own module defines.

A new kind is one module of this package (its evidence model, its gatherer, its judge, named in one
``Kind``) and one line below. The manifests read the kinds' names, parameters and evidence models from
here; verify gathers and judges through them; `runtime schema` describes their evidence.

``evaluate`` is the entry point that never raises: evidence given as plain data is validated into the
kind's model first, the parameters are read into the kind's record of them (``MalformedInput`` on a
parameter of the wrong shape, as a judge raises it on evidence it cannot read), and any failure of the
check itself is an ``error`` result, so a broken check can never be mistaken for a pass or crash the
orchestrator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from runtime.model import describe
from runtime.verify.kinds import (
    change_size,
    checks_green,
    dep_stable,
    report_fields,
    review,
    runner_config,
    scope,
    severity_grades,
    size_limits,
    suppressions,
    test_detection,
    tests_green,
    tests_protected,
)
from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.kind import Evidence, Kind
from runtime.verify.kinds.result import VerifyResult, error

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

# Each kind's parameters and evidence are its own types: the registry holds kinds of every pair.
KINDS: dict[str, Kind[Any, Any]] = {kind.name: kind for kind in (
    scope.WHITELIST,
    scope.DENYLIST,
    scope.NO_CHANGES,
    dep_stable.KIND,
    tests_green.KIND,
    checks_green.KIND,
    size_limits.KIND,
    report_fields.KIND,
    severity_grades.KIND,
    change_size.KIND,
    tests_protected.KIND,
    runner_config.KIND,
    suppressions.KIND,
    test_detection.KIND,
    review.KIND,
)}

P = TypeVar("P")
E = TypeVar("E", bound=Evidence)

def evaluate(kind: str, params: JSONObject, evidence: BaseModel | JSONObject) -> VerifyResult:
    """Judge ``evidence`` (the kind's model, or plain data validated into it) with the kind's judge, on
    ``params`` as the compiled policy or an atom's example holds them; any failure of the check itself is an
    ``error`` result, never an exception."""
    spec = KINDS.get(kind)
    if spec is None:
        return error(f"unknown verify kind `{kind}` (known: {', '.join(sorted(KINDS))})")
    if not isinstance(params, Mapping):
        return error(f"cannot check `{kind}`: its parameters must be a table")
    try:
        typed = evidence if isinstance(evidence, spec.evidence) else spec.evidence_from(evidence)
    except ValidationError as exc:
        return error(f"cannot check `{kind}`: the evidence is malformed: {describe(exc.errors(include_url=False)[0])}")
    try:
        read = spec.read_params(params)
    except MalformedInput as exc:
        return error(f"cannot check `{kind}`: {exc}")
    except Exception as exc:  # a bug in a kind must not pass the work or crash the run
        return error(f"the `{kind}` check failed unexpectedly: {type(exc).__name__}: {exc}")
    return judged(spec, read, typed)


def judged(kind: Kind[P, E], params: P, evidence: E) -> VerifyResult:
    """``kind``'s judge on its parameters and evidence, both already read into its own types; as ``evaluate``,
    any failure of the check itself is an ``error`` result, never an exception."""
    try:
        result = kind.judge(params, evidence)
    except MalformedInput as exc:
        return error(f"cannot check `{kind.name}`: {exc}")
    except Exception as exc:  # a bug in a judge must not pass the work or crash the run
        return error(f"the `{kind.name}` check failed unexpectedly: {type(exc).__name__}: {exc}")
    if not isinstance(result, VerifyResult):
        return error(f"the `{kind.name}` check returned {type(result).__name__}, not a VerifyResult")
    return result
