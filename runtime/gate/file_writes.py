"""Which files a known program writes, read from its arguments (for the sandboxed mode).

The programs whose job is to change files (rm, cp, mv, touch, mkdir, tee, sed
-i, ...) are read here the way their manuals describe, with the options that
take a value, so that `cp a.py src/` names `src/a.py` and `touch -d '1 day
ago' f` names only `f`. Any other program with a rule in the role's shell
rules is read through its grammar for the path-typed options it declares as
writes (`pytest --basetemp`, `go build -o`). Words whose value the gate
cannot know are left out: the sandbox judges those writes when they happen.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.effects import Seen, Target, is_static

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from runtime.lang.shell_types import Command, Word


def _options(args: list[Word], short: str, long: frozenset[str]) -> tuple[list[Word], dict[str, list[Word]]]:
    """GNU getopt: the operands, and each option's values (a flag's value is an empty word).

    ``short``: the letters that take a value (attached, or the next word); ``long``: the long options that
    do (`--name=value` or `--name value`)."""
    operands: list[Word] = []
    values: dict[str, list[Word]] = {}
    i, n = 0, len(args)
    while i < n:
        word = args[i]
        v = word.value
        if v == "--":
            operands += args[i + 1:]
            break
        if v.startswith("--") and is_static(word):
            name, eq, value = v.partition("=")
            if eq:
                values.setdefault(name, []).append(Seen(value))
            elif name in long and i + 1 < n:
                i += 1
                values.setdefault(name, []).append(args[i])
            else:
                values.setdefault(name, []).append(Seen(""))
        elif len(v) > 1 and v[0] == "-" and is_static(word):
            for k in range(1, len(v)):
                letter = v[k]
                if letter in short:
                    rest = v[k + 1:]
                    if rest:
                        values.setdefault("-" + letter, []).append(Seen(rest))
                    elif i + 1 < n:
                        i += 1
                        values.setdefault("-" + letter, []).append(args[i])
                    break
                values.setdefault("-" + letter, []).append(Seen(""))
        else:
            operands.append(word)
        i += 1
    return operands, values


def _all(kind: str, short: str = "", long: Iterable[str] = ()) -> Callable[[Command], list[Target]]:
    longs = frozenset(long)

    def read(cmd: Command) -> list[Target]:
        operands, _ = _options(cmd.words, short, longs)
        return [Target(w, cmd.cwds, f"`{cmd.name} {w.value}`", kind) for w in operands]

    return read


def _copy(removes_sources: bool, short: str, long: Iterable[str]) -> Callable[[Command], list[Target]]:
    """cp, mv, ln, install: `SRC... DEST`, `-t DIR SRC...`; a DEST that is a folder receives each SRC by name."""
    longs = frozenset(long) | {"--target-directory", "--suffix"}

    def read(cmd: Command) -> list[Target]:
        operands, values = _options(cmd.words, short, longs)
        what = f"`{cmd.name}`"
        if cmd.name == "install" and "-d" in values:
            return [Target(w, cmd.cwds, what, "folder") for w in operands]
        named = values.get("-t") or values.get("--target-directory")
        into = named[-1] if named else None
        out: list[Target] = []
        if into is not None:
            sources = operands
            out += [Target(into, cmd.cwds, what, "write", _name(s)) for s in sources]
        elif len(operands) >= 2:
            sources = operands[:-1]
            plain = "-T" in values or "--no-target-directory" in values
            out += [Target(operands[-1], cmd.cwds, what, "write", None if plain else _name(s)) for s in sources]
        elif len(operands) == 1 and cmd.name == "ln":
            sources = []  # `ln -s TARGET`: a link named like its target, in the working folder
            out.append(Target(Seen(os.path.basename(operands[0].value.rstrip("/")), is_static(operands[0])),
                              cmd.cwds, what))
        else:
            sources = []
        if removes_sources:
            out += [Target(s, cmd.cwds, what, "remove") for s in sources]
        return out

    return read


def _name(source: Word) -> str | None:
    return (os.path.basename(source.value.rstrip("/")) or None) if is_static(source) else None


def _chmod(cmd: Command) -> list[Target]:
    operands, values = _options(cmd.words, "", frozenset())
    files = operands if "--reference" in values else operands[1:]
    return [Target(w, cmd.cwds, f"`{cmd.name}`") for w in files]


def _dd(cmd: Command) -> list[Target]:
    return [Target(Seen(w.value[3:], is_static(w)), cmd.cwds, "`dd of=`") for w in cmd.words if w.value.startswith("of=")]


def _in_place(cmd: Command) -> list[Target]:
    """sed -i / perl -i: the files after the script (the first operand, unless -e or -f gave it)."""
    args = cmd.words
    valued = "ef" if cmd.name == "sed" else "eEIMmx"
    in_place = script_given = False
    operands: list[Word] = []
    i = 0
    while i < len(args):
        v = args[i].value
        if v == "--":
            operands += args[i + 1:]
            break
        if v.startswith("--"):
            name, eq, _ = v.partition("=")
            if name == "--in-place":
                in_place = True
            elif name in ("--expression", "--file"):
                script_given = True
                i += 0 if eq else 1
            elif name == "--line-length" and not eq:
                i += 1
        elif len(v) > 1 and v[0] == "-":
            for k in range(1, len(v)):
                letter = v[k]
                if letter == "i":
                    in_place = True
                    break  # the rest is a backup suffix
                if letter in valued or (cmd.name == "sed" and letter == "l"):
                    script_given = script_given or letter in "eE" or (letter == "f" and cmd.name == "sed")
                    if k == len(v) - 1:
                        i += 1
                    break
        else:
            operands.append(args[i])
        i += 1
    if not in_place:
        return []
    files = operands if script_given else operands[1:]
    return [Target(w, cmd.cwds, f"`{cmd.name} -i`") for w in files]


def _find(cmd: Command) -> list[Target]:
    """`find DIR... -delete` removes what matches below DIR (DIR itself and all of it when nothing filters
    the matches); `-fprint FILE` writes FILE."""
    args = cmd.words
    starts: list[Word] = []
    for w in args:
        if w.value.startswith(("-", "(", "!")):
            break
        starts.append(w)
    expression = [w.value for w in args[len(starts):]]
    out: list[Target] = []
    if "-delete" in expression:
        unfiltered = all(v in _NO_FILTER or v.isdigit() for v in expression)
        out += [Target(w, cmd.cwds, "`find -delete`", "remove" if unfiltered else "inside") for w in (starts or [Seen(".")])]
    for i, v in enumerate(expression[:-1]):
        if v in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            out.append(Target(args[len(starts) + i + 1], cmd.cwds, f"`find {v}`"))
    return out


# Words of a find expression that select nothing: with only these, `-delete` removes everything below.
_NO_FILTER = frozenset({"-delete", "-depth", "-xdev", "-mount", "-noleaf", "-ignore_readdir_race", "-maxdepth", "-mindepth"})


def _output_option(short: str, long: Iterable[str], outputs: Iterable[str]) -> Callable[[Command], list[Target]]:
    """Programs that write only the file an option names (`sort -o`, `patch -o`)."""
    longs, outs = frozenset(long), tuple(outputs)

    def read(cmd: Command) -> list[Target]:
        _, values = _options(cmd.words, short, longs)
        return [Target(w, cmd.cwds, f"`{cmd.name} {o}`") for o in outs for w in values.get(o, []) if w.value]

    return read


def _uniq(cmd: Command) -> list[Target]:
    operands, _ = _options(cmd.words, "fsw", frozenset({"--skip-fields", "--skip-chars", "--check-chars"}))
    return [Target(operands[1], cmd.cwds, "`uniq`")] if len(operands) >= 2 else []


WRITERS: dict[str, Callable[[Command], list[Target]]] = {
    "rm": _all("remove"),
    "rmdir": _all("remove"),
    "unlink": _all("remove"),
    "shred": _all("write", "ns", ("--iterations", "--size", "--random-source")),
    "touch": _all("write", "drt", ("--date", "--reference")),
    "mkdir": _all("folder", "m", ("--mode", "--context")),
    "tee": _all("write"),
    "truncate": _all("write", "sr", ("--size", "--reference")),
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "cp": _copy(False, "tS", ("--backup",)),
    "mv": _copy(True, "tS", ()),
    "ln": _copy(False, "tS", ()),
    "install": _copy(False, "tSmog", ("--mode", "--owner", "--group")),
    "dd": _dd,
    "sed": _in_place,
    "perl": _in_place,
    "find": _find,
    "sort": _output_option("oktST", ("--output", "--key", "--field-separator", "--buffer-size",
                                     "--temporary-directory"), ("-o", "--output")),
    "patch": _output_option("opdDiBrVYzFp", ("--output", "--input", "--directory", "--reject-file"),
                            ("-o", "--output", "-r", "--reject-file")),
    "uniq": _uniq,
}


def written_by(cmd: Command, rule_sets: list[object]) -> list[Target]:
    """The files ``cmd`` writes, as far as its arguments tell (``rule_sets``: the role's shell-rule gates)."""
    reader = WRITERS.get(cmd.name)
    if reader is not None:
        return reader(cmd)
    return _by_grammar(cmd, rule_sets)


def _by_grammar(cmd: Command, rule_sets: list[object]) -> list[Target]:
    from runtime.lang.grammar import FOLDER, SCOPE, ArgDeny

    words = cmd.words
    if not all(is_static(w) for w in words):
        return []  # which word lands where depends on values only the run knows
    out: list[Target] = []
    for gate in rule_sets:
        found = getattr(gate, "rules", {}).get(cmd.name)
        for rule in (found if isinstance(found, list) else [found] if found is not None else []):
            sub = next((s for s in rule.subcommands if tuple(cmd.args[: len(s)]) == s), ()) if rule.subcommands else ()
            if rule.subcommands and not sub:
                continue
            try:
                uses = rule.grammar.read(words[len(sub):])
            except ArgDeny:
                continue  # an option the grammar does not know: nothing to read (the sandbox holds)
            for use in uses:
                if use.type in (SCOPE, FOLDER):
                    if use.word is None and any(ch in use.value for ch in "*?[{~"):
                        continue  # a value attached to its option (`--out=x`), judged by its text
                    word = use.word if use.word is not None else Seen(use.value)
                    out.append(Target(word, cmd.cwds, f"`{(cmd.name + ' ' + use.spelled).strip()}`",
                                      "folder" if use.type == FOLDER else "write"))
    return out
