"""The broker over a real Unix socket; the agent-side client in a separate process without litellm."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.models import scripted
from runtime.models.broker import Broker, BrokerClient, Usage
from runtime.models.types import ModelError, ModelReach, ModelReply, ModelRequest
from tests.fakes.openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "user", "content": "fix the bug"}]
BASH = {"type": "function", "function": {"name": "Bash", "parameters": {"type": "object", "properties": {}}}}
SCRIPT = """\
[[turn]]
tool_calls = [{ name = "Bash", input = { command = "pytest -q" } }]

[[turn]]
content = "All green."
"""

# The agent side, run as its own process: only the standard library and runtime.models.broker.
AGENT = r"""
import json, sys
from runtime.models.broker import BrokerClient
from runtime.models.types import ModelError

socket_path, calls = sys.argv[1], json.loads(sys.argv[2])
out = []
with BrokerClient(socket_path, timeout_s=60) as client:
    for messages, tools in calls:
        try:
            out.append({"reply": client.complete(messages, tools).to_dict()})
        except ModelError as exc:
            out.append({"error": exc.to_dict()})
heavy = sorted(m for m in ("litellm", "openai", "httpx", "anyio", "pydantic") if m in sys.modules)
print(json.dumps({"results": out, "heavy": heavy}))
"""


def run_agent(socket_path: Path, calls: list) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run([sys.executable, "-c", AGENT, str(socket_path), json.dumps(calls)],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["heavy"] == [], f"the agent process imported {data['heavy']}"
    return data


def raw_exchange(socket_path: Path, *lines: bytes) -> list[dict]:
    """Send raw lines on one connection; return the parsed replies, in order."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(socket_path))
        rfile = sock.makefile("rb")
        replies = []
        for line in lines:
            sock.sendall(line)
            raw = rfile.readline()
            replies.append(json.loads(raw) if raw else None)
        return replies


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "agent.script.toml"
    path.write_text(SCRIPT)
    return path


@pytest.fixture
def sock(tmp_path) -> Path:
    return tmp_path / "run" / "broker.sock"  # the folder the sandbox would bind


def test_round_trip_with_the_client_in_a_separate_process(script, sock):
    seen: list[tuple[str, Usage]] = []
    config = ModelReach(model="scripted/demo", script=str(script))
    with Broker(sock, "ag-1", config, on_usage=lambda agent, usage: seen.append((agent, usage))) as broker:
        mode = os.stat(sock).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        data = run_agent(sock, [[MESSAGES, [BASH]], [MESSAGES, [BASH]], [MESSAGES, []]])
        usage = broker.usage()
    first, second, third = (ModelReply.from_dict(r["reply"]) for r in data["results"])
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [("call_1", "Bash", {"command": "pytest -q"})]
    assert second.content == "All green." and second.tool_calls == []
    assert "used up" in third.content
    assert usage.calls == 3 and usage.errors == 0 and usage.cost_usd == 0.0
    assert usage.prompt_tokens == first.prompt_tokens + second.prompt_tokens + third.prompt_tokens > 0
    assert usage.completion_tokens == first.completion_tokens + second.completion_tokens + third.completion_tokens
    assert [agent for agent, _ in seen] == ["ag-1"] * 3 and seen[-1][1] == usage
    assert not sock.exists()  # removed on close


@pytest.mark.slow  # litellm over real HTTP to the fake server
def test_round_trip_over_http_and_the_agent_cannot_choose_model_server_or_script(sock, tmp_path, script):
    turns = [[{"name": "Bash", "input": {"command": "ls"}}], "done", "and again"]
    with FakeOpenAIServer(turns, prompt_tokens=11, completion_tokens=7) as server:
        config = ModelReach(model="openai/fake-model", api_base=server.url + "/v1", api_key="sk-orchestrator",
                            timeout_s=5, transport_retries=0)
        with Broker(sock, "ag-http", config) as broker:
            data = run_agent(sock, [[MESSAGES, [BASH]]])
            override = {
                "messages": MESSAGES, "tools": [],
                "model": "anthropic/claude-opus", "api_base": "http://203.0.113.9/v1", "api_key": "stolen",
                "script": str(script), "agent_id": "ag-someone-else", "timeout_s": 0.001, "max_retries": 99,
            }
            (answer,) = raw_exchange(sock, json.dumps(override).encode() + b"\n")
            usage = broker.usage()
        requests = server.chat_requests()
    (reply,) = data["results"]
    assert reply["reply"]["tool_calls"][0]["arguments"] == {"command": "ls"}
    assert answer["ok"] is True and answer["reply"]["content"] == "done"  # the configured server answered
    assert [r.body["model"] for r in requests] == ["fake-model", "fake-model"]
    assert all(r.headers["Authorization"] == "Bearer sk-orchestrator" for r in requests)
    assert scripted.position(script, "ag-someone-else") == 0  # the script it named was never played
    assert usage == Usage(calls=2, errors=0, prompt_tokens=22, completion_tokens=14, cost_usd=0.0)


