"""Path globs of write scopes, and their translation to anchored regexes.

Globs are relative to the worktree root and matched against whole path
components: ``*`` and ``?`` never cross a ``/``, ``**`` is a whole component
spanning any depth. A glob that matches a directory matches everything inside
it (``src`` and ``src/`` mean the whole ``src`` tree). Standard library only.

Hand-written rather than pathspec or wcmatch: these are write scopes, the
security boundary, with a narrower meaning than gitignore's (no negation, no
basename matching anywhere, ``..`` refused). The gate matches by hand too
(``split_globs``, ``match_split``), without `re`: the hook is a fresh process
per tool call and `re` costs about 9 ms to import, a third of a cold hook. The
regexes stay the reference: a property test holds the two to one meaning.
"""

from __future__ import annotations

_SPECIAL = set("*?[")
_DRIVE_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# Any characters, newlines included, to the very end: a file name may hold a newline, and `$` would also
# match before a final one (`src/a.py` would cover a file named "src/a.py\n").
_ANY = "(?s:.*)"


def check_glob(glob: str) -> str:
    """Return the normalised glob or raise ValueError saying what is wrong."""
    if not isinstance(glob, str) or not glob:
        raise ValueError("a glob must be a non-empty string")
    if "\x00" in glob or "\\" in glob:
        raise ValueError(f"glob `{glob}` contains a NUL byte or a backslash")
    if glob.startswith("/") or glob[1:2] == ":" and glob[0] in _DRIVE_LETTERS:
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
    import re  # translating to a regex: never the gate's own matching

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


def split_globs(globs: list[str]) -> tuple[tuple[str, ...], ...] | None:
    """The globs' components, for ``match_split``; None when one has a `[` class, which only the regex reads."""
    checked = [check_glob(g) for g in globs]
    if any("[" in g for g in checked):
        return None
    return tuple(tuple(g.split("/")) for g in checked)


def match_split(split: tuple[tuple[str, ...], ...], rel: str) -> bool:
    """Does ``rel`` match one of the globs (``split_globs``) or lie under one? What ``globs_to_regex`` matches."""
    names = rel.split("/")
    return any(_match_parts(parts, names) for parts in split)


def _match_parts(parts: tuple[str, ...], names: list[str]) -> bool:
    # The positions in `names` the glob's components so far can end at. A component takes one name
    # (`*` and `?` never cross a `/`); `**` takes any number of non-empty names (`(?:[^/]+/)*`); as the
    # last component it takes the rest, which must hold at least the `/` after the part before it.
    at = {0}
    last = len(parts) - 1
    for n, part in enumerate(parts):
        if part == "**":
            if n == last:
                return n == 0 or any(i < len(names) for i in at)
            reach = set(at)
            for i in at:
                while i < len(names) and names[i]:
                    i += 1
                    reach.add(i)
            at = reach
        else:
            at = {i + 1 for i in at if i < len(names) and _match_name(part, names[i])}
        if not at:
            return False
    return True  # the globs' last component matched; anything under it is covered (`(?:/.*)?`)


def _match_name(pattern: str, name: str) -> bool:
    """One component: `*` any run of characters, `?` any one, anything else itself."""
    if "*" not in pattern and "?" not in pattern:
        return pattern == name
    # The classic wildcard walk: on a mismatch, go back to the last `*` and let it take one more character.
    p = i = 0
    star = -1
    mark = 0
    while i < len(name):
        if p < len(pattern) and pattern[p] == "*":
            star, mark = p, i
            p += 1
        elif p < len(pattern) and (pattern[p] == "?" or pattern[p] == name[i]):
            p += 1
            i += 1
        elif star >= 0:
            p = star + 1
            mark += 1
            i = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)
