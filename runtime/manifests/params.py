"""Typed atom parameters: the type names an atom may declare, and their checks."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from runtime.lang.globs import check_glob
from runtime.model import Model, describe

PROGRAM_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")




class Trailing(Model):
    """The grammar of the words after ``--`` (cargo test's harness options)."""

    option_style: Literal["gnu", "go"] = "gnu"
    options: dict[str, str | list[str]] = Field(default_factory=dict)
    positionals: list[str | list[str]] = Field(default_factory=list)


class GrammarFields(Model):
    """An argument grammar (see ``runtime.lang.grammar``): options by spelling, positionals, variables."""

    option_style: Literal["gnu", "go", "none"] = "gnu"
    # A type name, an enum, or `{ assignments = { KEY = TYPE } }` (`-o KEY=VALUE`).
    options: dict[str, str | list[str] | dict[str, dict[str, str | list[str]]]] = Field(default_factory=dict)
    positionals: list[str | list[str]] = Field(default_factory=list)
    min_positionals: int = Field(default=0, ge=0)
    trailing: Trailing | None = None
    env: list[str] = Field(default_factory=list)
    xargs: bool = False
    cwd: Literal["in-root", "any"] = "in-root"
    # The program may read `@file` as more arguments (argparse's fromfile_prefix_chars, gcc, javac); false
    # for getopt programs (grep, sed), where `@x` is an ordinary word the grammar types.
    response_files: bool = True
    # No option of the program writes, deletes or runs anything, so a glob bash may expand into option
    # names (`*.md` beside a file named `-r.md`) is allowed: it only changes what the program prints.
    harmless_options: bool = False
    # The program takes each file it writes as a name and expands no pattern itself (rm, sed -i, black),
    # so a glob bash expands may name them (`sed -i … src/app/*.py`): the gate expands it too and checks
    # every match. Not for prettier or eslint, which expand a pattern the shell passes on unmatched.
    glob_writes: bool = False
    # What the program reads on standard input when no option or operand of that type names a file:
    # `diff` for patch, whose targets the gate then reads from a heredoc (or a file the agent cannot change).
    stdin: Literal["diff"] | None = None
    # What the program may never be given, each with why: an option spelling (`--amend`) or a subcommand
    # (`push`). A deny, where a word no rule declares is only undecided (a person may be asked).
    forbidden: dict[str, str] = Field(default_factory=dict)
    # Options whose relative paths the program places under another option's folder when that one is given
    # (`go test -outputdir DIR -cpuprofile F` writes DIR/F): such a value is judged there too.
    anchored: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("forbidden")
    @classmethod
    def _forbidden(cls, v: dict[str, str]) -> dict[str, str]:
        for key, why in v.items():
            if not key or key != " ".join(key.split()) or (key.startswith("-") and " " in key):
                raise ValueError(f"forbidden `{key}`: an option spelling (`--amend`) or subcommand words (`push`)")
            if not why.strip():
                raise ValueError(f"forbidden `{key}`: say why it is never allowed")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: list[str]) -> list[str]:
        for name in v:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(f"`{name}` is not a variable name")
        return v


class ProgramRule(GrammarFields):
    """One per-program rule of ``tools::bash-allowlist``.

    The grammar is inline, or named with ``grammar`` (a file in the catalog's
    ``programs/`` folder), never both. ``option-style`` says how the program
    reads its options: ``gnu`` (getopt_long, argparse, clap, nopt: clusters of
    short options, ``--name=value``) or ``go`` (Go's flag package: one dash or
    two, no clusters). ``arg-files`` allows arguments starting with ``@``, which
    argparse, gcc and javac expand from files the gate cannot see; ``xargs``
    lets ``xargs`` append arguments, for programs none of whose options write
    or run anything.
    """

    program: str
    grammar: str | None = None
    subcommands: list[str] = Field(default_factory=list)
    inline_code: bool = False
    arg_files: bool = False
    ask: bool = False

    @field_validator("program")
    @classmethod
    def _program(cls, v: str) -> str:
        if not PROGRAM_NAME.fullmatch(v):
            raise ValueError(f"`{v}` is not a program name (a bare name, no path)")
        return v

    @field_validator("subcommands")
    @classmethod
    def _subcommands(cls, v: list[str]) -> list[str]:
        for s in v:
            if not s.split() or s != " ".join(s.split()):
                raise ValueError(f"subcommand `{s}` must be words separated by single spaces")
        return v


