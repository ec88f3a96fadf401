"""Argument grammars: the options and operands a program may be given, typed.

A grammar is an allowlist. It names every option spelling a role lets a
program take, with its value type, and the types of the positionals; any word
it does not account for is a deny. Words are read the way the program's own
parser reads them, so the gate and the program see the same options:

- ``gnu`` (getopt_long, argparse, clap, nopt): ``--name``, ``--name=value``,
  ``--name value``; short options clustered (``-xvf``), a short option that
  takes a value consumes the rest of its cluster (``-ofile``, ``-no.git/x``
  is ``-n -o .git/x``) or the next word; a declared single-dash long name
  (``find -name``) is one option. Long options are never abbreviated here:
  getopt_long and argparse would accept ``--basete`` for ``--basetemp``, so an
  undeclared long option is denied even when it prefixes a declared one.
- ``go`` (Go's flag package): ``-name`` and ``--name`` alike, ``=value`` or
  the next word, no clusters; a boolean flag may be ``-v=true``.
- ``none`` (echo, true): no options; every word is an operand.

Everything up to ``--`` that starts with ``-`` (but ``-`` itself) is read as
an option, even where the program would stop at its first positional: an
option the program would not see is only ever checked more, never less.
After ``--`` words go to the ``trailing`` grammar (cargo's test-harness
options) or, without one, are positionals.

``cwd`` says where the program may run: ``in-root`` (the default) for
programs that load the project around their working folder (pytest collects
and imports conftest.py from it, cargo builds the Cargo.toml above it, npm
runs its package.json's scripts), ``any`` for those that only act on the
paths they are given (ls, grep, cp).

Value types: ``flag`` (no value), ``free`` (any word), ``int``, an enum (a
list of words), ``mode`` (a chmod mode without set-ID or sticky bits),
``format`` (a ``+FORMAT`` word: date's), ``warning-filter`` (Python's
``action:message:category:module:line`` with a builtin category, never
imported), ``{ assignments = { KEY = TYPE } }`` (``KEY=VALUE`` for the
listed keys, each value of its type: pytest's ``-o``), ``path`` (a file
read; reads are not restricted),
``path-in-root`` (a file read that must stay inside the worktree: test paths
whose conftest.py runs), ``path-in-scope`` (a file written: the write checks
of the Write tool apply), ``folder-in-scope`` (a folder created: the same
checks, and a folder above the write scope, `docs` for `docs/**`, may be
made), ``copy-in-scope`` (the operands of cp, mv, ln and install: each one a
write, and the last also a folder that may receive the others under their own
names, `cp a.py tests` writing `tests/a.py`: that name is checked too, whether
the folder exists yet or not), ``copy-to-scope`` (cp's: the same, but the sources
are only read, so a plain file from anywhere may be one), ``file-in-scope`` (a file written, never a
folder: a formatter given a folder rewrites what it finds there, through links
the gate never sees), ``diff`` (a diff GNU patch applies: without an operand
naming the one file to change, every file the diff names is a write, read from
it; see ``runtime.gate.kinds.bash_allowlist``). A value type ending in ``?`` is optional and only
taken attached (``--color=always``, ``-i.bak``). A positional type ending in
``...`` repeats.

Hand-written rather than argparse or click: this is the security boundary on
the hook's hot path, and it must accept exactly the spellings of several
different parsers, which no one library models.
"""

from __future__ import annotations

import posixpath

from runtime.lang.shapes import is_count, is_file_mode, is_negative_number, is_option_spelling
from runtime.lang.shell_types import Word

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

