"""runtime hook install: merge the PreToolUse hook into .claude/settings.json."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from runtime.errors import UsageError
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.manifests.role import load_role
from runtime.tooling.claude import hook_command, merge_hook, read_settings, write_atomic

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


def run(args) -> int:
    catalog = Catalog(Path(find_catalog(args.catalog)))
    if args.role:
        role = load_role(catalog, args.role)
        if not role.spawnable:
            raise UsageError(f"role `{role.name}` is not spawnable and cannot gate a session")
    exe = _executable(args.command)
    if args.task:
        from runtime.manifests.task import load_task

        task = load_task(catalog, args.task)  # checked now: a broken task would deny every call
        if args.role and task.role.name != args.role:
            raise UsageError(f"--task {args.task} is for role `{task.role.name}`, not `{args.role}`")
    command, portable = hook_command(exe, str(catalog.root), args.role, os.getcwd(), args.task)
    path = Path(args.settings or DEFAULT_SETTINGS)
    local_note = builtin_note = None
    if args.settings is None and not portable:
        # A command holding this machine's paths must not land in the committed settings file.
        path = Path(LOCAL_SETTINGS)
        local_note = (f"the hook command names paths of this machine ({exe}), so it goes to {path}, which Claude "
                      "Code reads but git should not track; put `runtime` on PATH for a command that works on every clone")
    if not args.role:
        builtin_note = ("Claude Code's built-in subagents: Explore is gated as `explorer`, Plan as `read-only`, and "
                        "general-purpose is denied (no role grants what it may do); `runtime export claude-agents` "
                        "writes the roles as subagents")
    before = read_settings(path)
    after = merge_hook(json.loads(json.dumps(before)), command, exe)
    changed = not (after == before and path.exists())
    if changed:
        write_atomic(path, json.dumps(after, indent=2) + "\n")
    if args.json:
        print(json.dumps({"settings": str(path), "command": command, "portable": portable, "changed": changed,
                          "notes": [n for n in (local_note, builtin_note) if n]}))
        return 0
    if not changed:
        print(f"{path}: hook already installed")
        return 0
    if local_note:
        print(local_note)
    print(f"{path}: PreToolUse hook installed ({'role ' + args.role if args.role else 'subagents gated by role'})")
    if builtin_note:
        print(builtin_note)
    return 0
