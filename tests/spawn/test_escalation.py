"""The honest way out: an agent that finds the task cannot be done as asked ends its report with `Escalation:`
and why. Its outcome is `escalated` with that reason; nothing is committed, judged or retried; the audit log,
`runtime status` and `runtime show` say so."""

from __future__ import annotations

import pytest

from runtime.spawn.attempts import escalation
from tests.spawn.conftest import SH_FIX, Spawner

REASON = "tests/test_calc.py::test_mean_of_three expects 2.25, which contradicts the goal (the mean is 3.0)"


@pytest.mark.parametrize("report,expected", [
    ("Summary: stopped\nEscalation: the test contradicts the goal\n", "the test contradicts the goal"),
    ("## Summary\nstopped\n\n## Escalation\nthe scope does not reach\nthe cause\n", "the scope does not reach\nthe cause"),
    ('{"summary": "stopped", "escalation": "cannot be done"}', "cannot be done"),
    ("Summary: done\nEscalation: none\n", None),
    ("Summary: done, no escalation needed\n", None),
])
def test_the_escalation_is_the_report_s_field_read_as_structure(report, expected):
    assert escalation(report) == expected


def test_an_agent_that_escalates_ends_escalated_with_its_reason_and_nothing_committed(spawner: Spawner):
    s = spawner
    report = f"printf 'Summary: stopped\\nFiles changed: none\\nEscalation: {REASON}\\n' > \"$RUNTIME_REPORT_FILE\""
    r = s.spawn(s.task(agent_id="ag-escalate", command=f"{SH_FIX}; {report}", agent={"retries": 2}), "--merge")
    assert r.code == 2 and r.label == "escalated", r.describe()
    assert r.outcome is not None and r.outcome["message"] == REASON
    assert r.outcome["commit"] is None and r.outcome["inspection"] is None and r.outcome["merged"] is None
    [attempt] = r.outcome["attempts"]  # no retry, and no verify: nothing was judged
    assert attempt["checks"] == []
    assert s.git("rev-parse", "agent/ag-escalate") == s.base  # the branch holds nothing of the work
    [record] = s.audit(kind="escalated", agent="ag-escalate")
    data = record.get("data", record)
    assert data["reason"] == REASON and data["attempt"] == 1, record
    [entry] = [e for e in s.status() if e.get("agent_id") == "ag-escalate"]
    assert entry["label"] == "escalated"
    shown = s.cli("show", "ag-escalate")
    assert shown.returncode == 0 and "escalated" in shown.stdout and "contradicts the goal" in shown.stdout, shown.stdout