FLAG, FREE, INT, PATH, ROOT, SCOPE = "flag", "free", "int", "path", "path-in-root", "path-in-scope"
FOLDER, COPY, COPY_TO, FILE = "folder-in-scope", "copy-in-scope", "copy-to-scope", "file-in-scope"
MODE, FORMAT, WARNING, DIFF = "mode", "format", "warning-filter", "diff"
SCALARS = frozenset({FLAG, FREE, INT, PATH, ROOT, SCOPE, FOLDER, COPY, COPY_TO, FILE, MODE, FORMAT, WARNING, DIFF})
STYLES = ("gnu", "go", "none")
# Values the agent gives are matched whole, by the shapes of runtime.lang.shapes (ASCII digits only).
_BOOL = frozenset({"true", "false", "1", "0", "t", "f", "TRUE", "FALSE", "True", "False"})
# chmod modes are without the set-user-ID, set-group-ID and sticky bits (`is_file_mode`).
# Python's warning actions; a filter's category must be a builtin warning class, since any other
# (`mypkg.MyWarning`) is imported to resolve it.
_WARNING_ACTIONS = frozenset({"default", "error", "ignore", "always", "all", "module", "once"})
_BUILTIN_WARNINGS = frozenset({
    "Warning", "UserWarning", "DeprecationWarning", "PendingDeprecationWarning", "SyntaxWarning", "RuntimeWarning",
    "FutureWarning", "ImportWarning", "UnicodeWarning", "BytesWarning", "ResourceWarning", "EncodingWarning",
})


class GrammarError(ValueError):
    """A grammar in the policy is malformed (the gate denies)."""


class ArgDeny(Exception):
    """A word the grammar does not allow; the message says which and what is allowed."""


class ArgForbidden(ArgDeny):
    """A word the grammar forbids by name (`forbidden`): what it does is never allowed, so no person is asked."""


class ValueType:
    """One declared value type: a scalar name, an enum, or `KEY=VALUE` assignments with a type per key;
    optional or not."""

    __slots__ = ("name", "choices", "optional", "keys")

    def __init__(self, raw: object, where: str) -> None:
        self.optional = False
        self.choices: frozenset[str] | None = None
        self.keys: dict[str, ValueType] | None = None
        if isinstance(raw, dict):
            # `{ assignments = { cache_dir = "path-in-scope", log_cli = ["true", "false"] } }`: pytest's
            # `-o KEY=VALUE`, where only the listed keys may be set, each value typed.
            table = raw.get("assignments")
            if set(raw) != {"assignments"} or not isinstance(table, dict) or not table:
                raise GrammarError(f"{where}: a table type is `{{ assignments = {{ KEY = TYPE, ... }} }}`")
            self.name, self.keys = "assignments", {}
            for key, sub in table.items():
                if not isinstance(key, str) or not key or "=" in key:
                    raise GrammarError(f"{where}: `{key}` is not a key name")
                vtype = ValueType(sub, f"{where} {key}")
                if vtype.keys is not None or vtype.name == FLAG or vtype.optional:
                    raise GrammarError(f"{where} {key}: a key's type is a value type (no flag, table or `?`)")
                self.keys[key] = vtype
            return
        if isinstance(raw, list):
            if not raw or not all(isinstance(c, str) for c in raw):
                raise GrammarError(f"{where}: an enum is a non-empty list of words")
            self.name, self.choices = "enum", frozenset(raw)
            return
        if not isinstance(raw, str):
            raise GrammarError(f"{where}: a type is a name or a list of words")
        if raw.endswith("?"):
            self.optional, raw = True, raw[:-1]
        if raw not in SCALARS:
            raise GrammarError(f"{where}: unknown type `{raw}` (types: {', '.join(sorted(SCALARS))}, or a list of words)")
        if raw == FLAG and self.optional:
            raise GrammarError(f"{where}: a flag takes no value, optional or not")
        self.name = raw

    @property
    def takes_value(self) -> bool:
        return self.name != FLAG

    def check(self, value: str, spelled: str) -> None:
        if self.choices is not None and value not in self.choices:
            shown = ", ".join(c if c else "'' (empty)" for c in sorted(self.choices))
            raise ArgDeny(f"`{spelled} {value}`: the value must be one of {shown}")
        if self.name == INT and not is_count(value):
            raise ArgDeny(f"`{spelled} {value}`: the value must be a number")
        if self.name == MODE and not is_file_mode(value):
            raise ArgDeny(f"`{spelled} {value}`: give a mode of r, w, x (`u+x`, `go-w`, `644`); set-user-ID, "
                          "set-group-ID and sticky bits (s, t, 4xxx) are not allowed")
        if self.name == FORMAT and not value.startswith("+"):
            raise ArgDeny(f"`{spelled} {value}`: only an output format (`+%Y-%m-%d`) is allowed here")
        if self.name == WARNING:
            _check_warning_filter(value, spelled)

    def assignment(self, value: str, spelled: str) -> tuple[str, str, ValueType]:
        """`KEY=VALUE` read against the declared keys: the key, the value and its type."""
        assert self.keys is not None
        key, eq, rest = value.partition("=")
        vtype = self.keys.get(key.strip())
        if not eq or vtype is None:
            raise ArgDeny(f"`{spelled} {value}`: set one of {', '.join(sorted(self.keys))} as KEY=VALUE")
        vtype.check(rest, f"{spelled} {key.strip()}=")
        return key.strip(), rest, vtype


