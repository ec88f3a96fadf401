"""runtime hook install: merge the PreToolUse hook and Claude Code's sandbox settings into .claude/settings.json.

The sandbox block is the role's (`runtime.tooling.claude_sandbox`, which also says why the hook keeps
judging Bash in strict mode beside it).

The hook carries `onFailure: block`, which Claude Code honours from 2.1.295 on: the CLI a session
would start (RUNTIME_CLAUDE_BIN, else `claude` on PATH: where the claude-code backend looks first)
is asked its version, and an older one is refused. When no CLI
is found the hook is still installed, with a note: the settings file is often written for a
repository (and committed for every clone) before the CLI is installed, the check could only ever
see this machine's CLI, and an older CLI ignores the key but still runs the hook, so the file is
never weaker than one without it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import UsageError
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.manifests.role import load_role
from runtime.spawn.backends.claude_code.cli import FAIL_CLOSED_SINCE, locate_claude, require_fail_closed
from runtime.tooling.claude import (
    SESSION_ROLE,
    has_hook,
    hook_command,
    merge_hook,
    needs_task_scope,
    read_settings,
    write_atomic,
)
from runtime.tooling.claude_sandbox import merge_sandbox, role_sandbox, strict_reason, unavailable_note

if TYPE_CHECKING:
    from runtime.cli.settings import HookInstall

DEFAULT_SETTINGS = ".claude/settings.json"
LOCAL_SETTINGS = ".claude/settings.local.json"


def _executable(explicit: str | None) -> str:
    if explicit:
        return os.path.abspath(explicit)
    here = Path(sys.argv[0])
    if here.name == "runtime" and here.exists():
        return str(here.resolve())
    found = shutil.which("runtime")
    if not found:
        raise UsageError("cannot find the runtime executable; pass --command PATH")
    return os.path.abspath(found)


def _claude() -> tuple[Path | None, str | None, str | None]:
    """The CLI, its version and no note; or, when none is found, a note that its version was not checked.
    A CLI too old to honour `onFailure: block`, or one whose version cannot be read, is a FatalError."""
    # The person's session starts `claude` from PATH: the runtime's own copies under .cache (for its
    # backend and tests) say nothing about it.
    cli = locate_claude(known_installs=False)
    if cli is None:
        return None, None, ("no Claude Code CLI found (RUNTIME_CLAUDE_BIN, `claude` on PATH), so its version was not "
                            f"checked: Claude Code before {FAIL_CLOSED_SINCE} ignores the hook's `onFailure: block` and runs a "
                            "call whose hook cannot start, crashes or times out")
    return cli, require_fail_closed(cli), None


def run(args: HookInstall) -> int:
    catalog = Catalog(Path(find_catalog(args.catalog)))
    if args.role:
        role = load_role(catalog, args.role)
        if not role.spawnable and not role.for_sessions:
            raise UsageError(f"role `{role.name}` is not spawnable and cannot gate a session")
    if args.role and not args.task and needs_task_scope(role):
        raise UsageError(f"role `{role.name}` writes only inside a task's scope: pass --task FILE (a task manifest of "
                         f"this role), or leave out --role for the `{SESSION_ROLE}` role, which writes anywhere in the "
                         "repository but its control files")
    exe = _executable(args.command)
    task = None
    if args.task:
        from runtime.manifests.task import load_task

        task = load_task(catalog, args.task)  # checked now: a broken task would deny every call
        if args.role and task.role.name != args.role:
            raise UsageError(f"--task {args.task} is for role `{task.role.name}`, not `{args.role}`")
    command, portable = hook_command(exe, str(catalog.root), args.role, os.getcwd(), args.task, args.resident)
    path = Path(args.settings or DEFAULT_SETTINGS)
    local_note = builtin_note = None
    if args.settings is None and not portable:
        # A command holding this machine's paths must not land in the committed settings file.
        path = Path(LOCAL_SETTINGS)
        local_note = (f"the hook command names paths of this machine ({exe}), so it goes to {path}, which Claude "
                      "Code reads but git should not track; put `runtime` on PATH for a command that works on every clone")
    if not args.role:
        builtin_note = (f"the main session is gated as `{SESSION_ROLE}` (writes anywhere in the repository but its "
                        "control files; its toolchain and the repository's own make and tox targets; git to look, stage "
                        "and commit, never to push or rewrite history; credentials never read; the network and "
                        "whatever no rule decides asked of you); subagents: Explore is gated as `explorer`, Plan as "
                        "`read-only`, a role's name as that role, and any other type (general-purpose, yours, a "
                        "plugin's) by the session's own rules; `runtime export claude-agents` writes the roles as "
                        "subagents; the MCP servers you configured are asked of you unless a rule decides "
                        "(`runtime doctor` lists them)")
    before = read_settings(path)
    cli, version, version_note = _claude()  # refused before anything is written
    after = merge_hook(json.loads(json.dumps(before)), command, exe)
    # The subagent of a task without --role runs in the main session's sandbox: the task narrows only its gate.
    sandbox = role_sandbox(catalog, args.role, task if args.role else None, Path.cwd(), path)
    kept = merge_sandbox(after, sandbox)
    kept_note = (f"kept the sandbox settings of your own ({', '.join(kept)}); some widen what the sandbox allows"
                 if kept else None)
    strict, unavailable = strict_reason(os.geteuid() == 0), unavailable_note()
    changed = not (after == before and path.exists())
    if changed:
        write_atomic(path, json.dumps(after, indent=2) + "\n")
    if args.json:
        print(json.dumps({"settings": str(path), "command": command, "portable": portable, "changed": changed,
                          "claude": str(cli) if cli else None, "claude_version": version,
                          "sandbox": after["sandbox"], "gate_mode": "strict", "strict_because": strict,
                          "notes": [n for n in (local_note, version_note, builtin_note, kept_note, unavailable) if n]}))
        return 0
    closed = "a call it cannot answer is blocked " + (
        f"(Claude Code {version})" if version else f"by Claude Code {FAIL_CLOSED_SINCE} and later")
    if not changed:
        print(f"{path}: hook and sandbox already installed; {closed}")
    else:
        if local_note:
            print(local_note)
        what = "updated" if has_hook(before, exe) else "installed"
        print(f"{path}: PreToolUse hook {what} ({'role ' + args.role if args.role else f'main session as `{SESSION_ROLE}`, subagents by their types'}); "
              f"{closed}")
        if builtin_note:
            print(builtin_note)
    for line in (sandbox.summary(), kept_note, strict, version_note, unavailable, _untracked(path)):
        if line:
            print(line)
    return 0


def _untracked(path: Path) -> str | None:
    """A warning when git ignores the shared settings file (never the local one, which is meant to be)."""
    from runtime.tooling.gitignore import ignored_by_git

    if path.name != "settings.json":
        return None
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return None
    for shown, by in ignored_by_git(Path.cwd(), [str(rel)]):
        return (f"warning: git ignores {shown} ({by}), so the hook is not shared with the repository: add "
                "`!.claude/` to the .gitignore, after that line")
    return None