_GRAMMAR_KEYS = ("option-style", "options", "positionals", "trailing", "env", "xargs", "cwd", "response-files",
                 "harmless-options", "min-positionals", "glob-writes", "stdin", "forbidden", "anchored")
# Types that mean the program loads code from, or writes to, what it is given: not harmless options.
_NOT_HARMLESS = ("path-in-root", "path-in-scope", "folder-in-scope", "file-in-scope", "copy-in-scope", "copy-to-scope",
                 "diff")


def compile_grammar(fields: dict[str, Any], program: str) -> dict[str, Any]:
    """A grammar as the policy holds it: one entry per option spelling, every type checked."""
    from runtime.lang.grammar import Grammar, GrammarError

    def spellings(options: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, vtype in options.items():
            for spelling in key.split("|"):
                if spelling in out:
                    raise ValueError(f"option `{spelling}` is declared twice")
                out[spelling] = vtype
        return out

    out = {k: fields.get(k) for k in _GRAMMAR_KEYS}
    out["option-style"] = out["option-style"] or "gnu"
    out["options"] = spellings(out["options"] or {})
    out["positionals"] = list(out["positionals"] or [])
    out["env"] = list(out["env"] or [])
    out["xargs"] = bool(out["xargs"])
    out["cwd"] = out["cwd"] or "in-root"
    out["response-files"] = out["response-files"] is not False
    out["harmless-options"] = out["harmless-options"] is True
    out["min-positionals"] = out["min-positionals"] or 0
    out["glob-writes"] = out["glob-writes"] is True
    out["forbidden"] = {spelling: why for key, why in (out["forbidden"] or {}).items()
                        for spelling in (key.split("|") if key.startswith("-") else [key])}
    anchored: dict[str, list[str]] = {folder: list(names) for folder, names in (out["anchored"] or {}).items()}
    out["anchored"] = anchored
    options: dict[str, Any] = out["options"] or {}
    for folder, names in anchored.items():
        for name in (folder, *names):
            vtype = options.get(name)
            if not isinstance(vtype, str) or vtype.rstrip("?") not in ("path-in-scope", "folder-in-scope", "file-in-scope"):
                raise ValueError(f"anchored `{folder}`: `{name}` must be an option declared with a path type")
    if out["glob-writes"]:
        last = out["positionals"][-1] if out["positionals"] else None
        if not (isinstance(last, str) and last in ("path-in-scope...", "file-in-scope...")):
            raise ValueError("`glob-writes` is about the files a program writes: its last operand type must be "
                             "`path-in-scope...` or `file-in-scope...`")
    if out["harmless-options"]:
        types = [*dict(out["options"] or {}).values(), *list(out["positionals"] or [])]
        typed = [t for t in types if isinstance(t, str) and t.rstrip("?.") in _NOT_HARMLESS]
        if typed:
            raise ValueError(f"`harmless-options` says no option writes or loads code, but the grammar has "
                             f"{typed[0].rstrip('?.')} values")
    trailing = out["trailing"]
    if trailing is not None:
        out["trailing"] = {"option-style": trailing.get("option-style") or "gnu",
                           "options": spellings(trailing.get("options") or {}),
                           "positionals": list(trailing.get("positionals") or [])}
    try:
        Grammar(out, program)
    except GrammarError as exc:
        raise ValueError(str(exc)) from None
    return out


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {type(v).__name__}")
    return v


TEST_RESULTS = ("per-test", "exit-code")
MCP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MCP_TOOL = re.compile(r"^[A-Za-z0-9_*?.-]{1,128}$")
FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class McpRule(Model):
    """One rule of ``tools::mcp-allowlist``: a server, the tools of it (names or `*` patterns), the input fields
    that name paths it reads or writes or URLs it reaches (checked as Read, Write and WebFetch check theirs), and
    whether a person is asked each time."""

    server: str
    tools: list[str]
    reads: list[str] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    urls: list[str] = Field(default_factory=list)
    ask: bool = False

    @field_validator("server")
    @classmethod
    def _server(cls, v: str) -> str:
        if not MCP_NAME.fullmatch(v) or "__" in v:
            raise ValueError(f"`{v}` is not an MCP server's name")
        return v

    @field_validator("tools")
    @classmethod
    def _tools(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("a rule names at least one tool (`*` for all of the server's)")
        for t in v:
            if not MCP_TOOL.fullmatch(t):
                raise ValueError(f"`{t}` is not an MCP tool's name or pattern")
        return v

    @field_validator("reads", "writes", "urls")
    @classmethod
    def _fields(cls, v: list[str]) -> list[str]:
        for f in v:
            if not FIELD_NAME.fullmatch(f):
                raise ValueError(f"`{f}` is not an input field's name")
        return v


def _mcp_rules(v: Any) -> list[dict[str, Any]]:
    if not isinstance(v, list):
        raise ValueError("expected an array of MCP rules")
    out = []
    for n, item in enumerate(v):
        try:
            out.append(McpRule.model_validate(item).model_dump(by_alias=True))
        except ValidationError as exc:
            raise ValueError(f"rule {n + 1}: {describe(dict(exc.errors(include_url=False)[0]))}") from None
    return out


def _ask_or_deny(v: Any) -> str:
    if v not in ("ask", "deny"):
        raise ValueError(f"expected \"ask\" or \"deny\", got {v!r}")
    return str(v)


def _test_results(v: Any) -> str:
    if v not in TEST_RESULTS:
        raise ValueError(f"expected one of {', '.join(repr(x) for x in TEST_RESULTS)}, got {v!r}")
    return str(v)


def _test_source(v: Any) -> str:
    """Hidden tests: an absolute path to a folder outside the repository, or a git revision (checked where the
    repository is known, before anything runs)."""
    text = _str(v)
    if text and (text.startswith("-") or "\n" in text or "\0" in text):
        raise ValueError(f"expected an absolute path or a git revision, got {text!r}")
    return text


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


def _secret_path_list(v: Any) -> list[str]:
    """Paths that hold secrets, as globs of three shapes: `~/REL` below the home folder, `/ABS`, `**/NAME` at
    any depth."""
    out = []
    for g in _str_list(v):
        if g.startswith("~/"):
            out.append("~/" + check_glob(g[2:]))
        elif g.startswith("/"):
            out.append("/" + check_glob(g[1:]))
        elif g.startswith("**/"):
            out.append(check_glob(g))
        else:
            raise ValueError(f"`{g}` must start with `~/` (below the home folder), `/` or `**/` (at any depth)")
    return out


def _control_path_list(v: Any) -> list[str]:
    """Control files a task may change: plain relative paths (no wildcards) through a control name
    other than `.git`, which only the orchestrator ever writes."""
    from runtime.manifests.control import CONTROL, NEVER_EXEMPT, control_name

    out = []
    for path in _str_list(v):
        norm = path.strip("/")
        while norm.startswith("./"):
            norm = norm[2:]
        parts = norm.split("/")
        if not norm or path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in path:
            raise ValueError(f"`{path}` must be a relative path inside the worktree")
        if set("*?[") & set(norm):
            raise ValueError(f"`{path}`: name each control file exactly (no wildcards)")
        name = control_name(norm)
        if name is None:
            raise ValueError(f"`{path}` is not a control file (those are {', '.join(sorted(CONTROL))}); "
                             "the write scope alone decides about it")
        if name in NEVER_EXEMPT:
            raise ValueError(f"`{path}`: `{name}` is never written by an agent, whatever the task says")
        out.append(norm)
    return out


def _tool_list(v: Any) -> list[str]:
    out = _str_list(v)
    for t in out:
        if not TOOL_NAME.fullmatch(t):
            raise ValueError(f"`{t}` is not a tool name")
    return out


def _domain_list(v: Any) -> list[str]:
    from runtime.lang.domains import pattern_error

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


_OLD_KEYS = ("deny-flags", "root-path-flags", "scope-path-flags", "positional-writes")


def _old_form(item: dict[str, Any]) -> None:
    """A rule written for the denylist gate, which would now mean something else: say so."""
    old = [k for k in _OLD_KEYS if k in item]
    if old:
        raise ValueError(f"`{old[0]}` is gone: a rule declares what `{item.get('program', '?')}` may take "
                         "(a grammar); run `runtime migrate` to rewrite it")
    if item.get("option-style") == "exact":
        raise ValueError("option style `exact` is gone (options are never abbreviated now): use `gnu`, "
                         "or run `runtime migrate`")
    if not any(k in item for k in ("grammar", "options", "positionals")):
        raise ValueError(f"the rule for `{item.get('program', '?')}` declares no arguments: name a grammar "
                         "(`grammar = \"…\"`), or give `options`/`positionals` (`positionals = []` for none); "
                         "`runtime migrate` rewrites rules of the old form")


def _program_rules(v: Any, grammars: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    if not isinstance(v, list):
        raise ValueError("expected an array of program rules")
    rules: list[dict[str, Any]] = []
    for n, item in enumerate(v):
        try:
            if isinstance(item, dict):
                _old_form(item)
            rule = ProgramRule.model_validate(item)
            raw = rule.model_dump(by_alias=True, exclude_unset=True)
            if rule.grammar is not None:
                inline = sorted(k for k in _GRAMMAR_KEYS if k in raw)
                if inline:
                    raise ValueError(f"`{rule.program}` names the grammar `{rule.grammar}` and also sets "
                                     f"{', '.join(inline)}; put them in one place")
                found = (grammars or {}).get(rule.grammar)
                if found is None:
                    known = ", ".join(sorted(grammars or {})) or "none"
                    raise ValueError(f"unknown grammar `{rule.grammar}` (the catalog's programs/ folder has: {known})")
                raw = {**found, **raw}
            compiled = compile_grammar(raw, rule.program)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            raise ValueError(f"rule {n + 1}: {describe(dict(err))}") from None
        except ValueError as exc:
            raise ValueError(f"rule {n + 1}: {exc}") from None
        rules.append({
            "program": rule.program, "subcommands": list(rule.subcommands), **compiled,
            "inline-code": rule.inline_code, "arg-files": rule.arg_files, "ask": rule.ask,
        })
    # Several rules may name one program (`python -m pytest` and `python -m unittest`, each with its grammar):
    # the gate tries them in order. The same rule twice is a slip, never a second meaning.
    for n, compiled_rule in enumerate(rules):
        if compiled_rule in rules[:n]:
            raise ValueError(f"rule {n + 1} repeats rule {rules.index(compiled_rule) + 1} (`{compiled_rule['program']}`)")
    return rules


PARAM_TYPES: dict[str, Callable[[Any], Any]] = {
    "bool": _bool,
    "int": _int,
    "str": _str,
    "str-list": _str_list,
    "test-results": _test_results,
    "test-source": _test_source,
    "mcp-rules": _mcp_rules,
    "ask-or-deny": _ask_or_deny,
    "glob-list": _glob_list,
    "secret-path-list": _secret_path_list,
    "control-path-list": _control_path_list,
    "tool-list": _tool_list,
    "command": _command,
    "command-list": _command_list,
    "program-rules": _program_rules,
    "domain-list": _domain_list,
    "cidr-list": _cidr_list,
    "port-list": _port_list,
}


def check_value(type_name: str, value: Any, grammars: dict[str, dict[str, Any]] | None = None) -> Any:
    """Validate and normalise ``value`` as ``type_name``; ValueError if it is not one.

    ``grammars`` are the catalog's named argument grammars, which program rules may refer to.
    """
    if type_name == "program-rules":
        return _program_rules(value, grammars)
    return PARAM_TYPES[type_name](value)