def _check_warning_filter(value: str, spelled: str) -> None:
    """`action:message:category:module:lineno`, as Python and pytest read it; the category resolved
    without an import."""
    parts = value.split(":")
    action = parts[0].strip()
    category = parts[2].strip() if len(parts) > 2 else ""
    if len(parts) > 5 or not any(a.startswith(action) for a in _WARNING_ACTIONS) or not action:
        raise ArgDeny(f"`{spelled} {value}`: a warning filter is ACTION[:MESSAGE[:CATEGORY[:MODULE[:LINE]]]] with "
                      f"ACTION one of {', '.join(sorted(_WARNING_ACTIONS))}")
    if category and category not in _BUILTIN_WARNINGS:
        raise ArgDeny(f"`{spelled} {value}`: the category `{category}` would be imported; use a builtin one "
                      f"({', '.join(sorted(_BUILTIN_WARNINGS))}) or none")


class Use:
    """One typed word of a command line: an option's value, or a positional."""

    __slots__ = ("spelled", "type", "value", "word", "rest")

    def __init__(self, spelled: str, vtype: str, value: str, word: Word | None, rest: bool = False) -> None:
        self.spelled = spelled  # the option as written, or "" for a positional
        self.type = vtype
        self.value = value
        self.word = word  # the whole word the value came from (None when attached to a longer one)
        # A positional the repeating type (`path...`) took: a word bash expands into several lands in
        # the same type, where one in a fixed place would shift the words after it into other types.
        self.rest = rest


