"""Real repositories for end-to-end runs: a project of projects.py, as a user would have it.

`real_repo(name)` makes, in the test's tmp folder, a git repository of the project at its pinned
version on a branch `trunk`, with its own toolchain beside it (a `.venv` with pytest and flake8 from
PyPI, its `node_modules` from npm, a committed `Cargo.lock`), then runs `runtime init` there and
commits what it wrote, then commits a planted bug. Downloads and unpacked sources are cached
(fetch.py); only the repository itself is made per test.

Nothing here is a catalog of the suite's own: tasks name the role `runtime init` wrote, and every
command runs from the repository, where the runtime finds its project catalog as it would for a user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from tests.conftest import RUNTIME, require
from tests.realrepos.fetch import CACHE, FetchError, npm_tools, unpacked, wheels
from tests.realrepos.projects import BY_NAME, Change, Edit, Project
from tests.support import git, have_bwrap

BASE_BRANCH = "trunk"


# ---------------------------------------------------------------------------------------------------
# The one expectation on `runtime init` that today's init does not meet (issue 18, item 2): it writes a
# task template whose test and check commands are the repository's own, each allowed to the role it
# writes. Until it does, tasks take the commands the project's own files name (projects.py); once it
# does, tasks take init's, and test_init_writes_the_repositorys_own_commands checks what it wrote.
# ---------------------------------------------------------------------------------------------------
def init_template(repo: RealRepo) -> dict[str, Any] | None:
    """The task template among the files `runtime init` wrote: a TOML file with a test command."""
    for path in repo.init_wrote:
        if path.suffix != ".toml" or not path.is_file():
            continue
        try:
            doc = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        verification = doc.get("verification")
        if isinstance(verification, dict) and verification.get("test-command"):
            return doc
    return None


def own_commands(repo: RealRepo) -> tuple[str, list[str]]:
    """The test command and check commands a task of this repository runs."""
    template = init_template(repo)
    if template is not None:
        verification = template["verification"]
        return verification["test-command"], list(verification.get("check-commands") or [])
    return repo.project.test_command, list(repo.project.check_commands)
# ---------------------------------------------------------------------------------------------------


@dataclass
class RealRepo:
    project: Project
    tmp: Path
    root: Path  # the repository (its main checkout)
    state: Path  # RUNTIME_STATE_DIR
    initialised: str  # the commit with what `runtime init` wrote, before the bug
    base: str  # trunk's head: the planted bug
    init_wrote: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    # -- git -----------------------------------------------------------------------------------
    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def sha(self, rev: str) -> str | None:
        out = subprocess.run(["git", "-C", str(self.root), "rev-parse", "-q", "--verify", f"{rev}^{{commit}}"],
                             capture_output=True, text=True)
        return out.stdout.strip() or None

    def show(self, rev: str, path: str) -> str | None:
        proc = subprocess.run(["git", "-C", str(self.root), "show", f"{rev}:{path}"], capture_output=True, text=True)
        return proc.stdout if proc.returncode == 0 else None

    def changed(self, old: str, new: str) -> list[str]:
        return sorted(self.git("diff", "--name-only", old, new).splitlines())

    def expected(self, rev: str, *changes: Change) -> dict[str, str]:
        """What the changed files hold after ``changes`` are made on ``rev``."""
        files: dict[str, str | None] = {}
        for change in changes:
            for edit in change.edits:
                text = files[edit.path] if edit.path in files else self.show(rev, edit.path)
                files[edit.path] = edit.apply(text)
        return {path: text for path, text in files.items() if text is not None}

    # -- the CLI -------------------------------------------------------------------------------
    def full_env(self, env: dict[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, "RUNTIME_STATE_DIR": str(self.state), **self.env, **(env or {})}

    def cli(self, *args: str | Path, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([RUNTIME, *map(str, args)], cwd=self.root, capture_output=True, text=True,
                              env=self.full_env(env), timeout=timeout)

    def tool_events(self, agent_id: str) -> list[dict[str, Any]]:
        """The builtin agent's tool calls, as it logged them (decision, error flag, result head)."""
        events = []
        for log in sorted((self.state / "runs" / agent_id).glob("attempt-*/stdout.log")):
            for line in log.read_text(errors="replace").splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("event") == "tool":
                    events.append(event)
        return events

    def agent_logs(self, agent_id: str) -> str:
        text = ""
        for log in sorted((self.state / "runs" / agent_id).glob("attempt-*/std*.log")):
            text += f"\n--- {log.relative_to(self.state)}\n{log.read_text(errors='replace')[-4000:]}"
        return text

    # -- tasks ---------------------------------------------------------------------------------
    def task_doc(self, change: Change, agent_id: str) -> dict[str, Any]:
        """The tables of a task making ``change`` with init's role and the repository's own commands."""
        test, checks = own_commands(self)
        # as init's template has it: the key even when empty (proxy-addr's `npm test` runs its only check)
        verification: dict[str, Any] = {"test-command": test, "test-count-min": self.project.test_count_min,
                                        "check-commands": checks}
        return {
            "task": {"role": "project", "agent-id": agent_id, "parent-agent": "orchestrator", "goal": change.goal},
            "scope": {"files-whitelist": list(change.scope)},
            "verification": verification,
            "output": {"report-fields-required": ["summary", "files-changed"]},
            "body": {"text": f"{change.goal} Run the tests ({test}) and the checks before you report."},
        }

    def write_task(self, change: Change, agent_id: str, agent: dict[str, Any]) -> Path:
        doc = self.task_doc(change, agent_id)
        doc["agent"] = agent
        doc["body"] = doc.pop("body")
        path = self.tmp / "tasks" / f"{agent_id}.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(tomlkit.dumps(doc))
        return path

    def script(self, name: str, turns: list) -> Path:
        doc = {"turn": [{"content": t} if isinstance(t, str) else {"tool_calls": t} for t in turns]}
        path = self.tmp / "tasks" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(tomlkit.dumps(doc))
        return path

    def builtin_agent(self, change: Change, name: str) -> dict[str, Any]:
        """A scripted builtin agent making ``change`` and running the repository's commands in its shell."""
        script = self.script(f"{name}.script.toml", builtin_turns(self, change))
        return {"backend": "builtin", "model": f"scripted/{name}", "script": script.name, "retries": 0,
                "limits": {"timeout-s": 240, "max-turns": 20}}


