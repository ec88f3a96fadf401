"""Verify on return: gather each check's evidence, then judge it with its evaluator.

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

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio

from runtime.manifests.control import CONTROL, control_name, exempted
from runtime.manifests.globs import globs_to_regex
from runtime.policy.document import PolicyDocument
from runtime.verify.kinds import evaluate
from runtime.verify.kinds.baseline import wanted
from runtime.verify.kinds.change_size import DEFAULT_MAX_CHANGE_BYTES, DEFAULT_MAX_FILE_BYTES
from runtime.verify.record import CheckRecord
from runtime.workspace.base_files import Blob, base_blobs, read_blob
from runtime.workspace.changes import Change, changed_paths
from runtime.workspace.git import Git, GitError
from runtime.workspace.safe_files import UnsafeFile, read_under, sha256_under, size_under

# A command runner: (command, timeout_s) -> (exit code, combined output).
RunCommand = Callable[[str, float], Awaitable[tuple[int, str]]]
COMMAND_TIMEOUT_S = 900.0
MAX_FILE_BYTES = 2_000_000
DEFAULT_CHANGE_SIZE = {"max-file-bytes": DEFAULT_MAX_FILE_BYTES, "max-change-bytes": DEFAULT_MAX_CHANGE_BYTES}


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
    # The same commands on a checkout of the base, for a command that fails (`command_evidence`).
    at_base: RunCommand | None = None


def _text(data: bytes | None) -> str | None:
    if data is None or len(data) > MAX_FILE_BYTES or b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _worktree_text(ws: Workspace, path: str) -> str | None:
    """A changed file's text, read without following symlinks; None when it is not a small regular text file."""
    size = size_under(ws.worktree, path)
    if size is None or size > MAX_FILE_BYTES:
        return None
    try:
        data, _ = read_under(ws.worktree, path, MAX_FILE_BYTES + 1)
    except (OSError, UnsafeFile):
        return None
    return _text(data)


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


def _sizes(ws: Workspace, changes: list[Change]) -> dict[str, int]:
    """The size of every added or modified regular file, from lstat alone."""
    sizes = {}
    for change in changes:
        if change.kind != "deleted" and (size := size_under(ws.worktree, change.path)) is not None:
            sizes[change.path] = size
    return sizes


def _at_base(ws: Workspace, changes: list[Change], paths: Iterable[str]) -> dict[str, Blob]:
    """The base's regular file of each of ``paths`` (current names; a renamed file's from its old name), from
    the base commit's tree in the object store: never from the agent's worktree, index or git files."""
    origin = {c.path: c.old_path or c.path for c in changes if c.kind != "deleted"}
    wanted = {path: origin[path] for path in paths if path in origin}
    blobs = base_blobs(ws.git, ws.base, wanted.values())
    return {path: blobs[old] for path, old in wanted.items() if old in blobs}


def _change_sizes(ws: Workspace, changes: list[Change]) -> dict[str, Any]:
    sizes = _sizes(ws, changes)
    return {"sizes": sizes, "base-sizes": {path: blob.size for path, blob in _at_base(ws, changes, sizes).items()}}


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


def _changed(changes: list[Change]) -> list[str]:
    return sorted({c.path for c in changes} | {c.old_path for c in changes if c.old_path})


def _scope_evidence(params: dict[str, Any], ws: Workspace, changes: list[Change]) -> dict[str, Any]:
    return {"changed": _changed(changes)}


def _dep_evidence(params: dict[str, Any], ws: Workspace, changes: list[Change]) -> dict[str, Any]:
    pattern = globs_to_regex(params["globs"])
    rx = re.compile(pattern) if pattern else None
    before, after = {}, {}
    for path in (p for p in _changed(changes) if rx and rx.match(p)):
        old = _text(ws.git.read_file(ws.base, path))
        new = _worktree_text(ws, path)
        if old is not None:
            before[path] = old
        if new is not None:
            after[path] = new
    return {"before": before, "after": after}


def _size_evidence(params: dict[str, Any], ws: Workspace, changes: list[Change]) -> dict[str, Any]:
    files = {}
    for c in changes:
        if c.kind != "deleted" and (text := _worktree_text(ws, c.path)) is not None:
            files[c.path] = text
    base = {}
    for path, blob in _at_base(ws, changes, files).items():
        # A base version that is no text the check reads (binary, over MAX_FILE_BYTES) cannot be compared:
        # the file, which was that at the base, is left out rather than judged as new.
        if (text := _text(read_blob(ws.git, blob, MAX_FILE_BYTES))) is not None:
            base[path] = text
        else:
            del files[path]
    return {"files": files, "base-files": base}


def _change_size_evidence(params: dict[str, Any], ws: Workspace, changes: list[Change]) -> dict[str, Any]:
    return _change_sizes(ws, changes)


def _report_evidence(params: dict[str, Any], ws: Workspace, changes: list[Change]) -> dict[str, Any]:
    return {"report": ws.report or ""}


