"""The repository's own targets, for a role that runs them (`tools::bash-allowlist`'s `repository-targets`):
`make TARGET` for each target its Makefile defines, `tox -e ENV` for each environment its tox.ini names.

Read when the policy is compiled, from the worktree it is anchored at; the hook's policy cache compiles
again when either file changes (`runtime.gate.cache`). What a target runs is the repository's own code,
as conftest.py is pytest's: the gate judges the command line, a sandbox what the recipe does.

Hand-read, not through make or tox: asking make for its database would run `$(shell ...)` in the
Makefile, and tox would build environments. A target is a line `name:` (or `a b:`) at the start of a
line, with no `=` after the colon (a variable) and no `%` (a pattern); names starting with `.` are
make's own (`.PHONY`). tox's environments are the `envlist` of `[tox]` and the `[testenv:NAME]`
sections, names only (factor expressions `py{311,312}` left out).
"""

from __future__ import annotations

import configparser
import os
import re

from runtime.lang.jsontypes import JSONDict

_TARGET = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.+-]*(?:[ \t]+[A-Za-z0-9_][A-Za-z0-9_.+-]*)*)[ \t]*::?(?!=)")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
MAX_BYTES = 1 << 20  # a Makefile or tox.ini over this is not read
INPUTS = ("Makefile", "makefile", "GNUmakefile", "tox.ini")  # what the policy reads, for the cache to watch


def _read(root: str, name: str) -> str | None:
    path = os.path.join(root, name)
    try:
        if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def make_targets(root: str) -> list[str]:
    """The targets the Makefile make would read (GNUmakefile, makefile, Makefile, in its order) defines."""
    text = next((t for t in (_read(root, n) for n in ("GNUmakefile", "makefile", "Makefile")) if t is not None), None)
    found: list[str] = []
    for line in (text or "").splitlines():
        m = _TARGET.match(line)
        if m:
            found += [n for n in m.group(1).split() if _NAME.fullmatch(n)]
    return list(dict.fromkeys(found))


def tox_envs(root: str) -> list[str]:
    text = _read(root, "tox.ini")
    if text is None:
        return []
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    names: list[str] = []
    if parser.has_option("tox", "envlist"):
        names += re.split(r"[\s,]+", parser.get("tox", "envlist"))
    names += [s.split(":", 1)[1].strip() for s in parser.sections() if s.startswith("testenv:")]
    return list(dict.fromkeys(n for n in names if _NAME.fullmatch(n)))


def repository_rules(root: str) -> list[JSONDict]:
    """Shell rules for the repository's own targets: make's (with -s, -k and -j; no -f, -C or VAR=value, which
    would run another Makefile or override what the recipes run) and tox's `-e ENV`, each compiled as a
    rule of `tools::bash-allowlist` is."""
    rules = []
    targets = make_targets(root)
    if targets:
        rules.append(make_rule(tuple(targets)))
    envs = tox_envs(root)
    if envs:
        rule = make_rule(())
        rule.update({"program": "tox", "subcommands": [f"-e {env}" for env in envs], "options": {},
                     "positionals": []})
        rules.append(rule)
    return rules


def make_rule(targets: tuple[str, ...]) -> JSONDict:
    """`make TARGET` for the targets the toolchain names: no -f, -C, -e or VAR=value (which would run
    another Makefile or override what the recipes run)."""
    return {
        "program": "make", "subcommands": [], "option-style": "gnu",
        "options": {"-s": "flag", "--silent": "flag", "--quiet": "flag", "-k": "flag", "--keep-going": "flag",
                    "-j": "int", "--jobs": "int"},
        "positionals": [list(targets)], "trailing": None, "env": [], "cwd": "in-root",
        "inline-code": False, "arg-files": False, "xargs": False, "ask": False, "response-files": False,
        "harmless-options": False, "min-positionals": 0, "glob-writes": False, "stdin": None,
    }