def test_the_agent_cannot_play_another_agents_script(script, sock):
    with Broker(sock, "ag-mine", ModelReach(model="scripted/demo", script=str(script))):
        (answer,) = raw_exchange(sock, json.dumps({"messages": MESSAGES, "agent_id": "ag-theirs"}).encode() + b"\n")
    assert answer["ok"] and answer["reply"]["tool_calls"][0]["name"] == "Bash"
    assert scripted.position(script, "ag-mine") == 1
    assert scripted.position(script, "ag-theirs") == 0


def test_malformed_lines_get_error_replies_and_the_broker_keeps_serving(script, sock):
    with Broker(sock, "ag-1", ModelReach(model="scripted/demo", script=str(script))) as broker:
        replies = raw_exchange(
            sock,
            b"this is not json\n",
            b"[1, 2]\n",
            b'{"messages": "hello"}\n',
            b'{"messages": []}\n',
            b'{"messages": [{"content": "no role"}]}\n',
            b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "Bash"}]}\n',
            b"\xff\xfe\n",
            b'{"id": 7, "messages": [{"role": "user", "content": "x"}]}\n',
        )
        assert broker.usage().calls == 1  # malformed requests never reached the model
    *bad, good = replies
    for reply in bad:
        assert reply["ok"] is False and reply["error"]["kind"] == "request", reply
        assert "\n" not in reply["error"]["message"]
    assert good["ok"] is True and good["id"] == 7 and good["reply"]["tool_calls"][0]["id"] == "call_1"


def test_an_oversized_line_is_refused_without_losing_the_connection(script, sock):
    with Broker(sock, "ag-1", ModelReach(model="scripted/demo", script=str(script)), max_line_bytes=1000):
        big = json.dumps({"messages": [{"role": "user", "content": "x" * 50_000}]}).encode() + b"\n"
        first, after = raw_exchange(sock, big, b'{"messages": [{"role": "user", "content": "x"}]}\n')
    assert first["ok"] is False and first["error"]["kind"] == "request"
    assert "longer than 1000 bytes" in first["error"]["message"]
    assert after["ok"] is True and after["reply"]["tool_calls"][0]["id"] == "call_1"


def test_model_errors_reach_the_client(sock):
    with FakeOpenAIServer(["unused"]) as server:
        server.fail_next(100, 500)
        config = ModelReach(model="openai/fake-model", api_base=server.url + "/v1", api_key="sk-x",
                            timeout_s=5, transport_retries=1, backoff_s=0.01)
        with Broker(sock, "ag-err", config) as broker:
            data = run_agent(sock, [[MESSAGES, []]])
            usage = broker.usage()
        assert len(server.chat_requests()) == 2
    (result,) = data["results"]
    assert result["error"]["kind"] == "llm"
    assert "500" in result["error"]["message"] and "attempt 2 of 2" in result["error"]["message"]
    assert usage.calls == 1 and usage.errors == 1 and usage.total_tokens == 0


def test_a_bad_script_is_a_model_error_for_the_client(tmp_path, sock):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[turn]]\nsay = "hi"\n')
    with Broker(sock, "ag-1", ModelReach(model="scripted/demo", script=str(bad))):
        with BrokerClient(sock) as client, pytest.raises(ModelError) as info:
            client.complete(MESSAGES)
    assert info.value.kind == "llm" and f"{bad}:2:" in str(info.value) and "unknown key `say`" in str(info.value)


