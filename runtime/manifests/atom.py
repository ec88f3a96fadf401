"""Capability atoms: ``capabilities/<category>/<slug>/{capability.toml,text.md}``.

An atom states one rule as data: the gate kind, verify kind and sandbox
contributions it names from the registries in ``runtime.manifests.kinds``, the
typed parameters those kinds consume, and examples that test it. An alias stub
holds only ``alias`` and ``deprecated``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, JsonValue, field_validator

from runtime.errors import ManifestError
from runtime.lang.verdicts import GateVerdict
from runtime.manifests.kinds import GATE_KINDS, SANDBOX_KINDS, TASK_FIELDS
from runtime.manifests.model import parse_model
from runtime.manifests.names import check_atom_name
from runtime.manifests.params import PARAM_TYPES, ParamValue, check_value
from runtime.manifests.tomlsrc import TomlSource, read_toml
from runtime.model import Model
from runtime.verify.kinds.registry import KINDS

PARAM_NAME = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
ParamType = Literal["bool", "int", "str", "str-list", "test-results", "test-source", "mcp-rules", "ask-or-deny", "glob-list", "secret-path-list", "control-path-list", "tool-list", "command", "command-list",
                    "program-rules", "domain-list", "cidr-list", "port-list", "credential-list"]
assert set(get_args(ParamType)) == set(PARAM_TYPES), "ParamType must list every parameter type"


class ParamSpec(Model):
    type: ParamType
    default: JsonValue = None
    task_field: Literal[tuple(TASK_FIELDS)] | None = None  # type: ignore[valid-type]


class GateExample(Model):
    tool: str
    input: dict[str, JsonValue]  # the tool call's input, as a model would write it
    expect: GateVerdict
    params: dict[str, JsonValue] = Field(default_factory=dict)  # checked as their types when the atom loads


class VerifyExample(Model):
    evidence: dict[str, JsonValue]  # the table of the kind's evidence model (runtime.verify.kinds), checked when the atom loads
    expect: Literal["passed", "rejected"]
    params: dict[str, JsonValue] = Field(default_factory=dict)
    says: str | None = None  # words the feedback must hold: the example is judged for the reason it shows


class AtomFile(Model):
    name: str
    summary: str
    # Any kind of the registry, read when the atom is: a kind added to it is one an atom may name.
    gate: str | None = Field(default=None, json_schema_extra={"enum": list(GATE_KINDS)})
    verify: str | None = Field(default=None, json_schema_extra={"enum": list(KINDS)})
    sandbox: list[Literal[tuple(SANDBOX_KINDS)]] = Field(default_factory=list)  # type: ignore[valid-type]
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    examples: list[dict[str, JsonValue]] = Field(min_length=1)  # each a GateExample or a VerifyExample

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_atom_name(v)

    @field_validator("gate")
    @classmethod
    def _gate(cls, v: str | None) -> str | None:
        if v is not None and v not in GATE_KINDS:
            raise ValueError(f"`{v}` is no gate kind (the kinds: {', '.join(GATE_KINDS)})")
        return v

    @field_validator("verify")
    @classmethod
    def _verify(cls, v: str | None) -> str | None:
        if v is not None and v not in KINDS:
            raise ValueError(f"`{v}` is no verify kind (the kinds: {', '.join(KINDS)})")
        return v

    @field_validator("summary")
    @classmethod
    def _summary(cls, v: str) -> str:
        if not v.strip() or "\n" in v or len(v) > 120:
            raise ValueError("summary must be one line of at most 120 characters")
        return v


class AliasFile(Model):
    alias: str
    deprecated: str

    @field_validator("alias")
    @classmethod
    def _alias(cls, v: str) -> str:
        return check_atom_name(v)


@dataclass(frozen=True)
class Atom:
    name: str
    summary: str
    gate: str | None
    verify: str | None
    sandbox: tuple[str, ...]
    params: dict[str, ParamSpec]
    defaults: dict[str, ParamValue]  # each parameter's default that has one, checked as its type
    examples: tuple[GateExample | VerifyExample, ...]
    text: str
    toml_path: Path
    text_path: Path
    src: TomlSource = field(repr=False, compare=False)

    def example_line(self, index: int) -> int:
        return self.src.line_of(("examples", index))


@dataclass(frozen=True)
class Alias:
    name: str
    target: str
    note: str
    toml_path: Path
    src: TomlSource = field(repr=False, compare=False)


def name_for_folder(folder: Path) -> str:
    return f"{folder.parent.name}::{folder.name}"


def load_atom_folder(folder: Path, display: str) -> Atom | Alias:
    """Load one atom folder; ``display`` is the path shown in messages."""
    toml_path = folder / "capability.toml"
    data, src = read_toml(toml_path, display)
    expected = name_for_folder(folder)
    if "alias" in data:
        stub = parse_model(AliasFile, data, src)
        if (folder / "text.md").exists():
            raise ManifestError(display, 1, "an alias stub has no text.md: it only points to its new name")
        if stub.alias == expected:
            raise ManifestError(display, src.line_of(("alias",)), f"`{expected}` is an alias of itself")
        return Alias(expected, stub.alias, stub.deprecated, toml_path, src)
    atom = parse_model(AtomFile, data, src)
    if atom.name != expected:
        raise src.error(("name",), f"name `{atom.name}` does not match its folder (expected `{expected}`)")
    if not (atom.gate or atom.verify or atom.sandbox):
        raise src.error(("name",), "the atom enforces nothing: name a gate, verify or sandbox kind (prompt-only rules are not atoms)")
    if len(set(atom.sandbox)) != len(atom.sandbox):
        raise src.error(("sandbox",), "duplicate sandbox kinds")
    defaults = _check_params(atom, src)
    examples = tuple(_check_example(atom, n, ex, src) for n, ex in enumerate(atom.examples))
    if atom.gate and not any(isinstance(e, GateExample) for e in examples):
        raise src.error(("gate",), "an atom with a gate kind needs at least one example tool call")
    if atom.verify and not any(isinstance(e, VerifyExample) for e in examples):
        raise src.error(("verify",), "an atom with a verify kind needs at least one verify example")
    text_path = folder / "text.md"
    try:
        text = text_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(display, 1, f"cannot read text.md: {exc}") from None
    if not text.strip():
        raise ManifestError(str(Path(display).with_name("text.md")), 1, "text.md is empty")
    return Atom(
        atom.name, atom.summary, atom.gate, atom.verify, tuple(atom.sandbox), dict(atom.params), defaults,
        examples, text, toml_path, text_path, src,
    )


def _kind_params(atom: AtomFile) -> dict[str, str]:
    wanted: dict[str, str] = {}
    if atom.gate:
        wanted.update(GATE_KINDS[atom.gate].params)
    if atom.verify:
        wanted.update(KINDS[atom.verify].params)
    return wanted


def _check_params(atom: AtomFile, src: TomlSource) -> dict[str, ParamValue]:
    """The parameters checked against the atom's kinds; their defaults, checked."""
    wanted = _kind_params(atom)
    defaults: dict[str, ParamValue] = {}
    for pname, spec in atom.params.items():
        loc = ("params", pname)
        if not PARAM_NAME.fullmatch(pname):
            raise src.error(loc, f"`{pname}` is not a parameter name")
        if pname not in wanted:
            raise src.error(loc, f"parameter `{pname}` is not used by the atom's kinds (they take: {', '.join(sorted(wanted)) or 'nothing'})")
        if spec.type != wanted[pname]:
            raise src.error(loc + ("type",), f"parameter `{pname}` must have type `{wanted[pname]}` for this kind")
        if spec.task_field and TASK_FIELDS[spec.task_field] != spec.type:
            raise src.error(loc + ("task-field",), f"task field `{spec.task_field}` has type `{TASK_FIELDS[spec.task_field]}`, not `{spec.type}`")
        if spec.default is None and not spec.task_field:
            raise src.error(loc, f"parameter `{pname}` needs a default or a task-field to come from")
        if spec.default is not None:
            try:
                defaults[pname] = check_value(spec.type, spec.default)
            except ValueError as exc:
                raise src.error(loc + ("default",), f"default of `{pname}`: {exc}") from None
    for pname in wanted:
        if pname not in atom.params:
            raise src.error(("params",), f"the atom's kinds need parameter `{pname}` ({wanted[pname]}); declare it")
    return defaults


