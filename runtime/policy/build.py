"""Load a role (and task) from a catalog and compile its policy in one call."""

from __future__ import annotations

from pathlib import Path

from runtime.errors import UsageError
from runtime.lang.audience import AGENT
from runtime.manifests.catalog import Catalog
from runtime.manifests.role import load_role
from runtime.manifests.task import load_task
from runtime.policy.compile import compile_policy
from runtime.policy.compiled import PolicyJSON
from runtime.policy.document import STRICT


def build_policy(catalog_root: str | Path, role: str | None, task_path: str | Path | None, root: str | Path,
                 mode: str = STRICT, audience: str = AGENT) -> PolicyJSON:
    catalog = Catalog(Path(catalog_root))
    if task_path:
        task = load_task(catalog, task_path)
        if role and role != task.role.name:
            raise UsageError(f"--role {role} does not match the task's role `{task.role.name}`")
        return compile_policy(task.role, task, root, catalog, mode=mode, audience=audience)
    resolved = load_role(catalog, role or "")
    return compile_policy(resolved, None, root, catalog, mode=mode, audience=audience)