def builtin_turns(repo: RealRepo, change: Change) -> list:
    """The scripted model's turns: each edit, then the tests and each check in the shell, then the report."""
    test, checks = own_commands(repo)
    turns: list = []
    for edit in change.edits:
        if edit.old:
            turns.append([{"name": "Edit", "input": {"file_path": edit.path, "old_string": edit.old,
                                                     "new_string": edit.new}}])
        else:
            turns.append([{"name": "Write", "input": {"file_path": edit.path, "content": edit.new}}])
    for command in (test, *checks):
        turns.append([{"name": "Bash", "input": {"command": command}}])
    turns.append(change.report)
    return turns


# -- making the repository --------------------------------------------------------------------------

def _fetched(call):
    """``call()``, with a failed download failing under CI and skipping elsewhere."""
    try:
        return call()
    except FetchError as exc:
        require(False, f"fetching a real project failed: {exc}")


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=timeout, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _uv() -> str:
    found = shutil.which("uv", path=os.path.dirname(sys.executable)) or shutil.which("uv")
    require(found is not None, "uv is not installed (pip install -e '.[dev]')")
    assert found is not None
    return found


def _python_toolchain(project: Project, root: Path) -> None:
    """A `.venv` with the project's test and lint tools from PyPI (and the project, editable, where it asks)."""
    found = _fetched(lambda: wheels(project.python_wheels))
    env = {"UV_CACHE_DIR": str(CACHE / "uv"), "UV_PYTHON_DOWNLOADS": "never", "UV_NO_CONFIG": "1"}
    base = getattr(sys, "_base_executable", sys.executable)
    _run([_uv(), "venv", "-q", "--python", base, str(root / ".venv")], root, env)
    _run([_uv(), "pip", "install", "-q", "--python", str(root / ".venv/bin/python"), "--no-index", "--find-links",
          str(found), "--link-mode", "copy", *project.python_install], root, env)
    if project.editable_src:
        # What `pip install -e .` leaves of a flit or hatch project: a .pth naming its source folder (building it
        # would need the build backend's own wheels; the version file it writes comes with the sdist).
        (site,) = (root / ".venv/lib").glob("python3*/site-packages")
        (site / f"__editable__.{project.name}.pth").write_text(f"{root / project.editable_src}\n")