def test_an_unexpected_exception_in_the_model_call_is_an_error_reply(sock):
    def broken(request: ModelRequest) -> ModelReply:
        raise RuntimeError("boom\nwith a second line")

    with Broker(sock, "ag-1", ModelReach(model="openai/x"), complete=broken) as broker:
        with BrokerClient(sock) as client:
            with pytest.raises(ModelError) as info:
                client.complete(MESSAGES)
            with pytest.raises(ModelError):  # the connection is still usable
                client.complete(MESSAGES)
        assert broker.usage().errors == 2
    assert info.value.kind == "llm" and "RuntimeError: boom with a second line" in str(info.value)


def test_the_broker_fills_the_request_from_its_configuration(sock):
    seen: list[ModelRequest] = []

    def fake(request: ModelRequest) -> ModelReply:
        seen.append(request)
        return ModelReply("ok", [], 3, 4, 0.25)

    config = ModelReach(model="openai/gpt-x", api_base="http://127.0.0.1:1/v1", script=None, timeout_s=7,
                        transport_retries=4)
    with Broker(sock, "ag-cfg", config, complete=fake) as broker, BrokerClient(sock) as client:
        client.complete(MESSAGES, [BASH])
        client.complete(MESSAGES)
        usage = broker.usage()
    assert seen[0] == ModelRequest(model="openai/gpt-x", messages=MESSAGES, tools=[BASH],
                                   api_base="http://127.0.0.1:1/v1", script=None, timeout_s=7, max_retries=4,
                                   agent_id="ag-cfg")
    assert usage == Usage(calls=2, errors=0, prompt_tokens=6, completion_tokens=8, cost_usd=0.5)


def test_a_broken_connection_is_a_model_error(script, sock):
    with BrokerClient(sock) as client, pytest.raises(ModelError) as info:
        client.complete(MESSAGES)  # nobody listens
    assert info.value.kind == "broker"
    broker = Broker(sock, "ag-1", ModelReach(model="scripted/demo", script=str(script))).start()
    client = BrokerClient(sock)
    assert client.complete(MESSAGES).tool_calls
    broker.close()
    with pytest.raises(ModelError) as info:
        client.complete(MESSAGES)
    assert info.value.kind == "broker"
    with Broker(sock, "ag-1", ModelReach(model="scripted/demo", script=str(script))):
        assert client.complete(MESSAGES).content == "All green."  # reconnects; the script went on
    client.close()


def test_stale_sockets_are_replaced_and_other_files_refused(script, tmp_path):
    path = tmp_path / "stale.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()
    config = ModelReach(model="scripted/demo", script=str(script))
    with Broker(path, "ag-1", config), BrokerClient(path) as client:
        assert client.complete(MESSAGES).tool_calls
    regular = tmp_path / "file.sock"
    regular.write_text("not a socket")
    with pytest.raises(FileExistsError):
        Broker(regular, "ag-1", config).start()
    assert regular.read_text() == "not a socket"
    with pytest.raises(ValueError, match="too long"):
        Broker(tmp_path / ("x" * 120) / "b.sock", "ag-1", config)


def test_wire_types_round_trip():
    reply = ModelReply(None, [], 1, 2, 0.5)
    assert ModelReply.from_dict(json.loads(json.dumps(reply.to_dict()))) == reply
    req = ModelRequest(model="m", messages=MESSAGES, tools=[BASH], api_base="http://127.0.0.1/v1", script="s.toml",
                       timeout_s=3, max_retries=1, agent_id="ag")
    assert ModelRequest.from_dict(json.loads(json.dumps(req.to_dict()))) == req
    err = ModelError("a\nb", kind="llm")
    assert ModelError.from_dict(err.to_dict()).to_dict() == {"kind": "llm", "message": "a b"}
    for bad in ({"content": 3}, {"content": None, "tool_calls": [{"id": "x"}]}, {"content": None, "prompt_tokens": -1}, []):
        with pytest.raises(ValueError):
            ModelReply.from_dict(bad)
    for bad in ({"model": "m"}, {"model": "", "messages": MESSAGES}, {"model": "m", "messages": MESSAGES, "max_retries": -1}):
        with pytest.raises(ValueError):
            ModelRequest.from_dict(bad)
