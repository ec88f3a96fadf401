"""JSON Schemas of the manifest kinds (capability, role, program, task, toolchain, plan), for editors (`#:schema` lines)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from runtime.manifests.atom import AliasFile, AtomFile, GateExample, VerifyExample
from runtime.manifests.notify import NotifyFile
from runtime.manifests.program import ProgramFile
from runtime.manifests.role import RoleFile
from runtime.manifests.task import TaskFile
from runtime.manifests.toolchain import ToolchainFile
from runtime.orchestration.plans.schema import PlanFile
from runtime.verify.kinds.registry import KINDS

if TYPE_CHECKING:
    from pydantic import BaseModel

BASE = "https://agent-runtime.invalid/schemas"


def _schema(model: type[BaseModel], title: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    schema["title"] = title
    return schema


def _capability() -> dict[str, Any]:
    """An atom or an alias stub; an atom's examples are tool calls or verify examples, and a verify example's
    evidence is the table its atom's verify kind reads (its kind's model, ``runtime.verify.kinds.registry``)."""
    atom = _schema(AtomFile, "Capability atom")
    alias = _schema(AliasFile, "Deprecated alias stub")
    defs: dict[str, Any] = {}
    evidence = {name: kind.evidence for name, kind in KINDS.items()}
    models: tuple[type[BaseModel], ...] = (GateExample, VerifyExample, *dict.fromkeys(evidence.values()))
    for model in models:
        schema = model.model_json_schema(by_alias=True, mode="validation")
        defs.update(schema.pop("$defs", {}))
        defs[model.__name__] = schema
    atom["properties"]["examples"]["items"] = {"anyOf": [{"$ref": "#/$defs/GateExample"}, {"$ref": "#/$defs/VerifyExample"}]}
    atom["allOf"] = [
        {"if": {"properties": {"verify": {"const": kind}}, "required": ["verify"]},
         "then": {"properties": {"examples": {"items": {
             "if": {"required": ["evidence"]}, "then": {"properties": {"evidence": {"$ref": f"#/$defs/{model.__name__}"}}},
         }}}}}
        for kind, model in evidence.items()
    ]
    # The $defs of both branches live at the top, where their "#/$defs/..." references point.
    for branch in (atom, alias):
        defs.update(branch.pop("$defs", {}))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{BASE}/capability.schema.json",
        "title": "capability.toml: an atom or an alias stub",
        "$defs": defs,
        "anyOf": [atom, alias],
    }


def manifest_schemas() -> dict[str, dict[str, Any]]:
    capability = _capability()
    out = {"capability.schema.json": capability}
    kinds = (
        ("role.schema.json", RoleFile, "roles/<name>.toml"),
        ("program.schema.json", ProgramFile, "programs/<name>.program.toml"),
        ("task.schema.json", TaskFile, "task.toml"),
        ("toolchain.schema.json", ToolchainFile, ".agent-runtime/toolchain.toml"),
        ("notify.schema.json", NotifyFile, ".agent-runtime/notify.toml"),
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
