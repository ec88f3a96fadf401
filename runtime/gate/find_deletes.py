"""What a find that removes what it finds removes: the gate walks the folders itself and checks each path.

`find . -name '*.pyc' -delete` and `find . -name __pycache__ -type d -prune
-exec rm -rf {} +` remove paths nobody names. The gate reads such a find only
when its expression is a plain conjunction it can evaluate as find does
(`-name`, `-iname`, `-type`, `-maxdepth`, `-mindepth`, and `-prune`, `-depth`,
`-xdev`, `-empty`, which only narrow what is found), walks every starting point
the way find does without -L (links are not followed; a link is found, never
entered), and checks every path it would remove like a write: what the tests
select, and with `rm -r` all that a selected folder holds. It never walks into
a control folder (`.git`, `.claude`, the runtime's): others make files there
that no check now foresees, so such a find starts in the folders worked in. `-prune`, `-empty` and
`-xdev` are not modelled, so more is checked than find removes, never less.

A path made under a starting point after the decision was made by a write the
gate checked, or by code the program runs, which the sandbox is there for.
The walk is bounded: past MAX_ENTRIES the find is refused, with the advice to
start it in a narrower folder.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import ALLOW, DENY, deny
from runtime.gate.paths import PathError, protected_reason, resolve

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.shell_types import Command

MAX_ENTRIES = 50_000
_TESTS = frozenset({"-name", "-iname", "-type", "-maxdepth", "-mindepth"})
_NARROWING = frozenset({"-prune", "-depth", "-xdev", "-mount", "-empty", "-print", "-delete", "-a", "-and"})
_TYPES = {"f": "file", "d": "dir", "l": "link"}


class _Refused(Exception):
    pass


def check_removals(cmd: Command, ctx: Context, atom: str | None) -> GateDecision | None:
    """None when every path the find removes may be removed; else the refusal, or an ask."""
    try:
        starts, tests, depth = _read(cmd)
    except _Refused as exc:
        return deny(f"`find`: {exc}", atom, "find")
    tree = cmd.deletes == "tree"
    pending = None
    seen = [0]
    policy = ctx.policy

    def entering(path: str, shown: str) -> None:
        # Never into a control folder (or the runtime's): git, Claude Code and the runtime make files there
        # of their own, which no check the gate made can foresee (`find .git -name '*.lock' -delete` would
        # remove the lock of a git running beside the agent), whatever it holds now.
        try:
            resolved = resolve(path, "/")
        except PathError as exc:
            raise _Refused(str(exc)) from None
        if protected_reason(resolved, policy.protected, policy.exempt, policy.root) is not None:
            raise _Refused(f"it would walk into `{shown}`, where git, Claude Code or the runtime make files of their "
                           "own that the gate cannot see coming; start it in the folders you work in "
                           "(`find src tests -name '*.pyc' -delete`)")

    for cwd in cmd.cwds:
        for start in starts:
            try:
                for path in _removed(os.path.join(cwd, start), start, tests, depth, tree, seen, entering):
                    d = ctx.check_write(path, (cwd,), f"`find` removes `{path}`")
                    if d.verdict == DENY:
                        return d
                    pending = pending if d.verdict == ALLOW else d
            except _Refused as exc:
                return deny(f"`find {start}`: {exc}", atom, "find")
    return pending


def _read(cmd: Command) -> tuple[list[str], list[tuple[str, str]], tuple[int, int]]:
    words = [w.value for w in cmd.words]
    starts: list[str] = []
    i = 0
    while i < len(words) and not words[i].startswith(("-", "(", "!")):
        starts.append(words[i])
        i += 1
    if any(w.glob or w.tilde for w in cmd.words[:i]):
        raise _Refused("write the folders to search out (no globs or `~`) when find removes what it finds")
    tests: list[tuple[str, str]] = []
    low, high = 0, -1
    while i < len(words):
        word = words[i]
        if word in _NARROWING:
            i += 1
            continue
        if word not in _TESTS or i + 1 >= len(words):
            raise _Refused(f"`{word}`: find removes what it finds only when its tests are -name, -iname, -type, "
                           "-maxdepth and -mindepth, joined by and (no -o, `!`, parentheses or -L); find the "
                           "files first, then remove them by name")
        value = words[i + 1]
        if word in ("-maxdepth", "-mindepth"):
            if not value.isdigit():
                raise _Refused(f"`{word} {value}`: give a number")
            low, high = (int(value), high) if word == "-mindepth" else (low, int(value))
        elif word == "-type":
            if value not in _TYPES:
                raise _Refused(f"`-type {value}`: use f, d or l when find removes what it finds")
            tests.append((word, value))
        else:
            if "[" in value or "\\" in value or len(value) > 255:  # fnmatch(3) and Python's read classes apart
                raise _Refused(f"`{word} {value}`: use `*` and `?` only in a pattern for what find removes")
            tests.append((word, value))
        i += 2
    return starts or ["."], tests, (low, high)


def _matches(name: str, kind: str, tests: list[tuple[str, str]]) -> bool:
    for test, value in tests:
        if test == "-type":
            if _TYPES[value] != kind:
                return False
        elif not re.match(fnmatch.translate(value), name, re.DOTALL | (re.IGNORECASE if test == "-iname" else 0)):
            return False
    return True


def _removed(full: str, shown: str, tests: list[tuple[str, str]], depth: tuple[int, int], tree: bool,
             seen: list[int], entering: Callable[[str, str], None] | None = None) -> Iterator[str]:
    """The paths under ``full`` (named ``shown`` as find prints it) that the find removes, walked depth first
    without following links; with ``tree``, all a selected folder holds too."""
    low, high = depth
    stack: list[tuple[str, str, int, bool]] = [(full, shown, 0, False)]
    while stack:
        path, name_shown, level, inside = stack.pop()
        seen[0] += 1
        if seen[0] > MAX_ENTRIES:
            raise _Refused(f"more than {MAX_ENTRIES} paths to look at; start find in a narrower folder")
        try:
            st = os.lstat(path)
        except OSError:
            continue  # nothing there (yet): nothing to remove
        kind = "dir" if stat.S_ISDIR(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode) else "file"
        base = os.path.basename(path.rstrip("/")) or path
        selected = inside or (level >= low and _matches(base, kind, tests))
        if selected:
            yield name_shown
        if kind != "dir" or (high >= 0 and level >= high and not (tree and selected)):
            continue
        if entering is not None:
            entering(path, name_shown)
        try:
            names = os.listdir(path)
        except OSError:
            continue
        for child in names:
            beyond = high >= 0 and level + 1 > high
            if beyond and not (tree and selected):
                continue
            stack.append((os.path.join(path, child), f"{name_shown.rstrip('/')}/{child}", level + 1,
                          (tree and selected) or (inside and tree)))
