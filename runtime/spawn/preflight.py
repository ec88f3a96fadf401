"""What a spawn checks before it creates anything (a lock, a worktree, a run).

A mistake found here is the user's to fix and ends the command with one line
and exit 1, leaving no trace; a run that started and then could not finish
would instead hold its agent id.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from runtime.errors import FatalError
from runtime.lang.globs import glob_to_regex, literal_parts
from runtime.manifests.task import Task
from runtime.sandbox.agent import runtime_binds
from runtime.sandbox.bwrap import system_visible
from runtime.sandbox.cpus import check_cpus
from runtime.sandbox.env import check_declared, default_path
from runtime.sandbox.toolchain import ToolchainMounts
from runtime.spawn.backends import backend_for
from runtime.verify.kinds.runners.plan import plan_tests
from runtime.verify.kinds.runners.words import Opaque, split
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
    command = task.verification.test_command
    if command and (task.verification.test_results or "per-test") == "per-test" \
            and "verification.test-command" in _test_params(task):
        package = git.read_file(base, "package.json")
        plan = plan_tests(command, package.decode("utf-8", "replace") if package else None)
        if plan.opaque:
            raise src.error(("verification", "test-command"), f"verify cannot read per-test results: {plan.opaque}. "
                            "Name a runner it starts and reads (pytest, python -m unittest, go test, cargo test, node "
                            "--test, jest, vitest, mocha, tape, or an npm script running one), or set "
                            "`test-results = \"exit-code\"` to judge the command by its exit code alone")
    if task.verification.review is True and (task.agent is None or task.agent.model is None):
        raise src.error(("verification", "review"), "`review = true` reads the change with the task's own model, and "
                        "its `[agent]` has none (the command backend): give the agent a model, or leave the review "
                        "to a person")
    if task.verification.test_results == "exit-code" and task.verification.test_count_min is not None:
        raise src.error(("verification", "test-count-min"), "`test-count-min` counts tests, which `test-results = "
                        "\"exit-code\"` does not read: remove one of them")
    hidden = task.verification.hidden_tests
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


BUILTINS = frozenset({"cd", "test", "[", "true", "false", "echo", "printf", "exit", "export", "set", ":", "source", ".",
                      "eval", "exec", "command", "type", "read", "pwd", "unset", "shift", "wait", "trap", "ulimit",
                      "umask", "times", "builtin", "let", "local", "declare", "typeset", "readonly", "hash"})


def search_path(toolchain: ToolchainMounts | None, repo: Path, sandboxed: bool) -> list[tuple[str, Path]]:
    """Where a command of verify's finds its programs, in order: (as the command sees it, the folder on this
    machine). The toolchain's folders of the repository, its host programs' folders, the system's, and
    the runtime's own interpreter's folder (bound into every sandbox)."""
    entries: list[tuple[str, Path]] = []
    if toolchain is not None:
        entries += [(rel, repo / rel) for rel in toolchain.path]
        entries += [(p, Path(p)) for p in toolchain.host_path]
    for folder in default_path().split(":"):
        if not sandboxed or system_visible(Path(folder).resolve()) or Path(folder) == Path(sys.executable).parent:
            entries.append((folder, Path(folder)))
    return entries


def _found(name: str, folders: list[tuple[str, Path]]) -> bool:
    return any(os.access(folder / name, os.X_OK) and (folder / name).is_file() for _, folder in folders)


def _fix(name: str, catalog_toolchain: str) -> str:
    """What would show ``name`` to the sandbox: where this machine has it, and the toolchain line."""
    here = shutil.which(name)
    if here is None:
        return (f"this machine has no `{name}` on its PATH either: install it into the repository's toolchain "
                f"(a .venv, node_modules) and declare that in {catalog_toolchain}, or fix the command")
    try:
        with open(here, "rb") as fh:
            script = fh.read(2) == b"#!"
    except OSError:
        script = True
    if script:  # a script's interpreter (a `uv tool` or pipx venv) is not shown with it
        return (f"it is at {here} on this machine, which the sandbox does not show: install it into the "
                f"repository's virtualenv (.venv) and add `presets = [\"python\"]` to {catalog_toolchain} (or "
                "`node` for node_modules)")
    return f"it is at {here} on this machine: `programs = [\"{name}\"]` in {catalog_toolchain} shows it to the sandbox"


def _programs(command: str, steps: list[tuple[str, tuple[str, ...]]]) -> list[tuple[str, tuple[str, ...]]]:
    """(program, folders put first on its PATH) of each simple command of ``command``, as verify runs it; none
    for a command that cannot be read exactly (its run says what is wrong)."""
    if steps:
        return steps
    try:
        simple = split(command)
    except Opaque:
        return []
    out: list[tuple[str, tuple[str, ...]]] = []
    for one in simple:
        argv = one.argv
        if argv[:3] == ["uv", "run", "--no-sync"]:
            argv = argv[3:]
        if argv:
            out.append((argv[0], ()))
    return out


def toolchain_file(layers: list[Path], repo: Path) -> str:
    """Where the repository's toolchain is declared, as a message names it."""
    from runtime.manifests.catalog import display_path
    from runtime.manifests.locate import PROJECT_FOLDER, TOOLCHAIN_FILE

    top = layers[-1]
    if top.resolve() == (repo / PROJECT_FOLDER).resolve():
        return display_path(top / TOOLCHAIN_FILE)
    return f"{PROJECT_FOLDER}/{TOOLCHAIN_FILE} (`runtime init` makes the project's catalog)"


