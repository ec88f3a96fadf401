"""Program grammars: ``programs/<name>.program.toml`` in the catalog (never ``<name>.toml``, which the
program itself may read as its configuration: ``runtime.manifests.locate.GRAMMAR_SUFFIX``).

A grammar states, as data, every option and positional a program may be given
and the type of each (``runtime.lang.grammar``); role rules of
``tools::bash-allowlist`` name it (``grammar = "pytest"``) so that one
description of pytest serves ``pytest``, ``python -m pytest`` and every role.
Its examples are commands lint runs through the real gate, with writes
allowed under ``out/`` only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, field_validator

from runtime.lang.verdicts import GateVerdict
from runtime.manifests.locate import GRAMMAR_SUFFIX, grammar_name
from runtime.manifests.model import parse_model
from runtime.manifests.params import PROGRAM_NAME, GrammarFields, compile_grammar
from runtime.manifests.tomlsrc import TomlSource, read_toml
from runtime.model import Model

GRAMMAR_NAME = re.compile(r"^[a-z0-9][a-z0-9_.+-]*$")
EXAMPLE_SCOPE = "out/**"


class CommandExample(Model):
    command: str
    expect: GateVerdict
    subcommands: list[str] = Field(default_factory=list)  # the example rule's, as a role would set them
    # The example rule's program, when a role runs the grammar under another name (`python` with
    # subcommand `-m unittest` for the grammar `unittest`); the grammar's own name by default.
    program: str | None = None

    @field_validator("program")
    @classmethod
    def _program(cls, v: str | None) -> str | None:
        if v is not None and not PROGRAM_NAME.fullmatch(v):
            raise ValueError(f"`{v}` is not a program name (a bare name, no path)")
        return v


class ProgramFile(GrammarFields):
    name: str
    summary: str
    examples: list[CommandExample] = Field(default_factory=list)


@dataclass(frozen=True)
class ProgramGrammar:
    name: str
    summary: str
    grammar: GrammarFields  # compiled, as a rule holds it (compile_grammar's form)
    examples: tuple[CommandExample, ...]
    path: Path
    src: TomlSource


def load_program(path: Path, display: str) -> ProgramGrammar:
    data, src = read_toml(path, display)
    doc = parse_model(ProgramFile, data, src)
    expected = grammar_name(path.name)
    if expected is None:
        raise src.error(("name",), f"a grammar's file name ends in `{GRAMMAR_SUFFIX}` (`{doc.name}{GRAMMAR_SUFFIX}`)")
    if doc.name != expected:
        raise src.error(("name",), f"name `{doc.name}` does not match the file name (expected `{expected}`)")
    if not GRAMMAR_NAME.fullmatch(doc.name):
        raise src.error(("name",), f"`{doc.name}` is not a grammar name (lower case, digits, `_.+-`)")
    if not doc.examples:
        raise src.error(("name",), "a grammar needs at least one example command")
    # The grammar alone, without the file's name, summary and examples: validated already, as part of the file.
    fields = GrammarFields.model_construct(**{name: getattr(doc, name) for name in GrammarFields.model_fields})
    try:
        grammar = compile_grammar(fields, doc.name)
    except ValueError as exc:
        raise src.error(("options",), str(exc)) from None
    return ProgramGrammar(doc.name, doc.summary, grammar, tuple(doc.examples), path, src)