class Grammar:
    """A compiled grammar; ``read(words)`` returns the typed uses or raises ArgDeny."""

    __slots__ = ("style", "options", "positionals", "rest", "trailing", "numeric", "program", "cwd_in_root", "_memo",
                 "min_positionals", "stdin", "forbidden", "anchored")

    def __init__(self, raw: JSONObject, program: str) -> None:
        """``raw``: the grammar as the policy holds it, checked here (the gate trusts nothing in a file)."""
        if not isinstance(raw, dict):
            raise GrammarError(f"{program}: a grammar is a table")
        self.program = program
        self.style = raw.get("option-style", "gnu")
        if self.style not in STYLES:
            raise GrammarError(f"{program}: unknown option style `{self.style}`")
        cwd = raw.get("cwd", "in-root")
        if cwd not in ("in-root", "any"):
            raise GrammarError(f"{program}: `cwd` is in-root or any")
        self.cwd_in_root = cwd == "in-root"
        options = raw.get("options", {})
        if not isinstance(options, dict):
            raise GrammarError(f"{program}: `options` must be a table")
        self.options: dict[str, ValueType] = {}
        self.numeric: ValueType | None = None
        for spelling, vtype in options.items():
            t = ValueType(vtype, f"{program} {spelling}")
            if spelling == "-NUM":  # head -5, tail -20: obsolete count options
                self.numeric = t
                continue
            if not is_option_spelling(spelling):
                raise GrammarError(f"{program}: `{spelling}` is not an option spelling")
            key = spelling.lstrip("-") if self.style == "go" else spelling
            self.options[key] = t
        pos = raw.get("positionals", [])
        if not isinstance(pos, list) or not all(isinstance(p, (str, list)) for p in pos):
            raise GrammarError(f"{program}: `positionals` must be a list of types")
        self.positionals: list[ValueType] = []
        self.rest: ValueType | None = None
        for n, p in enumerate(pos):
            if isinstance(p, str) and p.endswith("..."):
                if n != len(pos) - 1:
                    raise GrammarError(f"{program}: only the last positional may repeat (`...`)")
                self.rest = ValueType(p[:-3], f"{program} positional {n + 1}")
            else:
                self.positionals.append(ValueType(p, f"{program} positional {n + 1}"))
        for t in (*self.positionals, *([self.rest] if self.rest is not None else [])):
            if t.name == FLAG or t.optional:
                raise GrammarError(f"{program}: a positional's type cannot be a flag or optional")
        for copy in (COPY, COPY_TO):
            if any(t.name == copy for t in self.positionals) or any(t.name == copy for t in self.options.values()):
                raise GrammarError(f"{program}: `{copy}` is the type of all the operands (`{copy}...`), nothing else")
        # At least this many operands (`patch FILE`: without one, patch writes the files the diff names).
        self.min_positionals = raw.get("min-positionals", 0)
        if isinstance(self.min_positionals, bool) or not isinstance(self.min_positionals, int) \
                or self.min_positionals < 0 or (self.rest is None and self.min_positionals > len(self.positionals)):
            raise GrammarError(f"{program}: `min-positionals` is a number no larger than the operands declared")
        # What the program reads on standard input when no option or operand names it: "diff" (patch).
        self.stdin = raw.get("stdin")
        if self.stdin not in (None, DIFF):
            raise GrammarError(f"{program}: `stdin` is `diff` or absent")
        if self.stdin == DIFF and not any(t.name == DIFF for t in (*self.options.values(), *self.positionals)):
            raise GrammarError(f"{program}: `stdin = \"diff\"` needs an option or operand of type `diff` naming the file instead")
        trailing = raw.get("trailing")
        self.trailing = Grammar(trailing, f"{program} --") if trailing is not None else None
        # Options whose effect is never allowed (`git commit --amend` rewrites history), each with why: a deny,
        # where any other option the grammar does not declare is only undecided (a person may be asked).
        self.forbidden: dict[str, str] = {}
        for spelling, why in (raw.get("forbidden") or {}).items():
            if not spelling.startswith("-"):
                continue  # a subcommand: the rule judges it, before the grammar reads the words
            key = spelling.lstrip("-") if self.style == "go" else spelling
            if key in self.options:
                raise GrammarError(f"{program}: `{spelling}` is both declared and forbidden")
            self.forbidden[key] = why
        # Options whose relative paths land under another option's folder (`-outputdir`), by that option.
        anchored = raw.get("anchored") or {}
        if not isinstance(anchored, dict) or not all(isinstance(k, str) and isinstance(v, list) for k, v in anchored.items()):
            raise GrammarError(f"{program}: `anchored` must map an option to the options it places")
        self.anchored: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in anchored.items()}
        # Reading depends on the words alone: an agent re-runs the same commands many times.
        self._memo: dict[tuple[tuple[str, bool, bool], ...], list[Use] | ArgDeny] = {}

    # -- reading ------------------------------------------------------------
    def read(self, words: list[Word]) -> list[Use]:
        """The typed uses of ``words``; the result is shared between calls: callers must not change it."""
        key = tuple((w.value, w.glob, w.tilde) for w in words)
        found = self._memo.get(key)
        if found is None:
            try:
                found = self._read(words)
            except ArgDeny as exc:
                found = exc
            if len(self._memo) >= 256:
                self._memo.clear()
            self._memo[key] = found
        if isinstance(found, ArgDeny):
            raise type(found)(str(found))
        return found

    def _read(self, words: list[Word]) -> list[Use]:
        uses: list[Use] = []
        if self.style == "none":  # echo, true: every word is an operand
            self._positionals(words, uses)
            return uses
        positional: list[Word] = []
        i, n = 0, len(words)
        while i < n:
            w = words[i]
            a = w.value
            if a == "--":
                rest = words[i + 1:]
                if self.trailing is not None:
                    uses += self.trailing.read(rest)
                else:
                    positional += rest
                break
            if len(a) > 1 and a[0] == "-":
                i = self._option(words, i, uses)
            else:
                positional.append(w)
                i += 1
        self._positionals(positional, uses)
        if self.anchored:
            return self._anchored(uses)
        return uses

    def _anchored(self, uses: list[Use]) -> list[Use]:
        """The uses with each relative path an anchored option names placed under its folder option's value
        (the program writes it there, not in its working folder), where it is judged. The last value of a
        folder option is the one the program takes."""
        bases = {}
        for u in uses:
            if u.spelled in self.anchored:
                if u.word is not None and (u.word.glob or u.word.tilde):
                    raise ArgDeny(f"`{self.program} {u.spelled}`: write the folder out (no glob or `~`): the "
                                  f"files of {', '.join(sorted(self.anchored[u.spelled]))} are placed in it")
                bases[u.spelled] = u.value
        out = []
        for u in uses:
            folder = next((bases[f] for f, placed in self.anchored.items() if f in bases and u.spelled in placed), None)
            if folder is not None and not u.value.startswith("/"):
                u = Use(u.spelled, u.type, posixpath.join(folder, u.value), None)
            out.append(u)
        return out

    def _option(self, words: list[Word], i: int, uses: list[Use]) -> int:
        a = words[i].value
        if self.numeric is not None and is_negative_number(a):
            uses.append(Use("-NUM", self.numeric.name, a[1:], None))
            return i + 1
        if self.style == "go":
            return self._go(words, i, uses)
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            t = self.options.get(name)
            if t is None:
                raise self._unknown(name)
            return self._valued(name, t, words, i, uses, value if eq else None)
        head = a.partition("=")[0]
        t = self.options.get(head) if len(head) > 2 else None
        if t is not None:  # a declared single-dash long option (find -name, java -jar)
            name, eq, value = a.partition("=")
            return self._valued(name, t, words, i, uses, value if eq else None)
        # A cluster of short options; the first one taking a value ends it.
        for k in range(1, len(a)):
            opt = "-" + a[k]
            t = self.options.get(opt)
            if t is None:
                if k == 1 or opt in self.forbidden:
                    raise self._unknown(opt)
                raise ArgDeny(f"`{a}`: `{opt}` inside the cluster is not an option allowed for `{self.program}`"
                              f"{self._allowed()}")
            if t.takes_value:
                attached = a[k + 1:]
                if attached[:1] == "=":
                    # getopt reads `-o=x` as the value `=x`, argparse as `x`: the gate cannot know which.
                    raise ArgDeny(f"`{a}`: write `{opt} {attached[1:]}` or `{opt}{attached[1:]}`; parsers disagree "
                                  f"about `=` after a short option")
                return self._valued(opt, t, words, i, uses, attached if attached else None)
            uses.append(Use(opt, FLAG, "", None))
        return i + 1

    def _go(self, words: list[Word], i: int, uses: list[Use]) -> int:
        a = words[i].value
        body = a[2:] if a.startswith("--") else a[1:]
        name, eq, value = body.partition("=")
        t = self.options.get(name)
        if t is None:
            raise self._unknown("-" + name, name)
        if t.name == FLAG:
            if eq and value not in _BOOL:
                raise ArgDeny(f"`{a}`: `-{name}` is a boolean flag (true or false)")
            uses.append(Use("-" + name, FLAG, "", None))
            return i + 1
        return self._valued("-" + name, t, words, i, uses, value if eq else None)

    def _valued(self, name: str, t: ValueType, words: list[Word], i: int, uses: list[Use], attached: str | None) -> int:
        if not t.takes_value:
            if attached is not None:
                raise ArgDeny(f"`{words[i].value}`: `{name}` takes no value")
            uses.append(Use(name, FLAG, "", None))
            return i + 1
        if attached is not None:
            self._use(name, t, attached, None, uses)
            return i + 1
        if t.optional:  # an optional value is only ever attached
            uses.append(Use(name, t.name, "", None))
            return i + 1
        if i + 1 >= len(words):
            raise ArgDeny(f"`{self.program} {name}` needs a value")
        w = words[i + 1]
        self._use(name, t, w.value, w, uses)
        return i + 2

    @staticmethod
    def _use(name: str, t: ValueType, value: str, word: Word | None, uses: list[Use]) -> None:
        if t.keys is not None:  # `-o cache_dir=x`: the value's own type decides what is checked
            key, rest, vtype = t.assignment(value, name)
            uses.append(Use(f"{name} {key}=", vtype.name, rest, None))
            return
        t.check(value, name)
        uses.append(Use(name, t.name, value, word))

    def _positionals(self, words: list[Word], uses: list[Use]) -> None:
        if len(words) < self.min_positionals:
            raise ArgDeny(f"`{self.program}` needs at least {self.min_positionals} operand"
                          f"{'s' if self.min_positionals > 1 else ''} here; name the file{'s' if self.min_positionals > 1 else ''} it works on")
        for k, w in enumerate(words):
            rest = False
            if k < len(self.positionals):
                t = self.positionals[k]
            elif self.rest is not None:
                t, rest = self.rest, True
            else:
                count = len(self.positionals)
                what = "no arguments" if not count else f"at most {count} argument{'s' if count > 1 else ''}"
                raise ArgDeny(f"`{self.program} … {w.value}`: `{self.program}` takes {what} here")
            t.check(w.value, self.program)
            uses.append(Use("", t.name, w.value, w, rest))

    # -- messages -----------------------------------------------------------
    def _unknown(self, name: str, key: str | None = None) -> ArgDeny:
        """The refusal of an option the grammar does not declare: forbidden by name, or only undeclared."""
        spelled = ("-" + name.lstrip("-")) if self.style == "go" else name
        why = self.forbidden.get(name if key is None else key)
        if why is not None:
            return ArgForbidden(f"`{self.program} {spelled}` is never allowed: {why}")
        full = [o for o in self.options if o.startswith(name) and o != name] if name.startswith("--") else []
        if full:
            return ArgDeny(f"`{self.program} {spelled}`: spell the option out in full (`{full[0]}`), so the gate and "
                           "the program read it alike")
        return ArgDeny(f"`{self.program} {spelled}` is not an option this role allows{self._allowed()}")

    def _allowed(self) -> str:
        names = sorted(self.options, key=lambda o: (o.lstrip("-").lower(), o))
        if not names:
            return f" (`{self.program}` takes no options here)"
        prefix = "-" if self.style == "go" else ""
        shown = ", ".join(prefix + o for o in names[:24])
        more = f" and {len(names) - 24} more" if len(names) > 24 else ""
        return f"; allowed: {shown}{more}"


def expands(value: str) -> bool:
    """Whether bash could turn this word into another path: `~`, glob or brace characters."""
    return value[:1] == "~" or "=~" in value or ":~" in value or any(ch in value for ch in "*?[{")
