"""Verify on return: gather each check's evidence through its kind, then judge it.

The orchestrator runs this against the worktree after the agent stops. The
evidence comes from git (every change against the base, untracked files,
renames, deletions, symlinks), from the files themselves and their versions in
the base commit (dependency files, changed files' text and sizes, at base and
now), from commands run inside the sandbox with a timeout (tests, checks), and
from the agent's report. Commands must not
change the work they check: the changes are listed again after them, and any
difference is a rejection.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from runtime.errors import LimitExhausted
from runtime.lang.globs import globs_to_regex
from runtime.manifests.control import CONTROL, control_name, exempted
from runtime.policy.document import PolicyDocument
from runtime.verify.kinds import change_size
from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.kind import MAX_SOURCE_BYTES, BaseRunRef, Change, CommandRun, Gathering, Reviewed, TestSide
from runtime.verify.kinds.record import CheckRecord
from runtime.verify.kinds.registry import KINDS, evaluate, judged
from runtime.verify.kinds.result import CheckStatus, VerifyResult, error
from runtime.verify.kinds.runners.plan import TestPlan
from runtime.verify.kinds.runners.results import TestRun
from runtime.workspace.base_files import Blob, base_blobs, read_blob
from runtime.workspace.changes import changed_paths
from runtime.workspace.git import Git, GitError
from runtime.workspace.safe_files import UnsafeFile, read_under, sha256_under, size_under

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

# A command runner: (command, timeout_s) -> (exit code, combined output).
RunCommand = Callable[[str, float], Awaitable[tuple[int, str]]]
# A test plan's runner, on the work (its test side laid as a side says); and on the base, with which run of it
# that was.
RunTests = Callable[[TestPlan, TestSide], Awaitable[TestRun]]
RunBaseTests = Callable[[TestPlan], Awaitable[tuple[TestRun, BaseRunRef]]]
# A reviewer: a change (a unified diff) in, its reading out.
Review = Callable[[str], Awaitable[Reviewed]]
COMMAND_TIMEOUT_S = 900.0
MAX_FILE_BYTES = 2_000_000
DEFAULT_CHANGE_SIZE = change_size.DEFAULTS


@dataclass
class Workspace:
    git: Git
    worktree: Path
    base: str
    report: str | None
    run_command: RunCommand
    # The spawn pipeline's own worktree: a nested repository found there has its `.git` deleted before git
    # reads the tree (and is a rejection). Anywhere else (a user's checkout) it is refused instead.
    clear_nested: bool = False
    # The change listing, when the caller has just made it over the same tree (the spawn pipeline's scratch
    # pass): listed once, not twice.
    changes: list[Change] | None = None
    # The same commands on a checkout of the base, for a command that fails (`runtime.verify.kinds.baseline`).
    at_base: RunCommand | None = None
    # Test plans on the work and on the base (`runtime.verify.test_runs`); without them a test kind has no
    # per-test results, which is an error of the check, never a pass.
    run_tests: RunTests | None = None
    tests_at_base: RunBaseTests | None = None
    # A reviewer of the change against the task (`runtime.verify.review`); without one a review asked for is
    # `unavailable`, which sends the work to a person.
    review: Review | None = None


def _text(data: bytes | None) -> str | None:
    if data is None or len(data) > MAX_FILE_BYTES or b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _inside(root: Path, path: str, hops: int = 40) -> str | None:
    """``path`` with every symlink in it followed, as long as each step stays inside ``root`` and out of its
    `.git`: the path a program opening it reads, relative to ``root``; None when it leaves."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    while parts:
        part = parts.pop(0)
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        here = root.joinpath(*done, part)
        if here.is_symlink():
            hops -= 1
            if hops < 0:
                return None
            target = os.readlink(here)
            if target.startswith("/"):
                try:
                    target = os.path.relpath(target, root)
                except ValueError:
                    return None
                if target.startswith(".."):
                    return None
                done = []
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
            continue
        done.append(part)
    if not done or done[0] == ".git":
        return None
    return "/".join(done)


