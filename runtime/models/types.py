"""Model request and reply types, and their JSON forms (the broker's wire format); and ``ModelReach``,
which model a caller uses and how it is reached.

Standard library only: the agent process imports this module, and it must stay cheap.

Messages are OpenAI chat messages (``{"role": ..., "content": ...}``, assistant messages with
``tool_calls``, ``{"role": "tool", "tool_call_id": ..., "content": ...}``); tools are OpenAI
function-tool schemas (``{"type": "function", "function": {"name", "description", "parameters"}}``).

``from_dict`` methods raise ``ValueError`` with a one-line message on a malformed document.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from runtime.errors import AgentFailed
from runtime.lang.jsontypes import JSON, JSONDict, JSONObject


def one_line(text: object, limit: int = 500) -> str:
    """``text`` collapsed to one line of at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class ModelError(AgentFailed):
    """A model call that failed, as one line: the run's outcome is ``failed(<kind>)``.

    ``kind`` is ``"llm"`` when the model could not be reached or answered an error (after the
    bounded retries), ``"request"`` when the agent sent the broker a malformed request, and
    ``"broker"`` when the connection to the broker broke or its reply made no sense.
    """

    def __init__(self, message: str, kind: str = "llm") -> None:
        self.kind = kind
        super().__init__(kind, one_line(message))

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message}

    @classmethod
    def from_dict(cls, data: JSON) -> ModelError:
        if not isinstance(data, dict):
            return cls(f"malformed error from the broker: {one_line(repr(data), 200)}", kind="broker")
        return cls(str(data.get("message") or "unknown error"), kind=str(data.get("kind") or "llm"))


def check_messages(messages: JSON) -> list[JSONObject]:
    """``messages`` if it is a list of chat messages, else ``ValueError``."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("`messages` must be a non-empty list of chat messages")
    checked: list[JSONObject] = []
    for n, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ValueError(f"`messages[{n}]` must be an object with a string `role`")
        checked.append(message)
    return checked


def check_tools(tools: JSON) -> list[JSONObject]:
    """``tools`` if it is a list of OpenAI function-tool schemas (None is an empty list)."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise ValueError("`tools` must be a list of function-tool schemas")
    checked: list[JSONObject] = []
    for n, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if (not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict)
                or not isinstance(function.get("name"), str) or not function["name"]):
            raise ValueError(f'`tools[{n}]` must be {{"type": "function", "function": {{"name": ...}}}}')
        checked.append(tool)
    return checked


def _opt_str(data: JSONObject, key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"`{key}` must be a string or null")
    return value


@dataclass
class ModelRequest:
    """One model call, as the orchestrator makes it (the agent sends only messages and tools)."""

    model: str
    messages: Sequence[JSONObject]
    tools: Sequence[JSONObject] = field(default_factory=list)
    api_base: str | None = None
    script: str | None = None  # path of a scripted-model file (models named scripted/<name>)
    timeout_s: float = 120.0  # per attempt
    max_retries: int = 2  # attempts after the first, on connection errors, timeouts, 429 and 5xx
    agent_id: str = "default"  # keys the scripted playback position across calls and attempts

    def to_dict(self) -> JSONDict:
        return {
            "model": self.model, "messages": self.messages, "tools": self.tools,
            "api_base": self.api_base, "script": self.script, "timeout_s": self.timeout_s,
            "max_retries": self.max_retries, "agent_id": self.agent_id,
        }

    @classmethod
    def from_dict(cls, data: JSON) -> ModelRequest:
        if not isinstance(data, dict):
            raise ValueError("a model request must be a JSON object")
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise ValueError("`model` must be a non-empty string")
        timeout_s = data.get("timeout_s", 120.0)
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
            raise ValueError("`timeout_s` must be a positive number")
        max_retries = data.get("max_retries", 2)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError("`max_retries` must be a non-negative integer")
        agent_id = data.get("agent_id", "default")
        if not isinstance(agent_id, str) or not agent_id:
            raise ValueError("`agent_id` must be a non-empty string")
        return cls(
            model=model, messages=check_messages(data.get("messages")), tools=check_tools(data.get("tools")),
            api_base=_opt_str(data, "api_base"), script=_opt_str(data, "script"),
            timeout_s=float(timeout_s), max_retries=max_retries, agent_id=agent_id,
        )


class ReachFields(TypedDict, total=False):
    """The fields of ``ModelReach`` but ``model``, as keywords of its per-use constructors (the same names
    and types: ``tests/models/test_reach.py`` holds them together)."""

    api_base: str | None
    script: str | None
    agent_id: str
    max_retries: int
    timeout_s: float
    transport_retries: int
    backoff_s: float
    api_key: str | None


