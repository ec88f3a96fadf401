"""The scripted model: deterministic playback of model turns from a TOML file.

A script is a list of ``[[turn]]`` entries, each either tool calls or a final content::

    [[turn]]
    tool_calls = [
        { name = "Bash", input = { command = "git push" } },
        { name = "Write", input = { file_path = "src/a.py", content = "x = 1\\n" } },
    ]

    [[turn]]
    content = "Done: fixed the off-by-one."

Keys: ``turn`` at the top, optionally ``review`` (``[[review]]`` entries, each a ``content``: what a
spawn's reviewer answers, played for an agent id ending in ``/review``) and ``latency-s`` (seconds every
answer takes, to stand in for a real model's latency in benchmarks); in a turn exactly one of ``tool_calls`` (a non-empty
array of ``{ name = "...", input = { ... } }``, ``input`` optional) and ``content`` (a string).
A bad script is a one-line ``ManifestError`` ``file:line: message``.

Playback: the n-th call for one agent id (and script) gets turn n, whatever the conversation
says. The position lives in this process (the orchestrator, where the broker runs), so it
persists across calls and across attempts: a retried agent continues where the script is. When
the script is used up every further call gets a final content saying so. Tool call ids are
``call_<n>``, counted per agent across the playback. Usage is counted deterministically: a token
is four characters of the JSON of the messages and tools (prompt) or of the answer (completion).

No litellm here: ``runtime.models.llm`` wraps :func:`play` in a litellm custom provider.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from runtime.errors import ManifestError
from runtime.lang.jsontypes import JSONObject
from runtime.manifests.tomlsrc import TomlSource, read_toml

_TURN_KEYS = ("tool_calls", "content")
_CALL_KEYS = ("name", "input")


@dataclass(frozen=True)
class ScriptedCall:
    name: str
    input: JSONObject  # the tool input, as the model would write it


@dataclass(frozen=True)
class ScriptTurn:
    content: str | None
    tool_calls: tuple[ScriptedCall, ...]
    line: int


@dataclass(frozen=True)
class Script:
    path: str
    turns: tuple[ScriptTurn, ...]
    latency_s: float = 0.0
    # What a spawn's reviewer answers (`runtime.verify.review`), played for an agent id ending in `/review`.
    reviews: tuple[ScriptTurn, ...] = ()


class PlayedCall(TypedDict):
    """A tool call as a model's answer carries it: its arguments a JSON string."""

    id: str  # call_<n>
    name: str
    arguments: str


@dataclass(frozen=True)
class PlayedTurn:
    """What one call of the scripted model answers."""

    index: int  # 0-based position in the script; len(turns) or more once it is used up
    content: str | None
    tool_calls: tuple[PlayedCall, ...]
    prompt_tokens: int
    completion_tokens: int


# -- loading --------------------------------------------------------------------------------------

