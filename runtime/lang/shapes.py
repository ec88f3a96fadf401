"""Whole-string shapes the gate checks on every call: program names, option spellings, numbers, modes.

Written by hand rather than as regular expressions because the hook is a fresh process per tool call
and `re` (with `enum`, `functools` and `collections`, which it imports) costs about 9 ms to import, a
third of a cold hook; every shape here is a run of characters from an ASCII set, which `str` methods
check exactly. A string is matched whole: no `$` that would also take a final newline.
"""

from __future__ import annotations

_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_DIGITS = frozenset("0123456789")
_ALNUM = _LETTERS | _DIGITS
_WORD = _ALNUM | {"_"}
_PROGRAM_REST = _WORD | set(".+-")
_OPTION_REST = _PROGRAM_REST | {":"}
_VERSION = _DIGITS | {"."}
_DOTTED = _WORD | {"."}
_TARGET_REST = _WORD | set(".-")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_ROLE_REST = _LOWER | _DIGITS | {"-"}
_SIZE_SUFFIXES = frozenset("kKmMgGbB")
_OCTAL = frozenset("01234567")
_WHO = "ugoa"
_OPS = frozenset("-+=")
_PERMS = _OPS | set("rwxX")

# Interpreters: a rule may allow `python -m MODULE`, never a script or code they are given.
_INTERPRETERS = frozenset(("node", "nodejs", "perl", "ruby", "php", "deno", "bun", "lua", "Rscript"))


def _all_in(text: str, chars: frozenset[str]) -> bool:
    return chars.issuperset(text)


def is_program_name(text: str) -> bool:
    """A program called by its plain name: `[A-Za-z0-9_][A-Za-z0-9_.+-]*`."""
    return bool(text) and text[0] in _WORD and _all_in(text, _PROGRAM_REST)


def is_option_spelling(text: str) -> bool:
    """An option as a grammar spells it: `-x`, `--long-name` (`--?[A-Za-z0-9][A-Za-z0-9_.:+-]*`)."""
    body = text[2:] if text.startswith("--") else text[1:] if text.startswith("-") else ""
    return bool(body) and body[0] in _ALNUM and _all_in(body, _OPTION_REST)


def is_dotted_name(text: str) -> bool:
    """A Python module as `-m` takes it: `[A-Za-z_][A-Za-z0-9_.]*`."""
    return bool(text) and (text[0] in _LETTERS or text[0] == "_") and _all_in(text, _DOTTED)


def is_target_name(text: str) -> bool:
    """A toolchain target: `[A-Za-z0-9_][A-Za-z0-9_.-]*`."""
    return bool(text) and text[0] in _WORD and _all_in(text, _TARGET_REST)


def is_python(name: str) -> bool:
    """`python`, `python3`, `python3.12`, `pypy3`: `(python|pypy)[0-9.]*`."""
    for stem in ("python", "pypy"):
        if name.startswith(stem):
            return _all_in(name[len(stem):], _VERSION)
    return False


def is_interpreter(name: str) -> bool:
    """A program that runs code it is given: Python, node, perl, ruby, php, deno, bun, lua, Rscript."""
    return is_python(name) or name in _INTERPRETERS


def is_negative_number(text: str) -> bool:
    """`-5`, `-20`: `-[0-9]+` (`nice -5`, `head -20`)."""
    return len(text) > 1 and text[0] == "-" and _all_in(text[1:], _DIGITS)


def is_env_name(text: str) -> bool:
    """An environment variable's name: `[A-Za-z_][A-Za-z0-9_]*`."""
    return bool(text) and (text[0] in _LETTERS or text[0] == "_") and _all_in(text, _WORD)


def is_role_name(text: str) -> bool:
    """A role's name: `[a-z][a-z0-9-]{0,63}`."""
    return 0 < len(text) <= 64 and text[0] in _LOWER and _all_in(text, _ROLE_REST)


def is_count(text: str) -> bool:
    """An integer option value, signed, with an optional size suffix: `[+-]?[0-9]+[kKmMgGbB]?` (`-n +5`, `-c 10k`)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if body[-1:] in _SIZE_SUFFIXES:
        body = body[:-1]
    return bool(body) and _all_in(body, _DIGITS)


def is_file_mode(text: str) -> bool:
    """A chmod mode: octal (`0?[0-7]{1,3}`), or symbolic clauses joined by commas (`u+x,go-w`), each
    `[ugoa]*` then an operator (`-+=`) and any run of operators and `rwxX`."""
    if text and _all_in(text, _OCTAL):
        return len(text) <= 3 or len(text) == 4 and text[0] == "0"
    for clause in text.split(","):
        perms = clause.lstrip(_WHO)
        if not perms or perms[0] not in _OPS or not _all_in(perms, _PERMS):
            return False
    return True


def has_any(text: str, chars: str) -> bool:
    """Does ``text`` hold any of ``chars``?"""
    return any(ch in text for ch in chars)


def has_space_or_any(text: str, chars: str) -> bool:
    """Does ``text`` hold whitespace (as `str.isspace` and `re`'s `\\s` read it) or any of ``chars``?"""
    return any(ch in chars or ch.isspace() for ch in text)
