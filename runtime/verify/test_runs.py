"""Running a test plan: the orchestrator starts each runner itself and reads its structured report.

Each runner step gets a report folder of its own, made here, outside the tree and anything the work can
write, bound read-write for that step alone, and the runtime's reporters in a read-only folder under a
random module name (a module the work could shadow would have to be named first). After the step the
report is read without following a symlink and within a size bound: the code under test runs as the
agent's user and could leave anything in that folder. A runner that wrote no report, or one that does
not read, says so in the step's result, and verify rejects it.

The base's run of the same plan is cached per base commit in the state folder (`base-tests/`), shared by
every agent and attempt that judges work against that base, and computed once under a lock when several
ask at the same time.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import select
import socket
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import anyio

from runtime.errors import FatalError
from runtime.manifests.task import Task
from runtime.manifests.toolchain import Toolchain
from runtime.sandbox.identity import AgentUser
from runtime.verify.commands import Binds, Runner
from runtime.verify.kinds.kind import BaseRunRef, TestSide
from runtime.verify.kinds.runners.base import MAX_REPORT_BYTES, Reading, ReportPaths
from runtime.verify.kinds.runners.base import Runner as RunnerKind
from runtime.verify.kinds.runners.plan import TestPlan
from runtime.verify.kinds.runners.registry import BY_NAME, SUPPORT
from runtime.verify.kinds.runners.results import RunnerReport, StepRun, TestRun
from runtime.verify.sealed import SealedServer
from runtime.workspace.git import Git
from runtime.workspace.safe_files import UnsafeFile, read_under
from runtime.workspace.tree import remove_tree

COMMAND_TIMEOUT_S = 900.0
# How long the base's cached run is trusted: the toolchain it ran with (a venv, node_modules) can change
# under the same paths without the cache knowing.
BASE_CACHE_TTL_S = 12 * 3600
_GO_TEST = re.compile(r"^func (Test\w*)\(", re.M)


@dataclass(frozen=True)
class Hidden:
    """Tests the work never sees, laid over the tree for the runner steps alone: relative path -> bytes, and
    the digest that tells one set from another (the base's cache keys on it)."""

    files: tuple[tuple[str, bytes], ...]

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for path, data in self.files:
            h.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
        return h.hexdigest()

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.files]


MAX_HIDDEN_FILES = 2000
MAX_HIDDEN_BYTES = 32 * 1024 * 1024


def load_hidden(git: Git, task: Task) -> Hidden | None:
    """The task's hidden tests (`[verification] hidden-tests`): the files of a folder outside the repository
    (an absolute path), or of a revision of the repository, which the agent's sandbox never shows; None when
    the task names none. `runtime.spawn.preflight` has checked the source before anything was made."""
    spec = task.verification.hidden_tests
    if not spec:
        return None
    files: list[tuple[str, bytes]] = []
    if str(spec).startswith("/"):
        root = Path(spec)
        total = 0
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            if any(part.startswith(".git") for part in rel.split("/")):
                continue
            content, _ = read_under(root, rel, MAX_HIDDEN_BYTES + 1)
            total += len(content)
            files.append((rel, content))
            if len(files) > MAX_HIDDEN_FILES or total > MAX_HIDDEN_BYTES:
                raise FatalError(f"{task.src.path}: the hidden tests in {spec} are more than {MAX_HIDDEN_FILES} files "
                                 f"or {MAX_HIDDEN_BYTES // (1024 * 1024)} MB")
    else:
        rev = git.resolve(str(spec))
        for rel in git.files_at(rev):
            data = git.read_file(rev, rel)
            if data is not None:
                files.append((rel, data))
    if not files:
        raise FatalError(f"{task.src.path}: the hidden tests `{spec}` hold no file")
    return Hidden(tuple(files))


def support_files() -> dict[str, bytes]:
    """The reporters, by the suffix each takes after the random module name."""
    folder = resources.files("runtime.verify.kinds.runners.support")
    return {suffix: folder.joinpath(name).read_bytes() for suffix, name in SUPPORT.items()}


def support_digest() -> str:
    return hashlib.sha256(b"".join(support_files()[k] for k in sorted(SUPPORT))).hexdigest()


