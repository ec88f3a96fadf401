"""Arbitrary and malformed hook input never crashes the hook and never yields allow."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.gate.hook import run_hook

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def hook(policy_for):
    policy = policy_for("edit-local")

    def call(raw: bytes):
        answer = run_hook(raw, lambda data: policy)
        assert answer.exit_code in (0, 2)
        out = json.loads(answer.stdout)["hookSpecificOutput"]
        assert out["permissionDecision"] in ("allow", "deny", "ask")
        assert (answer.exit_code == 2) == (out["permissionDecision"] == "deny")
        return out["permissionDecision"]
    return call


def valid_calls(root):
    return [
        {"hook_event_name": "PreToolUse", "cwd": root, "tool_name": "Write", "tool_input": {"file_path": f"{root}/src/pkg/a.py", "content": "x"}},
        {"hook_event_name": "PreToolUse", "cwd": root, "tool_name": "Bash", "tool_input": {"command": "pytest -q tests"}},
        {"hook_event_name": "PreToolUse", "cwd": root, "tool_name": "Read", "tool_input": {"file_path": f"{root}/src/pkg/mod.py"}},
        {"hook_event_name": "PreToolUse", "cwd": root, "tool_name": "Edit", "tool_input": {"file_path": "src/pkg/mod.py", "old_string": "x", "new_string": "y"}},
    ]


def test_the_unmutated_calls_are_allowed(hook, worktree):
    for call in valid_calls(str(worktree)):
        assert hook(json.dumps(call).encode()) == "allow"


@SETTINGS
@given(raw=st.binary(max_size=300))
def test_arbitrary_bytes_are_denied(hook, raw):
    assert hook(raw) == "deny"


@SETTINGS
@given(value=json_values)
def test_arbitrary_json_is_denied(hook, value):
    assert hook(json.dumps(value).encode()) == "deny"


def _wrong_type(value):
    return st.one_of(json_values).filter(lambda v: type(v) is not type(value) or v is None)


@SETTINGS
@given(data=st.data(), which=st.integers(0, 3))
def test_a_valid_call_with_one_corruption_is_denied(hook, worktree, data, which):
    call = valid_calls(str(worktree))[which]
    corruption = data.draw(st.sampled_from([
        "drop-top", "retype-top", "event", "relative-cwd", "unknown-input-key", "retype-input", "nul-path", "drop-input",
    ]))
    if corruption == "drop-top":
        del call[data.draw(st.sampled_from(sorted(call)))]
    elif corruption == "retype-top":
        key = data.draw(st.sampled_from(sorted(call)))
        call[key] = data.draw(_wrong_type(call[key]))
    elif corruption == "event":
        call["hook_event_name"] = data.draw(st.text(max_size=15).filter(lambda s: s != "PreToolUse"))
    elif corruption == "relative-cwd":
        call["cwd"] = data.draw(st.text(max_size=10).filter(lambda s: not s.startswith("/")))
    elif corruption == "unknown-input-key":
        known = {"file_path", "content", "command", "old_string", "new_string", "offset", "limit", "pages",
                 "allow_large", "description", "timeout", "run_in_background", "replace_all", "dangerouslyDisableSandbox"}
        key = data.draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in known))
        call["tool_input"][key] = data.draw(json_values)
    elif corruption == "retype-input":
        key = {"Write": "file_path", "Bash": "command", "Read": "file_path", "Edit": "file_path"}[call["tool_name"]]
        call["tool_input"][key] = data.draw(_wrong_type(""))
    elif corruption == "nul-path":
        key = "command" if call["tool_name"] == "Bash" else "file_path"
        call["tool_input"][key] += "\x00"
    else:
        key = "command" if call["tool_name"] == "Bash" else "file_path"
        del call["tool_input"][key]
    assert hook(json.dumps(call).encode()) == "deny"
