"""Interpreter one-liners: code given on the command line or on stdin.

``python -c``, ``perl -e``, ``node -e``, ``awk '...'``, a script read from
stdin, and ``sed`` scripts beyond plain printing and substitution all run code
the gate cannot judge; they are denied unless a rule sets ``inline-code``.
"""

from __future__ import annotations

import re

_PYTHON = re.compile(r"^(?:python|pypy)[0-9.]*$")
_AWK = frozenset({"awk", "gawk", "mawk", "nawk"})
# name -> (letters that take inline code in a short-option cluster, long options that do,
#          short options that take a separate value, whether no script means stdin)
_SPECS: dict[str, tuple[str, frozenset[str], str, bool]] = {
    "python": ("c", frozenset(), "WXQ", True),
    "perl": ("eE", frozenset(), "IMmdxl0", True),
    "ruby": ("e", frozenset(), "IrCEKTx", True),
    "node": ("ep", frozenset({"--eval", "--print"}), "r", True),
    "nodejs": ("ep", frozenset({"--eval", "--print"}), "r", True),
    "bun": ("e", frozenset({"--eval", "--print"}), "r", False),
    "deno": ("", frozenset(), "", False),
    "php": ("rRBE", frozenset(), "cdfz", True),
    "lua": ("e", frozenset(), "l", True),
    "luajit": ("e", frozenset(), "l", True),
    "Rscript": ("e", frozenset(), "", True),
    "tclsh": ("", frozenset(), "", True),
}


def _spec_for(name: str) -> tuple[str, frozenset[str], str, bool] | None:
    if _PYTHON.match(name):
        return _SPECS["python"]
    return _SPECS.get(name)


def inline_code(name: str, args: list[str]) -> str | None:
    """Why ``name args`` runs code given inline, or None."""
    if name in _AWK:
        if "-f" in args or any(a.startswith("--file") for a in args):
            return None
        return f"`{name}` programs given on the command line can run commands (system, pipes); use grep, cut or sort"
    if name == "sed":
        return _sed(args)
    if name == "deno" and args[:1] == ["eval"]:
        return "`deno eval` runs inline code"
    spec = _spec_for(name)
    if spec is None:
        return None
    letters, longs, with_value, stdin = spec
    if args and args[0] in ("--version", "-V", "--help", "-h"):
        return None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-":
            return f"`{name} -` runs a script read from stdin"
        if a == "--":
            break
        if a.startswith("--"):
            if a.split("=", 1)[0] in longs:
                return f"`{name} {a.split('=', 1)[0]}` runs inline code"
            i += 1
            continue
        if a.startswith("-"):
            cluster = a[1:]
            for n, ch in enumerate(cluster):
                if ch in letters:
                    return f"`{name} -{ch}` runs inline code; write a file in your scope and run that instead, if your rules allow"
                if ch in with_value:
                    i += 0 if n + 1 < len(cluster) else 1
                    break
                if ch == "m" and letters == "c":
                    return None  # python -m MODULE: the rule's subcommands decide
            i += 1
            continue
        return None  # a script file: the rules decide
    return f"`{name}` with no script reads code from stdin" if stdin else None


# GNU sed's long options (getopt_long accepts any unambiguous prefix) and what they are.
_SED_LONG = {
    "expression": "script", "file": "file", "in-place": "flag", "line-length": "value", "null-data": "flag",
    "zero-terminated": "flag", "quiet": "flag", "silent": "flag", "regexp-extended": "flag", "separate": "flag",
    "unbuffered": "flag", "posix": "flag", "debug": "flag", "sandbox": "flag", "follow-symlinks": "flag",
    "binary": "flag", "help": "flag", "version": "flag",
}
_SED_SHORT_VALUE = {"e": "script", "f": "file", "l": "value"}
_SED_SHORT_FLAGS = set("nErsuzi")


