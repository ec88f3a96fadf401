"""The hook's JSON (`runtime.lang.hotjson`) reads and writes exactly what the standard library's `json` does, and
refuses what it refuses: property tests over generated documents and arbitrary text."""

from __future__ import annotations

import json
import math
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.lang import hotjson

_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
                       max_leaves=30)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_a_document_json_writes_is_read_as_json_reads_it_and_written_back_alike(value):
    text = json.dumps(value)
    assert hotjson.loads(text) == json.loads(text)
    assert hotjson.loads(text.encode()) == json.loads(text.encode())
    assert hotjson.dumps(value) == text


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}[]",:0123456789.eE+-tfrunalsNIy \t\n\r\\/x\u00e9')), max_size=40))
def test_any_text_is_accepted_or_refused_exactly_as_json_does(text):
    try:
        expected: object = json.loads(text)
    except ValueError:
        expected = ValueError
    try:
        got: object = hotjson.loads(text)
    except ValueError:
        got = ValueError
    assert got is expected if expected is ValueError else _same(got, expected) or got == expected


def test_the_hook_s_answer_is_written_as_json_writes_it():
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                     "permissionDecisionReason": "`rm` \u00e9 \u2028 \"quoted\" \x00 [atom]"}}
    assert hotjson.dumps(answer) == json.dumps(answer)


def test_bad_input_is_a_value_error_saying_where_in_a_process_that_never_imported_json():
    """The scanner reports its errors through `json.decoder`, which the hook never imports: the error is still a
    ValueError saying what is wrong, never a crash (the hook turns both into a deny, but only one says why)."""
    probe = ("import sys\nfrom runtime.lang import hotjson\nassert 'json' not in sys.modules\n"
             "for bad in ('{', '[1,', '{\"a\" 1}', '\"\\\\x\"', 'nul'):\n"
             "    try:\n        hotjson.loads(bad)\n    except ValueError as exc:\n        print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == 5 and all("char" in line or "line" in line for line in lines), out.stdout + out.stderr
