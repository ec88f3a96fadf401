"""Running a test plan (runtime.verify.test_runs): each runner step's report folder and the reporters, read
back safely; plain steps; a home the steps share; hidden tests laid over for the runner steps; the base's
run cached per base commit, computed once however many ask."""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from runtime.verify import test_runs
from runtime.verify.commands import NO_BINDS, Binds, _overlaid
from runtime.verify.kinds.kind import TestSide
from runtime.verify.kinds.runners.plan import plan_tests
from runtime.verify.kinds.runners.results import TestRun
from runtime.verify.test_runs import BaseTests, Hidden, hidden_ids, load_hidden, run_plan
from tests.support import git

PASSED = [{"event": "start", "rootdir": "/w", "inifile": "", "plugins": []},
          {"event": "report", "id": "tests/test_a.py::test_one", "when": "call", "outcome": "passed", "xfail": False},
          {"event": "finish", "exitstatus": 0}]


class FakeRunner:
    """Answers each command: a runner step sends ``records`` to the orchestrator's socket, each with the run's
    key (read from the key file, then removed) and its number, as our reporter does; every call is kept with
    its binds."""

    def __init__(self, records=PASSED, code: int = 0, output: str = "ok") -> None:
        self.records, self.code, self.output = records, code, output
        self.calls: list[tuple[str, Binds]] = []

    async def __call__(self, command: str, timeout_s: float, *, binds: Binds = NO_BINDS) -> tuple[int, str]:
        self.calls.append((command, binds))
        if binds.rw:
            await anyio.to_thread.run_sync(report, command, self.records)
        return self.code, self.output


def variable(command: str, name: str) -> str:
    return command.split(f"{name}=", 1)[1].split()[0]