async def run_plan(plan: TestPlan, run: Runner, root: Path, folder: Path, user: AgentUser | None,
                   hidden: Hidden | None = None, side: TestSide | None = None) -> TestRun:
    """Run ``plan``'s steps in order with ``run`` in the tree shown at ``root``, its reports under ``folder``
    (made here, removed after), its test side laid as ``side`` says (the task's hidden tests with the base's
    tests; None: the tree as it is, with the hidden tests: the base's own run)."""
    await anyio.to_thread.run_sync(_fresh, folder, None)
    try:
        return await _run_steps(plan, run, root, folder, user, hidden, side)
    finally:
        await anyio.to_thread.run_sync(remove_tree, folder)


async def _run_steps(plan: TestPlan, run: Runner, root: Path, folder: Path, user: AgentUser | None,
                     hidden: Hidden | None, side: TestSide | None) -> TestRun:
    module = f"agent_runtime_{secrets.token_hex(6)}"
    support = folder / "support"
    await anyio.to_thread.run_sync(_write_support, support, module)
    home = folder / "home"  # one for all the steps, as one command's steps have (`pytest ... && cat "$HOME/x"`)
    await anyio.to_thread.run_sync(_fresh, home, user)
    laid = side.files if side is not None else ()
    with_hidden = hidden is not None and (side is None or side.name == "base-tests")
    extra = [*(hidden.files if with_hidden and hidden is not None else ()), *(side.checks if side is not None else ())]
    steps: list[StepRun] = []
    for n, step in enumerate(plan.steps):
        # Every step runs, whatever the one before did (`&&` would stop): a lint step failing as it does at the
        # base must not hide the tests after it, and each step's verdict is its own.
        if step.runner is None:
            if side is not None and not side.plain:
                continue  # a step without tests runs once, on the work's own test side (`TestSide.plain`)
            code, output = await run(step.render(str(root), None), COMMAND_TIMEOUT_S,
                                     binds=Binds(overlay=laid, home=home))
            steps.append(StepRun(command=step.command.render(), exit_code=code, output=output))
            continue
        reports = folder / f"step-{n}"
        await anyio.to_thread.run_sync(_fresh, reports, user)
        runner = BY_NAME[step.runner]
        # A sealed test's source is served once to the runner's loader (pytest's, node's); what a runner cannot
        # load sealed is laid as a file. Never for the base's own run (`side` None): its code is the base's.
        probe = ReportPaths("", str(support), module)
        sealed = {p: d for p, d in extra
                  if side is not None and runner.sealed_stub(p, "", "", probe, side.esm) is not None}
        plain = tuple((p, d) for p, d in extra if p not in sealed)
        # The orchestrator's sockets, in a short folder of their own (a Unix socket's path is at most 107 bytes),
        # bound read-only: nothing in the sandbox can replace them.
        sockets = Path(tempfile.mkdtemp(prefix="rts-")) if sealed or runner.channel == "socket" else None
        if sockets is not None:
            sockets.chmod(0o755)
        channel = await anyio.to_thread.run_sync(Channel.open, runner, reports, sockets, support, module, user)
        command = step.render(str(root), channel.paths)
        server = SealedServer(sockets / "sealed.sock", sealed, user).start() if sealed and sockets is not None else None
        code, output = 1, ""
        try:
            stubs = tuple((p, _stub(runner, p, server, channel.paths, side)) for p in sealed) if server is not None else ()
            locked = (*(side.locked if side is not None else ()), *(p for p, _ in stubs), *(p for p, _ in plain))
            code, output = await run(command, COMMAND_TIMEOUT_S,
                                     binds=Binds(rw=(reports,), ro=(support, *([sockets] if sockets else [])),
                                                 overlay=(*laid, *plain, *stubs),
                                                 locked=locked if side is not None else (), home=home))
        finally:
            asked = server.asked() if server is not None else {}
            if server is not None:
                server.close()
            data, tampered = await anyio.to_thread.run_sync(channel.close, code, output)
            if sockets is not None:
                await anyio.to_thread.run_sync(remove_tree, sockets)
        if data is None:
            reading = Reading(problem="the runner wrote no report (it did not start, or something ended it first)")
        else:
            reading = runner.read(data, output, str(root))
        steps.append(StepRun(command=step.command.render(), exit_code=code, output=output, sealed=asked,
                             report=RunnerReport(runner=runner.name, command=command, exit_code=code,
                                                 complete=reading.complete, problem=reading.problem,
                                                 config=reading.config, tests=reading.tests, tampered=tampered)))
    result = TestRun(steps=steps, side=side.name if side is not None else "")
    if hidden is not None and with_hidden:
        result = TestRun(steps=steps, hidden=hidden_ids(result, hidden), side=result.side)
    return result


