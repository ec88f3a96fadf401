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
from runtime.workspace.git import Git


@dataclass(frozen=True)
class Probe:
    passed: int | None  # the tests that pass at the base (None: not counted per test)
    failing_tests: bool
    failing_checks: tuple[str, ...]
    notes: tuple[str, ...]  # what was seen, a line each

    @property
    def baseline(self) -> bool:
        return self.failing_tests or bool(self.failing_checks)


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
    with tempfile.TemporaryDirectory(prefix="probe-", dir=folder) as tmp:
        with git.checkout_tree(head, Path(tmp) / "base") as tree:
            task = load_task(catalog, task_path)
            checks = verify_tree(catalog, task, tree, head, None, sandboxed=sandboxed, repo=git.root)
    passed, failing_tests, failing, notes = None, False, [], []
    for c in checks:
        if c.kind == "tests-green":
            failing_tests = c.status != "passed"
            if c.tests is not None and c.tests.mode == "per-test":
                passed = c.tests.passed
                ran = max(c.tests.base_tests, passed)
                notes.append(f"the tests at {head[:12]}: {passed} of {ran} pass"
                             + ("" if not failing_tests else "; the others fail there already"))
            else:
                notes.append(f"the tests at {head[:12]}: {'pass' if not failing_tests else 'fail'}")
        elif c.kind == "checks-green" and c.status != "passed":
            failing += [w for w in re.findall(r"`([^`]+)` exited with code", c.feedback)] or [c.feedback[:200]]
            notes.append(f"the checks at {head[:12]}: {', '.join(f'`{f}`' for f in failing)} "
                         f"{'fails' if len(failing) == 1 else 'fail'} there already")
    return Probe(passed, failing_tests, tuple(failing), tuple(notes))


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