class NoTestRunner(MalformedInput):
    """A test plan was asked of a caller that cannot run one."""


class _Commands:
    """Running the task's commands for a command kind's gatherer: on the work, and on the base."""

    def __init__(self, run_command: RunCommand, at_base: RunCommand | None, run_tests: RunTests | None = None,
                 tests_at_base: RunBaseTests | None = None, package_json: str | None = None,
                 review: Review | None = None) -> None:
        self._run, self._at_base = run_command, at_base
        self._run_tests, self._tests_at_base, self._package_json = run_tests, tests_at_base, package_json
        self._review = review

    async def review(self, change: str) -> Reviewed:
        if self._review is None:
            return Reviewed("unavailable", why="this verify has no reviewer")
        return await self._review(change)

    async def run_tests(self, plan: TestPlan, side: TestSide) -> TestRun:
        if self._run_tests is None:
            raise NoTestRunner("this verify cannot run a test plan")
        return await self._run_tests(plan, side)

    async def run_tests_at_base(self, plan: TestPlan) -> tuple[TestRun, BaseRunRef] | None:
        return None if self._tests_at_base is None else await self._tests_at_base(plan)

    def package_json(self) -> str | None:
        return self._package_json

    async def run(self, command: str) -> CommandRun:
        return CommandRun(*await self._run(command, COMMAND_TIMEOUT_S))

    async def run_at_base(self, command: str) -> CommandRun | None:
        if self._at_base is None:
            return None
        return CommandRun(*await self._at_base(command, COMMAND_TIMEOUT_S))


class WorktreeGathering(_Commands):
    """`runtime.verify.kinds.kind.Gathering` over an agent's worktree and its base commit: the changes listed once,
    files read without following symlinks, the base read from the object store alone, commands run by the
    caller's runners (in the sandbox, over a copy of the work)."""

    def __init__(self, ws: Workspace, changes: list[Change]) -> None:
        super().__init__(ws.run_command, ws.at_base, ws.run_tests, ws.tests_at_base,
                         _text(ws.git.read_file(ws.base, "package.json")), ws.review)
        self._ws, self._changes = ws, changes

    @property
    def changes(self) -> Sequence[Change]:
        return self._changes

    @property
    def report(self) -> str:
        return self._ws.report or ""

    def text(self, path: str) -> str | None:
        size = size_under(self._ws.worktree, path)
        if size is None or size > MAX_FILE_BYTES:
            return None
        try:
            data, _ = read_under(self._ws.worktree, path, MAX_FILE_BYTES + 1)
        except (OSError, UnsafeFile):
            return None
        return _text(data)

    def size(self, path: str) -> int | None:
        return size_under(self._ws.worktree, path)

    def source(self, path: str) -> bytes | None:
        rel = _inside(self._ws.worktree, path)
        if rel is None:
            return None
        try:
            data, size = read_under(self._ws.worktree, rel, MAX_SOURCE_BYTES + 1)
        except (OSError, UnsafeFile):
            return None
        return data if size <= MAX_SOURCE_BYTES else None

    def base_source(self, path: str) -> bytes | None:
        blob = self._blobs([path]).get(path)
        return None if blob is None else read_blob(self._ws.git, blob, MAX_SOURCE_BYTES)

    def base_text(self, path: str) -> str | None:
        return _text(self._ws.git.read_file(self._ws.base, path))

    def _blobs(self, paths: Iterable[str]) -> dict[str, Blob]:
        origin = {c.path: c.old_path or c.path for c in self._changes if c.kind != "deleted"}
        wanted = {path: origin.get(path, path) for path in paths}
        blobs = base_blobs(self._ws.git, self._ws.base, wanted.values())
        return {path: blobs[old] for path, old in wanted.items() if old in blobs}

    def base_texts(self, paths: Iterable[str]) -> dict[str, str | None]:
        return {path: _text(read_blob(self._ws.git, blob, MAX_FILE_BYTES)) for path, blob in self._blobs(paths).items()}

    def base_sizes(self, paths: Iterable[str]) -> dict[str, int]:
        return {path: blob.size for path, blob in self._blobs(paths).items()}

    def base_files(self, globs: Collection[str]) -> list[str]:
        pattern = globs_to_regex(list(globs))
        if not pattern:
            return []
        rx = re.compile(pattern)
        return [path for path in self._ws.git.files_at(self._ws.base) if rx.match(path)]