def _stub(runner: RunnerKind, path: str, server: SealedServer, paths: ReportPaths, side: TestSide | None) -> bytes:
    stub = runner.sealed_stub(path, str(server.path), server.ids[path], paths, side is not None and side.esm)
    assert stub is not None  # the same question `_run_steps` asked of this path
    return stub


class Channel:
    """Where one runner step's report goes and how the orchestrator reads it back: a keyed runner's (the
    runtime's own reporters) through a socket in ``sockets`` or a pipe at its destination, read while it is
    written, with the run's key in a file beside it that the reporter removes once read; any other runner's
    from the file it writes in its step's folder, read after it, without following a link and within a bound."""

    def __init__(self, runner: RunnerKind, reports: Path, paths: ReportPaths, key: str, stream: _Stream | None) -> None:
        self.runner, self.reports, self.paths, self.key, self._stream = runner, reports, paths, key, stream

    @classmethod
    def open(cls, runner: RunnerKind, reports: Path, sockets: Path | None, support: Path, module: str,
             user: AgentUser | None) -> Channel:
        key = secrets.token_hex(16) if runner.keyed else ""
        if runner.keyed:
            where = reports / "key"
            where.write_text(key + "\n", encoding="utf-8")
            where.chmod(0o600)
            if user is not None:
                os.chown(where, user.uid, user.gid, follow_symlinks=False)
        socket_path = sockets / "report.sock" if sockets is not None and runner.channel == "socket" else None
        paths = ReportPaths(str(reports / "report"), str(support), module,
                            channel=str(socket_path) if socket_path is not None else "", key=str(reports / "key"))
        stream = None
        if socket_path is not None:
            stream = _Stream.listen(socket_path, user)
        elif runner.channel == "fifo":
            stream = _Stream.fifo(reports / "report", user)
        return cls(runner, reports, paths, key, stream)

    def close(self, code: int, output: str) -> tuple[bytes | None, str]:
        """The report as the runner wrote it (None: there is none), and why it cannot be its runner's ('' when
        it can: `keyed_stream`)."""
        if self.runner.output_is_report:
            return output.encode("utf-8", errors="replace"), ""
        if self._stream is None:
            return _report(self.reports), ""
        data, others = self._stream.close()
        tampered = ""
        if data is None:
            if code == 0:
                tampered = "the run ended well and its runner reported nothing: the report was taken away"
        else:
            tampered = keyed_stream(data, self.key, code, self.runner.last_event)
        if others and not tampered:
            tampered = f"{others} other connection(s) to the report's socket sent records: something else reported"
        return data, tampered


