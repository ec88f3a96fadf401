"""The scripted model: file format, validation with line numbers, playback (without litellm)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.models import llm, scripted
from runtime.models.types import ModelError, ModelRequest

SCRIPT = """\
# a demo script
[[turn]]
tool_calls = [
    { name = "Bash", input = { command = "git push" } },
    { name = "Write", input = { file_path = "../outside.txt", content = "x" } },
]

[[turn]]
tool_calls = [{ name = "Read", input = { file_path = "src/a.py" } }]

[[turn]]
tool_calls = [{ name = "Glob" }]

[[turn]]
content = "Fixed it."
"""

MESSAGES = [{"role": "user", "content": "fix the bug"}]


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "demo.script.toml"
    path.write_text(SCRIPT)
    return path


def test_playback_order_ids_and_usage(script):
    turns = [scripted.play(script, "ag-1", MESSAGES) for _ in range(4)]
    assert [t.index for t in turns] == [0, 1, 2, 3]
    assert [[(c["id"], c["name"], json.loads(c["arguments"])) for c in t.tool_calls] for t in turns[:3]] == [
        [("call_1", "Bash", {"command": "git push"}), ("call_2", "Write", {"file_path": "../outside.txt", "content": "x"})],
        [("call_3", "Read", {"file_path": "src/a.py"})],
        [("call_4", "Glob", {})],
    ]
    assert turns[3].content == "Fixed it." and turns[3].tool_calls == ()
    assert all(t.content is None for t in turns[:3])
    # deterministic usage: four characters a token
    assert turns[0].prompt_tokens == scripted.tokens(json.dumps(MESSAGES, sort_keys=True) + "[]")
    assert turns[3].completion_tokens == scripted.tokens("Fixed it.") == 3


def test_position_persists_per_agent_and_agents_are_independent(script):
    assert scripted.play(script, "ag-a", MESSAGES).index == 0
    assert scripted.play(script, "ag-a", MESSAGES).index == 1
    assert scripted.play(script, "ag-b", MESSAGES).index == 0  # another agent starts at the top
    assert scripted.position(script, "ag-a") == 2
    assert scripted.play(script, "ag-a", [{"role": "user", "content": "a new attempt"}]).index == 2
    assert scripted.position(script, "ag-b") == 1


def test_exhausted_script_answers_a_final_content(script):
    for _ in range(4):
        scripted.play(script, "ag-1", MESSAGES)
    played = scripted.play(script, "ag-1", MESSAGES)
    assert played.tool_calls == () and played.index == 4
    assert "used up" in played.content and "4 turn(s)" in played.content and "call 5" in played.content
    assert scripted.play(script, "ag-1", MESSAGES).index == 5  # and keeps saying so


def test_an_edited_script_is_reloaded(script):
    assert len(scripted.load_script(script).turns) == 4
    script.write_text('[[turn]]\ncontent = "only one"\n')
    os.utime(script, ns=(1, 1))  # a different mtime, however fast the edit
    assert len(scripted.load_script(script).turns) == 1


BAD = [
    ('model = "x"\n[[turn]]\ncontent = "a"\n', 1, "unknown key `model`"),
    ('[[turn]]\ncontent = "a"\n\n[[turn]]\ncontent = "b"\ntool_calls = [{ name = "Bash" }]\n', 4, "has both"),
    ('[[turn]]\ncontent = "a"\n\n[[turn]]\n\n[[turn]]\ncontent = "c"\n', 4, "has neither"),
    ('[[turn]]\ncontent = "a"\nrole = "assistant"\n', 3, "unknown key `role` in turn 1"),
    ('[[turn]]\ncontent = 42\n', 2, "`content` of turn 1 must be a string"),
    ('[[turn]]\ntool_calls = []\n', 2, "non-empty array"),
    ('[[turn]]\ntool_calls = "Bash"\n', 2, "non-empty array"),
    ('[[turn]]\ntool_calls = [\n  { name = "Bash", input = { command = "ls" } },\n'
     '  { name = "Read", inptu = { file_path = "a" } },\n]\n', 4, "unknown key `inptu` in tool call 2 of turn 1"),
    ('[[turn]]\ncontent = "a"\n[[turn]]\ntool_calls = [\n  { input = { command = "ls" } },\n]\n', 5,
     "tool call 1 of turn 2 needs `name`"),
    ('[[turn]]\ntool_calls = [\n  { name = "Bash", input = { command = "ls" } },\n  { name = "Bash", input = "ls" },\n]\n', 4,
     "`input` of tool call 2 of turn 1 must be a table"),
    ('[[turn]]\ntool_calls = [ "Bash" ]\n', 2, "must be a table"),
    ('[[turn]]\ncontent = "a"\n\n[[turn]]\ncontent = "unterminated\n', 5, "invalid TOML"),
    ('# nothing here\n', 1, "at least one [[turn]]"),
    ('turn = "x"\n', 1, "at least one [[turn]]"),
    ('turn = ["x"]\n', 1, "array of tables"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), BAD)
def test_validation_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ManifestError) as info:
        scripted.load_script(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message
    assert "\n" not in message


def test_missing_script_is_a_manifest_error(tmp_path):
    with pytest.raises(ManifestError, match="cannot read script"):
        scripted.load_script(tmp_path / "nope.toml")


# -- without litellm ----------------------------------------------------------------------------------

def test_a_scripted_model_is_played_without_litellm(script, monkeypatch):
    """litellm is the optional `models` extra: a scripted call must work where importing it fails."""
    monkeypatch.setitem(sys.modules, "litellm", None)  # `import litellm` raises ImportError
    monkeypatch.setattr(llm, "_LITELLM", None)
    request = ModelRequest(model="scripted/x", messages=MESSAGES, tools=[], script=str(script), agent_id="ag-lite")
    first = llm.complete(request)
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_1", "Bash", {"command": "git push"}),
        ("call_2", "Write", {"file_path": "../outside.txt", "content": "x"}),
    ]
    assert first.prompt_tokens > 0 and first.completion_tokens > 0 and first.cost_usd == 0.0
    for _ in range(2):
        llm.complete(request)
    last = llm.complete(request)
    assert last.content == "Fixed it." and last.tool_calls == []
    assert llm.model_problem("scripted/x") is None


def test_complete_plays_the_script_and_persists_across_attempts(script):
    req = ModelRequest(model="scripted/demo", messages=MESSAGES, tools=[], script=str(script), agent_id="ag-run")
    first = llm.complete(req)
    assert [c.name for c in first.tool_calls] == ["Bash", "Write"]
    assert first.tool_calls[1].arguments == {"file_path": "../outside.txt", "content": "x"}
    assert first.prompt_tokens > 0 and first.cost_usd == 0.0
    # a "second attempt" (a fresh conversation, same agent id) continues where the script is
    retry = ModelRequest(model="scripted/demo", messages=[{"role": "user", "content": "try again"}],
                         script=str(script), agent_id="ag-run")
    assert [c.name for c in llm.complete(retry).tool_calls] == ["Read"]
    other = ModelRequest(model="scripted/demo", messages=MESSAGES, script=str(script), agent_id="ag-other")
    assert [c.name for c in llm.complete(other).tool_calls] == ["Bash", "Write"]


def test_complete_with_a_bad_or_missing_script_is_a_model_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[turn]]\ncontent = 1\n')
    with pytest.raises(ModelError) as info:
        llm.complete(ModelRequest(model="scripted/x", messages=MESSAGES, script=str(bad)))
    assert info.value.kind == "llm" and f"{bad}:2:" in str(info.value)
    with pytest.raises(ModelError, match="needs a script"):
        llm.complete(ModelRequest(model="scripted/x", messages=MESSAGES))


def test_latency_makes_every_answer_wait(tmp_path):
    import time

    from runtime.models.scripted import load_script, play, reset

    script = tmp_path / "slow.toml"
    script.write_text('latency-s = 0.2\n\n[[turn]]\ncontent = "done"\n')
    assert load_script(script).latency_s == 0.2
    reset("slow-agent")
    started = time.perf_counter()
    turn = play(script, "slow-agent", [{"role": "user", "content": "go"}])
    assert turn.content == "done" and time.perf_counter() - started >= 0.2


def test_latency_must_be_a_number_of_seconds(tmp_path):
    import pytest

    from runtime.errors import ManifestError
    from runtime.models.scripted import load_script

    script = tmp_path / "bad.toml"
    script.write_text('latency-s = "slow"\n\n[[turn]]\ncontent = "x"\n')
    with pytest.raises(ManifestError, match="latency-s"):
        load_script(script)