_CACHE: dict[str, tuple[tuple[int, int], Script]] = {}
_CACHE_LOCK = threading.Lock()


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and validate a script (cached while the file is unchanged)."""
    key = str(Path(path).resolve())
    try:
        st = os.stat(key)
    except OSError as exc:
        raise ManifestError(str(path), 1, f"cannot read script: {exc.strerror or exc}") from None
    stamp = (st.st_mtime_ns, st.st_size)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    data, src = read_toml(key, display=str(path))
    script = parse_script(data, src)
    with _CACHE_LOCK:
        _CACHE[key] = (stamp, script)
    return script


def parse_script(data: JSONObject, src: TomlSource) -> Script:
    """Validate parsed TOML as a script; every error names its line."""
    for key in data:
        if key not in ("turn", "review", "latency-s"):
            raise src.error((key,), f"unknown key `{key}`: a script holds [[turn]] and [[review]] entries and "
                                    "`latency-s`")
    latency = data.get("latency-s", 0.0)
    if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not 0 <= latency <= 600:
        raise src.error(("latency-s",), "`latency-s` must be a number of seconds between 0 and 600")
    turns_raw = data.get("turn")
    if not isinstance(turns_raw, list) or not turns_raw:
        raise src.error(("turn",), "a script needs at least one [[turn]] entry")
    turns = []
    for i, raw in enumerate(turns_raw):
        loc = ("turn", i)
        if not isinstance(raw, dict):
            raise src.error(("turn",), "`turn` must be an array of tables ([[turn]])")
        for key in raw:
            if key not in _TURN_KEYS:
                raise src.error(loc + (key,), f"unknown key `{key}` in turn {i + 1} (expected `tool_calls` or `content`)")
        if ("tool_calls" in raw) == ("content" in raw):
            which = "both" if raw else "neither"
            raise src.error(loc, f"turn {i + 1} has {which} of `tool_calls` and `content`: give exactly one")
        if "content" in raw:
            if not isinstance(raw["content"], str):
                raise src.error(loc + ("content",), f"`content` of turn {i + 1} must be a string")
            turns.append(ScriptTurn(raw["content"], (), src.line_of(loc)))
            continue
        calls_raw = raw["tool_calls"]
        if not isinstance(calls_raw, list) or not calls_raw:
            raise src.error(loc + ("tool_calls",), f"`tool_calls` of turn {i + 1} must be a non-empty array of tables")
        calls = []
        for j, call in enumerate(calls_raw):
            def err(message: str, j: int = j, loc: tuple[str, int] = loc) -> ManifestError:
                return ManifestError(src.path, _item_line(src, loc + ("tool_calls",), j), message)

            where = f"tool call {j + 1} of turn {i + 1}"
            if not isinstance(call, dict):
                raise err(f"{where} must be a table `{{ name = ..., input = {{ ... }} }}`")
            for key in call:
                if key not in _CALL_KEYS:
                    raise err(f"unknown key `{key}` in {where} (expected `name` and `input`)")
            name = call.get("name")
            if not isinstance(name, str) or not name:
                raise err(f"{where} needs `name`, a non-empty string")
            arguments = call.get("input", {})
            if not isinstance(arguments, dict):
                raise err(f"`input` of {where} must be a table")
            calls.append(ScriptedCall(name, arguments))
        turns.append(ScriptTurn(None, tuple(calls), src.line_of(loc)))
    reviews_raw = data.get("review", [])
    if not isinstance(reviews_raw, list) or not all(isinstance(r, dict) for r in reviews_raw):
        raise src.error(("review",), "`review` must be an array of tables ([[review]])")
    reviews = []
    for i, raw in enumerate(reviews_raw):
        if set(raw) != {"content"} or not isinstance(raw["content"], str):
            raise src.error(("review", i), f"review {i + 1} holds `content`, a string, alone")
        reviews.append(ScriptTurn(raw["content"], (), src.line_of(("review", i))))
    return Script(src.path, tuple(turns), float(latency), tuple(reviews))


def _item_line(src: TomlSource, key_loc: tuple[Any, ...], index: int) -> int:
    """The line where the ``index``-th item of the array at ``key_loc`` starts (best effort)."""
    start = src.line_of(key_loc)
    lines = src.text.splitlines()
    if start > len(lines) or "=" not in lines[start - 1]:
        return start  # not an inline array (e.g. [[turn.tool_calls]] tables)
    depth, seen, quote = 0, -1, ""
    for no in range(start, len(lines) + 1):
        line = lines[no - 1]
        chars = iter(line.split("=", 1)[1] if no == start else line)
        for ch in chars:
            if quote:
                if ch == "\\" and quote == '"':
                    next(chars, None)
                elif ch == quote:
                    quote = ""
                continue
            if ch in "\"'":
                quote = ch
            elif ch == "#":
                break
            elif ch in "[{":
                depth += 1
                if depth == 2:
                    seen += 1
                    if seen == index:
                        return no
            elif ch in "]}":
                depth -= 1
                if depth <= 0:
                    return start
        quote = ""
    return start


# -- playback -------------------------------------------------------------------------------------

_POSITIONS: dict[tuple[str, str], tuple[int, int]] = {}  # (agent id, script) -> (next turn, calls made)
_LOCK = threading.Lock()


def reset(agent_id: str | None = None) -> None:
    """Forget playback positions (of one agent id, or all): for tests."""
    with _LOCK:
        for key in [k for k in _POSITIONS if agent_id is None or k[0] == agent_id]:
            del _POSITIONS[key]


def position(script_path: str | os.PathLike[str], agent_id: str) -> int:
    """The index of the turn the next call of this agent will get."""
    with _LOCK:
        return _POSITIONS.get((agent_id, str(Path(script_path).resolve())), (0, 0))[0]


def tokens(text: str) -> int:
    """Deterministic token count: four characters a token, rounded up."""
    return (len(text) + 3) // 4


def play(script_path: str | os.PathLike[str], agent_id: str, messages: Sequence[JSONObject],
         tools: Sequence[JSONObject] | None = None) -> PlayedTurn:
    """Answer the next call of ``agent_id``: its next scripted turn, or an "exhausted" content."""
    script = load_script(script_path)
    key = (agent_id, str(Path(script_path).resolve()))
    turns = script.reviews if agent_id.endswith("/review") else script.turns
    with _LOCK:
        index, calls_made = _POSITIONS.get(key, (0, 0))
        turn = turns[index] if index < len(turns) else None
        n_calls = len(turn.tool_calls) if turn is not None else 0
        _POSITIONS[key] = (index + 1, calls_made + n_calls)
    prompt_tokens = tokens(json.dumps(messages, sort_keys=True, default=str) + json.dumps(tools or [], sort_keys=True, default=str))
    if script.latency_s:
        time.sleep(script.latency_s)
    if turn is None:
        content = (f"The scripted model's script is used up: {Path(script.path).name} has "
                   f"{len(turns)} turn(s) and this is call {index + 1}.")
        return PlayedTurn(index, content, (), prompt_tokens, tokens(content))
    if turn.content is not None:
        return PlayedTurn(index, turn.content, (), prompt_tokens, tokens(turn.content))
    calls = tuple(
        PlayedCall(id=f"call_{calls_made + k}", name=call.name, arguments=json.dumps(call.input))
        for k, call in enumerate(turn.tool_calls, start=1)
    )
    completion = json.dumps([[c["name"], c["arguments"]] for c in calls])
    return PlayedTurn(index, None, calls, prompt_tokens, tokens(completion))
