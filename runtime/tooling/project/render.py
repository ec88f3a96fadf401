"""The files `runtime init` writes: the project role, toolchain.toml, the grammars folder's README and a
task template whose test and check commands are the repository's own."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from runtime.tooling.project.available import missing
from runtime.tooling.project.found import KINDS, Allowance, Outcome
from runtime.tooling.project.read_other import make_targets
from runtime.tooling.project.scan import read_text
from runtime.verify.kinds.runners.plan import plan_tests

ROLE_HEAD = '''# A role of this project. It extends the shipped `edit-local` (see `runtime roles`): everything
# edit-local allows and enforces, plus what you add here. Files in .agent-runtime/ add to the shipped
# catalog; a role, atom or grammar with a shipped one's name replaces it.
# `runtime init` wrote the shell rules below (if any) for this repository's own test, lint, type and
# format commands that edit-local refuses; `runtime explain --role project 'COMMAND'` shows the gate's answer.

[role]
name = "project"
display-name = "code implementer for this repository"
description = "The shipped edit-local role, with this repository's own tools allowed as declared below."
use-cases = ["Implement a change in this repository with its own toolchain"]

[capabilities]
extends = "edit-local"

# Shell rules add to edit-local's, program by program (a rule for the same program replaces it).
# Each names a grammar (programs/<name>.program.toml, here or shipped) or declares one inline. For example:
#
# [[params."tools::bash-allowlist".rules]]
# program = "tox"
# subcommands = ["-e py311"]
# positionals = []
#
# The repository's own venv, uv, node_modules and make targets are declared in toolchain.toml.
'''

TOOLCHAIN_HEAD = '''# The repository's own tools, which git does not track and so no worktree has. Declared here,
# they are bound read-only into every agent's sandbox (and into its checks), their bin folders
# first on PATH; agents call them by name or by path (`.venv/bin/pytest`). What runs is the
# repository's own code (conftest.py, npm scripts, the Makefile): the sandbox contains it.
# Presets: python (.venv), uv (.venv, run through `uv run --no-sync`), node (node_modules),
# go (the host's go and module cache), rust (the host's cargo and rustup homes).
# Written by `runtime init` from what it found; `runtime lint` checks it.

[toolchain]
'''

GRAMMARS = '''Program grammars of this project: one <name>.program.toml per program, as in the shipped
programs/ folder (`runtime lint` checks them and runs their examples). Never <name>.toml: the program
itself would read that as its configuration (ruff reads every ruff.toml below where it runs). See the
README, "programs/<name>.program.toml".
'''


def mcp_text(repo: Path) -> str:
    """The project role's rules for the MCP servers the repository configures (`.mcp.json`), each call asked of
    a person: never allowed by default."""
    from runtime.gate.claude_setup import project_servers
    from runtime.manifests.params import MCP_NAME

    servers = [name for name in project_servers(str(repo)) if MCP_NAME.fullmatch(name) and "__" not in name]
    if not servers:
        return ""
    lines = ["", "# The MCP servers this repository configures (.mcp.json): every call of an agent of this role is",
             "# asked of a person (`ask = true`). Narrow `tools`, name the fields that carry paths (`reads`, `writes`)",
             "# or URLs (`urls`), or drop `ask` for what you trust."]
    for server in servers:
        lines += ["", '[[params."tools::mcp-allowlist".servers]]', f"server = {json.dumps(server)}", 'tools = ["*"]',
                  "ask = true"]
    return "\n".join(lines) + "\n"


def presets(repo: Path) -> list[str]:
    """The toolchain presets ``repo`` has: a virtualenv (run through uv when uv.lock is there), node_modules,
    a go module, a cargo package."""
    found = []
    if (repo / ".venv" / "pyvenv.cfg").is_file():
        found.append("uv" if (repo / "uv.lock").is_file() else "python")
    if (repo / "node_modules").is_dir():
        found.append("node")
    if (repo / "go.mod").is_file():
        found.append("go")
    if (repo / "Cargo.toml").is_file():
        found.append("rust")
    return found


def toolchain_text(repo: Path) -> str:
    """toolchain.toml for what ``repo`` has: presets found, make targets offered (commented out)."""
    names = presets(repo)
    lines = [f"presets = [{', '.join(json.dumps(p) for p in names)}]"]
    if not names:
        lines = ["# presets = [\"python\"]  # nothing found: no .venv, node_modules, go.mod or Cargo.toml",
                 "presets = []"]
    targets = make_targets(read_text(repo, "Makefile") or "")
    if targets:
        shown = ", ".join(f'"{t}"' for t in targets)
        lines.append(f"# `make TARGET` for every role with shell rules, once you uncomment it:\n# make-targets = [{shown}]")
    from runtime.tooling.project.world import find_world, worktree_text

    return TOOLCHAIN_HEAD + "\n".join(lines) + "\n" + worktree_text(find_world(repo))


def choose(repo: Path, outcomes: list[Outcome], npm_scripts: Mapping[str, str] | None = None) -> None:
    """Mark the commands a task template runs: the first test command that is allowed and installed, and a
    check for each other tool (its lint, type and format checks, another ecosystem's tests), one per family."""
    families: set[str] = set()
    test = None
    run_by: set[str] = set()  # the package.json scripts the chosen test command runs
    # A command the repository writes out (tox, the Makefile, CI) before one a tool's configuration section
    # only implies: more-itertools' Makefile runs `flake8 --exclude .venv,venv,docs/conf.py .`, while its
    # setup.cfg's [flake8] implies a bare `flake8`, which lints the virtualenv beside the sources.
    ranked = sorted(outcomes, key=lambda o: o.found.origin.what.startswith("["))
    for kind in KINDS:  # tests first
        for outcome in ranked:
            f = outcome.found
            if f.kind != kind or outcome.status == Allowance.REFUSED or f.family in families:
                continue
            if not f.check:
                outcome.reason = "it rewrites files, so it is no check"
                continue
            why = missing(repo, f.command)
            if why is not None:
                outcome.reason = why
                continue
            families.add(f.family)
            if test is None and kind == "test":
                test, outcome.in_task = outcome, "test"
                run_by = _scripts_run_by(npm_scripts or {}, f.command)
            elif test is not None and (script := _script_named(f.command)) in run_by:
                # Every verify runs the test command and then each check: a check the test script already
                # runs doubles its cost for nothing (a lint script that `npm test` runs first). Even as the
                # only check: quality::check-green passes an empty list, and proxy-addr's `npm test` would
                # otherwise run its seven seconds of tsd twice in every verify and in every agent's own run.
                outcome.reason = f"`{test.found.command}` already runs the script `{script}`"
                outcome.doubled = True
            else:
                outcome.in_task = "check"


# npm's and its kin's ways of running a package.json script, as words before the script's name.
_SCRIPT_RUNNERS = (("npm", "run"), ("npm", "run-script"), ("yarn", "run"), ("pnpm", "run"), ("bun", "run"),
                   ("yarn",), ("pnpm",))
# What `npm test` and its kin run without `run`.
_SHORT_SCRIPTS = {"test", "start", "stop", "restart"}


def _script_named(command: str) -> str:
    """The package.json script ``command`` runs (`npm run lint` -> lint, `npm test` -> test), else ""."""
    words = command.split()
    if len(words) == 2 and words[0] in ("npm", "yarn", "pnpm", "bun") and words[1] in _SHORT_SCRIPTS:
        return words[1]
    for runner in _SCRIPT_RUNNERS:
        if tuple(words[:len(runner)]) == runner and len(words) == len(runner) + 1:
            return words[-1]
    return ""


def _scripts_run_by(scripts: Mapping[str, str], command: str) -> set[str]:
    """The package.json scripts ``command`` runs, itself and every one its text runs in turn by name
    (`npm run test:unit && npm run test:typescript`); empty when it runs no script."""
    seen: set[str] = set()
    todo = [_script_named(command)]
    while todo:
        name = todo.pop()
        body = scripts.get(name)
        if not name or name in seen or body is None:
            continue
        seen.add(name)
        todo += [_script_named(part.strip()) for part in re.split(r"&&|\|\||;", body)]
    return seen


def _scope(repo: Path) -> list[str]:
    """Folders an agent of this repository would plausibly write: sources and tests."""
    names = ["src", "lib", "tests", "test", "__tests__", "spec"]
    found = [f"{n}/**" for n in names if (repo / n).is_dir()]
    packages = sorted(p.name for p in repo.iterdir() if p.is_dir() and not p.name.startswith(".")
                      and (p / "__init__.py").is_file() and f"{p.name}/**" not in found)
    found += [f"{p}/**" for p in packages]
    if (repo / "go.mod").is_file():
        found.append("**/*.go")
    return found or ["src/**"]


def task_text(repo: Path, outcomes: list[Outcome]) -> str | None:
    """The task template, or None when no test command is allowed and installed."""
    test = next((o for o in outcomes if o.in_task == "test"), None)
    if test is None:
        return None
    checks = [o for o in outcomes if o.in_task == "check"]
    lines = [
        "# A task template written by `runtime init`: its test and check commands are this repository's own,",
        "# each one the role allows. Copy it, give the goal, the write scope and the body, then",
        "# `runtime lint COPY` and `runtime spawn COPY`.",
        "",
        "[task]",
        'role = "project"',
        'goal = "Say in one line what the change is."',
        "",
        "[scope]",
        f"files-whitelist = {json.dumps(_scope(repo))}  # what the agent may write",
        "test-edits = []  # add tests, do not change existing ones: the base's test files this task may change",
        "",
        "[verification]",
        f"test-command = {json.dumps(test.found.command)}  # {test.found.origin.describe()}",
    ]
    package = repo / "package.json"
    plan = plan_tests(test.found.command, package.read_text(encoding="utf-8", errors="replace")
                      if package.is_file() else None)
    if plan.opaque:
        lines.append(f'test-results = "exit-code"  # {plan.opaque}: judged by its exit code alone')
    if checks:
        lines.append("check-commands = [")
        lines += [f"    {json.dumps(o.found.command)},  # {o.found.origin.describe()}" for o in checks]
        lines.append("]")
    else:
        # quality::check-green takes its commands from the task: without the key the template fails lint.
        doubled = [o for o in outcomes if o.doubled]
        why = (f"`{test.found.command}` runs {', '.join(f'`{o.found.command}`' for o in doubled)} already"
               if doubled else "none found: the repository's lint or type checks go here")
        lines.append(f"check-commands = []  # {why}")
    lines += [
        "# baseline = true  # where the tests or checks fail at the base already: judge what the change adds",
        "# hidden-tests = \"/srv/oracle/TASK\"  # tests the agent never sees (a folder outside the repository, or a "
        "revision), laid over the tree for verify alone",
        "",
        "[agent]",
        'backend = "claude-code"  # or "builtin" with model = "PROVIDER/MODEL"',
        "",
        "[body]",
        'text = """',
        "What is wrong or missing, where, and how the tests should show it is done.",
        '"""',
    ]
    return "\n".join(lines) + "\n"