class PackageIndex:
    """A package index on loopback (PEP 503's simple layout) serving pinned wheels: a team's internal registry."""

    def __init__(self, wheels: Path) -> None:
        import http.server
        import threading

        from filelock import FileLock

        self.root = wheels.parent / f"{wheels.name}-index"
        with FileLock(str(self.root) + ".lock"):  # test workers may make the same one at once
            if not (self.root / "simple").is_dir():
                part = wheels.parent / f".{wheels.name}-index.part"
                shutil.rmtree(part, ignore_errors=True)
                for wheel in sorted(wheels.glob("*.whl")):
                    name = wheel.name.split("-")[0].lower().replace("_", "-")
                    (part / "simple" / name).mkdir(parents=True, exist_ok=True)
                    shutil.copy2(wheel, part / "simple" / name / wheel.name)
                    with (part / "simple" / name / "index.html").open("a") as page:
                        page.write(f'<a href="{wheel.name}">{wheel.name}</a>\n')
                part.rename(self.root)
        root = str(self.root)

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=root, **kwargs)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def world_table(project: Project, index: PackageIndex) -> str:
    """The `[worktree]` table its developers add: an environment of the worktree's own, from their registry."""
    packages = " ".join(f"{d.name}=={d.version}" for d in project.world_wheels)
    pip = ".wt/bin/python -m pip install --isolated --quiet --disable-pip-version-check"
    install = (f"{pip} --index-url http://localhost:{index.port}/simple/ {packages} pytest==8.3.4 flake8==7.1.1 "
               "setuptools==75.6.0 wheel==0.45.1")
    editable = f"{pip} --no-index --no-build-isolation --no-deps -e ."  # the project itself, as tox installs it
    return ("\n[worktree]\n"
            f'setup = ["python3 -m venv .wt", {json.dumps(install)}, {json.dumps(editable)}]\n'
            'path = [".wt/bin"]\n'
            'setup-domains = ["localhost"]\n'
            'setup-addresses = ["127.0.0.1/32", "::1/128"]\n'
            f"setup-ports = [{index.port}]\n")


def _npm_toolchain(project: Project, root: Path) -> None:
    """`node_modules` holding the project's dependencies, each at its pinned version from npm."""
    if project.npm_tools:
        # its test script's tools (devDependencies), as a developer's `npm install` leaves them
        shutil.copytree(_fetched(lambda: npm_tools(project.npm_tools)), root / "node_modules", symlinks=True)
    for dep in project.npm_deps:
        package = _fetched(lambda dep=dep: unpacked(dep, "package"))
        shutil.copytree(package, root / "node_modules" / dep.name, dirs_exist_ok=True)


def _rust_toolchain(project: Project, root: Path) -> None:
    # Cargo.lock, committed as the README asks: cargo would write it, where the worktree is read-only.
    _run(["cargo", "generate-lockfile", "--offline"], root)


TOOLCHAINS = {"python": _python_toolchain, "npm": _npm_toolchain, "rust": _rust_toolchain, "go": lambda p, r: None}


def make_real_repo(project: Project, tmp: Path, index: PackageIndex | None = None) -> RealRepo:
    have_bwrap()
    for program in project.programs:
        require(shutil.which(program) is not None, f"{program} is not installed ({project.name} needs it)")
    source = _fetched(lambda: unpacked(project.source, project.member))
    root = tmp / project.name
    shutil.copytree(source, root)
    for name in project.drop:
        path = root / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if project.ignore:
        with (root / ".gitignore").open("a") as ignore:
            ignore.write("".join(f"{line}\n" for line in project.ignore))
    TOOLCHAINS[project.kind](project, root)

    git(tmp, "init", "-q", "-b", BASE_BRANCH, str(root))
    git(root, "add", "-A")
    for name in project.force_add:
        git(root, "add", "-f", name)
    git(root, "commit", "-q", "-m", f"{project.source.name} {project.source.version}")
    assert git(root, "status", "--porcelain") == "", "the toolchain left files git does not ignore"

    state = tmp / "state"
    init = subprocess.run([RUNTIME, "init"], cwd=root, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RUNTIME_STATE_DIR": str(state)})
    assert init.returncode == 0, init.stdout + init.stderr
    # init names what it wrote relative to the repository it ran in
    wrote = [root / line.removeprefix("wrote ").strip() for line in init.stdout.splitlines() if line.startswith("wrote ")]
    if index is not None:
        with (root / ".agent-runtime" / "toolchain.toml").open("a") as toolchain:
            toolchain.write(world_table(project, index))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "runtime init")
    initialised = git(root, "rev-parse", "HEAD")

    bug = project.bug
    path = root / bug.path
    path.write_text(Edit(bug.path, bug.old, bug.new).apply(path.read_text()))
    git(root, "commit", "-q", "-am", f"a bug in {bug.path}")
    return RealRepo(project, tmp, root, state, initialised, git(root, "rev-parse", "HEAD"), wrote)


@pytest.fixture
def real_repo(tmp_path, monkeypatch):
    """``real_repo(name)``: the project's repository, made in this test's tmp folder."""
    indexes: list[PackageIndex] = []

    def make(name: str) -> RealRepo:
        project = BY_NAME[name]
        index = None
        if project.world_wheels:
            index = PackageIndex(_fetched(lambda: wheels((*project.python_wheels, *project.world_wheels))))
            indexes.append(index)
        repo = make_real_repo(project, tmp_path, index)
        monkeypatch.setenv("RUNTIME_STATE_DIR", str(repo.state))
        return repo

    yield make
    for index in indexes:
        index.close()
