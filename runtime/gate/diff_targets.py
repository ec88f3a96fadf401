"""The files a diff makes GNU patch write, read the way patch 2.7 reads them (src/pch.c, src/util.c).

Given no file to patch, patch finds its targets in the diff's headers: `---`,
`+++` and `Index:` lines, and `diff --git a/X b/Y` lines, each name cut at
the first blank (a longer name only when a tab follows it, for a date),
`/dev/null` meaning none, and ``-pN`` taking N leading parts away (runs of
slashes count once, a name with fewer parts is skipped; without ``-p`` only
the last part is kept). Which of its names patch then picks depends on which
files exist, so every name a header gives is a target here.

What patch reads beyond that is refused rather than modelled: context and
normal diffs, ed scripts (patch pipes them to ed), lines that could start
one of those anywhere (patch looks for a diff after its first header on
every line, past blanks, tabs and `X`s it skips), indented or quoted
headers, git's binary patches, symlinks and submodules (file modes other
than 100644 and 100755), carriage returns, and hunks whose lines do not add
up to their `@@` counts. Linear in the diff, no regular expression that
backtracks.
"""

from __future__ import annotations

MAX_DIFF = 1 << 20  # bytes: far above an agent's patch


class DiffError(ValueError):
    """The diff cannot be read as patch would read it; the message says what to write instead."""


_HEADERS = ("---", "+++", "***", "@@", "Index:", "Prereq:", "diff --git", "GIT binary patch", "index ", "old mode ",
            "new mode ", "deleted file mode ", "new file mode ", "rename ", "copy ", "similarity index",
            "dissimilarity index", "< ", "> ", "- ")
_GIT_EXTENDED = ("index ", "old mode ", "new mode ", "deleted file mode ", "new file mode ", "rename from ",
                 "rename to ", "copy from ", "copy to ", "similarity index ", "dissimilarity index ")
_MODES = ("100644", "100755")


def diff_targets(text: str, strip: int | None) -> list[str]:
    """Every file name patch could write for ``text`` (``strip``: the -p count, None without -p), in order,
    each once. Raises DiffError for what patch would read otherwise than here."""
    if "\r" in text:
        raise DiffError("the diff has carriage returns; write it with plain newlines")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    names: dict[str, None] = {}
    hunks = 0
    git = False  # inside a `diff --git` header block, where git's extended lines mean something
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        where = f"line {i + 1} of the diff"
        if line.startswith("@@"):
            i = _hunk(lines, i)
            hunks += 1
            git = False
            continue
        if line.startswith("diff --git "):
            for name in _git_names(line[11:], where):
                _add(names, name, strip)
            git = True
        elif git and line.startswith(_GIT_EXTENDED):
            _extended(line, where)
            if line.startswith(("rename ", "copy ")):
                # patch ignores these names (git leaves their prefix out) and takes the `diff --git` ones;
                # a name that may be written or removed is still checked, as written.
                names.setdefault(line.split(" ", 2)[2], None)
        elif line.startswith(("--- ", "+++ ")):
            _add(names, _header_name(line[4:], where, dated=True), strip)
            git = git and line.startswith("---")
        elif line.startswith("Index:"):
            _add(names, _header_name(line[6:], where, dated=False), strip)
        elif line.startswith("Prereq:"):
            pass  # patch checks a word of the file; it names nothing
        else:
            _garbage(line, where)
            git = False
        i += 1
    if not hunks and not names:
        raise DiffError("the input holds no unified diff; give patch a diff (`--- a/FILE`, `+++ b/FILE`, `@@` hunks)")
    return list(names)


def _add(names: dict[str, None], raw: str | None, strip: int | None) -> None:
    if raw is None:
        return
    name = _strip(raw, strip)
    if name is not None:
        names.setdefault(name, None)


def _strip(name: str, strip: int | None) -> str | None:
    """util.c strip_leading_slashes: each run of slashes counts once; None when patch skips the name."""
    left = -1 if strip is None else strip
    start = 0
    k = 0
    while k < len(name):
        if name[k] == "/":
            while k + 1 < len(name) and name[k + 1] == "/":
                k += 1
            if strip is None:
                start = k + 1
            else:
                left -= 1
                if left >= 0:
                    start = k + 1
        k += 1
    if (strip is None or left <= 0) and start < len(name):
        return name[start:]
    return None


