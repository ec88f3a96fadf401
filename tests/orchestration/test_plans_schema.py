"""The schema of plan.toml (runtime.orchestration.plans.schema): keys, defaults, ranges and patterns.

What loading checks beyond the schema (files, roles, cross-references) is tests/orchestration/test_plan.py's.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from runtime.orchestration.plans.schema import (
    TASK_TABLES,
    PlanFile,
    PlannerSection,
    PlanSection,
    ReviewerSection,
    SubtaskEntry,
)

PLAN = {"goal": "Fix calc.mean.", "success-criteria": ["the tests pass"]}
SUBTASK = {"id": "fix-mean", "sequence": 1, "file": "tasks/fix-mean.toml"}


def problems(cls: type, data: Any) -> list[tuple[tuple, str]]:
    """(location, error type) of every problem pydantic finds in ``data``."""
    with pytest.raises(ValidationError) as info:
        cls.model_validate(data)
    return [(tuple(e["loc"]), e["type"]) for e in info.value.errors()]


def test_a_minimal_plan_gets_its_defaults():
    doc = PlanFile.model_validate({"plan": PLAN, "subtask": [SUBTASK]})
    plan = doc.plan
    assert (plan.goal, plan.success_criteria, plan.checks) == ("Fix calc.mean.", ["the tests pass"], [])
    assert (plan.max_replans, plan.concurrency, plan.max_dispatches) == (1, 4, 3)
    assert (plan.executor, plan.ray_address, plan.planner, plan.reviewer) == ("local", None, None, None)
    sub = doc.subtask[0]
    assert (sub.id, sub.sequence, sub.uses, sub.node_labels, sub.file) == ("fix-mean", 1, [], {}, "tasks/fix-mean.toml")
    assert all(getattr(sub, table) is None for table in TASK_TABLES)


def test_keys_are_kebab_case_only():
    assert problems(PlanSection, {"goal": "g", "success_criteria": ["x"]}) == [
        (("success-criteria",), "missing"), (("success_criteria",), "extra_forbidden")]


@pytest.mark.parametrize("cls,data,where", [
    (PlanFile, {"plan": PLAN, "subtask": [SUBTASK], "extra": 1}, ("extra",)),
    (PlanSection, {**PLAN, "max-retries": 1}, ("max-retries",)),
    (SubtaskEntry, {**SUBTASK, "agent-id": "x"}, ("agent-id",)),
    (ReviewerSection, {"model": "m", "max-retries": 1}, ("max-retries",)),  # only the planner retries
])
def test_unknown_keys_are_refused_where_they_are(cls, data, where):
    assert problems(cls, data) == [(where, "extra_forbidden")]


@pytest.mark.parametrize("key", ["goal", "success-criteria"])
def test_the_goal_and_success_criteria_are_required(key):
    data = {k: v for k, v in PLAN.items() if k != key}
    assert problems(PlanSection, data) == [((key,), "missing")]


def test_success_criteria_cannot_be_empty():
    assert problems(PlanSection, {**PLAN, "success-criteria": []}) == [(("success-criteria",), "too_short")]


def test_a_plan_needs_a_subtask():
    assert problems(PlanFile, {"plan": PLAN, "subtask": []}) == [(("subtask",), "too_short")]
    assert problems(PlanFile, {"plan": PLAN}) == [(("subtask",), "missing")]


@pytest.mark.parametrize("key,low,high", [("max-replans", 0, 5), ("concurrency", 1, 64), ("max-dispatches", 1, 10)])
def test_the_loop_limits_have_ranges(key, low, high):
    attr = key.replace("-", "_")
    assert getattr(PlanSection.model_validate({**PLAN, key: low}), attr) == low
    assert getattr(PlanSection.model_validate({**PLAN, key: high}), attr) == high
    assert problems(PlanSection, {**PLAN, key: low - 1}) == [((key,), "greater_than_equal")]
    assert problems(PlanSection, {**PLAN, key: high + 1}) == [((key,), "less_than_equal")]


@pytest.mark.parametrize("value", ["4", 4.0, True])
def test_numbers_are_strict(value):
    assert problems(PlanSection, {**PLAN, "concurrency": value}) == [(("concurrency",), "int_type")]


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_the_executors(executor):
    assert PlanSection.model_validate({**PLAN, "executor": executor}).executor == executor


def test_an_unknown_executor_is_refused():
    assert problems(PlanSection, {**PLAN, "executor": "kubernetes"}) == [(("executor",), "literal_error")]


@pytest.mark.parametrize("address", ["auto", "ray://head:10001", "head.example.com:6379", "10.0.0.1:6379",
                                     "[::1]:6379", "ray://10.0.0.1:1"])
def test_ray_addresses_that_name_a_cluster(address):
    assert PlanSection.model_validate({**PLAN, "ray-address": address}).ray_address == address


@pytest.mark.parametrize("address", ["", "head", "ray://head", "http://head:6379", "head:123456", "head:port",
                                     "AUTO", "head:6379/path", "ray://head:6379 ; rm"])
def test_other_ray_addresses_are_refused(address):
    assert problems(PlanSection, {**PLAN, "ray-address": address}) == [(("ray-address",), "string_pattern_mismatch")]


@pytest.mark.parametrize("sid", ["a", "0", "fix-mean", "a-", "x" * 32, "9-lives"])
def test_subtask_ids_that_fit_the_pattern(sid):
    assert SubtaskEntry.model_validate({**SUBTASK, "id": sid}).id == sid


@pytest.mark.parametrize("sid", ["", "-a", "Fix", "fix_mean", "fix mean", "x" * 33, "fix/mean", "é"])
def test_subtask_ids_outside_the_pattern_are_refused(sid):
    assert problems(SubtaskEntry, {**SUBTASK, "id": sid}) == [(("id",), "string_pattern_mismatch")]


def test_sequences_start_at_one():
    assert problems(SubtaskEntry, {**SUBTASK, "sequence": 0}) == [(("sequence",), "greater_than_equal")]


def test_a_file_cannot_be_empty():
    assert problems(SubtaskEntry, {**SUBTASK, "file": ""}) == [(("file",), "string_too_short")]


def test_node_labels_are_strings():
    sub = SubtaskEntry.model_validate({**SUBTASK, "node-labels": {"gpu": "a100"}})
    assert sub.node_labels == {"gpu": "a100"}
    assert problems(SubtaskEntry, {**SUBTASK, "node-labels": {"gpu": 1}}) == [(("node-labels", "gpu"), "string_type")]


def test_every_task_table_can_be_written_inline_at_the_subtask_level():
    inline = {
        "id": "doc", "sequence": 2, "uses": ["fix-mean"],
        "task": {"role": "edit-local", "goal": "Document mean."},
        "scope": {"files-whitelist": ["README.md"]},
        "verification": {"test-command": "pytest -q"},
        "output": {"report-fields-required": ["summary"]},
        "network": {},
        "agent": {"backend": "builtin", "model": "scripted/doc"},
        "body": {"text": "Describe mean."},
    }
    sub = SubtaskEntry.model_validate(inline)
    assert set(TASK_TABLES) <= set(SubtaskEntry.model_fields)
    assert all(getattr(sub, table) is not None for table in TASK_TABLES)
    assert sub.task.goal == "Document mean." and sub.agent.model == "scripted/doc" and sub.uses == ["fix-mean"]


def test_an_inline_table_is_checked_as_in_a_task_file():
    assert problems(SubtaskEntry, {**SUBTASK, "task": {"role": "edit-local"}}) == [(("task", "goal"), "missing")]


def test_the_planner_and_reviewer_sections():
    plan = PlanSection.model_validate({**PLAN, "planner": {"model": "scripted/p", "script": "p.toml"},
                                       "reviewer": {"model": "openai/x", "api-base": "http://127.0.0.1:8000/v1"}})
    assert isinstance(plan.planner, PlannerSection) and plan.planner.max_retries == 2
    assert (plan.planner.model, plan.planner.script, plan.planner.api_base) == ("scripted/p", "p.toml", None)
    assert (plan.reviewer.model, plan.reviewer.api_base) == ("openai/x", "http://127.0.0.1:8000/v1")


@pytest.mark.parametrize("cls", [PlannerSection, ReviewerSection])
def test_a_model_must_be_named(cls):
    assert problems(cls, {"model": ""}) == [(("model",), "string_too_short")]
    assert problems(cls, {}) == [(("model",), "missing")]


@pytest.mark.parametrize("retries,ok", [(0, True), (5, True), (-1, False), (6, False)])
def test_the_planners_retries_have_a_range(retries, ok):
    data = {"model": "scripted/p", "max-retries": retries}
    if ok:
        assert PlannerSection.model_validate(data).max_retries == retries
    else:
        assert [where for where, _ in problems(PlannerSection, data)] == [("max-retries",)]


def test_a_parsed_plan_cannot_be_changed():
    plan = PlanSection.model_validate(PLAN)
    with pytest.raises(ValidationError, match="frozen"):
        plan.concurrency = 10
