"""ModelReach: which model and how to reach it, one record for the broker, the planner and the reviewer."""

from __future__ import annotations

from dataclasses import fields
from typing import get_type_hints

from runtime.models.types import ModelReach, ModelRequest, ReachFields


def test_the_per_use_constructors_take_every_field_with_its_type():
    hints = get_type_hints(ModelReach)
    assert get_type_hints(ReachFields) == {f.name: hints[f.name] for f in fields(ModelReach) if f.name != "model"}


def test_each_use_has_its_defaults():
    planner, reviewer, agent = ModelReach.planner("scripted/p"), ModelReach.reviewer("scripted/r"), ModelReach("openai/x")
    assert (planner.agent_id, reviewer.agent_id, agent.agent_id) == ("planner", "reviewer", "default")
    assert ModelReach.planner("scripted/p", agent_id="planner-test").agent_id == "planner-test"
    for reach in (planner, reviewer, agent):
        assert (reach.max_retries, reach.transport_retries, reach.timeout_s, reach.backoff_s) == (3, 2, 120.0, 0.5)


def test_a_request_carries_the_reach_and_the_transport_retries():
    reach = ModelReach("openai/x", api_base="http://127.0.0.1:1/v1", timeout_s=7, transport_retries=4, max_retries=1,
                       agent_id="planner", api_key="sk-secret")
    messages = [{"role": "user", "content": "hi"}]
    assert reach.request(messages) == ModelRequest(model="openai/x", messages=messages, tools=[],
                                                   api_base="http://127.0.0.1:1/v1", timeout_s=7, max_retries=4,
                                                   agent_id="planner")
    assert reach.request(messages, agent_id="ag-1").agent_id == "ag-1"
    assert "sk-secret" not in repr(reach)
