"""Model calls through litellm: the only module of the project that imports litellm.

litellm is imported lazily, inside functions (it costs 3-5 s), after setting
``LITELLM_LOCAL_MODEL_COST_MAP=True`` (otherwise it fetches a cost map over the network and takes
about 7 s offline). Nothing imports litellm by importing this module.

``complete(request)`` makes one model call with bounded retries:

- Retried (``request.max_retries`` times after the first attempt, backoff ``backoff_s * 2**n``
  capped at 30 s): connection errors, timeouts, 408, 429 and 5xx answers. litellm's own retries
  are switched off (``max_retries=0``) so the count is ours alone.
- Not retried: any other 4xx (a bad request stays bad), a bad scripted-model file, a response
  with no choices. Every failure ends as ``ModelError(kind="llm")`` naming the last error in one
  line.
- Tool calls are read from ``message.tool_calls`` whatever ``finish_reason`` says (mocked and
  scripted calls come back with ``"stop"``). Arguments arrive as a JSON string; one that is not a
  JSON object does NOT fail the call: it becomes a ``ToolCall`` with empty ``arguments`` and
  ``error`` set, which the agent answers as a failed tool call so the model can retry it (one
  garbled call is not worth failing the whole run for). An empty string is ``{}``.
- Cost: litellm's own figure when it knows the model (``_hidden_params["response_cost"]``, else
  ``completion_cost``), 0.0 for a model it does not know. Never raises for cost.

``complete_structured(request, schema)`` is ``complete`` with ``response_format=schema`` (a pydantic
model class, which litellm sends as a strict JSON schema: ``{"type": "json_schema", "json_schema":
{"name", "strict": true, "schema"}}``), the reply's content parsed with the model. Transport
failures are retried as in ``complete``; a content that is not JSON or does not fit the schema is
NOT retried here: it raises ``StructuredReplyError`` (a ``ModelError`` of kind ``"llm"``) carrying
the error lines, the raw content and the reply, so that the caller can send the errors back to the
model in its own conversation. A content wrapped in one Markdown code fence is unwrapped first.
pydantic is imported only by that call, like litellm.

Models named ``scripted/<anything>`` are played by ``runtime.models.scripted`` in this process,
never through litellm: litellm is the optional ``models`` extra, and scripted runs (the demo, the
tests, a first spawn) work on the core install. Without litellm, any other model is one line naming
the extra to install (``MissingExtra``), from ``model_problem`` before a run creates anything.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from runtime.errors import ManifestError, MissingExtra
from runtime.lang.jsontypes import JSONObject
from runtime.models import scripted
from runtime.models.types import ModelError, ModelReply, ModelRequest, ToolCall, one_line

if TYPE_CHECKING:
    from pydantic import BaseModel

    M = TypeVar("M", bound=BaseModel)

SCRIPTED_PROVIDER = "scripted"
MAX_BACKOFF_S = 30.0

_LOCK = threading.Lock()
_LITELLM: Any = None


def get_litellm(model: str | None = None) -> Any:
    """The litellm module, imported once (offline cost map, quiet); ``MissingExtra`` when it is not
    installed (``model`` names what needed it)."""
    global _LITELLM
    with _LOCK:
        if _LITELLM is None:
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            try:
                import litellm
            except ImportError as exc:
                if exc.name != "litellm":
                    raise  # litellm is there and broken: its own error says more than a hint would
                what = f"`{model}` (a model called through litellm)" if model else "a model call through litellm"
                raise MissingExtra(what, "models") from None

            litellm.suppress_debug_info = True  # else unknown models print "Provider List: ..." to stdout
            _LITELLM = litellm
    return _LITELLM


def model_problem(model: str, api_base: str | None = None) -> str | None:
    """Why ``model`` cannot be called from here, or None: checked before a run creates anything.

    litellm must know the provider (a bare name it does not know, or a typo, is refused before a
    worktree exists, not as three retried errors later), and the provider's key must be in the
    environment as litellm's own check sees it for this ``api_base``: a local server of a provider
    that needs no key (``hosted_vllm/``, ``ollama/``) needs none, while ``openai/`` needs
    OPENAI_API_KEY even there (its client refuses to send a call without one, which litellm reports
    as an HTTP 500 that was never sent). A model server on the loopback is asked for its model list
    (`runtime.models.reach`): one that is not up, or answers 5xx, is refused here too.
    """
    if is_scripted(model):
        return None
    try:
        litellm = get_litellm(model)
    except MissingExtra as exc:
        return str(exc)
    try:
        provider = litellm.get_llm_provider(model, api_base=api_base)[1]
    except Exception:  # noqa: BLE001 - litellm raises its own BadRequestError family here
        return (f"litellm cannot tell which provider serves `{model}`: check the name, or prefix it with "
                "the provider (`openai/...`, `anthropic/...`, `ollama/...`)")
    missing = litellm.validate_environment(model, api_base=api_base).get("missing_keys") or []
    if missing:
        where = (" (even with `api-base`: any value, for a server that checks none)" if api_base
                 else " (or give `api-base` for a local server of a provider that needs no key)")
        return f"`{model}` ({provider}) needs {', '.join(missing)} in the environment{where}"
    if api_base:
        from runtime.models.reach import local_server_problem

        return local_server_problem(api_base)
    return None


def is_scripted(model: str) -> bool:
    return model.startswith(SCRIPTED_PROVIDER + "/")


def complete(request: ModelRequest, *, api_key: str | None = None, backoff_s: float = 0.5,
             sleep: Callable[[float], None] = time.sleep) -> ModelReply:
    """One model call with bounded retries; ``ModelError(kind="llm")`` when it cannot be made.

    ``api_key`` is passed to litellm when given; otherwise litellm reads the provider's usual
    variable (``OPENAI_API_KEY``, ...) from the orchestrator's environment.
    """
    return _complete(request, None, api_key=api_key, backoff_s=backoff_s, sleep=sleep)


class StructuredReplyError(ModelError):
    """A structured call whose reply does not fit the schema (not JSON, or not the model's shape).

    ``kind`` is ``"llm"``. ``errors`` holds one line per problem (JSON path and message),
    ``content`` the raw content the model wrote, ``reply`` the whole reply (for usage and cost).
    """

    def __init__(self, message: str, *, errors: list[str], content: str | None, reply: ModelReply) -> None:
        super().__init__(message, kind="llm")
        self.errors = errors
        self.content = content
        self.reply = reply


def complete_structured(request: ModelRequest, schema: type[M], *, api_key: str | None = None,
                        backoff_s: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> tuple[M, ModelReply]:
    """One call with ``response_format=schema``: the parsed instance of ``schema`` and the reply.

    Raises ``ModelError(kind="llm")`` when the call cannot be made (after the bounded retries of
    ``complete``), and ``StructuredReplyError`` (a ``ModelError``, never retried here) when the
    content is not a JSON document of the schema's shape.
    """
    from pydantic import ValidationError

    reply = _complete(request, schema, api_key=api_key, backoff_s=backoff_s, sleep=sleep)
    name = getattr(schema, "__name__", "the schema")
    content = reply.content
    if content is None or not content.strip():
        what = "tool calls" if reply.tool_calls else "no content"
        errors = [f"the reply has {what}: answer with one JSON document of the schema {name}"]
    else:
        try:
            return schema.model_validate_json(_unfence(content)), reply
        except ValidationError as exc:
            errors = _validation_lines(exc)
    shown = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
    raise StructuredReplyError(f"{request.model}: the reply does not fit {name}: {shown}",
                               errors=errors, content=content, reply=reply)


def _unfence(content: str) -> str:
    """The text inside one Markdown code fence wrapping the whole content, else the content."""
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and text.count("```") == 2:
        first_newline = text.find("\n")
        if first_newline != -1:
            return text[first_newline + 1:-3]
    return content


def _validation_lines(exc: Any, limit: int = 20) -> list[str]:
    """One line per pydantic error: the JSON path (by alias) and the message."""
    lines = []
    for err in exc.errors(include_url=False)[:limit]:
        where = ""
        for part in err.get("loc", ()):
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
        kind, msg = err.get("type", ""), str(err.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if kind == "extra_forbidden":
            msg = "unknown key"
        elif kind == "missing":
            msg = "missing key (every key is required: write null where the schema allows it)"
        elif kind == "json_invalid":
            msg = f"not valid JSON ({err.get('ctx', {}).get('error', msg)})"
        lines.append(one_line(f"{where}: {msg}" if where else msg, 300))
    if exc.error_count() > limit:
        lines.append(f"... and {exc.error_count() - limit} more error(s)")
    return lines


class _Completion(TypedDict, total=False):
    """The keywords of one `litellm.completion` call."""

    model: str
    messages: Sequence[JSONObject]
    timeout: float
    max_retries: int
    tools: Sequence[JSONObject]
    api_base: str
    api_key: str
    response_format: type[BaseModel]


def _complete(request: ModelRequest, response_format: type[BaseModel] | None, *, api_key: str | None,
              backoff_s: float, sleep: Callable[[float], None]) -> ModelReply:
    if is_scripted(request.model):
        return _play(request)
    kwargs: _Completion = {
        "model": request.model,
        "messages": copy.deepcopy(request.messages),
        "timeout": request.timeout_s,
        "max_retries": 0,  # litellm/openai SDK retries off: ours are counted below
    }
    if request.tools:
        kwargs["tools"] = copy.deepcopy(request.tools)
    if request.api_base:
        kwargs["api_base"] = request.api_base
    if api_key is not None:
        kwargs["api_key"] = api_key
    if response_format is not None:
        kwargs["response_format"] = response_format
    try:
        litellm = get_litellm(request.model)
    except MissingExtra as exc:  # model_problem said so before the run; a call still ends as a model failure
        raise ModelError(str(exc)) from None
    attempts = 1 + max(0, request.max_retries)
    for attempt in range(1, attempts + 1):
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a ModelError below
            if attempt < attempts and _retryable(litellm, exc):
                sleep(min(backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S))
                continue
            raise ModelError(f"{request.model}: {_describe(exc)} (attempt {attempt} of {attempts})") from None
        return _to_reply(litellm, response, request.model)
    raise AssertionError("unreachable")  # pragma: no cover


def _play(request: ModelRequest) -> ModelReply:
    """The scripted model's next turn, in this process: no retries (a script does not fail in passing)."""
    if not request.script:
        raise ModelError(f"{request.model}: a scripted model needs a script file")
    try:
        played = scripted.play(request.script, request.agent_id or "default", request.messages, request.tools or None)
    except ManifestError as exc:
        raise ModelError(f"{request.model}: bad script: {exc}") from None
    calls = [_tool_call(c["id"], c["name"], c["arguments"]) for c in played.tool_calls]
    return ModelReply(played.content, calls, played.prompt_tokens, played.completion_tokens, 0.0)


def _retryable(litellm: Any, exc: BaseException) -> bool:
    if isinstance(exc, (litellm.Timeout, litellm.APIConnectionError, litellm.RateLimitError,
                        litellm.InternalServerError, litellm.ServiceUnavailableError)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in (408, 429) or status >= 500
    return isinstance(exc, (ConnectionError, TimeoutError))


def _describe(exc: BaseException) -> str:
    text = str(exc) or repr(exc)
    if "Connection error" in text or isinstance(exc, ConnectionError):
        # litellm reports an unreachable server as HTTP 500 from the server, which it never was.
        return f"cannot connect to the model server: {one_line(text, 300)}"
    status = getattr(exc, "status_code", None)
    head = type(exc).__name__ + (f" (HTTP {status})" if isinstance(status, int) else "")
    return f"{head}: {one_line(text, 300)}"


def _to_reply(litellm: Any, response: Any, model: str) -> ModelReply:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ModelError(f"{model}: the response has no choices")
    message = choices[0].message
    calls = []
    for k, tc in enumerate(getattr(message, "tool_calls", None) or [], start=1):
        function = tc.function
        calls.append(_tool_call(getattr(tc, "id", None) or f"call_{k}", function.name or "", function.arguments))
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    content = message.content if isinstance(message.content, str) else None
    return ModelReply(content, calls, prompt_tokens, completion_tokens, _cost(litellm, response, model))


def _tool_call(call_id: str, name: str, raw: Any) -> ToolCall:
    if isinstance(raw, dict):
        return ToolCall(call_id, name, raw)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ToolCall(call_id, name, {})
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return ToolCall(call_id, name, {}, f"the arguments of {name} are not valid JSON ({exc}): {one_line(raw, 200)}")
    if not isinstance(parsed, dict):
        return ToolCall(call_id, name, {}, f"the arguments of {name} must be a JSON object, not {type(parsed).__name__}")
    return ToolCall(call_id, name, parsed)


def _cost(litellm: Any, response: Any, model: str) -> float:
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        return float(cost)
    try:
        return float(litellm.completion_cost(completion_response=response, model=model) or 0.0)
    except Exception:  # noqa: BLE001 - an unknown model has no price: that is not an error
        return 0.0