def _header_name(rest: str, where: str, dated: bool) -> str | None:
    """util.c fetchname for `--- NAME[\\tDATE]` and `Index: NAME`: None for /dev/null."""
    rest = rest.lstrip(" \t\v\f")
    if rest.startswith('"'):
        raise DiffError(f"{where}: a quoted file name; write the name unquoted (no blanks, quotes or escapes)")
    end = 0
    while end < len(rest) and rest[end] not in " \t\v\f":
        end += 1
    name, after = rest[:end], rest[end:]
    if dated:
        # A blank, then a tab further on: patch takes the blanks into the name (`my file.py\tDATE`).
        if after[:1] not in ("", "\t") and "\t" in after:
            raise DiffError(f"{where}: a file name with blanks in it; rename the file, or write the diff without dates")
    elif after.strip(" \t\v\f"):
        raise DiffError(f"{where}: a file name with blanks in it; rename the file")
    if not name:
        raise DiffError(f"{where}: a header without a file name; write `--- a/FILE` and `+++ b/FILE`")
    return None if name == "/dev/null" else name


def _git_names(rest: str, where: str) -> list[str]:
    words = rest.split()
    if len(words) != 2 or any(w.startswith('"') for w in words) or rest != rest.strip() or "  " in rest:
        raise DiffError(f"{where}: `diff --git` takes two plain names (`diff --git a/FILE b/FILE`); write them so")
    return words


def _extended(line: str, where: str) -> None:
    if line.startswith(("old mode ", "new mode ", "deleted file mode ", "new file mode ")):
        mode = line.rsplit(" ", 1)[1]
        if mode not in _MODES:
            raise DiffError(f"{where}: file mode {mode} (a symlink, a submodule or another special file) is not "
                            "allowed; patch only regular files (100644, 100755)")
    elif line.startswith("index "):
        parts = line.split()
        if len(parts) > 2 and parts[2] not in _MODES:
            raise DiffError(f"{where}: file mode {parts[2]} is not allowed; patch only regular files (100644, 100755)")


def _garbage(line: str, where: str) -> None:
    """A line patch skips as text around the diffs, unless it could start one in its eyes."""
    body = line.lstrip(" \tX")
    if body != line and body.startswith(_HEADERS):
        raise DiffError(f"{where}: an indented diff line; write the diff without indentation")
    if body.startswith(_HEADERS) or body == "." or _ed_command(body):
        raise DiffError(f"{where}: `{line[:40]}` would be read by patch as part of a context, normal or ed diff; "
                        "give patch a unified diff only (`--- a/FILE`, `+++ b/FILE`, `@@` hunks)")


def _ed_command(body: str) -> bool:
    """pch.c get_ed_command_letter and the normal-diff command test, read generously: digits and commas, a, c, d
    or i, digits and commas, blanks, the end of the line (`5a`, `3,4d`, `5c7`, a bare `d`); or `s/.//`."""
    if body.startswith("s/.//"):
        return True
    body = body.rstrip(" \t")
    k = 0
    while k < len(body) and (body[k].isdigit() or body[k] == ","):
        k += 1
    if k >= len(body) or body[k] not in "acdi":
        return False
    k += 1
    while k < len(body) and (body[k].isdigit() or body[k] == ","):
        k += 1
    return k == len(body)


def _hunk(lines: list[str], i: int) -> int:
    """Check the `@@ -A[,B] +C[,D] @@` hunk at ``i`` adds up; the index after it."""
    header = lines[i]
    where = f"line {i + 1} of the diff"
    counts = _hunk_counts(header)
    if counts is None:
        raise DiffError(f"{where}: `{header[:40]}` is not a hunk header (`@@ -START,COUNT +START,COUNT @@`)")
    old, new = counts
    i += 1
    while old > 0 or new > 0:
        if i >= len(lines):
            raise DiffError(f"{where}: the hunk ends before its {counts[0]} old and {counts[1]} new lines; fix its counts")
        line = lines[i]
        mark = line[:1]
        if mark in (" ", ""):
            old, new = old - 1, new - 1
        elif mark == "-":
            old -= 1
        elif mark == "+":
            new -= 1
        elif mark != "\\":
            raise DiffError(f"line {i + 1} of the diff: `{line[:40]}` inside a hunk; hunk lines start with a blank, "
                            "`-`, `+` or `\\`")
        if old < 0 or new < 0:
            raise DiffError(f"{where}: the hunk has more lines than its counts say; fix its counts")
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1  # `\ No newline at end of file`
    return i


def _hunk_counts(header: str) -> tuple[int, int] | None:
    parts = header.split(" ")
    if len(parts) < 4 or parts[0] != "@@" or parts[3] != "@@" or parts[1][:1] != "-" or parts[2][:1] != "+":
        return None
    counts = []
    for part in (parts[1][1:], parts[2][1:]):
        start, comma, count = part.partition(",")
        if not start.isdigit() or (comma and not count.isdigit()) or len(part) > 20:
            return None
        counts.append(int(count) if comma else 1)
    return counts[0], counts[1]
