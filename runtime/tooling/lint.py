"""lint: every atom, role, task and plan manifest checked, every atom example run, and every task's test
and check commands asked of the gate: each must be one its role lets the agent run (strict mode).

A `.toml` file under the linted paths is a plan when it has a top-level
`plan` table, a scripted-model script when it has `turn` and no `task`, and a
task manifest otherwise.
"""

from __future__ import annotations

import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import ManifestError, ManifestErrors
from runtime.manifests.catalog import Catalog, display_path
from runtime.manifests.compose import param_values
from runtime.manifests.role import load_role
from runtime.manifests.task import Task, load_task
from runtime.models.scripted import load_script
from runtime.orchestration.plans.load import load_plan
from runtime.policy.compile import check_role_coherent, compile_policy
from runtime.tooling.commands_allowed import repository_root, task_command_errors
from runtime.tooling.examples import run_examples, run_program_examples

MAX_TEXT_WORDS = 200


@dataclass
class LintReport:
    errors: list[ManifestError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    atoms: int = 0
    programs: int = 0
    examples: int = 0
    roles: int = 0
    tasks: int = 0
    plans: int = 0


def task_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files += sorted(path.rglob("*.toml")) if path.is_dir() else [path]
    return files


def lint(catalog: Catalog, paths: list[Path]) -> LintReport:
    report = LintReport()
    atoms, _ = catalog.load_entries(collect=report.errors)
    report.atoms = len(atoms)
    with tempfile.TemporaryDirectory(prefix="runtime-lint-") as root:
        for atom in atoms.values():
            words = len(atom.text.split())
            if words > MAX_TEXT_WORDS:
                report.warnings.append(f"{display_path(atom.text_path)}:1: text.md has {words} words (keep it under {MAX_TEXT_WORDS})")
            report.examples += len(atom.examples)
            report.errors += run_examples(atom, str(Path(root).resolve()))
        programs = catalog.load_programs(collect=report.errors)
        report.programs = len(programs)
        for grammar in programs.values():
            report.examples += len(grammar.examples)
            report.errors += run_program_examples(grammar, str(Path(root).resolve()))
    try:
        catalog.toolchain  # noqa: B018 - loading checks it
    except ManifestError as exc:
        report.errors.append(exc)
    if report.errors:
        return report  # roles and tasks would only repeat broken atoms
    loaded = []
    for name in catalog.role_names():
        report.roles += 1
        try:
            loaded.append(load_role(catalog, name))
        except ManifestError as exc:
            report.errors.append(exc)
    failed: dict[str, str] = {}  # role -> the message of its error
    for role in sorted(loaded, key=lambda r: len(r.chain)):  # parents first
        try:
            check_role_coherent(role, param_values(role, None))
        except ManifestError as exc:
            failed[role.name] = exc.message
            # A child inherits its parent's rules, and so its parent's mistake: report it once, at the parent.
            if not any(failed.get(parent) == exc.message for parent in role.chain[:-1]):
                report.errors.append(exc)
    _dedupe(report)  # a broken parent role fails every child the same way
    repeats = set(failed.values())  # a task under a broken role fails with the role's error, already reported
    repo = repository_root(catalog)

    def commands(task: Task) -> None:
        errors, warnings = task_command_errors(task, catalog, repo)
        report.errors += errors
        report.warnings += warnings

    seen: dict[str, str] = {}
    for path in task_files(paths):
        kind = _kind(path)
        if kind == "plan":
            report.plans += 1
            try:
                plan = load_plan(catalog, path)  # every subtask's task loads and compiles, and the plan holds together
            except ManifestErrors as exc:
                report.errors += [e for e in exc.errors if e.message not in repeats]
                continue
            for subtask in plan.subtasks:
                if subtask.inline:  # a subtask in a file of its own is linted as that file
                    commands(subtask.task)
            continue
        if kind == "script":
            try:
                load_script(path)  # scripted-model playback files live beside their tasks
            except ManifestError as exc:
                report.errors.append(exc)
            continue
        report.tasks += 1
        try:
            task = load_task(catalog, path)
            compile_policy(task.role, task, catalog.root, catalog)
            commands(task)
        except ManifestError as exc:
            if exc.message not in repeats:
                report.errors.append(exc)
            continue
        where = display_path(path)
        if task.agent_id in seen:
            report.errors.append(task.src.error(("task", "agent-id"), f"agent id `{task.agent_id}` is also used by {seen[task.agent_id]}"))
        seen.setdefault(task.agent_id, where)
    _dedupe(report)
    return report


def _kind(path: Path) -> str:
    """`plan`, `script` (a scripted model's playback file) or `task`."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "task"  # load_task reports the problem with its line
    if "plan" in data:
        return "plan"
    return "script" if "turn" in data and "task" not in data else "task"


def _dedupe(report: LintReport) -> None:
    unique: dict[str, ManifestError] = {}
    for err in report.errors:
        unique.setdefault(str(err), err)
    report.errors = list(unique.values())
