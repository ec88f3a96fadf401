"""A repository's own world in every worktree (`[worktree]` in toolchain.toml), end to end: real git, real
bubblewrap, the real CLI, a real package index on loopback reached only through setup's egress proxy.

- An ignored version file the package imports (hatch-vcs and setuptools-scm write one at install time) is
  copied from the main checkout: a correct change is accepted, where without it every change failed.
- What the agent does to that file is not what verify runs: verify lays the main checkout's over its copy.
- Setup installs a dependency into the worktree (pip from the index, through its own egress, audited),
  before the agent starts; the next spawn on the same base takes it from the cache instead.
- A setup that fails, changes what git tracks or makes what git would take as the change ends the run as
  failed(setup) before any agent turn; an `include` missing from the main checkout or tracked by git is
  refused at its line before anything is made.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from tests.spawn.conftest import SH_REPORT, Spawner
from tests.support import git

pytestmark = pytest.mark.slow
FIX = "sed -i 's/(len(values) + 1)/len(values)/' src/calc/__init__.py"
META = ("import sys\nfrom pathlib import Path\n\nsys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'src'))\n"
        "sys.path.insert(0, str(Path(__file__).resolve().parent.parent / '.deps'))\n\n\n"
        "def test_version():\n    from calc._version import version\n    assert version == '1.2.3'\n")
DEP_TEST = "\n\ndef test_dependency():\n    import tinydep\n    assert tinydep.answer() == 42\n"


def tiny_wheel(folder: Path) -> Path:
    """A real wheel of a one-module package, `tinydep` 1.0, as a package index serves it."""
    files = {"tinydep/__init__.py": b"def answer():\n    return 42\n",
             "tinydep-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinydep\nVersion: 1.0\n",
             "tinydep-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for name, data in files.items()) + "tinydep-1.0.dist-info/RECORD,,\n"
    path = folder / "tinydep-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("tinydep-1.0.dist-info/RECORD", record)
    return path


@pytest.fixture
def index(tmp_path):
    """A package index on 127.0.0.1 (PEP 503's simple layout), and the paths it was asked for."""
    root = tmp_path / "index"
    (root / "simple" / "tinydep").mkdir(parents=True)
    wheel = tiny_wheel(root / "simple" / "tinydep")
    (root / "simple" / "tinydep" / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *args):
            asked.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], asked
    server.shutdown()
    server.server_close()


def project_catalog(s: Spawner, toolchain: str) -> None:
    folder = s.repo / ".agent-runtime"
    folder.mkdir(exist_ok=True)
    (folder / "toolchain.toml").write_text(toolchain)
    with (s.repo / ".gitignore").open("a") as fh:
        fh.write("src/calc/_version.py\n.deps/\n")
    (s.repo / "src/calc/_version.py").write_text("version = '1.2.3'\n")  # as an install writes it
    git(s.repo, "add", "-A")
    git(s.repo, "commit", "-qm", "the project's catalog, and a package that imports its version file")


def meta_task(s: Spawner, agent_id: str, command: str, count: int = 5, tests: str = META) -> Path:
    (s.repo / "tests/test_meta.py").write_text(tests)
    git(s.repo, "add", "-A")
    git(s.repo, "commit", "-qm", "a test of the version", check=False)
    return s.task(agent_id=agent_id, command=command, scope={"files-whitelist": ["src/calc/**"]},
                  verification={"test-command": "pytest -q tests", "test-count-min": count, "check-commands": []})


def test_an_ignored_version_file_is_in_the_worktree_and_in_verify_s_copy_from_the_main_checkout(spawner: Spawner):
    s = spawner
    project_catalog(s, '[worktree]\ninclude = ["src/calc/_version.py"]\n')
    # The agent fixes the bug, and also changes the version file: git ignores it, so it is no part of the change,
    # and verify must run over the main checkout's, or a change could pass by rewriting what the tests import.
    task = meta_task(s, "ag-version", f"{FIX}; echo \"version = 'x'\" > src/calc/_version.py; {SH_REPORT}")
    done = s.spawn(task, "--catalog", str(s.repo / ".agent-runtime"))
    assert done.label == "ok", done.describe()
    record = s.state_json("ag-version")
    assert record["setup"]["entries"] == ["src/calc/_version.py"] and record["setup"]["cached"] is False
    assert (s.repo / "src/calc/_version.py").read_text() == "version = '1.2.3'\n"  # the main checkout untouched
    assert "_version.py" not in s.git("show", "--stat", "--format=", done.outcome["commit"])
    # Without the include every correct change failed: the same task in a repository that declares none.
    (s.repo / ".agent-runtime/toolchain.toml").write_text("[toolchain]\n")
    git(s.repo, "commit", "-qam", "no worktree table")
    bare = s.task(agent_id="ag-bare", command=f"{FIX}; {SH_REPORT}", scope={"files-whitelist": ["src/calc/**"]},
                  verification={"test-command": "pytest -q tests", "test-count-min": 5, "check-commands": []})
    failed = s.spawn(bare, "--catalog", str(s.repo / ".agent-runtime"))
    assert failed.label == "rejected" and "_version" in failed.outcome["message"], failed.describe()


