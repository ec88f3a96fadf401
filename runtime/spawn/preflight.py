"""What a spawn checks before it creates anything (a lock, a worktree, a run).

A mistake found here is the user's to fix and ends the command with one line
and exit 1, leaving no trace; a run that started and then could not finish
would instead hold its agent id.
"""

from __future__ import annotations

import os
from pathlib import Path

from runtime.checks.runners.plan import plan_tests
from runtime.errors import FatalError
from runtime.manifests.task import Task
from runtime.sandbox.bwrap import system_visible
from runtime.sandbox.cpus import check_cpus
from runtime.sandbox.env import check_declared
from runtime.spawn.backends import backend_for
from runtime.spawn.sandboxing import runtime_binds
from runtime.workspace.git import Git, GitError


def preflight(task: Task, *, models_here: bool = True) -> None:
    """``models_here`` False: another machine makes the agent's model calls (the orchestrator of a
    cluster run, which checked the model and its keys before it sent the job), so they are not
    looked for here."""
    agent = task.agent
    assert agent is not None  # spawn refuses a task without an [agent] table before this
    for name in agent.env:
        if name not in os.environ:
            raise FatalError(f"{task.path}: [agent] env names {name}, which the orchestrator's environment does not set")
        check_declared(name, os.environ[name])
    if agent.limits.cpus is not None:
        check_cpus(agent.limits.cpus, str(task.path))
    backend_for(agent.backend).preflight(task, models_here)


def preflight_tests(task: Task, git: Git, base: str, *, sandboxed: bool, state: Path | None = None) -> None:
    """A task whose tests verify cannot judge never runs its agent: a test command no known runner reads
    (unless the task asks for its exit code alone), hidden tests that do not exist, that lie where the agent
    could read them, or that a run without the OS sandbox could not keep hidden."""
    src = task.src
    command = task.fields.get("verification.test-command")
    if command and task.fields.get("verification.test-results", "per-test") == "per-test" \
            and "verification.test-command" in _test_params(task):
        package = git.read_file(base, "package.json")
        plan = plan_tests(command, package.decode("utf-8", "replace") if package else None)
        if plan.opaque:
            raise src.error(("verification", "test-command"), f"verify cannot read per-test results: {plan.opaque}. "
                            "Name a runner it starts and reads (pytest, python -m unittest, go test, cargo test, node "
                            "--test, jest, vitest, mocha, tape, or an npm script running one), or set "
                            "`test-results = \"exit-code\"` to judge the command by its exit code alone")
    if "verification.test-results" in task.fields and task.fields["verification.test-results"] == "exit-code" \
            and "verification.test-count-min" in task.fields:
        raise src.error(("verification", "test-count-min"), "`test-count-min` counts tests, which `test-results = "
                        "\"exit-code\"` does not read: remove one of them")
    hidden = task.fields.get("verification.hidden-tests")
    if not hidden:
        return
    loc = ("verification", "hidden-tests")
    if not sandboxed:
        raise src.error(loc, "hidden tests need the OS sandbox: without it the agent can read any file of the host, "
                        "hidden tests too (drop --no-os-sandbox)")
    if hidden.startswith("/"):
        folder = Path(hidden)
        if not folder.is_dir():
            raise src.error(loc, f"hidden tests: {hidden} is not a folder")
        real = folder.resolve()
        for name, place in (("the repository", git.root), ("the state folder", state)):
            if place is not None and (real == place.resolve() or place.resolve() in real.parents
                                      or real in place.resolve().parents):
                raise src.error(loc, f"hidden tests: {hidden} lies in or around {name}, which the agent sees")
        if system_visible(real):
            raise src.error(loc, f"hidden tests: {hidden} lies in a system folder every sandbox shows read-only; "
                            "keep them in a folder of their own (under /srv, /home or /root)")
        for shown in runtime_binds():  # the interpreter and the runtime, bound read-only into every sandbox
            if real == shown or shown in real.parents:
                raise src.error(loc, f"hidden tests: {hidden} lies in {shown}, which every sandbox shows read-only")
        return
    try:
        git.resolve(hidden)
    except GitError:
        raise src.error(loc, f"hidden tests: `{hidden}` is neither an absolute path nor a revision of the "
                        "repository") from None


def _test_params(task: Task) -> set[str]:
    """The task fields the role's tests-green atom reads."""
    return {spec.task_field for atom in task.role.atoms if atom.verify == "tests-green"
            for spec in atom.params.values() if spec.task_field}
