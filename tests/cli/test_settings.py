"""Each verb's settings: one record, made once from the arguments, and the one its module's `run` takes."""

from __future__ import annotations

import importlib

import pytest

from runtime.cli import settings
from runtime.cli.main import VERBS


def _declared() -> list[type[settings.Settings]]:
    out: list[type[settings.Settings]] = []
    for verb in settings._VERBS:
        if isinstance(verb, settings.Group):
            out += verb.members.values()
        elif not isinstance(verb, settings.ParsedByHand):
            out.append(verb)
    return out


def test_every_verb_is_declared_once_and_dispatched():
    names = [settings._name(verb) for verb in settings._VERBS]
    assert len(names) == len(set(names))
    assert set(names) == set(VERBS) | {"check"}  # `runtime check` is parsed by hand, before any of them


@pytest.mark.parametrize("record", _declared(), ids=lambda record: record.__name__)
def test_a_verb_s_run_takes_its_record(record):
    run = importlib.import_module(VERBS[record.verb]).run
    assert record.__name__ in run.__annotations__["args"].split(" | ")


def test_the_record_holds_what_was_parsed_frozen():
    parsed = settings.parse(["memory", "--catalog", "x", "curate", "--promote", "1", "2", "--json"])
    # the subcommand's own --catalog replaces the verb's, as argparse does
    assert parsed == settings.MemoryCurate(catalog=None, promote=("1", "2"), discard=(), state_dir=None, json=True)
    with pytest.raises(AttributeError):
        parsed.json = False
    run = settings.parse(["run", "plan.toml"])
    assert (run.planner_retries, run.agent_backend, run.executor, run.json) == (2, "builtin", None, False)


def test_a_record_needs_every_field_without_a_default():
    with pytest.raises(TypeError, match="needs json"):
        settings.Roles(catalog=None)
    with pytest.raises(TypeError, match="no field"):
        settings.Roles(catalog=None, json=False, jsn=True)
