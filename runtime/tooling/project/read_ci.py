""".pre-commit-config.yaml and GitHub workflows (.github/workflows/*.yml).

PyYAML is not a dependency of the runtime, and only a few keys are wanted
(hook ids, local hooks' entries, steps' `run:` scripts), so a small reader
takes them line by line: plain and quoted scalars (a double-quoted one's
escapes read as YAML reads them) and `|`/`>` block scalars. It only ever
yields strings for translation to judge; YAML it does not follow (anchors,
flow mappings) yields nothing, never something else, and a value it cannot
read as written (an escape YAML does not have) is left out, said why.
"""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Iterator
from pathlib import Path

from runtime.tooling.project.found import Origin, Raw, hint_of
from runtime.tooling.project.scan import Scan, python_targets, read_text

_KEY = re.compile(r"^(\s*)(-\s+)?([A-Za-z_][A-Za-z0-9_-]*):(?:\s+(.*))?$")


class Unread(str):
    """A value the reader could not read as YAML means it: its text as the file writes it (inside its quotes),
    for the person, and why. Never translated: the step is left out, said why."""

    why: str

    def __new__(cls, text: str, why: str) -> Unread:
        value = super().__new__(cls, text)
        value.why = why
        return value


# YAML's escapes in a double-quoted scalar (YAML 1.2, 5.7) and what each stands for; \x, \u and \U take hex digits.
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
            "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
            "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}
# What no command line holds (line and paragraph separators too, which would split a script's lines where
# the file has none); tab and newline are text.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _double_quoted(value: str) -> str:
    """A double-quoted scalar from its opening quote: its escapes read, up to its closing quote (what follows,
    a comment, is not the value's). An escape YAML does not have, or one that stands for a control character,
    gives the text as written (Unread): the reader never guesses what a step runs."""
    out: list[str] = []
    n = 1
    while n < len(value) and value[n] != '"':
        if value[n] != "\\":
            out.append(value[n])
            n += 1
            continue
        code = value[n + 1:n + 2]
        if not code:  # an escaped line break: the value goes on, on the next line
            return Unread(value[1:], "continues on the next line, which init's YAML reader does not follow")
        width = _HEX.get(code, 0)
        escape = value[n:n + 2 + width]
        if width:
            digits = escape[2:]
            known = len(digits) == width and all(c in string.hexdigits for c in digits) \
                and int(digits, 16) <= 0x10FFFF and not 0xD800 <= int(digits, 16) <= 0xDFFF  # no lone surrogate
            char = chr(int(digits, 16)) if known else ""
        else:
            known, char = code in _ESCAPES, _ESCAPES.get(code, "")
        if not known:
            written = escape.split('"')[0]  # `\x4"`: the closing quote is not the escape's
            return Unread(_inner(value), f"uses `{written}`, which is no YAML escape")
        if _CONTROL.match(char):
            return Unread(_inner(value), f"holds a control character (`{escape}`), which no command takes")
        out.append(char)
        n += 2 + width
    return "".join(out)


def _inner(value: str) -> str:
    """A double-quoted scalar's text between its quotes as written, escapes and all."""
    n = 1
    while n < len(value) and value[n] != '"':
        n += 2 if value[n] == "\\" else 1
    return value[1:n]


def scalar(value: str) -> str:
    """A plain or quoted YAML scalar on one line, its comment dropped."""
    value = value.strip()
    if value[:1] == '"':
        return _double_quoted(value)
    if value[:1] == "'":
        end = value.find("'", 1)
        while end != -1 and value[end:end + 2] == "''":
            end = value.find("'", end + 2)
        inner = value[1:end] if end != -1 else value[1:]
        return inner.replace("''", "'")
    return re.split(r"\s+#", value, maxsplit=1)[0].strip()


def keys(text: str) -> Iterator[tuple[int, int, bool, str, str]]:
    """Yield (line number, indentation, starts a list item, key, value) of each `key: value` line; a block
    scalar's value (`|`, `>`) is its lines, folded for `>`."""
    lines = text.splitlines()
    n = 0
    while n < len(lines):
        m = _KEY.match(lines[n])
        n += 1
        if not m:
            continue
        indent = len(m.group(1)) + len(m.group(2) or "")
        value = m.group(4) or ""
        if re.match(r"^[|>][-+0-9]*\s*(#.*)?$", value):
            block: list[str] = []
            start = n
            while n < len(lines) and (not lines[n].strip() or len(lines[n]) - len(lines[n].lstrip()) > indent):
                block.append(lines[n])
                n += 1
            width = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
            body = [b[width:] for b in block]
            if value.startswith(">"):
                body = [" ".join(b.strip() for b in body if b.strip())]
            yield start + 1, indent, bool(m.group(2)), m.group(3), "\n".join(body)
        else:
            yield n, indent, bool(m.group(2)), m.group(3), scalar(value)