class _Stream:
    """A keyed runner's report, read by the orchestrator while the runner writes it: nothing the code under test
    does later can take a written record back. Through a socket the reporter connects to (``listen``: the
    Python reporters; a second connection is something else reporting), or a pipe at the reporter's
    destination (``fifo``: node's, which writes to a path).

    One thread waits on everything at once (the listener or the pipe, each connection, and a wake-up pipe), so
    it costs nothing while the runner is quiet and ``close`` returns as soon as what was written is drained."""

    def __init__(self, listener: socket.socket | None, fd: int | None) -> None:
        self._listener, self._fd = listener, fd
        self._chunks: list[list[bytes]] = []
        self._size = 0
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._serve, name="test-report", daemon=True)
        self._thread.start()

    @classmethod
    def listen(cls, path: Path, user: AgentUser | None) -> _Stream:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        listener.bind(str(path))
        os.chmod(path, 0o600)
        if user is not None:
            os.chown(path, user.uid, user.gid, follow_symlinks=False)
        listener.listen(8)
        listener.setblocking(False)
        return cls(listener, None)

    @classmethod
    def fifo(cls, path: Path, user: AgentUser | None) -> _Stream:
        os.mkfifo(path, 0o600)
        if user is not None:
            os.chown(path, user.uid, user.gid, follow_symlinks=False)
        # Read and write: the open never waits for a writer, and the pipe never ends while this holds it.
        return cls(None, os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))

    def _serve(self) -> None:
        conns: dict[int, tuple[socket.socket, list[bytes]]] = {}
        fifo: list[bytes] = []
        if self._fd is not None:
            self._chunks.append(fifo)
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        source = self._listener.fileno() if self._listener is not None else self._fd
        assert source is not None
        poller.register(source, select.POLLIN)
        try:
            while True:
                ready = {fd for fd, _ in poller.poll()}
                stopping = self._wake_r in ready
                if stopping:  # the run is over: take what is already written, wait for nothing more
                    ready = {source, *conns}
                if source in ready:
                    if self._listener is not None:
                        self._accept(poller, conns)
                    else:
                        self._drain_fifo(fifo)
                for fd in ready & set(conns):
                    if self._drain(*conns[fd]):
                        poller.unregister(fd)
                        conns.pop(fd)[0].close()
                if stopping:
                    return
        finally:
            for conn, _ in conns.values():
                conn.close()

    def _accept(self, poller: select.poll, conns: dict[int, tuple[socket.socket, list[bytes]]]) -> None:
        assert self._listener is not None
        while True:
            try:
                conn, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            conn.setblocking(False)
            chunks: list[bytes] = []
            self._chunks.append(chunks)
            conns[conn.fileno()] = (conn, chunks)
            poller.register(conn.fileno(), select.POLLIN)
            self._drain(conn, chunks)

    def _drain(self, conn: socket.socket, chunks: list[bytes]) -> bool:
        """Read what ``conn`` holds now; True once it has ended."""
        while True:
            try:
                chunk = conn.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                return True
            if not chunk:
                return True
            self._keep(chunks, chunk)

    def _drain_fifo(self, chunks: list[bytes]) -> None:
        assert self._fd is not None
        while True:
            try:
                chunk = os.read(self._fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if not chunk:
                return
            self._keep(chunks, chunk)

    def _keep(self, chunks: list[bytes], chunk: bytes) -> None:
        if self._size <= MAX_REPORT_BYTES:
            chunks.append(chunk)
        self._size += len(chunk)

    def close(self) -> tuple[bytes | None, int]:
        """The report, and how many other connections sent anything."""
        os.write(self._wake_w, b"x")
        self._thread.join(timeout=10)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
        if self._listener is not None:
            self._listener.close()
        if self._fd is not None:
            os.close(self._fd)
        streams = [b"".join(c) for c in self._chunks if c]
        if self._size > MAX_REPORT_BYTES or not streams:
            return None, max(0, len(streams) - 1)
        return streams[0], len(streams) - 1


def keyed_stream(data: bytes, key: str, exit_code: int, last: str) -> str:
    """Why a keyed report cannot be its runner's (''  when it can): a record without the run's key or out of its
    order (the reporter numbers them), a record after its last event, or a last event that gives another exit
    status than the process ended with."""
    expected = 0
    ended: dict[str, object] | None = None
    for line in data.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            return "a line of the report is not one of its runner's records"
        if not isinstance(record, dict) or record.get("k") != key:
            return "a record of the report does not carry the run's key: something else wrote it"
        if record.get("n") != expected:
            return f"the report's records are out of their order (record {expected} is missing or came twice)"
        if ended is not None:
            return "records follow the report's end"
        if record.get("event") == last:
            ended = record
        expected += 1
    status = ended.get("exitstatus") if ended is not None else None
    if isinstance(status, int) and status != exit_code:
        return f"the runner ended its report with exit status {status}, and the process ended with {exit_code}"
    if ended is None and exit_code == 0:
        return "the run ended well and its report has no end"
    return ""


def hidden_ids(result: TestRun, hidden: Hidden) -> list[str]:
    """The tests of ``result`` that come from the hidden files: by the file the runner names, and for go
    (whose events name no file) by the test functions the hidden `_test.go` files define."""
    paths = set(hidden.paths)
    go_names = {name for path, data in hidden.files if path.endswith("_test.go")
                for name in _GO_TEST.findall(data.decode("utf-8", errors="replace"))}
    out = []
    for case in result.cases().values():
        if case.file in paths or _cargo_target(case.id, paths):
            out.append(case.id)
        elif "::" in case.id and case.id.split("::", 1)[1].split("/", 1)[0] in go_names:
            out.append(case.id)
    return sorted(out)


def _cargo_target(test_id: str, paths: set[str]) -> bool:
    """A cargo integration test from a hidden `tests/NAME.rs`: its binary is NAME."""
    target = test_id.split("::", 1)[0]
    return f"tests/{target}.rs" in paths


def _fresh(folder: Path, user: AgentUser | None) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    remove_tree(folder)
    folder.mkdir(mode=0o700)
    if user is not None:
        os.chown(folder, user.uid, user.gid, follow_symlinks=False)


def _write_support(support: Path, module: str) -> None:
    support.mkdir(mode=0o755)
    for suffix, data in support_files().items():
        (support / f"{module}{suffix}").write_bytes(data)
        (support / f"{module}{suffix}").chmod(0o644)


def _report(folder: Path) -> bytes | None:
    """The step's report, never through a symlink and within the size bound; None when there is none."""
    try:
        data, size = read_under(folder, "report", MAX_REPORT_BYTES + 1)
    except (OSError, UnsafeFile):
        return None
    return None if size > MAX_REPORT_BYTES else data


class BaseTests:
    """The base's run of a plan, cached per base commit under ``cache`` (the state folder's `base-tests/`):
    the first caller runs it with ``run`` and stores it under a lock; every later one (another attempt,
    another agent of the plan on the same base) reads it. ``context`` names everything else the run
    depended on (the toolchain, the task's variables), which the key holds."""

    def __init__(self, cache: Path, base: str, run: Runner, root: Path, folder: Path, user: AgentUser | None,
                 context: Mapping[str, object], hidden: Hidden | None = None) -> None:
        self._cache, self._base, self._run, self._root = cache, base, run, root
        self._folder, self._user, self._context, self._hidden = folder, user, context, hidden

    def key(self, plan: TestPlan) -> str:
        data = json.dumps({"base": self._base, "plan": plan.key(), "context": self._context,
                           "hidden": self._hidden.digest if self._hidden else None, "support": support_digest()},
                          sort_keys=True, default=str)
        return hashlib.sha256(data.encode()).hexdigest()[:32]

    async def __call__(self, plan: TestPlan) -> tuple[TestRun, BaseRunRef]:
        key = self.key(plan)
        folder = self._cache / self._base
        await anyio.to_thread.run_sync(lambda: folder.mkdir(parents=True, exist_ok=True))
        path = folder / f"{key}.json"
        # One computes, the others wait and read: an flock on a file of its own (per open file, so parallel
        # spawns of one process exclude each other as processes do; the kernel drops it with its holder).
        lock = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        await anyio.to_thread.run_sync(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            cached = await anyio.to_thread.run_sync(_cached, path)
            if cached is not None:
                return cached[0], BaseRunRef(key=key, base=self._base, ran_at=cached[1], cached=True)
            result = await run_plan(plan, self._run, self._root, self._folder, self._user, self._hidden)
            ran_at = time.time()
            # a run whose report is missing, unreadable or unfinished is not kept: the next one tries again
            if all(s.report.complete and not s.report.problem for s in result.steps if s.report is not None):
                await anyio.to_thread.run_sync(_store, path, result, ran_at)
            return result, BaseRunRef(key=key, base=self._base, ran_at=ran_at, cached=False)
        finally:
            os.close(lock)  # releases the flock


def _cached(path: Path) -> tuple[TestRun, float] | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if time.time() - float(raw["ran-at"]) > BASE_CACHE_TTL_S:
            return None
        return TestRun.model_validate(raw["run"]), float(raw["ran-at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a missing, stale or unreadable entry is run again (pydantic's errors are ValueErrors)


def _store(path: Path, result: TestRun, ran_at: float) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"ran-at": ran_at, "run": result.model_dump(mode="json", by_alias=True)}), encoding="utf-8")
    os.replace(tmp, path)


def plan_context(toolchain: Toolchain, declared: Mapping[str, str]) -> dict[str, object]:
    """What a base run depends on besides the base and the plan: the repository's toolchain and the task's
    variables (its cache key holds them)."""
    return {"toolchain": [*toolchain.folders, *toolchain.path, *toolchain.programs,
                          *(f"{k}={v}" for k, v in toolchain.env)],
            "env": dict(sorted(declared.items()))}


def plan_runners(runner: Runner, at_base: Runner, root: Path, folder: Path, base: str, user: AgentUser | None,
                 hidden: Hidden | None, context: Mapping[str, object],
                 cache: Path) -> tuple[Callable[[TestPlan, TestSide], Awaitable[TestRun]],
                                       Callable[[TestPlan], Awaitable[tuple[TestRun, BaseRunRef]]]]:
    """A verify's two test plan runners: on the work (``runner``, its reports under ``folder``), and on the
    base (``at_base``), cached under ``cache`` per base commit."""

    async def on_work(plan: TestPlan, side: TestSide) -> TestRun:
        return await run_plan(plan, runner, root, folder / "test-reports", user, hidden, side)

    return on_work, BaseTests(cache, base, at_base, root, folder / "base-test-reports", user, context, hidden)


__all__ = ["BaseTests", "Hidden", "hidden_ids", "load_hidden", "plan_context", "plan_runners", "run_plan", "support_files"]
