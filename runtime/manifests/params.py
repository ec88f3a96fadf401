"""Typed atom parameters: the type names an atom may declare, their checks, and the values they check to
(``ParamValue``): shell rules and MCP rules as the models that validate them, the rest as plain values."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Literal, TypeAlias, TypeVar

from pydantic import Field, ValidationError, field_validator, model_validator

from runtime.lang.globs import check_glob
from runtime.lang.jsontypes import JSON, JSONDict
from runtime.model import Model, describe

PROGRAM_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")




class Trailing(Model):
    """The grammar of the words after ``--`` (cargo test's harness options)."""

    option_style: Literal["gnu", "go"] = "gnu"
    options: dict[str, str | list[str]] = Field(default_factory=dict)
    positionals: list[str | list[str]] = Field(default_factory=list)

    def policy_json(self) -> JSONDict:
        return {"option-style": self.option_style, "options": dict(self.options), "positionals": list(self.positionals)}


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

    def grammar_json(self) -> JSONDict:
        """The grammar as the policy holds it, which ``runtime.lang.grammar.Grammar`` reads."""
        return {
            "option-style": self.option_style,
            "options": dict(self.options),
            "positionals": list(self.positionals),
            "trailing": self.trailing.policy_json() if self.trailing is not None else None,
            "env": list(self.env),
            "xargs": self.xargs,
            "cwd": self.cwd,
            "response-files": self.response_files,
            "harmless-options": self.harmless_options,
            "min-positionals": self.min_positionals,
            "glob-writes": self.glob_writes,
            "stdin": self.stdin,
            "forbidden": dict(self.forbidden),
            "anchored": {folder: list(names) for folder, names in self.anchored.items()},
        }


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

    def policy_json(self) -> JSONDict:
        """The rule as the policy holds it (a compiled rule: ``compile_grammar``'s)."""
        return {"program": self.program, "subcommands": list(self.subcommands), **self.grammar_json(),
                "inline-code": self.inline_code, "arg-files": self.arg_files, "ask": self.ask}


# A grammar's keys, by field name: what a rule naming a grammar may not set itself.
_GRAMMAR_KEYS = {name: field.alias or name for name, field in GrammarFields.model_fields.items()}
# Types that mean the program loads code from, or writes to, what it is given: not harmless options.
_NOT_HARMLESS = ("path-in-root", "path-in-scope", "folder-in-scope", "file-in-scope", "copy-in-scope", "copy-to-scope",
                 "diff")


V = TypeVar("V")
G = TypeVar("G", bound=GrammarFields)


def _spellings(options: Mapping[str, V]) -> dict[str, V]:
    """One entry per spelling: `-v|--verbose` is two."""
    out: dict[str, V] = {}
    for key, vtype in options.items():
        for spelling in key.split("|"):
            if spelling in out:
                raise ValueError(f"option `{spelling}` is declared twice")
            out[spelling] = vtype
    return out


def compile_grammar(fields: G, program: str) -> G:
    """A grammar as the policy holds it: one entry per option spelling, every type checked."""
    from runtime.lang.grammar import Grammar, GrammarError

    options = _spellings(fields.options)
    forbidden = {spelling: why for key, why in fields.forbidden.items()
                 for spelling in (key.split("|") if key.startswith("-") else [key])}
    for folder, names in fields.anchored.items():
        for name in (folder, *names):
            vtype = options.get(name)
            if not isinstance(vtype, str) or vtype.rstrip("?") not in ("path-in-scope", "folder-in-scope", "file-in-scope"):
                raise ValueError(f"anchored `{folder}`: `{name}` must be an option declared with a path type")
    if fields.glob_writes:
        last = fields.positionals[-1] if fields.positionals else None
        if not (isinstance(last, str) and last in ("path-in-scope...", "file-in-scope...")):
            raise ValueError("`glob-writes` is about the files a program writes: its last operand type must be "
                             "`path-in-scope...` or `file-in-scope...`")
    if fields.harmless_options:
        types = [*options.values(), *fields.positionals]
        typed = [t for t in types if isinstance(t, str) and t.rstrip("?.") in _NOT_HARMLESS]
        if typed:
            raise ValueError(f"`harmless-options` says no option writes or loads code, but the grammar has "
                             f"{typed[0].rstrip('?.')} values")
    trailing = fields.trailing
    if trailing is not None:
        trailing = trailing.model_copy(update={"options": _spellings(trailing.options)})
    compiled = fields.model_copy(update={"options": options, "forbidden": forbidden, "trailing": trailing})
    try:
        Grammar(compiled.grammar_json(), program)
    except GrammarError as exc:
        raise ValueError(str(exc)) from None
    return compiled


def _str(v: JSON) -> str:
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

    def policy_json(self) -> JSONDict:
        return {"server": self.server, "tools": list(self.tools), "reads": list(self.reads),
                "writes": list(self.writes), "urls": list(self.urls), "ask": self.ask}

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


HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")  # a token, as HTTP names a header
_SEND_NEEDS = {"header": "header", "basic": "username", "query": "query"}  # send -> the key it needs
_NEEDED_BY = {key: send for send, key in _SEND_NEEDS.items()}


class CredentialRule(Model):
    """One credential of ``net::egress-allowlist`` (a role's parameter, never a task's): the egress proxy adds it
    to every request to ``host`` (a name, not a pattern), terminating TLS for that host alone; the secret comes
    from the orchestrator's environment variable, a file or a command, and never enters the sandbox. ``send``:
    an `Authorization: Bearer` header, `basic` auth (``username`` and the secret), a named ``header``, or a
    ``query`` parameter (for registries that need one)."""

    host: str
    env: str | None = None
    file: str | None = None
    command: list[str] | None = None
    send: Literal["bearer", "basic", "header", "query"] = "bearer"
    header: str | None = None
    username: str | None = None
    query: str | None = None

    def policy_json(self) -> JSONDict:
        return {"host": self.host, "env": self.env, "file": self.file,
                "command": list(self.command) if self.command is not None else None, "send": self.send,
                "header": self.header, "username": self.username, "query": self.query}

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        from runtime.lang.domains import is_ip_literal, normalise_host

        name = normalise_host(v)
        if name is None or is_ip_literal(v) or "*" in v:
            raise ValueError(f"`{v}` is not a host name (one name: a credential is added for it alone)")
        return name

    @model_validator(mode="after")
    def _shape(self) -> CredentialRule:
        sources = [k for k in ("env", "file", "command") if getattr(self, k) is not None]
        if len(sources) != 1:
            raise ValueError("a credential names exactly one source of its secret: `env`, `file` or `command`")
        if self.env is not None and not ENV_NAME.fullmatch(self.env):
            raise ValueError(f"`{self.env}` is not an environment variable's name")
        if self.command is not None and not self.command:
            raise ValueError("`command` is a program and its arguments")
        wanted = _SEND_NEEDS.get(self.send)
        for key, send in _NEEDED_BY.items():
            if getattr(self, key) is not None and send != self.send:
                raise ValueError(f"`{key}` is for `send = \"{send}\"`")
        if wanted is not None and not getattr(self, wanted):
            raise ValueError(f"`send = \"{self.send}\"` needs `{wanted}`")
        if self.header is not None and not HEADER_NAME.fullmatch(self.header):
            raise ValueError(f"`{self.header}` is not a header's name")
        return self


def _credential_rules(v: JSON) -> list[CredentialRule]:
    if not isinstance(v, list):
        raise ValueError("expected an array of credentials")
    out = []
    for n, item in enumerate(v):
        try:
            out.append(CredentialRule.model_validate(item))
        except ValidationError as exc:
            raise ValueError(f"credential {n + 1}: {describe(exc.errors(include_url=False)[0])}") from None
    hosts = [c.host for c in out]
    for n, host in enumerate(hosts):
        if host in hosts[:n]:
            raise ValueError(f"credential {n + 1}: a second credential for `{host}`")
    return out


def _mcp_rules(v: JSON) -> list[McpRule]:
    if not isinstance(v, list):
        raise ValueError("expected an array of MCP rules")
    out = []
    for n, item in enumerate(v):
        try:
            out.append(McpRule.model_validate(item))
        except ValidationError as exc:
            raise ValueError(f"rule {n + 1}: {describe(exc.errors(include_url=False)[0])}") from None
    return out


def _ask_or_deny(v: JSON) -> str:
    if v not in ("ask", "deny"):
        raise ValueError(f"expected \"ask\" or \"deny\", got {v!r}")
    return str(v)


def _test_results(v: JSON) -> str:
    if v not in TEST_RESULTS:
        raise ValueError(f"expected one of {', '.join(repr(x) for x in TEST_RESULTS)}, got {v!r}")
    return str(v)


def _test_source(v: JSON) -> str:
    """Hidden tests: an absolute path to a folder outside the repository, or a git revision (checked where the
    repository is known, before anything runs)."""
    text = _str(v)
    if text and (text.startswith("-") or "\n" in text or "\0" in text):
        raise ValueError(f"expected an absolute path or a git revision, got {text!r}")
    return text


def _str_list(v: JSON) -> list[str]:
    if not isinstance(v, list):
        raise ValueError(f"expected a list of strings, got {type(v).__name__}")
    out = [_str(x) for x in v]
    dupes = sorted({x for x in out if out.count(x) > 1})
    if dupes:
        raise ValueError(f"duplicate entries: {', '.join(dupes)}")
    return out


def _int(v: JSON) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError("expected a non-negative integer")
    return v


def _bool(v: JSON) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _command(v: JSON) -> str:
    s = _str(v)
    if not s.strip() or "\x00" in s:
        raise ValueError("expected a non-empty shell command")
    return s


def _command_list(v: JSON) -> list[str]:
    return [_command(x) for x in _str_list(v)]


def _glob_list(v: JSON) -> list[str]:
    return [check_glob(g) for g in _str_list(v)]


def _secret_path_list(v: JSON) -> list[str]:
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


def _control_path_list(v: JSON) -> list[str]:
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


def _tool_list(v: JSON) -> list[str]:
    out = _str_list(v)
    for t in out:
        if not TOOL_NAME.fullmatch(t):
            raise ValueError(f"`{t}` is not a tool name")
    return out


def _domain_list(v: JSON) -> list[str]:
    from runtime.lang.domains import pattern_error

    out = _str_list(v)
    for pattern in out:
        if (why := pattern_error(pattern)) is not None:
            raise ValueError(why)
    return out


def _cidr_list(v: JSON) -> list[str]:
    import ipaddress

    out = _str_list(v)
    for cidr in out:
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            raise ValueError(f"`{cidr}` is not an address or an address range (CIDR)") from None
    return out


def _port_list(v: JSON) -> list[int]:
    if isinstance(v, list):
        ports = [x for x in v if isinstance(x, int) and not isinstance(x, bool) and 0 < x < 65536]
        if len(ports) == len(v):
            return list(dict.fromkeys(ports))
    raise ValueError("expected an array of port numbers (1-65535)")


_OLD_KEYS = ("deny-flags", "root-path-flags", "scope-path-flags", "positional-writes")


def _old_form(item: Mapping[str, JSON]) -> None:
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


def _program_rules(v: JSON, grammars: Mapping[str, GrammarFields] | None = None) -> list[ProgramRule]:
    if not isinstance(v, list):
        raise ValueError("expected an array of program rules")
    rules: list[ProgramRule] = []
    for n, item in enumerate(v):
        try:
            if isinstance(item, dict):
                _old_form(item)
            rule = ProgramRule.model_validate(item)
            if rule.grammar is not None:
                inline = sorted(_GRAMMAR_KEYS[k] for k in rule.model_fields_set if k in _GRAMMAR_KEYS)
                if inline:
                    raise ValueError(f"`{rule.program}` names the grammar `{rule.grammar}` and also sets "
                                     f"{', '.join(inline)}; put them in one place")
                found = (grammars or {}).get(rule.grammar)
                if found is None:
                    known = ", ".join(sorted(grammars or {})) or "none"
                    raise ValueError(f"unknown grammar `{rule.grammar}` (the catalog's programs/ folder has: {known})")
                rule = rule.model_copy(update={k: getattr(found, k) for k in _GRAMMAR_KEYS})
            rules.append(compile_grammar(rule, rule.program))
        except ValidationError as exc:
            raise ValueError(f"rule {n + 1}: {describe(exc.errors(include_url=False)[0])}") from None
        except ValueError as exc:
            raise ValueError(f"rule {n + 1}: {exc}") from None
    # Several rules may name one program (`python -m pytest` and `python -m unittest`, each with its grammar):
    # the gate tries them in order. The same rule twice is a slip, never a second meaning.
    held = [rule.policy_json() for rule in rules]
    for n, one in enumerate(held):
        if one in held[:n]:
            raise ValueError(f"rule {n + 1} repeats rule {held.index(one) + 1} (`{rules[n].program}`)")
    return rules


ParamValue: TypeAlias = "bool | int | str | list[str] | list[int] | list[ProgramRule] | list[McpRule] | list[CredentialRule]"
"""A parameter's value as its type checks it (``check_value``): what roles, tasks and atoms' defaults hold."""

PARAM_TYPES: dict[str, Callable[[JSON], ParamValue]] = {
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
    "credential-list": _credential_rules,
}


def check_value(type_name: str, value: JSON, grammars: Mapping[str, GrammarFields] | None = None) -> ParamValue:
    """Validate and normalise ``value`` as ``type_name``; ValueError if it is not one.

    ``grammars`` are the catalog's named argument grammars, which program rules may refer to.
    """
    if type_name == "program-rules":
        return _program_rules(value, grammars)
    return PARAM_TYPES[type_name](value)


T = TypeVar("T", str, int, ProgramRule, McpRule, CredentialRule)


def param_list(value: ParamValue | None, item: type[T]) -> list[T]:
    """A list parameter's value, each item a ``item`` (a glob list's `str`, a shell rule); empty when unset."""
    if value is None:
        return []
    if isinstance(value, list):
        items = [x for x in value if isinstance(x, item)]
        if len(items) == len(value):
            return items
    raise TypeError(f"expected a list of {item.__name__}, got {value!r}")


def param_json(value: ParamValue) -> JSON:
    """A value as the compiled policy holds it: rules as their tables, the rest as they are."""
    if isinstance(value, list):
        return [x.policy_json() if isinstance(x, (ProgramRule, McpRule, CredentialRule)) else x for x in value]
    return value