@dataclass(frozen=True)
class ModelReach:
    """Which model to call and how to reach it: the one record of it, whoever calls.

    - The broker (``runtime.models.broker.Broker``) calls an agent's model with it, made from the
      task's ``[agent]`` table with the defaults below. It plays every call as its own agent (the
      socket is the agent's identity) whatever ``agent_id`` says, and never uses ``max_retries``:
      only the planner and the reviewer send replies back.
    - The planner and the reviewer (``runtime.orchestration.advisors``) call theirs with all of it.
      Their reaches come from ``ModelReach.planner`` and ``ModelReach.reviewer``, whose defaults
      are the same but for the playback id, ``"planner"`` and ``"reviewer"``.
    - A plan file's ``[plan.planner]`` and ``[plan.reviewer]`` tables load as such reaches
      (``runtime.orchestration.plans.load``, ``script`` resolved against the plan's folder).

    ``api_key`` stays with the orchestrator: a reach is never sent to an agent.
    """

    model: str  # a litellm model name, or scripted/<name>
    api_base: str | None = None  # an http(s) model server; None: the provider's own
    script: str | None = None  # the playback file of a scripted/<name> model
    agent_id: str = "default"  # keys the scripted playback position across calls and attempts
    max_retries: int = 3  # the planner's and the reviewer's: replies sent back after a rejection
    timeout_s: float = 120.0  # per attempt
    transport_retries: int = 2  # attempts after the first, on connection errors, timeouts, 429 and 5xx
    backoff_s: float = 0.5  # before a transport retry: backoff_s * 2**n, capped
    api_key: str | None = field(default=None, repr=False)  # None: litellm reads the provider's variable

    @classmethod
    def planner(cls, model: str, **fields: Unpack[ReachFields]) -> ModelReach:
        """The planner's model: played as ``"planner"`` unless ``agent_id`` is given."""
        fields.setdefault("agent_id", "planner")
        return cls(model, **fields)

    @classmethod
    def reviewer(cls, model: str, **fields: Unpack[ReachFields]) -> ModelReach:
        """The reviewer's model: played as ``"reviewer"`` unless ``agent_id`` is given."""
        fields.setdefault("agent_id", "reviewer")
        return cls(model, **fields)

    def request(self, messages: Sequence[JSONObject], tools: Sequence[JSONObject] | None = None, *,
                agent_id: str | None = None) -> ModelRequest:
        """One call of this model with ``messages`` and ``tools``, played as ``agent_id`` (else this reach's)."""
        return ModelRequest(
            model=self.model, messages=messages, tools=tools or [], api_base=self.api_base, script=self.script,
            timeout_s=self.timeout_s, max_retries=self.transport_retries,
            agent_id=self.agent_id if agent_id is None else agent_id,
        )


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for.

    ``error`` is set when the model's arguments were not a JSON object: ``arguments`` is then
    empty, and the agent must not run the tool but answer the call with that error, so the model
    can try again (one garbled call is not worth failing the run for).
    """

    id: str
    name: str
    arguments: JSONObject
    error: str | None = None

    def to_dict(self) -> JSONDict:
        data: JSONDict = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.error is not None:
            data["error"] = self.error
        return data

    @classmethod
    def from_dict(cls, data: JSON) -> ToolCall:
        if not isinstance(data, dict):
            raise ValueError("a tool call must be a JSON object")
        call_id, name, arguments = data.get("id"), data.get("name"), data.get("arguments")
        if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, dict):
            raise ValueError("a tool call needs a string `id`, a string `name` and an object `arguments`")
        return cls(call_id, name, arguments, _opt_str(data, "error"))


@dataclass(frozen=True)
class ModelReply:
    """The model's answer: tool calls to run, or (with no tool calls) the final content."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def assistant_message(self) -> JSONDict:
        """This reply as the assistant message to append to the conversation."""
        message: JSONDict = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in self.tool_calls
            ]
        return message

    def to_dict(self) -> JSONDict:
        return {
            "content": self.content, "tool_calls": [c.to_dict() for c in self.tool_calls],
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_dict(cls, data: JSON) -> ModelReply:
        if not isinstance(data, dict):
            raise ValueError("a model reply must be a JSON object")
        content = _opt_str(data, "content")
        calls = data.get("tool_calls", [])
        if not isinstance(calls, list):
            raise ValueError("`tool_calls` must be a list")
        prompt_tokens = _count(data, "prompt_tokens")
        completion_tokens = _count(data, "completion_tokens")
        cost_usd = data.get("cost_usd", 0)
        if isinstance(cost_usd, bool) or not isinstance(cost_usd, (int, float)) or cost_usd < 0:
            raise ValueError("`cost_usd` must be a non-negative number")
        return cls(content, [ToolCall.from_dict(c) for c in calls], prompt_tokens, completion_tokens, float(cost_usd))


def _count(data: JSONObject, key: str) -> int:
    """``data[key]`` (0 when missing) if it is a non-negative integer, else ``ValueError``."""
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`{key}` must be a non-negative number")
    return value
