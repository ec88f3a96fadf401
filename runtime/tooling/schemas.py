"""JSON Schemas of the manifest kinds (capability, role, program, task, toolchain, plan), for editors (`#:schema` lines),
and of an attestation's statement (`runtime attest`), for whoever reads one elsewhere."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from runtime.attest.statement import Statement
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

    from runtime.lang.jsontypes import JSON, JSONDict

BASE = "https://agent-runtime.invalid/schemas"


def _schema(model: type[BaseModel], title: str) -> JSONDict:
    schema: JSONDict = model.model_json_schema(by_alias=True, mode="validation")
    schema["title"] = title
    return schema


def _at(schema: JSONDict, *keys: str) -> JSONDict:
    """The object a path of keys leads to in a generated schema (each step an object, which pydantic makes it)."""
    for key in keys:
        value = schema[key]
        if not isinstance(value, dict):
            raise TypeError(f"`{key}` of the schema is no object")
        schema = value
    return schema


def _defs(schema: JSONDict) -> JSONDict:
    """``schema``'s `$defs`, taken out of it."""
    defs: JSON = schema.pop("$defs", {})
    if not isinstance(defs, dict):
        raise TypeError("`$defs` of the schema is no object")
    return defs


def _capability() -> JSONDict:
    """An atom or an alias stub; an atom's examples are tool calls or verify examples, and a verify example's
    evidence is the table its atom's verify kind reads (its kind's model, ``runtime.verify.kinds.registry``)."""
    atom = _schema(AtomFile, "Capability atom")
    alias = _schema(AliasFile, "Deprecated alias stub")
    defs: JSONDict = {}
    evidence = {name: kind.evidence for name, kind in KINDS.items()}
    models: tuple[type[BaseModel], ...] = (GateExample, VerifyExample, *dict.fromkeys(evidence.values()))
    for model in models:
        schema: JSONDict = model.model_json_schema(by_alias=True, mode="validation")
        defs.update(_defs(schema))
        defs[model.__name__] = schema
    _at(atom, "properties", "examples")["items"] = {"anyOf": [{"$ref": "#/$defs/GateExample"},
                                                               {"$ref": "#/$defs/VerifyExample"}]}
    atom["allOf"] = [
        {"if": {"properties": {"verify": {"const": kind}}, "required": ["verify"]},
         "then": {"properties": {"examples": {"items": {
             "if": {"required": ["evidence"]}, "then": {"properties": {"evidence": {"$ref": f"#/$defs/{model.__name__}"}}},
         }}}}}
        for kind, model in evidence.items()
    ]
    # The $defs of both branches live at the top, where their "#/$defs/..." references point.
    for branch in (atom, alias):
        defs.update(_defs(branch))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{BASE}/capability.schema.json",
        "title": "capability.toml: an atom or an alias stub",
        "$defs": defs,
        "anyOf": [atom, alias],
    }


def manifest_schemas() -> dict[str, JSONDict]:
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
        schema: JSONDict = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{BASE}/{name}",
                            **_schema(model, title)}
        out[name] = schema
    # The in-toto statement an attestation's envelope carries, with the runtime's predicate (`runtime.attest`).
    out["attestation.schema.json"] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                      "$id": f"{BASE}/attestation.schema.json",
                                      **_schema(Statement, "An attestation's in-toto statement (runtime attest)")}
    # A plan's subtasks never open control files (only a task file given to `runtime spawn` may).
    _at(out["plan.schema.json"], "$defs", "ScopeSection", "properties").pop("control-files")
    return out


def render(schema: JSONDict) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
