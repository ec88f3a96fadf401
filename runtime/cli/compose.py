"""runtime compose TASK: the prompt bundle (and with --json, the compiled policy)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import UsageError
from runtime.manifests.catalog import Catalog
from runtime.manifests.compose import compose_bundle
from runtime.manifests.locate import find_catalog
from runtime.manifests.role import load_role
from runtime.manifests.task import load_task
from runtime.policy.compile import compile_policy

if TYPE_CHECKING:
    from runtime.cli.settings import Compose


def run(args: Compose) -> int:
    if bool(args.task) == bool(args.role):
        raise UsageError("give a task manifest, or --role NAME, but not both")
    catalog = Catalog(Path(find_catalog(args.catalog)))
    if args.task:
        task = load_task(catalog, args.task)
        role = task.role
    else:
        assert args.role is not None  # one of the two, checked above
        task, role = None, load_role(catalog, args.role)
    root = Path(args.root or ".").resolve()
    policy = compile_policy(role, task, root, catalog)
    bundle = compose_bundle(role, task)
    if args.policy_out:
        Path(args.policy_out).write_text(json.dumps(policy, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps({"bundle": bundle, "policy": policy}, indent=2))
    else:
        sys.stdout.write(bundle)
    return 0
