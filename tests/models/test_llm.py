"""litellm over real HTTP to a fake OpenAI-compatible server on 127.0.0.1, through llm.complete."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from runtime.models import llm
from runtime.models.types import ModelError, ModelReply, ModelRequest, ToolCall
from tests.fakes.openai_server import FakeOpenAIServer

BASH = {"type": "function", "function": {
    "name": "Bash", "description": "Run a shell command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}
READ = {"type": "function", "function": {
    "name": "Read", "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}}}
USER = [{"role": "system", "content": "You are a test agent."}, {"role": "user", "content": "list the files"}]


def request(server: FakeOpenAIServer, **overrides) -> ModelRequest:
    fields = dict(model="openai/fake-model", messages=list(USER), tools=[BASH, READ],
                  api_base=server.url + "/v1", timeout_s=5.0, max_retries=2, agent_id="ag-test")
    fields.update(overrides)
    return ModelRequest(**fields)


def call(req: ModelRequest, sleeps: list[float] | None = None) -> ModelReply:
    record = sleeps if sleeps is not None else []
    return llm.complete(req, api_key="sk-fake-key", backoff_s=0.01, sleep=record.append)


def test_tool_call_round_trip_parses_arguments():
    turns = [[{"name": "Bash", "input": {"command": "ls -la"}}, {"name": "Read", "input": {"file_path": "a.py"}}]]
    with FakeOpenAIServer(turns) as server:
        reply = call(request(server))
        (sent,) = server.chat_requests()
    assert reply.content is None
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("Bash", {"command": "ls -la"}), ("Read", {"file_path": "a.py"})]
    assert all(c.id.startswith("call_fake") and c.error is None for c in reply.tool_calls)
    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "fake-model"
    assert sent.body["messages"] == USER
    assert [t["function"]["name"] for t in sent.body["tools"]] == ["Bash", "Read"]
    assert sent.headers.get("Authorization") == "Bearer sk-fake-key"
    # the reply goes back into the conversation in the API's own shape
    message = reply.assistant_message()
    assert message["tool_calls"][0]["function"] == {"name": "Bash", "arguments": '{"command": "ls -la"}'}


def test_conversation_continues_with_tool_results():
    turns = [[{"name": "Bash", "input": {"command": "ls"}}], "two files"]
    with FakeOpenAIServer(turns) as server:
        first = call(request(server))
        messages = USER + [first.assistant_message(),
                           {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "a.py\nb.py"}]
        second = call(request(server, messages=messages))
        sent = server.chat_requests()[1].body["messages"]
    assert second.content == "two files" and second.tool_calls == []
    assert sent[-1] == {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "a.py\nb.py"}
    assert sent[-2]["tool_calls"][0]["id"] == first.tool_calls[0].id


def test_content_usage_and_unknown_model_cost():
    with FakeOpenAIServer(["all done"], prompt_tokens=123, completion_tokens=45) as server:
        reply = call(request(server, tools=[]))
        (sent,) = server.chat_requests()
    assert reply == ModelReply("all done", [], 123, 45, 0.0)  # fake-model has no price: 0.0, no error
    assert "tools" not in sent.body  # empty tools are omitted, not sent as []


def test_known_model_cost_comes_from_litellm():
    with FakeOpenAIServer(["priced"], prompt_tokens=1000, completion_tokens=1000) as server:
        reply = call(request(server, model="openai/gpt-4o-mini"))
    assert reply.content == "priced"
    assert 0.0 < reply.cost_usd < 0.01


@pytest.mark.parametrize("raw", ['{"command": ', '["ls"]', '"ls"'])
def test_malformed_arguments_become_a_tool_call_error(raw):
    with FakeOpenAIServer([[{"name": "Bash", "arguments": raw}, {"name": "Read", "input": {"file_path": "x"}}]]) as server:
        reply = call(request(server))
    bad, good = reply.tool_calls
    assert bad.name == "Bash" and bad.arguments == {} and "Bash" in bad.error
    assert good == ToolCall(good.id, "Read", {"file_path": "x"})


def test_empty_arguments_string_is_an_empty_object():
    with FakeOpenAIServer([[{"name": "Bash", "arguments": ""}]]) as server:
        (tc,) = call(request(server)).tool_calls
    assert tc.arguments == {} and tc.error is None


@pytest.mark.parametrize("status", [500, 503, 429])
def test_two_failures_then_success(status):
    with FakeOpenAIServer(["third time lucky"]) as server:
        server.fail_next(2, status)
        sleeps: list[float] = []
        reply = call(request(server, max_retries=2), sleeps)
        outcomes = [r.outcome for r in server.chat_requests()]
    assert reply.content == "third time lucky"
    assert outcomes == [f"failed:{status}", f"failed:{status}", "turn"]
    assert sleeps == [0.01, 0.02]  # exponential backoff between attempts


def test_persistent_500_is_a_model_error_after_max_retries():
    with FakeOpenAIServer(["never"]) as server:
        server.fail_next(10, 500)
        with pytest.raises(ModelError) as info:
            call(request(server, max_retries=2))
        assert len(server.chat_requests()) == 3
    err = info.value
    assert err.kind == "llm"
    assert "\n" not in str(err)
    assert "500" in str(err) and "attempt 3 of 3" in str(err) and "fake server error 500" in str(err)


def test_hang_times_out_then_model_error():
    with FakeOpenAIServer(["too late"]) as server:
        server.hang_next(5)
        started = time.monotonic()
        with pytest.raises(ModelError) as info:
            call(request(server, timeout_s=0.5, max_retries=1))
        elapsed = time.monotonic() - started
        assert [r.outcome for r in server.chat_requests()] == ["hung", "hung"]
    assert info.value.kind == "llm" and "Timeout" in str(info.value)
    assert elapsed < 10


def test_400_is_not_retried():
    with FakeOpenAIServer(["unused"]) as server:
        server.fail_next(1, 400)
        with pytest.raises(ModelError) as info:
            call(request(server, max_retries=3))
        assert len(server.chat_requests()) == 1
        assert server.turns_used() == 0
    assert info.value.kind == "llm" and "400" in str(info.value) and "attempt 1 of 4" in str(info.value)


def test_connection_refused_is_retried_then_fails():
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    req = ModelRequest(model="openai/fake-model", messages=USER, api_base=f"http://127.0.0.1:{port}/v1",
                       timeout_s=2.0, max_retries=2)
    sleeps: list[float] = []
    with pytest.raises(ModelError) as info:
        call(req, sleeps)
    assert len(sleeps) == 2  # retried, then gave up
    assert info.value.kind == "llm" and "attempt 3 of 3" in str(info.value)


def test_no_choices_is_a_model_error():
    class Empty:
        choices: list = []

    with pytest.raises(ModelError, match="no choices"):
        llm._to_reply(llm.get_litellm(), Empty(), "openai/x")


def test_importing_the_models_package_does_not_import_litellm():
    code = (
        "import sys\n"
        "import runtime.models, runtime.models.types, runtime.models.scripted, runtime.models.broker, runtime.models.llm\n"
        "from runtime.models.broker import BrokerClient\n"
        "print(sorted(m for m in ('litellm', 'openai', 'httpx', 'anyio', 'pydantic') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
