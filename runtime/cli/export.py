"""runtime export claude-agents: .claude/agents/<role>.md for each spawnable role."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.tooling.claude import export_agents

if TYPE_CHECKING:
    from runtime.cli.settings import ExportClaudeAgents


def run(args: ExportClaudeAgents) -> int:
    catalog = Catalog(Path(find_catalog(args.catalog)))
    if args.task:
        from runtime.manifests.task import load_task
        from runtime.tooling.claude import export_task_agent

        task = load_task(catalog, args.task)
        path = export_task_agent(task, Path(args.out))
        if args.json:
            print(json.dumps({"written": [str(path)], "role": task.role.name, "task": args.task}))
        else:
            print(f"wrote {path} (role {task.role.name}, scoped by {args.task}); gate it with "
                  f"`runtime hook install --task {args.task}`")
        return 0
    written = export_agents(catalog, Path(args.out))
    if args.json:
        print(json.dumps({"written": [str(p) for p in written]}))
        return 0
    for path in written:
        print(f"wrote {path}")
    return 0
