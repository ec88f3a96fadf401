"""Path globs of write scopes, and their translation to anchored regexes.

Globs are relative to the worktree root and matched against whole path
components: ``*`` and ``?`` never cross a ``/``, ``**`` is a whole component
spanning any depth. A glob that matches a directory matches everything inside
it (``src`` and ``src/`` mean the whole ``src`` tree). Standard library only:
the compiled policy carries the regexes, so the gate never sees a glob.

Hand-written rather than pathspec or wcmatch: these are write scopes, the
security boundary, with a narrower meaning than gitignore's (no negation, no
basename matching anywhere, ``..`` refused), and the hook, a fresh process per
tool call, imports nothing but the regexes they compile to.
"""

from __future__ import annotations

import re

_SPECIAL = set("*?[")
# Any characters, newlines included, to the very end: a file name may hold a newline, and `$` would also
# match before a final one (`src/a.py` would cover a file named "src/a.py\n").
_ANY = "(?s:.*)"


def check_glob(glob: str) -> str:
    """Return the normalised glob or raise ValueError saying what is wrong."""
    if not isinstance(glob, str) or not glob:
        raise ValueError("a glob must be a non-empty string")
    if "\x00" in glob or "\\" in glob:
        raise ValueError(f"glob `{glob}` contains a NUL byte or a backslash")
    if glob.startswith("/") or re.match(r"^[A-Za-z]:", glob):
        raise ValueError(f"glob `{glob}` is absolute; scopes are relative to the worktree root")
    g = glob
    while g.startswith("./"):
        g = g[2:]
    g = g.rstrip("/") or "**"
    parts = g.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise ValueError(f"glob `{glob}` has an empty, `.` or `..` component")
        if "**" in part and part != "**":
            raise ValueError(f"glob `{glob}`: `**` must be a whole path component")
        depth = 0
        for ch in part:
            if ch == "[":
                depth += 1
            elif ch == "]" and depth:
                depth -= 1
        if depth:
            raise ValueError(f"glob `{glob}` has an unclosed `[`")
    return g


def _component(part: str) -> str:
    out, i = [], 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            j = part.index("]", i + 1) if "]" in part[i + 1:] else -1
            body = part[i + 1:j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\").replace("/", "") + "]")
            i = j
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def glob_to_regex(glob: str) -> str:
    """An anchored regex matching a relative POSIX path or anything under it."""
    parts = check_glob(glob).split("/")
    body = ""
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        if part == "**":
            body += _ANY if last else "(?:[^/]+/)*"
        else:
            body += _component(part) + ("" if last else "/")
    if body.endswith(_ANY):
        return "^" + body + "\\Z"
    return "^" + body + f"(?:/{_ANY})?\\Z"


def globs_to_regex(globs: list[str]) -> str | None:
    """One alternation for a list of globs (``None`` for an empty list).

    Globs of the form ``**/NAME`` share one ``(?:[^/]+/)*`` prefix, so a long
    list of file names (the dependency files) is matched in one pass.
    """
    if not globs:
        return None
    names, others = [], []
    for g in (check_glob(g) for g in globs):
        tail = g[3:]
        if g.startswith("**/") and tail and "/" not in tail and tail != "**":
            names.append(_component(tail))
        else:
            others.append(f"(?:{glob_to_regex(g)})")
    if names:
        others.append(f"(?:^(?:[^/]+/)*(?:{'|'.join(names)})(?:/{_ANY})?\\Z)")
    return "|".join(others)


def is_literal(glob: str) -> bool:
    return not (_SPECIAL & set(glob))


def literal_parts(glob: str) -> tuple[str, ...]:
    """The components of ``glob`` before its first wildcard (``src/gen/*.py`` -> ``("src", "gen")``)."""
    out: list[str] = []
    for part in check_glob(glob).split("/"):
        if not is_literal(part):
            break
        out.append(part)
    return tuple(out)