class CommandGathering(_Commands):
    """`runtime.verify.kinds.kind.Gathering` for the command kinds alone, on a tree that is no agent's worktree (a
    merge's re-check): it has commands to run and no change of its own to read."""

    changes: Sequence[Change] = ()
    report = ""

    def text(self, path: str) -> str | None:
        raise NotImplementedError("a command re-check reads no files")

    def size(self, path: str) -> int | None:
        raise NotImplementedError("a command re-check reads no files")

    def base_text(self, path: str) -> str | None:
        raise NotImplementedError("a command re-check reads no files")

    def source(self, path: str) -> bytes | None:
        raise NotImplementedError("a command re-check reads no files")

    def base_source(self, path: str) -> bytes | None:
        return None  # a merged tree's tests run as the merge holds them: nothing is laid back, nothing copied

    def base_texts(self, paths: Iterable[str]) -> dict[str, str | None]:
        raise NotImplementedError("a command re-check reads no files")

    def base_sizes(self, paths: Iterable[str]) -> dict[str, int]:
        raise NotImplementedError("a command re-check reads no files")

    def base_files(self, globs: Collection[str]) -> list[str]:
        return []  # (see base_source)


def control_changes(changes: list[Change], exempt: list[str]) -> list[tuple[str, str]]:
    """(path, control name) of every changed control file, but those the task may change."""
    out = []
    for change in changes:
        for path in (change.path, change.old_path):
            name = control_name(path) if path else None
            if name is not None and name != ".git" and not exempted(path or "", tuple(exempt)):
                out.append((path or "", name))
    return out


def _structural(changes: list[Change], exempt: list[str]) -> str | None:
    bad = [c for c in changes if c.escapes or c.path == ".git" or c.path.startswith(".git/")]
    control = control_changes(changes, exempt)
    if not bad and not control:
        return None
    out = []
    if bad:
        lines = [f"- {c.path}" + (f" -> {c.symlink_target}" if c.symlink_target else "")
                 + (f": {c.reason}" if c.reason else "") for c in bad]
        out.append("these changes reach outside the worktree or into .git, which is never allowed:\n" + "\n".join(lines))
    if control:
        lines = [f"- {path}: {CONTROL[name]}" for path, name in control]
        out.append("these are control files, which no agent changes whatever its scope says (restore them; "
                   "say in your report what should change):\n" + "\n".join(lines))
    return "\n".join(out)


def _fingerprint(ws: Workspace, changes: list[Change]) -> dict[str, str]:
    out = {}
    for change in changes:
        if change.reason is not None:
            # A hazard: a nested repository (its `.git` is gone after the first listing, so the folder may
            # no longer show), a folder git cannot hold. What it is, not its bytes.
            out[change.path] = f"hazard:{change.reason}"
            continue
        try:
            digest = sha256_under(ws.worktree, change.path)  # streamed, never the whole file in memory
        except (OSError, UnsafeFile):
            digest = "-"
        out[change.path] = f"{change.kind}:{digest}"
    return out


def _unreadable(exc: GitError) -> CheckRecord:
    """The work git itself cannot read (attributes it cannot honour, a file it cannot convert): nothing can
    be judged or committed, and git's own words say what to fix."""
    detail = " ".join(exc.stderr.split())[:600] or str(exc)
    return CheckRecord("runtime", "changes", CheckStatus.REJECTED,
                       f"git cannot read the work in the worktree, so it can be neither checked nor committed: {detail}")


def _changes(ws: Workspace) -> list[Change]:
    if ws.changes is not None:
        return ws.changes
    return changed_paths(ws.git, ws.worktree, ws.base, clear_nested=ws.clear_nested)


