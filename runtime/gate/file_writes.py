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

    from runtime.gate.kinds.bash_allowlist import BashAllowlist
    from runtime.lang.shell_types import Command, Word


def _options(args: list[Word], short: str, long: frozenset[str],
             others: frozenset[str] = frozenset()) -> tuple[list[Word], dict[str, list[Word]]]:
    """GNU getopt: the operands, and each option's values (a flag's value is an empty word).

    ``short``: the letters that take a value (attached, or the next word); ``long``: the long options that
    do (`--name=value` or `--name value`); ``others``: the program's other long options, flags and those whose
    value is optional (`--backup[=CONTROL]`: only after `=`, the next word stays an operand). getopt_long takes
    any unambiguous prefix of a long option, so a word is read by its full name."""
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
            name, valued = _long_name(name, long, others)
            if eq:
                values.setdefault(name, []).append(Seen(value))
            elif valued and i + 1 < n:
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


def _long_name(name: str, long: frozenset[str], others: frozenset[str]) -> tuple[str, bool]:
    """The long option ``name`` stands for, and whether it takes the next word: a whole name is that option
    (install's `--strip`, though `--strip-program` starts so); a prefix is the one option it starts, and when
    it starts several, getopt refuses it unless all take a value (then nothing runs, or each takes one)."""
    if name in long:
        return name, True
    if name in others:
        return name, False
    matches = [o for o in long | others if o.startswith(name)]
    if matches and all(m in long for m in matches):
        return (matches[0] if len(matches) == 1 else name), True
    return (matches[0] if len(matches) == 1 else name), False


def _all(kind: str, short: str = "", long: Iterable[str] = (), others: Iterable[str] = ()
         ) -> Callable[[Command], list[Target]]:
    longs, rest = frozenset(long), frozenset(others)

    def read(cmd: Command) -> list[Target]:
        operands, _ = _options(cmd.words, short, longs, rest)
        return [Target(w, cmd.cwds, f"`{cmd.name} {w.value}`", kind) for w in operands]

    return read


def _copy(removes_sources: bool, short: str, long: Iterable[str], others: Iterable[str]
          ) -> Callable[[Command], list[Target]]:
    """cp, mv, ln, install: `SRC... DEST`, `-t DIR SRC...`; a DEST that is a folder receives each SRC by name."""
    longs = frozenset(long) | {"--target-directory", "--suffix"}
    rest = frozenset(others) | {"--backup", "--no-target-directory", "--force", "--verbose", "--help", "--version"}

    def read(cmd: Command) -> list[Target]:
        operands, values = _options(cmd.words, short, longs, rest)
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


_CHOWN_OTHERS = frozenset({"--changes", "--silent", "--quiet", "--verbose", "--dereference", "--no-dereference",
                           "--no-preserve-root", "--preserve-root", "--recursive", "--help", "--version"})
# chmod reads `-w`, `-x,u+r`, `-0`... as its mode, not as options: its getopt string gives each of these letters
# an optional attached value, so a word holding one is taken whole (after an option letter, `-Rw`, the mode is
# invalid and nothing runs).
_CHMOD_MODE = frozenset("rwxXstugoa,+=01234567")


def _chmod(cmd: Command) -> list[Target]:
    """chmod, chown, chgrp: the files after the mode or owner, or every operand with `--reference`."""
    longs = frozenset({"--reference", "--from"} if cmd.name == "chown" else {"--reference"})
    operands: list[Word] = []
    given = False  # the mode, or with --reference the model file, came in an option: every operand is a file
    words = cmd.words
    i = 0
    while i < len(words):
        word = words[i]
        v = word.value
        if v == "--":
            operands += words[i + 1:]
            break
        if not is_static(word) or len(v) < 2 or v[0] != "-":
            operands.append(word)
        elif v.startswith("--"):
            name, eq, _ = v.partition("=")
            name, valued = _long_name(name, longs, _CHOWN_OTHERS)
            given = given or name == "--reference"
            i += 1 if valued and not eq else 0
        elif cmd.name == "chmod" and any(ch in _CHMOD_MODE for ch in v[1:]):
            given = True
        i += 1
    files = operands if given else operands[1:]
    return [Target(w, cmd.cwds, f"`{cmd.name}`") for w in files]


def _dd(cmd: Command) -> list[Target]:
    return [Target(Seen(w.value[3:], is_static(w)), cmd.cwds, "`dd of=`") for w in cmd.words if w.value.startswith("of=")]


_SED_VALUED = frozenset({"--expression", "--file", "--line-length"})
_SED_OTHERS = frozenset({"--in-place", "--quiet", "--silent", "--debug", "--follow-symlinks", "--posix",
                         "--regexp-extended", "--separate", "--sandbox", "--unbuffered", "--null-data",
                         "--zero-terminated", "--binary", "--help", "--version"})


def _in_place(cmd: Command) -> list[Target]:
    """sed -i / perl -i: the files after the script (the first operand, unless -e or -f gave it)."""
    args = cmd.words
    # Letters taking a value, attached or the next word; perl's -M, -m, -x, -C, -F, -V take the rest of the word
    # only (perlrun), so `perl -x -i ...` is in place.
    valued = "ef" if cmd.name == "sed" else "eEI"
    attached = "" if cmd.name == "sed" else "MmxCFV"
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
            if cmd.name == "sed":  # GNU sed takes any unambiguous prefix of a long option
                name = _long_name(name, _SED_VALUED, _SED_OTHERS)[0]
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
                if letter in attached:
                    break
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


