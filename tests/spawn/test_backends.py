"""The backend registry: one module and one entry per backend, and the names agree everywhere."""

from __future__ import annotations

import inspect

from runtime.manifests.agent import AgentSection
from runtime.manifests.kinds import AGENT_BACKENDS, AgentBackend
from runtime.spawn.backends import Backend, all_backends
from tests.conftest import REPO


def test_every_backend_named_anywhere_is_registered_and_nothing_else():
    schema_enum = AgentSection.model_json_schema()["properties"]["backend"]["enum"]
    assert set(all_backends()) == set(AGENT_BACKENDS) == set(schema_enum)


def test_every_backend_implements_the_whole_protocol():
    methods = {n for n, v in vars(Backend).items() if inspect.isfunction(v) and not n.startswith("_")}
    assert methods == {"preflight", "model_access", "job_model", "command", "on_line", "read_report", "clean_up"}
    for name, backend in all_backends().items():
        assert backend.name == name
        for method in methods:
            impl = getattr(type(backend), method)
            assert inspect.signature(impl).parameters.keys() == inspect.signature(getattr(Backend, method)).parameters.keys(), (name, method)



TOY_BACKEND = '''
from runtime.spawn.backends.base import Report


class ToyBackend:
    """A backend made in a test: a shell that fixes the demo's bug and writes its report, with a report
    read from its own file. Nothing of the runtime is edited for it."""

    name = "toy"

    def preflight(self, task, models_here):
        return None

    def model_access(self, run):
        return None, None

    def job_model(self, task, catalog):
        return None

    def command(self, setup, feedback_path):
        script = ("sed -i 's/(len(values) + 1)/len(values)/' src/calc/__init__.py && "
                  "printf 'Summary: fixed mean\\\\nFiles changed: src/calc/__init__.py\\\\n' > \\"$HOME/toy-report.md\\"")
        return ["/bin/sh", "-c", script], None, {}

    def on_line(self, progress):
        return None

    def read_report(self, setup):
        return Report((setup.home / "toy-report.md").read_text(encoding="utf-8"))

    def clean_up(self, setup):
        return None
'''


def test_a_new_backend_is_one_module_and_one_registry_entry(spawner, monkeypatch, tmp_path):
    """The CONTRIBUTING recipe: its module, in a package of its own, and its entry in the registry (what it runs,
    what its `[agent]` table holds). A toy backend runs a whole spawn, sandboxed, gated, verified and committed
    like the shipped ones."""
    import anyio

    from runtime.spawn.pipeline import SpawnOptions, spawn

    package = tmp_path / "toy_backends"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "toy.py").write_text(TOY_BACKEND)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(AGENT_BACKENDS, "toy", AgentBackend("toy_backends.toy:ToyBackend"))
    task = spawner.task(agent_id="ag-toy", agent={"backend": "toy"})
    text = task.read_text().replace('model = "scripted/test"\n', "").replace(
        [line for line in task.read_text().splitlines() if line.startswith("script = ")][0] + "\n", "")
    task.write_text(text)
    outcome = anyio.run(spawn, task, SpawnOptions(repo=spawner.repo, catalog=str(REPO),
                                                  state_dir=spawner.state))
    assert outcome.label == "ok", outcome.to_dict()
    assert outcome.commit is not None and outcome.attempts[0].report.startswith("Summary: fixed mean")
    assert "len(values)" in spawner.show(outcome.commit, "src/calc/__init__.py")
