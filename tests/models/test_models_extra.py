"""litellm is the `models` extra: without it a model other than scripted/ is one line naming the extra,
before a run creates anything, and a call that gets that far anyway is a model failure saying the same."""

from __future__ import annotations

import sys

import pytest

from runtime import DISTRIBUTION
from runtime.errors import MissingExtra
from runtime.models import llm
from runtime.models.types import ModelError, ModelRequest

HINT = f"pip install '{DISTRIBUTION}[models]'"


@pytest.fixture
def no_litellm(monkeypatch):
    monkeypatch.setitem(sys.modules, "litellm", None)  # `import litellm` raises ImportError(name="litellm")
    monkeypatch.setattr(llm, "_LITELLM", None)


def test_model_problem_names_the_extra_in_one_line(no_litellm):
    problem = llm.model_problem("openai/gpt-4.1", "http://127.0.0.1:9/v1")
    assert problem is not None and "\n" not in problem
    assert "`openai/gpt-4.1`" in problem and "`models` extra" in problem and HINT in problem
    assert f"uv tool install '{DISTRIBUTION}[models]'" in problem


def test_get_litellm_raises_missing_extra(no_litellm):
    with pytest.raises(MissingExtra) as info:
        llm.get_litellm("anthropic/claude-x")
    assert info.value.extra == "models" and HINT in str(info.value)


def test_a_call_that_gets_that_far_is_a_model_failure_naming_the_extra(no_litellm):
    with pytest.raises(ModelError) as info:
        llm.complete(ModelRequest(model="openai/gpt-4.1", messages=[{"role": "user", "content": "hi"}]))
    assert info.value.kind == "llm" and HINT in str(info.value)


def test_a_broken_litellm_is_not_reported_as_missing(monkeypatch):
    """Only litellm itself missing is the extra's absence: an import error inside it stays its own."""
    import builtins

    real_import = builtins.__import__

    def broken(name, *args, **kwargs):
        if name == "litellm":
            raise ImportError("No module named 'tokenizers'", name="tokenizers")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(llm, "_LITELLM", None)
    monkeypatch.delitem(sys.modules, "litellm", raising=False)
    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(ImportError) as info:
        llm.get_litellm("openai/gpt-4.1")
    assert not isinstance(info.value, MissingExtra) and info.value.name == "tokenizers"