def _output_option(short: str, long: Iterable[str], others: Iterable[str], outputs: Iterable[str]
                   ) -> Callable[[Command], list[Target]]:
    """Programs that write only the file an option names (`sort -o`, `patch -o`)."""
    longs, rest, outs = frozenset(long), frozenset(others), tuple(outputs)

    def read(cmd: Command) -> list[Target]:
        _, values = _options(cmd.words, short, longs, rest)
        return [Target(w, cmd.cwds, f"`{cmd.name} {o}`") for o in outs for w in values.get(o, []) if w.value]

    return read


def _uniq(cmd: Command) -> list[Target]:
    operands, _ = _options(cmd.words, "fsw", frozenset({"--skip-fields", "--skip-chars", "--check-chars"}),
                           frozenset({"--count", "--repeated", "--all-repeated", "--group", "--ignore-case",
                                      "--unique", "--zero-terminated", "--help", "--version"}))
    return [Target(operands[1], cmd.cwds, "`uniq`")] if len(operands) >= 2 else []


# The long options of each program, from its --help (GNU coreutils 9.1, patch 2.7): those that take a value
# (`--size=N`: also the next word), then the others, flags and those whose value is optional (`--backup[=CONTROL]`,
# `--context[=CTX]`: only after `=`). The others matter for prefixes: `--strip` is install's flag, not
# `--strip-program`, and a prefix of both is refused by getopt.
WRITERS: dict[str, Callable[[Command], list[Target]]] = {
    "rm": _all("remove", "", (), ("--force", "--interactive", "--one-file-system", "--no-preserve-root",
                                  "--preserve-root", "--recursive", "--dir", "--verbose", "--help", "--version")),
    "rmdir": _all("remove", "", (), ("--ignore-fail-on-non-empty", "--parents", "--verbose", "--help", "--version")),
    "unlink": _all("remove", "", (), ("--help", "--version")),
    "shred": _all("write", "ns", ("--iterations", "--size", "--random-source"),
                  ("--force", "--remove", "--verbose", "--exact", "--zero", "--help", "--version")),
    "touch": _all("write", "drt", ("--date", "--reference", "--time"),
                  ("--no-create", "--no-dereference", "--help", "--version")),
    "mkdir": _all("folder", "m", ("--mode",), ("--parents", "--verbose", "--context", "--help", "--version")),
    "tee": _all("write", "", (), ("--append", "--ignore-interrupts", "--output-error", "--help", "--version")),
    "truncate": _all("write", "sr", ("--size", "--reference"), ("--no-create", "--io-blocks", "--help", "--version")),
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "cp": _copy(False, "tS", ("--no-preserve", "--sparse"),
                ("--archive", "--attributes-only", "--copy-contents", "--dereference", "--interactive", "--link",
                 "--no-clobber", "--no-dereference", "--one-file-system", "--parents", "--preserve", "--recursive",
                 "--reflink", "--remove-destination", "--strip-trailing-slashes", "--symbolic-link", "--update",
                 "--context")),
    "mv": _copy(True, "tS", (), ("--interactive", "--no-clobber", "--strip-trailing-slashes", "--update",
                                 "--context")),
    "ln": _copy(False, "tS", (), ("--directory", "--interactive", "--logical", "--no-dereference", "--physical",
                                  "--relative", "--symbolic")),
    "install": _copy(False, "tSmog", ("--mode", "--owner", "--group", "--strip-program"),
                     ("--compare", "--directory", "--preserve-context", "--preserve-timestamps", "--strip",
                      "--context")),
    "dd": _dd,
    "sed": _in_place,
    "perl": _in_place,
    "find": _find,
    "sort": _output_option("oktST", ("--output", "--key", "--field-separator", "--buffer-size",
                                     "--temporary-directory", "--batch-size", "--compress-program", "--files0-from",
                                     "--parallel", "--random-source", "--sort"),
                           ("--ignore-leading-blanks", "--dictionary-order", "--ignore-case",
                            "--general-numeric-sort", "--ignore-nonprinting", "--month-sort", "--human-numeric-sort",
                            "--numeric-sort", "--random-sort", "--reverse", "--version-sort", "--check", "--debug",
                            "--merge", "--stable", "--unique", "--zero-terminated", "--help", "--version"),
                           ("-o", "--output")),
    "patch": _output_option("opdDiBrVYzFpg", ("--output", "--input", "--directory", "--reject-file", "--strip",
                                              "--fuzz", "--ifdef", "--version-control", "--prefix",
                                              "--basename-prefix", "--suffix", "--get", "--quoting-style",
                                              "--reject-format", "--read-only"),
                            ("--ignore-whitespace", "--context", "--ed", "--normal", "--unified", "--forward",
                             "--reverse", "--merge", "--remove-empty-files", "--set-utc", "--set-time", "--backup",
                             "--backup-if-mismatch", "--no-backup-if-mismatch", "--batch", "--force", "--quiet",
                             "--silent", "--verbose", "--dry-run", "--posix", "--binary", "--version", "--help"),
                            ("-o", "--output", "-r", "--reject-file")),
    "uniq": _uniq,
}


def written_by(cmd: Command, rule_sets: list[BashAllowlist]) -> list[Target]:
    """The files ``cmd`` writes, as far as its arguments tell (``rule_sets``: the role's shell-rule gates)."""
    reader = WRITERS.get(cmd.name)
    if reader is not None:
        return reader(cmd)
    return _by_grammar(cmd, rule_sets)


def _by_grammar(cmd: Command, rule_sets: list[BashAllowlist]) -> list[Target]:
    from runtime.lang.grammar import FOLDER, SCOPE, ArgDeny

    words = cmd.words
    if not all(is_static(w) for w in words):
        return []  # which word lands where depends on values only the run knows
    out: list[Target] = []
    for gate in rule_sets:
        for rule in gate.rules_for(cmd.name) or ():
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
