"""runtime init: a project catalog (`.agent-runtime/`) that extends the shipped one, made from the repository.

It reads the repository's own test, lint, type and format commands from the
files that declare them (``runtime.tooling.project``: read as data, nothing
run), and writes a role `project` extending `edit-local` with rules for those
edit-local refuses (the gate then judges each found command allowed),
`toolchain.toml` with the tools found (a virtualenv, uv, node_modules, go,
cargo, Makefile targets), a README for the project's grammars, and a task
template whose test and check commands are the repository's own. It prints
what it found and from where. Existing files are never overwritten; a file it
cannot read is one line and nothing written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.cli.show import console, line, text
from runtime.errors import UsageError
from runtime.manifests.locate import PROJECT_FOLDER
from runtime.tooling.claude import write_atomic
from runtime.tooling.gitignore import ignored_by_git
from runtime.tooling.project.found import Allowance, Outcome, Skipped
from runtime.tooling.project.readers import scan
from runtime.tooling.project.render import GRAMMARS, ROLE_HEAD, choose, mcp_text, presets, task_text, toolchain_text
from runtime.tooling.project.rules import project_rules
from runtime.tooling.project.translate import translate

if TYPE_CHECKING:
    from runtime.cli.settings import Init
    from runtime.lang.jsontypes import JSONDict

TASK = Path("tasks") / "example.toml"
_ALLOWED = {Allowance.EDIT_LOCAL: "edit-local allows it", Allowance.RULE: "a new rule of the role allows it",
            Allowance.REFUSED: "refused"}


def run(args: Init) -> int:
    repo = Path(args.path or ".").resolve()
    if not repo.is_dir():
        raise UsageError(f"{args.path}: not a folder")
    folder = repo / PROJECT_FOLDER
    paths = {"role": folder / "roles" / "project.toml", "grammars": folder / "programs" / "README",
             "toolchain": folder / "toolchain.toml", "task": folder / TASK}
    existing = [str(p) for p in paths.values() if p.exists() or p.is_symlink()]
    if existing and args.probe and paths["task"].is_file():
        # The catalog is there already (a `[worktree]` declared since, say): probe its task template again.
        notes, again = _probe(repo, paths["task"], args)
        if args.json:
            print(json.dumps({"written": [], "probe": again}, indent=2))
            return 0
        for said in notes:
            console().print(line(("probe: ", "bold"), said), soft_wrap=True)
        return 0
    if existing:
        raise UsageError(f"{existing[0]} exists already; nothing was written (`runtime init --probe` probes its task "
                         "template again)")
    scanned = scan(repo)
    toolchain = toolchain_text(repo)
    found, skipped = translate(scanned, uv="uv" in presets(repo))
    role, outcomes = project_rules(repo, toolchain, ROLE_HEAD, found)
    role += mcp_text(repo)
    choose(repo, outcomes, scanned.npm_scripts)
    task = task_text(repo, outcomes)
    if task is None:
        for outcome in outcomes:
            outcome.in_task = ""
    files = {paths["role"]: role, paths["grammars"]: GRAMMARS, paths["toolchain"]: toolchain}
    if task is not None:
        files[paths["task"]] = task
    for path, content in files.items():
        write_atomic(path, content)
    written = [str(p.relative_to(repo)) for p in files]
    hidden = ignored_by_git(repo, written)
    notes, probed = _probe(repo, paths["task"], args) if args.probe and task is not None else ([], None)
    if args.json:
        print(json.dumps({**_json(scanned.read, outcomes, skipped, written, task is not None),
                          "ignored-by-git": [{"path": p, "by": by} for p, by in hidden],
                          "probe": probed}, indent=2))
        return 0
    _report(repo, scanned.read, outcomes, skipped, written, task is not None)
    for said in notes:
        console().print(line(("probe: ", "bold"), said), soft_wrap=True)
    if args.probe and task is None:
        console().print(line("probe: nothing to run: the template has no test command"))
    from runtime.tooling.project.world import find_world

    world = find_world(repo)
    for rel, where in world.include:
        console().print(line("worktree: ", f"`{rel}` ({where}) is written at install time and ignored by git: "
                             "copied into every worktree and verify's copies ([worktree] include)"), soft_wrap=True)
    for rel, where in world.missing:
        console().print(line(("warning: ", "bold yellow"), f"`{rel}` ({where}) is written at install time, git ignores "
                             "it, and this checkout has none yet: install the project once, then uncomment its "
                             "[worktree] include in toolchain.toml"), soft_wrap=True)
    for command, source, _ in world.setup:
        console().print(line("worktree: ", f"`{command}` ({source}) offered as a [worktree] setup command, commented "
                             "out: it reaches the network and writes into the tree, so you decide"), soft_wrap=True)
    for shown, by in hidden[:1]:
        console().print(line(("warning: ", "bold yellow"), f"git ignores {shown} ({by}), so the catalog is not shared "
                             f"with the repository: add `!{PROJECT_FOLDER}/` to the .gitignore, after that line"))
    return 0



def _json(read: list[str], outcomes: list[Outcome], skipped: list[Skipped], written: list[str],
          has_task: bool) -> JSONDict:
    return {
        "read": read,
        "commands": [{
            "command": o.found.command, "kind": o.found.kind, "from": str(o.found.origin), "what": o.found.origin.what,
            "written": o.found.written, "allowed": o.status, "reason": o.reason or None,
            "task": o.in_task or None, "rule": o.rule, "dropped": list(o.found.dropped),
        } for o in outcomes],
        "left-out": [{"written": s.written, "from": str(s.origin), "why": s.why} for s in skipped],
        "written": written,
        "task": str(Path(PROJECT_FOLDER) / TASK) if has_task else None,
    }


def _task_column(o: Outcome) -> str:
    if o.in_task == "test":
        return "test command"
    if o.in_task == "check":
        return "check"
    return o.reason if o.status != Allowance.REFUSED and o.reason else ""


def _report(repo: Path, read: list[str], outcomes: list[Outcome], skipped: list[Skipped], written: list[str],
            has_task: bool) -> None:
    out = console()
    out.print(line("read: ", ", ".join(read) if read else "nothing that declares commands"))
    if sys.stdout.isatty():
        from rich.table import Table

        table = Table(title="The repository's own commands")
        for col in ("kind", "command", "from", "allowed", "task"):
            table.add_column(col, overflow="fold")
        for o in outcomes:
            allowed = _ALLOWED[o.status] + (f": {o.reason}" if o.status == Allowance.REFUSED else "")
            style = "red" if o.status == Allowance.REFUSED else "green" if o.in_task else ""
            source = o.found.origin.describe() + (f"\nwritten `{o.found.written}`" if o.found.written != o.found.command else "")
            task = _task_column(o) if o.in_task or not _task_column(o) else f"left out: {_task_column(o)}"
            table.add_row(line(o.found.kind), line((o.found.command, style)), text(source, multiline=True), line(allowed),
                          line(task))
        out.print(table)
    else:
        for o in outcomes:
            parts = [f"{o.found.kind:<6}  {o.found.command}  from {o.found.origin.describe()}"]
            if o.found.written != o.found.command:
                parts.append(f"written `{o.found.written}`")
            parts.append(_ALLOWED[o.status] + (f": {o.reason}" if o.status == Allowance.REFUSED else ""))
            if o.in_task:
                parts.append(f"task: {_task_column(o)}")
            elif _task_column(o):
                parts.append(f"not in the task: {_task_column(o)}")
            out.print(line("; ".join(parts)), soft_wrap=True)
    for o in outcomes:
        if o.found.dropped:
            dropped = ", ".join(f"`{d}`" for d in o.found.dropped)
            out.print(line("translated: ", f"`{o.found.written}` from {o.found.origin} runs as `{o.found.command}`: "
                           f"dropped {dropped}, a report file verify never reads (it writes its own)"), soft_wrap=True)
    for s in skipped:
        out.print(line("left out: ", f"`{s.written}` from {s.origin.describe()}: {s.why}"), soft_wrap=True)
    if not outcomes:
        out.print(line("no test, lint, type or format command found"))
    for path in written:
        out.print(line("wrote ", path))
    if not has_task:
        out.print(line("no task template: no test command found that the role allows and this machine has installed"))
    where = str(repo)
    out.print(line(f"next: `runtime lint{' ' + str(Path(PROJECT_FOLDER) / TASK) if has_task else ''}` and "
                   f"`runtime explain --role project 'COMMAND'` from {where}"))


def _probe(repo: Path, task: Path, args: Init) -> tuple[list[str], JSONDict]:
    """Run the template's commands at HEAD (`runtime.tooling.project.probe`) and write what they showed: what
    to say of it, and its JSON (which holds that too)."""
    from runtime.tooling.project.probe import apply, probe

    found = probe(repo, task, sandboxed=not args.no_os_sandbox)
    said = [*found.notes, *apply(task, found)]
    if found.worktree_lines:
        said.append("the [worktree] lines:\n" + found.worktree_lines.rstrip("\n"))
    return said, {"passed": found.passed, "baseline": found.baseline, "failing-checks": list(found.failing_checks),
                  "with-checkout": found.with_checkout, "lacking": list(found.lacking),
                  "worktree-lines": found.worktree_lines, "said": said}