def _check_example(atom: AtomFile, n: int, raw: dict[str, JsonValue], src: TomlSource) -> GateExample | VerifyExample:
    prefix = ("examples", n)
    if "tool" in raw:
        ex: GateExample | VerifyExample = parse_model(GateExample, raw, src, prefix)
        if not atom.gate:
            raise src.error(prefix, "a tool-call example needs the atom to have a gate kind")
    elif "evidence" in raw:
        ex = parse_model(VerifyExample, raw, src, prefix)
        if not atom.verify:
            raise src.error(prefix, "a verify example needs the atom to have a verify kind")
        now, base = KINDS[atom.verify].base_key or ("", "")
        if set(ex.evidence) == {now}:
            raise src.error(prefix + ("evidence",), f"missing required key `{base}` in `examples[{n}].evidence`: "
                                                    f"{atom.verify} judges the change against its base now; "
                                                    f"`runtime migrate` adds `{base} = {{}}` (every file new, as before)")
        parse_model(KINDS[atom.verify].evidence, ex.evidence, src, prefix + ("evidence",))
    else:
        raise src.error(prefix, "an example needs `tool` and `input` (a tool call) or `evidence` (a verify example)")
    for pname, value in ex.params.items():
        if pname not in atom.params:
            raise src.error(prefix + ("params",), f"example sets undeclared parameter `{pname}`")
        try:
            check_value(atom.params[pname].type, value)
        except ValueError as exc:
            raise src.error(prefix + ("params", pname), f"`{pname}`: {exc}") from None
    return ex
