"""Typed atom parameters: the type names an atom may declare, and their checks."""

from __future__ import annotations

import re
from typing import Any, Callable, Literal

from pydantic import Field, ValidationError, field_validator

from runtime.manifests.globs import check_glob
from runtime.manifests.model import Model, describe

PROGRAM_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
FLAG = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ProgramRule(Model):
    """One per-program rule of ``tools::bash-allowlist``.

    ``option-style`` says how the program reads its options, so flags are
    matched in every spelling it accepts: ``gnu`` (getopt_long, nopt: long
    options may be abbreviated, short ones clustered), ``exact`` (argparse
    without abbreviation, clap: clusters but no abbreviations), ``go`` (the
    flag package: single-dash long flags, ``-x`` and ``--x`` alike, no
    clusters). ``arg-files`` allows arguments starting with ``@``, which
    argparse, gcc and javac expand from files the gate cannot see.
    """

    program: str
    subcommands: list[str] = Field(default_factory=list)
    deny_flags: list[str] = Field(default_factory=list)
    root_path_flags: list[str] = Field(default_factory=list)
    scope_path_flags: list[str] = Field(default_factory=list)
    positional_writes: bool = False
    inline_code: bool = False
    arg_files: bool = False
    option_style: Literal["gnu", "exact", "go"] = "gnu"
    ask: bool = False

    @field_validator("program")
    @classmethod
    def _program(cls, v: str) -> str:
        if not PROGRAM_NAME.match(v):
            raise ValueError(f"`{v}` is not a program name (a bare name, no path)")
        return v

    @field_validator("subcommands")
    @classmethod
    def _subcommands(cls, v: list[str]) -> list[str]:
        for s in v:
            if not s.split() or s != " ".join(s.split()):
                raise ValueError(f"subcommand `{s}` must be words separated by single spaces")
        return v

    @field_validator("deny_flags", "root_path_flags", "scope_path_flags")
    @classmethod
    def _flags(cls, v: list[str]) -> list[str]:
        for f in v:
            if not FLAG.match(f):
                raise ValueError(f"`{f}` is not a flag (expected -x or --name)")
        return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {type(v).__name__}")
    return v


def _str_list(v: Any) -> list[str]:
    if not isinstance(v, list):
        raise ValueError(f"expected a list of strings, got {type(v).__name__}")
    out = [_str(x) for x in v]
    dupes = sorted({x for x in out if out.count(x) > 1})
    if dupes:
        raise ValueError(f"duplicate entries: {', '.join(dupes)}")
    return out


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError("expected a non-negative integer")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _command(v: Any) -> str:
    s = _str(v)
    if not s.strip() or "\x00" in s:
        raise ValueError("expected a non-empty shell command")
    return s


def _command_list(v: Any) -> list[str]:
    return [_command(x) for x in _str_list(v)]


def _glob_list(v: Any) -> list[str]:
    return [check_glob(g) for g in _str_list(v)]


def _tool_list(v: Any) -> list[str]:
    out = _str_list(v)
    for t in out:
        if not TOOL_NAME.match(t):
            raise ValueError(f"`{t}` is not a tool name")
    return out


def _domain_list(v: Any) -> list[str]:
    from runtime.sandbox.domains import pattern_error

    out = _str_list(v)
    for pattern in out:
        if (why := pattern_error(pattern)) is not None:
            raise ValueError(why)
    return out


def _cidr_list(v: Any) -> list[str]:
    import ipaddress

    out = _str_list(v)
    for cidr in out:
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            raise ValueError(f"`{cidr}` is not an address or an address range (CIDR)") from None
    return out


def _port_list(v: Any) -> list[int]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) and 0 < x < 65536 for x in v):
        raise ValueError("expected an array of port numbers (1-65535)")
    return list(dict.fromkeys(v))


def _program_rules(v: Any) -> list[dict[str, Any]]:
    if not isinstance(v, list):
        raise ValueError("expected an array of program rules")
    rules: list[dict[str, Any]] = []
    for n, item in enumerate(v):
        try:
            rule = ProgramRule.model_validate(item)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            raise ValueError(f"rule {n + 1}: {describe(err)}") from None
        rules.append(rule.model_dump(by_alias=True))
    names = [r["program"] for r in rules]
    dupes = sorted({x for x in names if names.count(x) > 1})
    if dupes:
        raise ValueError(f"more than one rule for: {', '.join(dupes)}")
    return rules


PARAM_TYPES: dict[str, Callable[[Any], Any]] = {
    "bool": _bool,
    "int": _int,
    "str": _str,
    "str-list": _str_list,
    "glob-list": _glob_list,
    "tool-list": _tool_list,
    "command": _command,
    "command-list": _command_list,
    "program-rules": _program_rules,
    "domain-list": _domain_list,
    "cidr-list": _cidr_list,
    "port-list": _port_list,
}


def check_value(type_name: str, value: Any) -> Any:
    """Validate and normalise ``value`` as ``type_name``; ValueError if it is not one."""
    return PARAM_TYPES[type_name](value)
