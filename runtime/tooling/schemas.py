"""JSON Schemas of the manifest kinds (capability, role, program, task, toolchain, plan), for editors (`#:schema` lines)."""

from __future__ import annotations

import json
from typing import Any

from runtime.manifests.atom import AliasFile, AtomFile
from runtime.manifests.program import ProgramFile
from runtime.manifests.role import RoleFile
from runtime.manifests.task import TaskFile
from runtime.manifests.toolchain import ToolchainFile
from runtime.orchestration.plans.schema import PlanFile

BASE = "https://agent-runtime.invalid/schemas"


def _schema(model, title: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    schema["title"] = title
    return schema


def manifest_schemas() -> dict[str, dict[str, Any]]:
    atom = _schema(AtomFile, "Capability atom")
    alias = _schema(AliasFile, "Deprecated alias stub")
    capability = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{BASE}/capability.schema.json",
        "title": "capability.toml: an atom or an alias stub",
        "anyOf": [atom, alias],
    }
    out = {"capability.schema.json": capability}
    kinds = (
        ("role.schema.json", RoleFile, "roles/<name>.toml"),
        ("program.schema.json", ProgramFile, "programs/<name>.program.toml"),
        ("task.schema.json", TaskFile, "task.toml"),
        ("toolchain.schema.json", ToolchainFile, ".agent-runtime/toolchain.toml"),
        ("plan.schema.json", PlanFile, "plan.toml"),  # `$id` is runtime.orchestration.plans.save.SCHEMA_URL
    )
    for name, model, title in kinds:
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{BASE}/{name}", **_schema(model, title)}
        out[name] = schema
    # A plan's subtasks never open control files (only a task file given to `runtime spawn` may).
    out["plan.schema.json"]["$defs"]["ScopeSection"]["properties"].pop("control-files")
    return out


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
