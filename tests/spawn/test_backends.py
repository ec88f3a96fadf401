"""The backend registry: one module and one entry per backend, and the names agree everywhere."""

from __future__ import annotations

import inspect
from typing import get_args

from runtime.manifests.agent import AgentSection
from runtime.manifests.kinds import AGENT_BACKENDS
from runtime.spawn.backends import BACKENDS, Backend


def test_every_backend_named_anywhere_is_registered_and_nothing_else():
    assert set(BACKENDS) == set(AGENT_BACKENDS) == set(get_args(AgentSection.model_fields["backend"].annotation))


def test_every_backend_implements_the_whole_protocol():
    methods = {n for n, v in vars(Backend).items() if inspect.isfunction(v) and not n.startswith("_")}
    assert methods == {"preflight", "model_access", "command", "on_line", "read_report", "clean_up"}
    for name, backend in BACKENDS.items():
        assert backend.name == name
        for method in methods:
            impl = getattr(type(backend), method)
            assert inspect.signature(impl).parameters.keys() == inspect.signature(getattr(Backend, method)).parameters.keys(), (name, method)