def commands_of(script: str) -> list[tuple[int, str]]:
    """A `run:` script's commands with their offsets: one a line, backslash-newlines joined, comments dropped."""
    out: list[tuple[int, str]] = []
    joined, first = "", 0
    for offset, line in enumerate(script.splitlines()):
        stripped = line.strip()
        if not joined:
            first = offset
        if stripped.endswith("\\"):
            joined += stripped[:-1] + " "
            continue
        command, joined = (joined + stripped).strip(), ""
        if command and not command.startswith("#"):
            out.append((first, command))
    return out


# Hooks of well-known tools, by id: the command that checks what the hook checks, on the whole tree.
HOOKS = {
    "ruff": ("ruff check .", "lint"), "ruff-check": ("ruff check .", "lint"),
    "ruff-format": ("ruff format --check .", "format"), "black": ("black --check .", "format"),
    "black-jupyter": ("black --check .", "format"), "flake8": ("flake8", "lint"), "mypy": ("mypy", "type"),
    "isort": ("isort --check-only .", "format"), "eslint": ("eslint .", "lint"),
    "prettier": ("prettier --check .", "format"),
}


def read_pre_commit(out: Scan) -> None:
    file = ".pre-commit-config.yaml"
    text = read_text(out.root, file)
    if text is None:
        return
    out.read.append(file)
    repo = ""
    hook: dict[str, tuple[int, str]] = {}
    hooks: list[tuple[str, dict[str, tuple[int, str]]]] = []
    repo_indent = 0
    for line, indent, item, key, value in keys(text):
        if key == "repo":
            repo, repo_indent = value, indent
            continue
        if item and indent > repo_indent:  # a list item inside a repo's entry: one of its hooks
            hook = {}
            hooks.append((repo, hook))
        hook[key] = (line, value)
    for repo, fields in hooks:
        if "id" not in fields:
            continue
        line, hook_id = fields["id"]
        origin = Origin(file, line, f"pre-commit hook {hook_id}")
        if repo == "local":
            # A local hook runs its entry; with file names appended unless pass_filenames is false.
            entry = fields.get("entry")
            if entry and fields.get("pass_filenames", (0, "true"))[1].lower() == "false":
                why = entry[1].why if isinstance(entry[1], Unread) else ""
                raw = Raw(str(entry[1]), Origin(file, entry[0], f"pre-commit hook {hook_id}"), hint_of(hook_id), why=why)
                out.hooks.setdefault(hook_id, []).append(raw)
                out.entries.append(raw)
            continue
        known = HOOKS.get(hook_id)
        if known is None:
            continue
        command, kind = known
        if command == "mypy":
            command = shlex.join(["mypy", *python_targets(out.root)])
        raw = Raw(command, origin, kind)
        out.hooks.setdefault(hook_id, []).append(raw)
        out.entries.append(raw)


def read_workflows(out: Scan) -> None:
    folder = out.root / ".github" / "workflows"
    if not folder.is_dir():
        return
    for path in sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")]):
        file = str(Path(".github/workflows") / path.name)
        text = read_text(out.root, file)
        if text is None:
            continue
        out.read.append(file)
        lines = text.splitlines()
        for line, _indent, _item, key, value in keys(text):
            if key != "run" or not value:
                continue
            if isinstance(value, Unread):  # left out, said why: never a guess at what the step runs
                out.entries.append(Raw(str(value), Origin(file, line, "workflow step"), why=value.why))
                continue
            # A block's lines are the file's, from its first; a value on the key's own line is all of that line,
            # whatever lines its `\n` escapes make.
            own_line = (m := _KEY.match(lines[line - 1])) is not None and m.group(3) == key
            for offset, command in commands_of(value):
                out.entries.append(Raw(command, Origin(file, line if own_line else line + offset, "workflow step")))