Gatherer = Callable[[dict[str, Any], Workspace, list[Change]], dict[str, Any]]

# What each verify kind is judged on, gathered from the worktree: one entry per kind, beside its
# evaluator in runtime.verify.kinds (which stays pure: it reads nothing). The command kinds are
# gathered by running them (`command_evidence`).
GATHERERS: dict[str, Gatherer] = {
    "scope-whitelist": _scope_evidence,
    "scope-denylist": _scope_evidence,
    "no-changes": _scope_evidence,
    "dep-stable": _dep_evidence,
    "size-limits": _size_evidence,
    "change-size": _change_size_evidence,
    "report-fields": _report_evidence,
    "severity-grades": _report_evidence,
}
COMMAND_KINDS = ("tests-green", "checks-green")


async def command_evidence(kind: str, params: dict[str, Any], run_command: RunCommand,
                           at_base: RunCommand | None = None) -> dict[str, Any]:
    """The evidence of a command kind: its commands run (in the agent's worktree, or on a merge result).
    With ``at_base`` and the kind's `baseline` parameter, a command that fails is run on the base as well,
    so the evaluator can tell a failure the change made from one the repository already had
    (`runtime.verify.kinds.baseline`)."""
    async def base_of(command: str, code: int) -> dict[str, Any]:
        if code == 0 or at_base is None or not wanted(params):
            return {}
        base_code, base_output = await at_base(command, COMMAND_TIMEOUT_S)
        return {"base": {"exit-code": base_code, "output": base_output}}

    if kind == "tests-green":
        code, output = await run_command(params["command"], COMMAND_TIMEOUT_S)
        return {"exit-code": code, "output": output, **await base_of(params["command"], code)}
    results = []
    for command in params["commands"]:
        code, output = await run_command(command, COMMAND_TIMEOUT_S)
        results.append({"command": command, "exit-code": code, "output": output, **await base_of(command, code)})
    return {"results": results}


def _unreadable(exc: GitError) -> CheckRecord:
    """The work git itself cannot read (attributes it cannot honour, a file it cannot convert): nothing can
    be judged or committed, and git's own words say what to fix."""
    detail = " ".join(exc.stderr.split())[:600] or str(exc)
    return CheckRecord("runtime", "changes", "rejected",
                       f"git cannot read the work in the worktree, so it can be neither checked nor committed: {detail}")


def _changes(ws: Workspace) -> list[Change]:
    if ws.changes is not None:
        return ws.changes
    return changed_paths(ws.git, ws.worktree, ws.base, clear_nested=ws.clear_nested)


async def verify(policy: PolicyDocument, ws: Workspace, *, commands: bool = True) -> list[CheckRecord]:
    """Every verify entry of the policy, judged; structural violations fail the scope check. Without
    ``commands``, the test and check commands are left out (a re-check of imported work runs none)."""
    try:
        changes = await anyio.to_thread.run_sync(_changes, ws)
    except GitError as exc:
        return [_unreadable(exc)]
    records: list[CheckRecord] = []
    structural = _structural(changes, policy.control_files())
    to_run = []
    for entry in policy.verify_entries():
        atom, kind, params = entry.atom, entry.kind, entry.params
        if kind in COMMAND_KINDS:
            if commands:
                to_run.append(entry)
            continue
        gather = GATHERERS.get(kind)
        # No gatherer: None, which evaluate answers with an error (it checks the evidence is a table
        # itself; its annotation in runtime.verify.kinds is narrower than what it accepts).
        evidence = gather(params, ws, changes) if gather is not None else cast("dict[str, Any]", None)
        result = evaluate(kind, params, evidence)
        status, feedback = result.status, result.feedback
        if structural and kind in ("scope-whitelist", "no-changes") and status != "error":
            status, feedback = "rejected", structural + ("" if result.ok else "\n" + feedback)
        records.append(CheckRecord(atom, kind, status, feedback))
    if structural and not any(r.kind in ("scope-whitelist", "no-changes") for r in records):
        records.append(CheckRecord("runtime", "structure", "rejected", structural))
    if not policy.verify_entries(("change-size",)):
        # A role without the atom still gets its defaults: no change is ever unbounded.
        result = evaluate("change-size", DEFAULT_CHANGE_SIZE, _change_sizes(ws, changes))
        records.append(CheckRecord("runtime", "change-size", result.status, result.feedback))
    if to_run:
        before = _fingerprint(ws, changes)
        for entry in to_run:
            evidence = await command_evidence(entry.kind, entry.params, ws.run_command, ws.at_base)
            result = evaluate(entry.kind, entry.params, evidence)
            records.append(CheckRecord(entry.atom, entry.kind, result.status, result.feedback))
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
                "runtime", "checks-unchanged", "rejected",
                "running the checks changed the work they check (" + ", ".join(names[:10]) + "); "
                "tests and checks must not write files that are not ignored",
            ))
    return records