def test_setup_installs_a_dependency_through_its_own_egress_once_per_base(spawner: Spawner, index):
    s = spawner
    port, asked = index
    setup = (f"{sys.executable} -m pip install --isolated --quiet --no-deps --target .deps "
             f"--index-url http://localhost:{port}/simple/ tinydep")
    project_catalog(s, f'[worktree]\ninclude = ["src/calc/_version.py"]\nsetup = ["{setup}"]\n'
                       f'setup-domains = ["localhost"]\nsetup-addresses = ["127.0.0.1/32", "::1/128"]\n'
                       f'setup-ports = [{port}]\n')
    task = meta_task(s, "ag-deps", f"{FIX}; {SH_REPORT}", count=6, tests=META + DEP_TEST)
    done = s.spawn(task, "--catalog", str(s.repo / ".agent-runtime"))
    assert done.label == "ok", done.describe()
    made = s.state_json("ag-deps")["setup"]
    assert made["cached"] is False and ".deps" in made["entries"] and made["commands"][0]["exit_code"] == 0
    assert any(p.endswith(".whl") for p in asked)  # the wheel came from the index, through the proxy
    egress = [r["data"] for r in s.audit(kind="egress")]
    assert egress and all(r["phase"] == "setup" for r in egress)
    assert any(r["event"] == "request" and r["decision"] == "allow" and r["host"] == "localhost" for r in egress)
    assert not (s.repo / ".deps").exists()  # made in the worktree, never in the main checkout
    # A second agent on the same base: the world comes from the cache, setup does not run again.
    seen = len(asked)
    again = s.spawn(s.task(agent_id="ag-deps-2", command=f"{FIX}; {SH_REPORT}", scope={"files-whitelist": ["src/calc/**"]},
                           verification={"test-command": "pytest -q tests", "test-count-min": 6,
                                         "check-commands": []}), "--catalog", str(s.repo / ".agent-runtime"))
    assert again.label == "ok", again.describe()
    assert s.state_json("ag-deps-2")["setup"]["cached"] is True and len(asked) == seen


@pytest.mark.parametrize("setup,why", [
    ("exit 3", "exited with code 3"),
    ("echo changed >> README.md", "setup changed README.md, which git tracks"),
    ("echo new > notes.txt", "setup made notes.txt, which git does not ignore"),
    ("curl -sS --max-time 5 https://example.org", "exited with code"),  # no egress declared: no network at all
])
def test_a_setup_that_fails_or_leaves_what_git_would_see_ends_the_run_before_any_turn(spawner: Spawner, setup, why):
    s = spawner
    project_catalog(s, f"[worktree]\nsetup = [{json.dumps(setup)}]\n")
    task = s.task(agent_id="ag-setup", command=f"{FIX}; {SH_REPORT}")
    done = s.spawn(task, "--catalog", str(s.repo / ".agent-runtime"))
    assert done.label == "failed(setup)" and why in done.outcome["message"], done.describe()
    assert done.outcome["attempts"] == [] and s.sha("agent/ag-setup") is None  # no agent ran, nothing kept
    assert s.sha("trunk") == s.git("rev-parse", "trunk") and "changed" not in (s.repo / "README.md").read_text()


@pytest.mark.parametrize("include,why", [
    ("src/calc/missing.py", "is not in the main checkout"),
    ("src/calc/__init__.py", "is tracked by git"),
])
def test_an_include_that_cannot_be_copied_is_refused_at_its_line_before_anything(spawner: Spawner, include, why):
    s = spawner
    project_catalog(s, f'[toolchain]\n\n[worktree]\ninclude = ["{include}"]\n')
    proc = s.spawn(s.task(agent_id="ag-inc", command=SH_REPORT), "--catalog", str(s.repo / ".agent-runtime")).proc
    assert proc.returncode == 1 and why in proc.stderr, proc.stderr
    assert "toolchain.toml:4: " in proc.stderr and s.sha("agent/ag-inc") is None


def test_two_agents_on_one_base_in_one_orchestrator_both_get_the_world(tmp_path):
    """A plan's parallel subtasks ask for the same world at once, from one event loop: the second waits for the
    first (its lock taken in a worker thread and given back in the loop's), then takes the world it made."""
    import anyio

    from runtime.manifests.toolchain import Worktree
    from runtime.sandbox.supervise import Limits
    from runtime.spawn.world import WorldSite, world_at

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / ".gitignore").write_text("src/_version.py\n")
    (repo / "src/_version.py").write_text("v = 1\n")
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    from runtime.workspace.git import Git

    main = Git(repo)
    spec = Worktree(include=("src/_version.py",), setup_timeout_s=5, lines=(("src/_version.py", 1),))  # a lock left held fails in 70 s
    trees = []
    for name in ("a", "b"):
        tree = tmp_path / name
        git(repo, "worktree", "add", "-q", "--detach", str(tree), "HEAD")
        trees.append(tree)
    sites = [WorldSite(main, tree, main.resolve("HEAD"), spec, tmp_path / "state", None, tmp_path, None, (), Limits(60),
                       tmp_path / f"logs-{tree.name}") for tree in trees]
    records = []

    async def both() -> None:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for site in sites:
                    async def one(site=site) -> None:
                        records.append((await world_at(site))[1])
                    group.start_soon(one)

    anyio.run(both)
    assert sorted(r.cached for r in records) == [False, True]
    assert all((tree / "src/_version.py").read_text() == "v = 1\n" for tree in trees)
