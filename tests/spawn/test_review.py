"""The reviewer (`[verification] review = true`): after the checks pass, the task's model, played as the agent's
reviewer, reads the change against the task. What it finds sends the work to a person (`needs-review`,
committed for inspection alone, never merged); a reviewer that cannot answer does too; `ok` lets it through."""

from __future__ import annotations

import json

import anyio
import pytest
import tomlkit

from runtime.verify.kinds import review
from runtime.verify.kinds.kind import Reviewed
from runtime.verify.kinds.registry import evaluate
from tests.spawn.conftest import FIX_TURN, REPORT, TEST_TURN, Spawner
from tests.verify.kinds.test_tests_green import FakeGathering

CONCERN = "src/calc/__init__.py:8: mean answers 3.0 for the one list test_mean_of_three uses"


class Asked(FakeGathering):
    async def review(self, change: str) -> Reviewed:
        self.asked.append(("review", change))
        return Reviewed("concerns", (CONCERN,))


def test_the_reviewer_reads_the_change_as_a_diff_and_is_asked_only_where_the_task_says():
    fake = Asked(base={"src/a.py": "x = 1\n"}, work={"src/a.py": "x = 2\n", "src/b.py": "y = 1\n"})
    assert anyio.run(review.gather, review.ReviewParams.read({"enabled": False}), fake).asked is False and fake.asked == []
    evidence = anyio.run(review.gather, review.ReviewParams.read({"enabled": True}), fake)
    [(_, change)] = fake.asked
    assert "-x = 1\n+x = 2\n" in change and "+++ b/src/b.py" in change
    result = evaluate("review", {"enabled": True}, evidence)
    assert result.status == "rejected" and result.review == [CONCERN] and "asks a person to look" in result.feedback


def test_a_reviewer_that_cannot_answer_is_no_pass():
    result = evaluate("review", {"enabled": True}, {"asked": True, "verdict": "unavailable", "why": "timed out"})
    assert result.status == "rejected" and result.review and "could not answer (timed out)" in result.feedback


def _script(s: Spawner, name: str, review_reply: str) -> str:
    doc = {"turn": [{"tool_calls": FIX_TURN}, {"tool_calls": TEST_TURN}, {"content": REPORT}],
           "review": [{"content": review_reply}]}
    path = s.tmp / f"{name}.with-review.toml"
    path.write_text(tomlkit.dumps(doc))
    return path.name


@pytest.mark.parametrize("reply,label", [
    (json.dumps({"verdict": "ok", "findings": []}), "ok"),
    (json.dumps({"verdict": "concerns", "findings": [CONCERN]}), "needs-review"),
    ("I think it is fine.", "needs-review"),  # outside its schema: fails closed
])
def test_a_spawn_s_reviewer_lets_through_or_sends_to_a_person(spawner: Spawner, reply, label):
    s = spawner
    agent_id = f"ag-review-{label}-{len(reply) % 97}"
    verification = {"test-command": "pytest -q tests", "test-count-min": 4, "check-commands": ["python3 -m tabnanny src"],
                    "review": True}
    task = s.task(agent_id=agent_id, verification=verification, agent={"script": _script(s, agent_id, reply)})
    r = s.spawn(task, "--merge")
    assert r.label == label, r.describe()
    assert r.outcome is not None and len(r.outcome["attempts"]) == 1
    [checked] = [c for c in r.outcome["attempts"][0]["checks"] if c["kind"] == "review"]
    if label == "ok":
        assert checked["status"] == "passed" and r.outcome["merged"]
        return
    assert checked["status"] == "rejected" and checked["review"]
    assert r.outcome["commit"] is None and r.outcome["merged"] is None and r.outcome["inspection"]
    message = s.message(r.outcome["inspection"])
    assert "Verified: no" in message and "Outcome: needs-review" in message
    [record] = s.audit(kind="needs-review", agent=agent_id)
    assert record  # the audit log says a person was asked to look


def test_a_review_the_task_s_agent_has_no_model_for_is_refused_before_anything_runs(spawner: Spawner):
    s = spawner
    verification = {"test-command": "pytest -q tests", "test-count-min": 4, "check-commands": ["python3 -m tabnanny src"],
                    "review": True}
    r = s.spawn(s.task(agent_id="ag-review-command", verification=verification, command="true"))
    assert r.code == 1 and "`review = true` reads the change with the task's own model" in r.stderr, r.describe()
    assert s.sha("agent/ag-review-command") is None  # nothing was made