def preflight_reach(task: Task, git: Git, base: str, toolchain: ToolchainMounts | None, *, sandboxed: bool,
                    toolchain_file: str, setup_path: tuple[str, ...] = ()) -> None:
    """Nothing runs that cannot pass: every test and check command's programs are found where verify will
    look for them (`search_path`), and the write scope names what is in the repository at ``base``, or a
    file or folder to create in a folder it has. A ManifestError at the task's line, naming the program and
    where it was looked for, and the toolchain line that would show it."""
    src = task.src
    folders = search_path(toolchain, git.root, sandboxed)
    # A program of the folders setup makes ([worktree] path) is not there before setup: its run will say.
    made_by_setup = bool(setup_path)
    items: list[tuple[tuple[object, ...], str, str]] = []
    if test := task.verification.test_command:
        items.append((("verification", "test-command"), test, "the test command"))
    for n, command in enumerate(task.verification.check_commands or []):
        items.append((("verification", "check-commands", n), command, "a check command"))
    package = None
    for loc, command, what in items:
        steps: list[tuple[str, tuple[str, ...]]] = []
        if loc[1] == "test-command":
            if package is None:
                raw = git.read_file(base, "package.json")
                package = raw.decode("utf-8", "replace") if raw else ""
            plan = plan_tests(command, package or None)
            steps = [] if plan.opaque else [(s.command.argv[0], s.path) for s in plan.steps if s.command.argv]
        for program, first in _programs(command, steps):
            if program in BUILTINS or "/" in program or "$" in program:
                continue
            where = [(p, git.root / p) for p in first] + folders
            if _found(program, where) or made_by_setup:
                continue
            looked = ", ".join(dict.fromkeys(shown if (folder.is_dir()) else f"{shown} (not here)"
                                             for shown, folder in where))
            raise src.error(loc, f"{what} runs `{program}`, which verify would not find: it looks in {looked}; "
                                 f"{_fix(program, toolchain_file)}")
    globs = task.scope.files_whitelist or []
    if globs:
        _scope_reaches(task, git, base, list(globs))


def _scope_reaches(task: Task, git: Git, base: str, globs: list[str]) -> None:
    files = git.files_at(base)
    folders = {"."} | {str(Path(f).parent) for f in files} | {str(p) for f in files for p in Path(f).parents}
    for n, glob in enumerate(globs):
        pattern = re.compile(glob_to_regex(glob))
        if any(pattern.match(f) for f in files):
            continue
        parts = literal_parts(glob)
        depth = len(glob.split("/"))
        if len(parts) == depth or (glob.endswith("/**") and len(parts) == depth - 1):
            parent = "/".join(parts[:-1])  # a file to create, or `new/**`: a folder to create, in a folder there
        else:
            parent = "/".join(parts)  # a wildcard below a folder: that folder is there
        if (parent or ".") in folders:
            continue
        missing = next(("/".join(parts[:k]) for k in range(1, len(parts) + 1)
                        if "/".join(parts[:k]) not in folders), "/".join(parts))
        raise task.src.error(("scope", "files-whitelist", n),
                             f"the write scope `{glob}` matches nothing in the repository at its base, and `{missing}` "
                             "is not one of its folders: a typo? (to have the agent make a new folder, name it in one "
                             "the repository has: `<folder>/<new>/**`)")
