"""`runtime init --probe`: the task template's test and check commands run once, at the base, as verify runs
them, so the template says what the base already does: `test-count-min` to the tests that pass there, and
`baseline = true` where a test or check already fails (verify then lets through what failed at the base,
and nothing new).

It runs in a detached worktree of HEAD (the working folder's own changes are not the base) in the
repository's state folder, in the OS sandbox where there is one, and leaves nothing behind but the
template's two lines.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import PROJECT_FOLDER
from runtime.manifests.task import load_task
from runtime.spawn.state import default_state_dir
from runtime.verify.kinds.result import CheckStatus
from runtime.workspace.git import Git


@dataclass(frozen=True)
class Probe:
    passed: int | None  # the tests that pass at the base (None: not counted per test)
    failing_tests: bool
    failing_checks: tuple[str, ...]
    notes: tuple[str, ...]  # what was seen, a line each
    # The tests that pass when the worktree also has the files the checkout has and git ignores (None: not
    # compared), and those files: what a worktree lacks where it passes fewer.
    with_checkout: int | None = None
    lacking: tuple[str, ...] = ()

    @property
    def baseline(self) -> bool:
        return self.failing_tests or bool(self.failing_checks)

    @property
    def worktree_lines(self) -> str:
        """The `[worktree]` lines that give every worktree what it lacks, or nothing."""
        if not self.lacking:
            return ""
        import json

        return ("[worktree]\ninclude = [" + ", ".join(json.dumps(p) for p in self.lacking) + "]"
                "  # or a `setup` command that makes them\n")


# Files git ignores that a fresh worktree is not meant to have, whatever the tests do: caches, build output,
# editor files. Named by a path component.
_NOT_WORLD = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".hypothesis",
                        "htmlcov", ".eggs", ".cache", ".idea", ".vscode", ".DS_Store", "build", "dist", ".git",
                        ".agent-runtime", ".claude", "node_modules", "target", ".venv", "venv", ".direnv"})
_WORLD_MAX_FILES = 2000
_WORLD_MAX_BYTES = 256 << 20


def checkout_world(git: Git, toolchain_folders: tuple[str, ...]) -> list[str] | str:
    """What the checkout has that git ignores and a fresh worktree lacks, less caches, build output and the
    toolchain's folders (every sandbox shows those already): the paths (a folder git ignores whole, once), or
    why they are not compared (too many, too large)."""
    import os

    listed = git.text("ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z")
    out, files, size = [], 0, 0
    for entry in (e for e in listed.split("\0") if e):
        rel = entry.rstrip("/")
        parts = rel.split("/")
        if any(p in _NOT_WORLD or p.endswith(".egg-info") for p in parts) or rel.endswith((".pyc", ".pyo")) \
                or parts[-1].startswith(".coverage") or any(rel == f or rel.startswith(f + "/") for f in toolchain_folders):
            continue
        path = git.root / rel
        if path.is_dir() and not path.is_symlink():
            found = [os.path.join(folder, name) for folder, _, names in os.walk(path) for name in names]
        else:
            found = [str(path)]
        for one in found:
            files += 1
            try:
                size += os.lstat(one).st_size
            except OSError:
                pass
        if files > _WORLD_MAX_FILES or size > _WORLD_MAX_BYTES:
            return f"the checkout has more than {_WORLD_MAX_FILES} files or {_WORLD_MAX_BYTES >> 20} MB git ignores"
        out.append(rel)
    return out


def probe(repo: Path, task_path: Path, *, sandboxed: bool) -> Probe:
    from runtime.sandbox.bwrap import bwrap_path
    from runtime.verify.tree import verify_tree

    git = Git(repo)
    head = git.resolve("HEAD")
    catalog = Catalog(repo / PROJECT_FOLDER)
    sandboxed = sandboxed and bwrap_path() is not None
    # In the state folder, as a spawn's worktrees are: the sandbox hides the host's /tmp behind its own.
    folder = default_state_dir(git.root)
    folder.mkdir(parents=True, exist_ok=True)
    toolchain_folders = catalog.toolchain.folders if catalog.toolchain else ()
    # What `[worktree] include` declares is in every worktree: laid here as a spawn lays it (copied from the
    # checkout). Its `setup` commands run with a spawn, in the sandbox with their egress: not here.
    included = catalog.toolchain.worktree.include if catalog.toolchain else ()
    world = checkout_world(git, toolchain_folders)
    if isinstance(world, list):
        world = [rel for rel in world if not any(rel == i or rel.startswith(i.rstrip("/") + "/") for i in included)]
    with tempfile.TemporaryDirectory(prefix="probe-", dir=folder) as tmp:
        with git.checkout_tree(head, Path(tmp) / "base") as tree:
            for rel in included:
                _copy(git.root / rel, tree / rel)
            task = load_task(catalog, task_path)
            checks = verify_tree(catalog, task, tree, head, None, sandboxed=sandboxed, repo=git.root)
        with_world = None
        if isinstance(world, list) and world and _per_test(checks) is not None:
            # The same commands over a worktree that also has what the checkout has and git ignores: where it
            # passes more, the tests need those files, and a worktree (every agent's) lacks them.
            with git.checkout_tree(head, Path(tmp) / "with-checkout") as tree:
                for rel in (*included, *world):
                    _copy(git.root / rel, tree / rel)
                with_world = _per_test(verify_tree(catalog, task, tree, head, None, sandboxed=sandboxed,
                                                   repo=git.root))
    passed, failing_tests, failing, notes = None, False, [], []
    for c in checks:
        if c.kind == "tests-green":
            failing_tests = c.status != CheckStatus.PASSED
            if c.tests is not None and c.tests.mode == "per-test":
                passed = c.tests.passed
                ran = max(c.tests.base_tests, passed)
                notes.append(f"the tests at {head[:12]}: {passed} of {ran} pass"
                             + ("" if not failing_tests else "; the others fail there already"))
            else:
                notes.append(f"the tests at {head[:12]}: {'pass' if not failing_tests else 'fail'}")
        elif c.kind == "checks-green" and c.status != CheckStatus.PASSED:
            failing += [w for w in re.findall(r"`([^`]+)` exited with code", c.feedback)] or [c.feedback[:200]]
            notes.append(f"the checks at {head[:12]}: {', '.join(f'`{f}`' for f in failing)} "
                         f"{'fails' if len(failing) == 1 else 'fail'} there already")
    lacking: tuple[str, ...] = ()
    if isinstance(world, str):
        notes.append(f"the tests were not compared with your checkout's world: {world}")
    elif passed is not None and with_world is not None and with_world > passed:
        lacking = tuple(world)
        shown = ", ".join(f"`{p}`" for p in world[:8]) + (f" and {len(world) - 8} more" if len(world) > 8 else "")
        notes.append(f"a fresh worktree passes {with_world - passed} test(s) fewer than one with the files your checkout "
                     f"has and git ignores ({with_world} with them): those tests need {shown}, which no agent's "
                     "worktree has; give every worktree them with the `[worktree]` lines below (toolchain.toml), then "
                     f"`runtime init --probe` again sets test-count-min to {with_world}")
    return Probe(passed, failing_tests, tuple(failing), tuple(notes), with_world, lacking)


def _per_test(checks: list) -> int | None:  # type: ignore[type-arg]
    """The tests that passed, counted per test, or None."""
    for c in checks:
        if c.kind == "tests-green" and c.tests is not None and c.tests.mode == "per-test":
            passed: int = c.tests.passed
            return passed
    return None


def _copy(source: Path, target: Path) -> None:
    """A file or folder of the checkout into the worktree, copied (never linked), symlinks as symlinks."""
    import shutil

    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    elif source.is_symlink():
        target.symlink_to(source.readlink())
    elif source.is_file():
        shutil.copy2(source, target)


def apply(task_path: Path, found: Probe) -> list[str]:
    """Write what the probe saw into the task template; the lines it changed, said as a person reads them."""
    doc = tomlkit.parse(task_path.read_text(encoding="utf-8"))
    section = doc.setdefault("verification", tomlkit.table())
    said = []
    if found.passed:
        section["test-count-min"] = found.passed
        section["test-count-min"].comment("the tests that pass at the base (runtime init --probe)")
        said.append(f"test-count-min = {found.passed}: the tests that pass at the base")
    if found.baseline:
        flag = tomlkit.item(True)
        flag.comment("a test or check already fails at the base (runtime init --probe)")
        section["baseline"] = flag
        said.append("baseline = true: " + ("tests" if found.failing_tests else "checks") + " already fail at the base; "
                    "verify lets those through, and nothing new")
    task_path.write_text(tomlkit.dumps(doc), encoding="utf-8")
    return said