async def verify(policy: PolicyDocument, ws: Workspace, *, commands: bool = True) -> list[CheckRecord]:
    """Every verify entry of the policy, gathered through its kind and judged; structural violations fail the
    scope check. Without ``commands``, the command kinds are left out (a re-check of imported work runs none)."""
    try:
        changes = await anyio.to_thread.run_sync(_changes, ws)
    except GitError as exc:
        return [_unreadable(exc)]
    gathering = WorktreeGathering(ws, changes)
    records: list[CheckRecord] = []
    structural = _structural(changes, policy.control_files())
    to_run = []
    for entry in policy.verify_entries():
        kind = KINDS.get(entry.kind)
        if kind is not None and kind.runs_commands:
            if commands:
                to_run.append(entry)
            continue
        result = await _judged(entry.kind, entry.params, gathering)
        status, feedback = result.status, result.feedback
        if structural and entry.kind in ("scope-whitelist", "no-changes") and status != CheckStatus.ERROR:
            status, feedback = CheckStatus.REJECTED, structural + ("" if result.ok else "\n" + feedback)
        records.append(CheckRecord(entry.atom, entry.kind, status, feedback, result.tests, result.edits, result.tampering))
    if structural and not any(r.kind in ("scope-whitelist", "no-changes") for r in records):
        records.append(CheckRecord("runtime", "structure", CheckStatus.REJECTED, structural))
    if not policy.verify_entries(("change-size",)):
        # A role without the atom still gets its defaults: no change is ever unbounded.
        result = evaluate("change-size", change_size.DEFAULTS, change_size.sizes_of(gathering))
        records.append(CheckRecord("runtime", "change-size", result.status, result.feedback))
    if to_run:
        before = _fingerprint(ws, changes)
        for entry in to_run:
            result = await _judged(entry.kind, entry.params, gathering)
            records.append(CheckRecord(entry.atom, entry.kind, result.status, result.feedback, result.tests,
                                       tampering=result.tampering, review=result.review))
        try:
            later = await anyio.to_thread.run_sync(_changes, ws)
        except GitError as exc:
            records.append(_unreadable(exc))
            return records
        after = _fingerprint(ws, later)
        # The hazards the first listing cleared stay what they were; a hazard the checks made is new.
        cleared = {c.path for c in changes if c.reason is not None and c.path not in after}
        after.update({path: before[path] for path in cleared})
        if after != before:
            moved = sorted(set(before.items()) ^ set(after.items()))
            names = sorted({path for path, _ in moved})
            records.append(CheckRecord(
                "runtime", "checks-unchanged", CheckStatus.REJECTED,
                "running the checks changed the work they check (" + ", ".join(names[:10]) + "); "
                "tests and checks must not write files that are not ignored",
            ))
    return records


async def _judged(kind_name: str, params: JSONObject, gathering: Gathering) -> VerifyResult:
    """One entry gathered through its kind and judged; a kind unknown here is an error result (`evaluate`)."""
    kind = KINDS.get(kind_name)
    if kind is None:
        return evaluate(kind_name, params, {})
    try:
        read = kind.read_params(params)
        evidence = await kind.gather(read, gathering)
    except MalformedInput as exc:
        return error(f"cannot check `{kind_name}`: {exc}")
    except (LimitExhausted, anyio.get_cancelled_exc_class()):
        raise
    except Exception as exc:  # a bug in a gatherer must not pass the work or crash the run: the check did not run
        return error(f"the `{kind_name}` check failed unexpectedly while gathering its evidence: "
                     f"{type(exc).__name__}: {exc}")
    return judged(kind, read, evidence)


async def judge_commands(entry_kind: str, params: JSONObject, run_command: RunCommand,
                         at_base: RunCommand | None = None, run_tests: RunTests | None = None,
                         tests_at_base: RunBaseTests | None = None, package_json: str | None = None) -> VerifyResult:
    """A command kind gathered and judged on a tree that is no agent's worktree (a merge's re-check, whose
    base runners are ``at_base`` and ``tests_at_base``; ``package_json``: the base's)."""
    return await _judged(entry_kind, params, CommandGathering(run_command, at_base, run_tests, tests_at_base, package_json))