def report(command: str, records: list[dict[str, object]], key: str | None = None,
           numbers: list[int] | None = None) -> None:
    """What the runtime's pytest reporter sends for ``records`` (numbered 0, 1, ... unless ``numbers`` says)."""
    where = Path(variable(command, "AGENT_RUNTIME_REPORT_KEY"))
    key = where.read_text().strip() if key is None else key
    where.unlink(missing_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        channel.connect(variable(command, "AGENT_RUNTIME_TEST_REPORT"))
        numbered = zip(numbers or range(len(records)), records, strict=True)
        channel.sendall("".join(json.dumps({**r, "k": key, "n": n}) + "\n" for n, r in numbered).encode())


def test_a_runner_step_gets_its_own_report_folder_and_the_reporters_under_a_random_name(tmp_path):
    runner = FakeRunner()
    result = anyio.run(run_plan, plan_tests("pytest -q tests"), runner, Path("/w"), tmp_path / "plan", None)
    [(command, binds)] = runner.calls
    [reports], [support, sockets] = binds.rw, binds.ro
    module = command.split(" -p ")[1].split()[0]
    assert module.startswith("agent_runtime_") and len(module) > len("agent_runtime_") + 8
    assert variable(command, "AGENT_RUNTIME_REPORT_KEY") == str(reports / "key") and f"PYTHONPATH={support}" in command
    assert variable(command, "AGENT_RUNTIME_TEST_REPORT") == str(sockets / "report.sock")  # a short folder, read-only
    assert len(str(sockets / "report.sock")) < 100 and not sockets.exists()  # removed after the step
    assert binds.home is not None and binds.home.parent == reports.parent
    [step] = result.steps
    assert step.report is not None and step.report.complete and step.report.runner == "pytest"
    assert [(t.id, t.outcome) for t in step.report.tests] == [("tests/test_a.py::test_one", "passed")]
    assert not (tmp_path / "plan").exists()  # made for the run, removed after


def test_every_step_runs_with_one_home_and_a_plain_step_has_no_report(tmp_path):
    runner = FakeRunner(code=1, output="lint failed")
    result = anyio.run(run_plan, plan_tests('eslint . && pytest -q && cat "$HOME/ran"'), runner, Path("/w"),
                       tmp_path / "plan", None)
    assert [c for c, _ in runner.calls][0] == "eslint ." and len(runner.calls) == 3  # `&&` would have stopped
    homes = {b.home for _, b in runner.calls}
    assert len(homes) == 1 and None not in homes
    assert [s.report is None for s in result.steps] == [True, False, True]


def test_a_runner_that_wrote_no_report_or_a_symlink_says_so(tmp_path):
    class NoReport(FakeRunner):
        async def __call__(self, command, timeout_s, *, binds=NO_BINDS):
            self.calls.append((command, binds))
            (binds.rw[0] / "report").symlink_to("/etc/passwd")
            return self.code, "4 passed in 0.01s"

    for command in ("npx jest", "pytest -q"):
        result = anyio.run(run_plan, plan_tests(command), NoReport(), Path("/w"), tmp_path / "plan", None)
        found = result.steps[0].report
        assert found is not None and not found.complete and "wrote no report" in found.problem and found.tests == []
    # a keyed runner that ends well with nothing sent: its report was taken away
    assert found.tampered == "the run ended well and its runner reported nothing: the report was taken away"


@pytest.mark.parametrize("forge,why", [
    (lambda records, command: report(command, records, key="guess"), "does not carry the run's key"),
    (lambda records, command: report(command, [records[0], records[2]], numbers=[0, 2]), "out of their order"),
    (lambda records, command: report(command, [*records, records[1]]), "records follow the report's end"),
    (lambda records, command: (report(command, records), report(command, records, key="x")),
     "other connection(s) to the report's socket"),
])
def test_a_report_its_runner_did_not_write_alone_is_tampered(tmp_path, forge, why):
    class Forger(FakeRunner):
        async def __call__(self, command, timeout_s, *, binds=NO_BINDS):
            self.calls.append((command, binds))
            await anyio.to_thread.run_sync(forge, self.records, command)
            return self.code, self.output

    result = anyio.run(run_plan, plan_tests("pytest -q"), Forger(), Path("/w"), tmp_path / "plan", None)
    assert result.steps[0].report is not None and why in result.steps[0].report.tampered


def test_an_end_whose_exit_status_is_not_the_process_s_is_tampered(tmp_path):
    failing = [*PASSED[:2], {"event": "finish", "exitstatus": 1}]
    result = anyio.run(run_plan, plan_tests("pytest -q"), FakeRunner(failing, code=0), Path("/w"), tmp_path / "plan", None)
    assert result.steps[0].report is not None
    assert result.steps[0].report.tampered == ("the runner ended its report with exit status 1, and the process ended "
                                               "with 0")


def test_a_sealed_file_is_served_once_and_a_second_ask_is_counted(tmp_path):
    from runtime.verify.kinds.runners.base import ReportPaths
    from runtime.verify.kinds.runners.py_pytest import RUNNER
    from runtime.verify.sealed import SealedServer

    server = SealedServer(Path(tempfile.mkdtemp(prefix="rts-")) / "s.sock", {"tests/test_h.py": b"X = 1\n"}, None).start()
    try:
        paths = ReportPaths("", "/support", "agent_runtime_x")
        stub = (RUNNER.sealed_stub("tests/test_h.py", str(server.path), server.ids["tests/test_h.py"], paths, False)
                or b"").decode()
        ident = stub.split("'")[-2]

        def ask(what: str) -> bytes:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(str(server.path))
                conn.sendall(what.encode() + b"\n")
                return b"".join(iter(lambda: conn.recv(4096), b""))

        assert ask(ident) == b"X = 1\n" and ask(ident) == b"" and ask("nothing") == b""
        time.sleep(0.2)
        assert server.asked() == {"tests/test_h.py": 2, "?": 1}
        assert "from agent_runtime_x_sealed import load" in stub and "X = 1" not in stub
    finally:
        server.close()
        shutil.rmtree(server.path.parent, ignore_errors=True)


def test_node_loads_a_sealed_commonjs_test_once_from_the_socket_and_never_from_the_tree(tmp_path):
    """A real node runs the stub node's runner would find at the hidden test's place: the source comes from the
    orchestrator's socket and runs as that file's own module; asked again (what a forger's read would make the
    runner's own ask), nothing comes and the file fails to load, the second ask counted. An ES module is laid as
    a file: the loader compiles CommonJS alone."""
    import shutil
    import subprocess

    from runtime.verify.kinds.runners.base import ReportPaths
    from runtime.verify.kinds.runners.node_test import RUNNER, SEALED_FILE, SEALED_SUFFIX
    from runtime.verify.sealed import SealedServer
    from tests.conftest import require

    node = shutil.which("node")
    require(node is not None, "node is not installed")
    support = tmp_path / "support"
    support.mkdir()
    source = Path(test_runs.__file__).parent / "kinds" / "runners" / "support" / SEALED_FILE
    (support / f"agent_runtime_x{SEALED_SUFFIX}").write_bytes(source.read_bytes())
    hidden = b"'use strict'\nconst path = require('path')\nconsole.log('hidden ran as', path.basename(__filename))\n"
    server = SealedServer(Path(tempfile.mkdtemp(prefix="rts-")) / "s.sock", {"test/h.test.js": hidden}, None).start()
    try:
        paths = ReportPaths("", str(support), "agent_runtime_x")
        stub = RUNNER.sealed_stub("test/h.test.js", str(server.path), server.ids["test/h.test.js"], paths, False)
        assert stub is not None and b"hidden ran" not in stub
        (tmp_path / "test").mkdir()
        (tmp_path / "test" / "h.test.js").write_bytes(stub)
        first = subprocess.run([node, "test/h.test.js"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert first.returncode == 0 and first.stdout == "hidden ran as h.test.js\n", first.stderr
        again = subprocess.run([node, "test/h.test.js"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert again.returncode != 0 and "its source was taken before its runner loaded it" in again.stderr
        assert "hidden ran" not in again.stdout
        time.sleep(0.2)
        assert server.asked() == {"test/h.test.js": 2}
    finally:
        server.close()
        shutil.rmtree(server.path.parent, ignore_errors=True)
    assert RUNNER.sealed_stub("test/h.test.js", "s", "i", paths, True) is None  # "type": "module": laid as a file
    assert RUNNER.sealed_stub("test/h.test.mjs", "s", "i", paths, False) is None
    assert RUNNER.sealed_stub("test/h.test.cjs", "s", "i", paths, True) is not None


def test_an_unfinished_report_is_read_as_unfinished(tmp_path):
    result = anyio.run(run_plan, plan_tests("pytest -q"), FakeRunner(PASSED[:2]), Path("/w"), tmp_path / "plan", None)
    assert result.steps[0].report is not None and not result.steps[0].report.complete


def test_hidden_tests_are_laid_over_for_the_runner_steps_and_named_by_their_files(tmp_path):
    runner = FakeRunner([*PASSED[:2], {"event": "report", "id": "tests/test_hidden.py::test_h", "when": "call",
                                       "outcome": "passed", "xfail": False}, PASSED[2]])
    hidden = Hidden((("tests/test_hidden.py", b"def test_h():\n    pass\n"),))
    result = anyio.run(run_plan, plan_tests("echo go && pytest -q"), runner, Path("/w"), tmp_path / "plan", None, hidden)
    plain, tests = runner.calls
    assert plain[1].overlay == () and tests[1].overlay == hidden.files  # the base's own run: laid as files
    assert result.hidden == ["tests/test_hidden.py::test_h"]


def test_in_the_run_of_the_base_s_tests_pytest_gets_hidden_tests_and_checks_sealed_and_the_test_side_read_only(tmp_path):
    runner = FakeRunner()
    hidden = Hidden((("tests/test_hidden.py", b"def test_h():\n    assert False\n"),))
    side = TestSide("base-tests", files=(("tests/test_new.py", None),), checks=(("tests/test_calc_x.py", b"def test_c(): pass\n"),),
                    locked=("tests/test_calc.py",))
    anyio.run(run_plan, plan_tests("pytest -q"), runner, Path("/w"), tmp_path / "plan", None, hidden, side)
    [(command, binds)] = runner.calls
    laid = dict(binds.overlay)
    assert laid["tests/test_new.py"] is None
    for path in ("tests/test_hidden.py", "tests/test_calc_x.py"):
        stub = laid[path]
        assert stub is not None and b"_sealed import load" in stub and b"assert" not in stub  # its source is not there
    assert set(binds.locked) == {"tests/test_calc.py", "tests/test_hidden.py", "tests/test_calc_x.py"}
    new = TestSide("new-tests", files=(("tests/test_calc.py", None),))
    anyio.run(run_plan, plan_tests("pytest -q"), runner, Path("/w"), tmp_path / "plan", None, hidden, new)
    assert dict(runner.calls[-1][1].overlay) == {"tests/test_calc.py": None}  # no hidden tests, no checks there


def test_hidden_ids_follow_the_runners_files_go_s_test_names_and_cargo_s_targets():
    run = TestRun.model_validate({"steps": [{"command": "x", "exit-code": 0, "output": "", "report": {
        "runner": "x", "command": "x", "exit-code": 0, "complete": True, "tests": [
            {"id": "tests/test_h.py::test_a", "outcome": "passed", "file": "tests/test_h.py"},
            {"id": "tests/test_v.py::test_b", "outcome": "passed", "file": "tests/test_v.py"},
            {"id": "example.com/calc::TestHidden/sub", "outcome": "passed"},
            {"id": "example.com/calc::TestVisible", "outcome": "passed"},
            {"id": "oracle::checks_mean", "outcome": "passed"}]}}]})
    hidden = Hidden((("tests/test_h.py", b""), ("hidden_test.go", b"package calc\n\nfunc TestHidden(t *testing.T) {}\n"),
                     ("tests/oracle.rs", b"")))
    assert hidden_ids(run, hidden) == ["example.com/calc::TestHidden/sub", "oracle::checks_mean", "tests/test_h.py::test_a"]


class Task:
    def __init__(self, spec: str) -> None:
        self.verification = SimpleNamespace(hidden_tests=spec)
        self.src = type("Src", (), {"path": "task.toml"})()


def test_hidden_tests_are_read_from_a_folder_without_links_or_git_files_or_from_a_revision(tmp_path):
    folder = tmp_path / "oracle"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_h.py").write_text("def test_h(): pass\n")
    (folder / "tests" / "link.py").symlink_to("/etc/passwd")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("[core]\n")
    assert load_hidden(None, Task(str(folder))).files == (("tests/test_h.py", b"def test_h(): pass\n"),)  # type: ignore[arg-type]
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "oracle", str(repo))
    (repo / "t_test.go").write_text("package x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "oracle")
    from runtime.workspace.git import Git
    assert load_hidden(Git(repo), Task("oracle")).files == (("t_test.go", b"package x\n"),)  # type: ignore[arg-type]
    assert load_hidden(Git(repo), type("T", (), {"verification": SimpleNamespace(hidden_tests=None)})()) is None  # type: ignore[arg-type]


def test_files_laid_over_a_tree_are_taken_back_and_what_they_replaced_restored(tmp_path):
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_a.py").write_text("the work's\n")
    with _overlaid(tree, (("tests/test_a.py", b"the oracle's\n"), ("hidden/deep/test_h.py", b"h\n")), None):
        assert (tree / "tests" / "test_a.py").read_text() == "the oracle's\n"
        assert (tree / "hidden" / "deep" / "test_h.py").read_text() == "h\n"
    assert (tree / "tests" / "test_a.py").read_text() == "the work's\n" and not (tree / "hidden").exists()


def test_files_are_never_laid_through_a_symlink_the_tree_holds(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (tree / "tests").symlink_to(outside)
    with pytest.raises(OSError), _overlaid(tree, (("tests/test_h.py", b"h\n"),), None):
        pass
    assert list(outside.iterdir()) == []


# -- the base's run, cached ----------------------------------------------------------------------------

def base_tests(tmp_path: Path, runner: FakeRunner, base: str = "b" * 40) -> BaseTests:
    return BaseTests(tmp_path / "cache", base, runner, Path("/w"), tmp_path / "plan", None, {"toolchain": []})


def test_the_base_s_run_is_computed_once_and_read_from_the_cache_after(tmp_path):
    runner = FakeRunner()
    plan = plan_tests("pytest -q")
    first, ref = anyio.run(base_tests(tmp_path, runner), plan)
    again, ref_again = anyio.run(base_tests(tmp_path, runner), plan)
    assert len(runner.calls) == 1 and again == first
    assert (ref.cached, ref_again.cached) == (False, True) and ref.key == ref_again.key and ref.base == "b" * 40
    assert anyio.run(base_tests(tmp_path, runner, "c" * 40), plan)[1].cached is False  # another base


def test_agents_asking_at_once_wait_for_one_run(tmp_path):
    class Slow(FakeRunner):
        async def __call__(self, command, timeout_s, *, binds=NO_BINDS):
            await anyio.sleep(0.3)
            return await super().__call__(command, timeout_s, binds=binds)

    runner = Slow()
    plan = plan_tests("pytest -q")
    refs = []

    async def ask() -> None:
        refs.append((await base_tests(tmp_path, runner)(plan))[1])

    async def both() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            group.start_soon(ask)

    anyio.run(both)
    assert len(runner.calls) == 1 and sorted(r.cached for r in refs) == [False, True]


def test_a_broken_base_run_is_not_kept_and_a_stale_one_is_run_again(tmp_path):
    plan = plan_tests("pytest -q")
    broken = FakeRunner(records=PASSED[:2])  # no end: something ended the runner
    assert anyio.run(base_tests(tmp_path, broken), plan)[1].cached is False
    assert list((tmp_path / "cache").rglob("*.json")) == []
    good = FakeRunner()
    anyio.run(base_tests(tmp_path, good), plan)
    [entry] = list((tmp_path / "cache").rglob("*.json"))
    raw = json.loads(entry.read_text())
    raw["ran-at"] = time.time() - test_runs.BASE_CACHE_TTL_S - 1
    entry.write_text(json.dumps(raw))
    assert anyio.run(base_tests(tmp_path, good), plan)[1].cached is False and len(good.calls) == 2
