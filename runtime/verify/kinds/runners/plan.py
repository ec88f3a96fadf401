"""A test plan: the task's test command read into the steps the orchestrator starts itself.

Each step is a simple command; a step whose program is a known runner (``runtime.verify.kinds.runners.registry``)
is started with the options that make it write its structured report, the others run as written and are
judged by their exit code. `npm test`, `npm run NAME`, `yarn NAME` and `pnpm NAME` are read through the
base's package.json (never the work's: a script is configuration, and the work does not configure what
judges it), with npm's pre- and post-scripts and `node_modules/.bin` first on PATH, as npm runs them.

A command the orchestrator cannot read exactly is opaque: the plan then holds it as one plain step and
says why, and per-test judgement is impossible for it (`runtime.verify.kinds.tests_green`).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from runtime.verify.kinds.runners.base import ReportPaths, program
from runtime.verify.kinds.runners.registry import BY_NAME, RUNNERS
from runtime.verify.kinds.runners.words import Opaque, Simple, Word, split

MAX_SCRIPT_DEPTH = 8
_NPM_TEST = {("test",), ("t",), ("tst",), ("run", "test"), ("run-script", "test")}


@dataclass(frozen=True)
class Step:
    """One step: a simple command, the runner it starts at ``at`` (None: judged by its exit code) and the
    folders (relative to the tree) put first on its PATH."""

    command: Simple
    runner: str | None = None
    at: int = 0
    path: tuple[str, ...] = ()

    def render(self, root: str, paths: ReportPaths | None) -> str:
        """The bash command the orchestrator runs for this step in the tree at ``root``; a runner's step
        writes its report where ``paths`` say."""
        command = self.command
        if self.runner is not None:
            assert paths is not None
            command = BY_NAME[self.runner].instrument(command, self.at, paths)
        if self.path:
            folders = ":".join(posixpath.join(root, p) for p in self.path)
            command = Simple((Word(f"PATH={folders}", f"PATH={Word.added(folders).source}${{PATH:+:$PATH}}"),
                              *command.assignments), command.words)
        return command.render()

    def describe(self) -> str:
        return self.command.render() + (f"  [{self.runner}]" if self.runner else "")


@dataclass(frozen=True)
class TestPlan:
    """The task's ``command``, its ``steps``, where they come from, and, for a command that cannot be read
    exactly, why (``opaque``; its one step is then the command as written)."""

    __test__ = False
    command: str
    steps: tuple[Step, ...]
    source: str
    opaque: str = ""

    @property
    def runners(self) -> list[str]:
        return [s.runner for s in self.steps if s.runner is not None]

    def key(self) -> str:
        """What identifies the plan's steps, for the cache of the base's run."""
        return json.dumps([[s.command.render(), s.runner, s.at, list(s.path)] for s in self.steps])


def plan_tests(command: str, package_json: str | None = None) -> TestPlan:
    """The plan of ``command``; ``package_json``: the base's package.json at the tree's root, if any."""
    try:
        simple = split(command)
    except Opaque as exc:
        return _opaque(command, f"`{command}` cannot be read exactly: {exc}")
    scripts = _scripts(package_json)
    steps: list[Step] = []
    sources: list[str] = []
    try:
        for one in simple:
            steps += _expand(one, scripts, sources, 0)
    except Opaque as exc:
        return _opaque(command, str(exc))
    source = "the task's test command" + (f", through the base's package.json ({', '.join(sources)})" if sources else "")
    if not any(s.runner for s in steps):
        return TestPlan(command, tuple(steps), source, opaque=f"no test runner the runtime can read was found in "
                        f"`{command}`" + (f" ({', '.join(sources)})" if sources else ""))
    return TestPlan(command, tuple(steps), source)


def _opaque(command: str, why: str) -> TestPlan:
    return TestPlan(command, (Step(Simple((), (Word(command, command),))),), "the task's test command", opaque=why)


def _scripts(package_json: str | None) -> dict[str, str]:
    if package_json is None:
        return {}
    try:
        data = json.loads(package_json)
    except ValueError:
        return {}
    scripts = data.get("scripts") if isinstance(data, dict) else None
    return {k: v for k, v in scripts.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(scripts, dict) else {}


def _script_name(argv: Sequence[str]) -> tuple[str, list[str], bool] | None:
    """(script, extra arguments, npm's pre/post scripts run) of `npm test`, `npm run X -- ARGS`, `yarn X`,
    `pnpm X`; None for any other command."""
    if not argv or program(argv[0]) not in ("npm", "yarn", "pnpm"):
        return None
    manager, rest = program(argv[0]), list(argv[1:])
    extra: list[str] = []
    if "--" in rest:
        at = rest.index("--")
        rest, extra = rest[:at], rest[at + 1:]
    words = [w for w in rest if not w.startswith("-")]
    if manager == "npm":
        if tuple(words[:1]) in _NPM_TEST or tuple(words[:2]) in _NPM_TEST:
            return "test", extra, True
        if len(words) == 2 and words[0] in ("run", "run-script"):
            return words[1], extra, True
        return None
    if words[:1] == ["run"] and len(words) == 2:
        return words[1], extra, False
    if len(words) == 1 and words[0] not in ("install", "add", "remove", "exec", "dlx", "x"):
        return words[0], extra, False
    return None


def _expand(command: Simple, scripts: dict[str, str], sources: list[str], depth: int) -> list[Step]:
    named = _script_name(command.argv)
    if named is None:
        return [_step(command, ())]
    name, extra, pre_post = named
    if depth >= MAX_SCRIPT_DEPTH:
        raise Opaque(f"the package scripts call each other more than {MAX_SCRIPT_DEPTH} deep")
    if name not in scripts:
        raise Opaque(f"`{command.render()}` runs the script `{name}`, which the base's package.json does not define")
    sources.append(f"`{name}`: `{scripts[name]}`")
    names = [n for n in ((f"pre{name}",) if pre_post else ()) if n in scripts] + [name] + \
            [n for n in ((f"post{name}",) if pre_post else ()) if n in scripts]
    steps: list[Step] = []
    for script in names:
        try:
            parts = split(scripts[script])
        except Opaque as exc:
            raise Opaque(f"the base's package.json script `{script}` (`{scripts[script]}`) cannot be read exactly: "
                         f"{exc}") from None
        if script == name and extra:
            last = parts[-1]
            parts[-1] = last.with_words([*last.words, *(Word.added(w) for w in extra)])
        for part in parts:
            for step in _expand(part, scripts, sources, depth + 1):
                steps.append(step if step.path else _step(step.command, ("node_modules/.bin",)))
    return steps


def _step(command: Simple, path: tuple[str, ...]) -> Step:
    argv = command.argv
    for runner in RUNNERS:
        at = runner.locate(argv)
        if at is not None:
            return Step(command, runner.name, at, path)
    return Step(command, None, 0, path)