def _sed_options(args: list[str]) -> tuple[list[str], list[str]] | str:
    """(scripts given with -e, other operands), or why the options cannot be read."""
    scripts, operands, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands += args[i + 1:]
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            matches = [o for o in _SED_LONG if o.startswith(name)] if name else []
            kind = _SED_LONG[name] if name in _SED_LONG else (_SED_LONG[matches[0]] if len(matches) == 1 else None)
            if kind is None:
                return f"`sed {a}` is not an option the gate can read"
            if kind == "flag" and eq:
                full = name if name in _SED_LONG else matches[0]
                if full == "in-place":
                    return (f"`sed {a}` keeps a backup at FILE{value}, which the gate does not check; use `sed -i` "
                            "with no suffix")
                return f"`sed --{full}` takes no value"
            if kind in ("script", "file", "value") and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if kind == "script":
                scripts.append(value)
            elif kind == "file":
                return "`sed --file` runs a script file the gate cannot read; give the script on the command line (`sed 's/a/b/' FILE`)"
            i += 1
            continue
        if a.startswith("-") and a != "-":
            cluster = a[1:]
            for n, ch in enumerate(cluster):
                kind = _SED_SHORT_VALUE.get(ch)
                if kind is None:
                    if ch not in _SED_SHORT_FLAGS:
                        return f"`sed -{ch}` is not an option the gate can read"
                    if ch == "i":
                        if cluster[n + 1:]:  # -i[SUFFIX]: the rest of the cluster is a backup suffix
                            return (f"`sed -{cluster[n:]}` keeps a backup at FILE{cluster[n + 1:]}, which the gate does "
                                    "not check; use `sed -i` with no suffix")
                        break
                    continue
                value = cluster[n + 1:]
                if not value:
                    value = args[i + 1] if i + 1 < len(args) else ""
                    i += 1
                if kind == "file":
                    return "`sed -f` runs a script file the gate cannot read; give the script on the command line (`sed 's/a/b/' FILE`)"
                if kind == "script":
                    scripts.append(value)
                break
            i += 1
            continue
        operands.append(a)
        i += 1
    return scripts, operands


def _sed(args: list[str]) -> str | None:
    parsed = _sed_options(args)
    if isinstance(parsed, str):
        return parsed
    scripts, operands = parsed
    if not scripts:
        if not operands:
            return "`sed` needs its script on the command line"
        scripts = [operands[0]]
    for script in scripts:
        for part in script.replace("\n", ";").split(";"):
            if part.strip() and not _sed_safe(part):
                return f"the sed script `{script[:40]}` may write files or run commands; only addresses with p, d, q, = and s///[gip] are allowed"
    return None


_SED_FLAGS = frozenset("gipI0123456789")


def _sed_safe(part: str) -> bool:
    """Is one command of a sed script an address (`N`, `$`, `/re/`, a range of two) with p, d, q, = or
    s/re/text/ and flags g, i, p, I and a count, and nothing else?

    Scanned by hand, once through: the regular expression this replaces backtracked over runs of
    blanks and escapes (a script of 100,000 blanks held the hook for minutes).
    """
    n = len(part)
    i = _sed_address(part, _blanks(part, 0))
    if 0 <= i < n and part[i] == ",":
        j = _sed_address(part, i + 1)
        if j == i + 1:
            return False
        i = j
    if i < 0:
        return False
    i = _blanks(part, i)
    if i < n and part[i] in "pdq=":
        i += 1
    elif i < n and part[i] == "s":
        if i + 1 >= n:
            return False
        delim = part[i + 1]
        if delim.isspace() or delim == "\\" or delim.isalnum() or delim == "_":
            return False
        i += 2
        for _ in range(2):  # the pattern, then the replacement
            while i < n and part[i] != delim:
                if part[i] == "\\":
                    if i + 1 >= n or part[i + 1] == "\n":
                        return False
                    i += 1
                i += 1
            if i >= n:
                return False
            i += 1
        while i < n and part[i] in _SED_FLAGS:
            i += 1
    return _blanks(part, i) == n


def _blanks(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _sed_address(part: str, i: int) -> int:
    """The index after an optional address at ``i`` (``i`` itself when there is none), -1 when malformed."""
    n = len(part)
    if i >= n:
        return i
    if part[i] == "$":
        return i + 1
    if "0" <= part[i] <= "9":
        while i < n and "0" <= part[i] <= "9":
            i += 1
        return i
    if part[i] == "/":
        i += 1
        while i < n and part[i] != "/":
            if part[i] == "\\":
                if i + 1 >= n or part[i + 1] == "\n":
                    return -1
                i += 1
            i += 1
        return i + 1 if i < n else -1
    return i
