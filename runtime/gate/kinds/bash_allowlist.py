"""tools::bash-allowlist: every simple command must match a per-program rule.

A rule names a program, the subcommands it may run, and its argument grammar
(``runtime.lang.grammar``): every option and positional it may take, typed.
Anything the grammar does not declare is a deny; path-typed words go through
the same checks as the Write tool (``path-in-scope``) or must stay inside the
worktree (``path-in-root``). A rule also lists the variables the program may
be given beyond the harmless few every program may (``runtime.gate.envvars``),
and whether inline code (``python -c``), ``@file`` arguments and arguments
appended by ``xargs`` are allowed.

A role may hold several rules for one program (``python -m pytest`` and
``python -m unittest``, each with its own grammar): they are tried in order
and the first that accepts the call decides. When none does, the refusal is
the one of the rule the call came closest to (its subcommand matched), and
it names the forms the other rules allow.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

import os

from runtime.gate.decision import ALLOW, DENY, allow, ask, deny
from runtime.gate.envvars import BASE
from runtime.gate.interpreters import inline_code
from runtime.gate.kinds.base import Gate, PolicyError, no_more
from runtime.gate.paths import PathError, protected_reason, relative_to, resolve
from runtime.lang.audience import SESSION
from runtime.lang.grammar import (
    COPY,
    COPY_TO,
    DIFF,
    FILE,
    FOLDER,
    FREE,
    PATH,
    ROOT,
    SCOPE,
    ArgDeny,
    ArgForbidden,
    Grammar,
    GrammarError,
    expands,
)

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.grammar import Use
    from runtime.lang.jsontypes import JSONDict, JSONObject
    from runtime.lang.shell_types import Command

_RULE_KEYS = {
    "program", "subcommands", "option-style", "options", "positionals", "trailing", "env", "cwd",
    "inline-code", "arg-files", "xargs", "ask",
}
# The types checked after the grammar reads the words: paths in the worktree, and writes.
_CHECKED = frozenset({ROOT, SCOPE, FOLDER, COPY, COPY_TO, FILE})
# Write types, whose own checks refuse a pattern (or expand it) and say what to write instead.
_PATH_TYPES = frozenset({SCOPE, FOLDER, COPY, COPY_TO, FILE})
# What to do instead of a program no shipped role allows, for those agents reach for most.
_AWK = "print lines with `sed -n '10,20p' FILE` or `grep -n PATTERN FILE`, fields with `cut -d, -f3 FILE`"
_SCRIPT = ("a script runs commands the gate cannot read before they run: run them one by one, or the tests and "
           "checks they call directly")
_INSTEAD = {
    "awk": _AWK, "gawk": _AWK, "mawk": _AWK, "nawk": _AWK,
    "yarn": "the package's scripts run with `npm test` or `npm run SCRIPT`",
    "uv": "`uv run` first syncs the environment (it writes .venv and may download packages): `uv run --no-sync "
          "CMD` is judged as CMD alone",
    "pnpm": "the package's scripts run with `npm test` or `npm run SCRIPT`",
    "tox": "tox builds environments and runs what its configuration says: run the tests directly (`python -m pytest`)",
    "nox": "nox builds environments and runs what its configuration says: run the tests directly (`python -m pytest`)",
    "bash": _SCRIPT, "sh": _SCRIPT, "dash": _SCRIPT,
    "make": "`make` runs the Makefile's recipes: a person can declare the targets agents may run in the project "
            "catalog's toolchain.toml (`make-targets`)",
}
# A glob for paths in the worktree is expanded to check each match; past this many, the agent names fewer.
_MAX_GLOB_MATCHES = 1000
# A glob of files to write reads one folder: past this many names in it, the agent names the files.
_MAX_GLOB_SCAN = 20000
# Facts about the program its grammar may state; absent, each takes the cautious value.
_OPTIONAL_KEYS = {"response-files", "harmless-options", "min-positionals", "glob-writes", "stdin", "forbidden",
                  "anchored"}
# How far a call got through a rule (`BashAllowlist._judge`): no subcommand of the rule's matched; refused
# before the grammar read the words; refused by the grammar; judged after it (the paths it names).
NO_FORM, BEFORE, GRAMMAR, AFTER = 0, 1, 2, 3


MAX_DIFF_BYTES = 1 << 20


def _read_diff(path: str) -> str | None:
    """A diff file's text: a plain file, not a symlink, at most MAX_DIFF_BYTES, read without blocking (a FIFO
    would wait for a writer); None otherwise."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_DIFF_BYTES:
            return None
        data = os.read(fd, MAX_DIFF_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_DIFF_BYTES:
        return None
    return data.decode("utf-8", errors="surrogateescape")


def into_folder(operands: list[str]) -> list[str]:
    """The names cp, mv, ln and install write when their last operand is a folder: each source's last
    name inside it (`cp a.py tests` writes `tests/a.py`). Checked whether the folder exists or not (an
    earlier command may make it): such a name may be a planted hard link, or a control name
    (`cp -r x/.git src`)."""
    folder = operands[-1].rstrip("/") if operands else ""
    out = []
    for source in operands[:-1]:
        base = source.rstrip("/").rpartition("/")[2]
        if base:
            out.append(f"{folder}/{base}")
    return out


MAX_COPIED_NAMES = 5000  # names below a copied folder judged one by one; past this, the agent copies less


def below_copies(operands: list[str], cwds: tuple[str, ...]) -> list[str] | None:
    """Every name a recursive copy writes below its target: for each source that is a folder now, each name
    under it (symlinks not followed), placed under the target itself (`cp -rT`, or a target not yet made)
    and under the target's folder of the source's name (a target that is a folder). A name there may be a
    hard link an earlier call planted, which cp would write through. None: too many to judge."""
    if len(operands) < 2:
        return []
    target = operands[-1].rstrip("/") or "/"
    out: list[str] = []
    for source in operands[:-1]:
        base = source.rstrip("/").rpartition("/")[2]
        for cwd in cwds:
            top = os.path.join(cwd, source)
            if os.path.islink(top.rstrip("/")) or not os.path.isdir(top):
                continue
            for folder, dirs, files in os.walk(top):
                rel = os.path.relpath(folder, top)
                for entry in (*dirs, *files):
                    name = entry if rel == "." else f"{rel}/{entry}"
                    out.append(f"{target}/{name}")
                    if base not in ("", ".", ".."):
                        out.append(f"{target}/{base}/{name}")
                if len(out) > 2 * MAX_COPIED_NAMES:
                    return None
    return list(dict.fromkeys(out))


class Rule:
    __slots__ = ("program", "subcommands", "_raw_grammar", "_grammar", "env", "inline_code", "arg_files", "xargs", "ask",
                 "response_files", "harmless_options", "glob_writes", "forbidden")

    def __init__(self, raw: JSONObject) -> None:
        if not isinstance(raw, dict) or not _RULE_KEYS <= set(raw) <= _RULE_KEYS | _OPTIONAL_KEYS:
            raise PolicyError("a shell rule has missing or unknown keys")
        self.program = raw["program"]
        self.subcommands = sorted((tuple(s.split()) for s in raw["subcommands"]), key=len, reverse=True)
        grammar: JSONDict = {k: raw[k] for k in ("option-style", "options", "positionals", "cwd") if raw[k] is not None}
        if raw.get("min-positionals"):
            grammar["min-positionals"] = raw["min-positionals"]
        if raw.get("stdin") is not None:
            grammar["stdin"] = raw["stdin"]
        if raw.get("anchored"):
            grammar["anchored"] = raw["anchored"]
        forbidden = raw.get("forbidden") or {}
        if not isinstance(forbidden, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                      for k, v in forbidden.items()):
            raise PolicyError(f"{self.program}: `forbidden` must map words to reasons")
        if forbidden:
            grammar["forbidden"] = forbidden
        # Subcommands never allowed (`git push`), longest first; forbidden options are the grammar's.
        self.forbidden = sorted(((tuple(k.split()), v) for k, v in forbidden.items() if not k.startswith("-")),
                                key=lambda item: len(item[0]), reverse=True)
        if raw["trailing"] is not None:
            grammar["trailing"] = raw["trailing"]
        if not isinstance(grammar.get("options", {}), dict):
            raise PolicyError(f"{self.program}: `options` must be a table")
        # Built on first use: the hook is a fresh process per call and runs one or two programs'
        # rules of the thirty a role has. The policy compiler checked every grammar already; a
        # broken one here is still a PolicyError, which the engine turns into a deny.
        self._raw_grammar = grammar
        self._grammar: Grammar | None = None
        env = raw["env"]
        if not isinstance(env, list) or not all(isinstance(e, str) for e in env):
            raise PolicyError("a shell rule's `env` must be a list of names")
        self.env = frozenset(env)
        self.inline_code = bool(raw["inline-code"])
        self.arg_files = bool(raw["arg-files"])
        self.xargs = bool(raw["xargs"])
        self.ask = bool(raw["ask"])
        # Whether the program may read `@file` as a file of more arguments (argparse with
        # fromfile_prefix_chars, gcc, javac); getopt programs (grep, sed) take `@x` as a word.
        self.response_files = raw.get("response-files", True) is not False
        # Whether no option of the program writes, deletes or runs anything (ls, cat, grep): then a
        # glob bash may expand into option names (`*.md` beside a file `-r.md`) only changes what it prints.
        self.harmless_options = raw.get("harmless-options", False) is True
        # Whether the program takes each operand it writes as a name, never as a pattern of its own (rm,
        # sed -i): then a glob bash expands may name them, every match checked (prettier expands its own).
        self.glob_writes = raw.get("glob-writes", False) is True

    @property
    def grammar(self) -> Grammar:
        if self._grammar is None:
            try:
                self._grammar = Grammar(self._raw_grammar, self.program)
            except GrammarError as exc:
                raise PolicyError(str(exc)) from None
        return self._grammar


class BashAllowlist(Gate):
    kind = "bash-allowlist"
    grants = True

    def configure(self, params: dict[str, object]) -> None:
        raw = params.pop("rules", None)
        if not isinstance(raw, list):
            raise PolicyError("parameter `rules` must be a list")
        # A program's rules are read on its first command: a hook process (one per call) runs one or two
        # programs' rules of the ninety a role has. The compiler checked every rule; one broken here is still
        # a PolicyError when its program runs, which the engine turns into a deny.
        self._raw: dict[str, list[JSONObject]] = {}
        for entry in raw:
            program = entry.get("program") if isinstance(entry, dict) else None
            if not isinstance(program, str):
                raise PolicyError("a shell rule names no program")
            self._raw.setdefault(program, []).append(entry)
        self._rules: dict[str, list[Rule]] = {}
        self.programs = ", ".join(sorted(self._raw)) or "none"
        no_more(self.kind, params)

    def rules_for(self, program: str) -> list[Rule] | None:
        """The rules for ``program``, in the policy's order; None when no rule names it."""
        rules = self._rules.get(program)
        if rules is None:
            raw = self._raw.get(program)
            if raw is None:
                return None
            rules = self._rules[program] = [Rule(entry) for entry in raw]
        return rules

    def on_command(self, cmd: Command, ctx: Context) -> GateDecision | None:
        name = cmd.name
        rules = self.rules_for(name)
        if rules is None:
            instead = _INSTEAD.get(name)
            step = f" ({instead})" if instead else ""
            # A person's prompt names the program, not the role's sixty others; an agent is shown what it may run.
            listed = "" if ctx.policy.audience == SESSION else f"; the programs its rules run: {self.programs}"
            return self._undecided(f"no rule of role `{ctx.policy.role}` runs `{name}`{step}{listed}", cmd, ctx, name)
        forbidden = self._forbidden(rules, cmd)
        if forbidden is not None:
            return forbidden
        refusal: GateDecision | None = None
        furthest = -1
        instead = None
        for rule in rules:
            d, stage, key = self._judge(rule, cmd, ctx)
            if d.verdict != DENY:
                return d
            if stage > furthest:
                # The rule the call got furthest through (its subcommand matched, its grammar read
                # every word) says best what is wrong with it: `sed -i … .git/x` is refused for the
                # path by the in-place rule, not for `-i` by the read-only one.
                refusal, furthest, instead = d, stage, key
        assert refusal is not None  # a program's rules are never an empty list
        if furthest == NO_FORM and len(rules) > 1:
            forms = [f"`{name} {' '.join(s)}`".rstrip("` ") + "`" for r in rules for s in reversed(r.subcommands or [()])]
            refusal = deny(f"`{name} {' '.join(cmd.args[:2])}` is not a form the rules of role `{ctx.policy.role}` "
                           f"declare; its forms: {', '.join(dict.fromkeys(forms))} (options after the subcommand)",
                           self.atom, name)
        if furthest < AFTER:
            # No rule took these words, and nothing the gate read is forbidden: undecided.
            return self._undecided(refusal.reason, cmd, ctx, refusal.rule, instead)
        return refusal

    def _undecided(self, reason: str, cmd: Command, ctx: Context, rule: str | None,
                   instead: str | None = None) -> GateDecision:
        """An ask: ``instead``, the key of the program's rule that would allow the call (a variable it may be given,
        `xargs`), which `runtime allow` does not write; without one, the rule `runtime allow` writes."""
        from runtime.gate.undecided import undecided

        if instead is not None:
            return undecided(reason, ctx.policy, self.atom, rule,
                             instead=f"a person may add `{instead}` to the rule for `{cmd.name}` by hand")
        return undecided(reason, ctx.policy, self.atom, rule, line=" ".join([cmd.name, *cmd.args]), name=cmd.name,
                         args=cmd.args)

    def _forbidden(self, rules: list[Rule], cmd: Command) -> GateDecision | None:
        """The deny of a subcommand a rule of the program forbids (`git push`): where the call starts with it, or,
        where no rule's subcommand starts it (`git -C x push`), anywhere among its words."""
        args = cmd.args
        for rule in rules:
            for words, why in rule.forbidden:
                if tuple(args[: len(words)]) == words:
                    return deny(f"`{cmd.name} {' '.join(words)}` is never allowed here: {why}", self.atom,
                                f"{cmd.name} {' '.join(words)}")
        if any(tuple(args[: len(s)]) == s for rule in rules for s in rule.subcommands) or \
                any(not rule.subcommands for rule in rules):
            return None
        present = set(args)
        for rule in rules:
            for words, why in rule.forbidden:
                if len(words) == 1 and words[0] in present:
                    return deny(f"`{cmd.name} … {words[0]}` is never allowed here: {why}", self.atom,
                                f"{cmd.name} {words[0]}")
        return None

    def _judge(self, rule: Rule, cmd: Command, ctx: Context) -> tuple[GateDecision, int, str | None]:
        """One rule's answer, how far the call got through it (NO_FORM, BEFORE, GRAMMAR, AFTER), and for a
        refusal BEFORE the grammar, the key of the rule that would allow it. A refusal before AFTER means the
        rule did not take the words; one at AFTER, that it took them and refused what they would do, or how
        they are written."""
        name = cmd.name
        args = cmd.args
        sub: tuple[str, ...] = ()
        if rule.subcommands:
            sub = next((s for s in rule.subcommands if tuple(args[: len(s)]) == s), ())
            if not sub:
                shown = ", ".join(f"`{name} {' '.join(s)}`" for s in reversed(rule.subcommands))
                return deny(f"`{name} {' '.join(args[:2])}` is not a form the rules of role `{ctx.policy.role}` "
                            f"declare; its forms: {shown} (options after the subcommand)", self.atom, name), NO_FORM, None
        for var, _value in cmd.assigns:
            if var not in BASE and var not in rule.env:
                extra = f"; `{name}` may also be given {', '.join(sorted(rule.env))}" if rule.env else ""
                return deny(f"`{var}` is not a variable the rule lets `{name}` be given (every program may be given "
                            f"locale and terminal settings: LANG, LC_*, TZ, NO_COLOR, ...{extra}); run the command "
                            "without it", self.atom, f"{name} {var}"), BEFORE, f'env = ["{var}"]'
        if not rule.arg_files and rule.response_files:
            for a in args:
                if a[:1] == "@":
                    return deny(f"`{name} {a}`: arguments starting with @ can name a file of more arguments, which the gate cannot check", self.atom, name), BEFORE, "arg-files = true"
        if not rule.inline_code:
            why = inline_code(name, args)
            if why:
                return deny(why, self.atom, name), BEFORE, "inline-code = true"
        if not rule.harmless_options:
            for w in cmd.words:
                if w.dash:
                    return deny(f"`{w.value}` is a glob bash could expand into option names of `{name}` (a file named "
                                f"`-x…` matches it); start it with `./` (`./{w.value}`) or a folder name, or list the files", self.atom, name), AFTER, None
        if cmd.open_args and not rule.xargs:
            return deny(f"`xargs {name}` would append arguments (options too) the gate cannot check; pass them explicitly", self.atom, name), BEFORE, "xargs = true"
        try:
            uses = rule.grammar.read(cmd.words[len(sub):])
        except ArgForbidden as exc:
            return deny(str(exc), self.atom, name), AFTER, None
        except ArgDeny as exc:
            return deny(str(exc), self.atom, name), GRAMMAR, None
        return self._check(rule, uses, cmd, ctx), AFTER, None

    def _check(self, rule: Rule, uses: list[Use], cmd: Command, ctx: Context) -> GateDecision:
        """The checks after the grammar read the words: where it runs, and each path it was given."""
        name = cmd.name
        if rule.grammar.cwd_in_root:
            for cwd in cmd.cwds:
                if not ctx.folder_inside_root(cwd):
                    return deny(f"`{name}` loads the project around its working folder (config, conftest.py, build "
                                f"scripts) and writes its caches there, and `{cwd}` is outside the worktree or in a "
                                "control folder (.git, .claude, .agent-runtime); run it from the worktree", self.atom, name)
        pending = None
        copies: list[str] = []
        for use in uses:
            d = self._expansion(rule, use, cmd)
            if d is not None:
                return d
            if use.type not in _CHECKED:
                continue
            what = f"{name} {use.spelled}".rstrip()
            word = use.word
            if use.value == "{}" and cmd.found:
                continue  # a path the removing find found: its own rule checks each one
            if use.value == "{}":
                return deny(f"`{what} {{}}`: `find -exec` puts every found path there, which the gate cannot check; "
                            "find the files, then name them", self.atom, what)
            # A word of its own carries the shell's view of its quoting (a quoted `[` is literal);
            # a value attached to an option (`--out=x`) is judged by its text, conservatively.
            if use.type == ROOT and word is not None and word.glob and not word.tilde and "=~" not in use.value \
                    and ":~" not in use.value:
                # `pytest tests/test_*.py`: every name it expands to now is checked (a name made later
                # lies in the same folders, and reading stays in the worktree whatever it is called).
                d = self._glob_inside_root(what, use.value, cmd, ctx)
                if d is not None:
                    return d
                continue
            if word is not None and word.glob and use.rest and rule.glob_writes and (use.type == SCOPE or use.type == FILE):
                # `sed -i … src/app/*.py`, `rm -rf ./*.egg-info`: every name the glob matches now is checked
                # as a write (see _glob_writes for a name made later).
                d = self._glob_writes(what, use, cmd, ctx)
                if d is not None and d.verdict == DENY:
                    return d
                pending = pending if d is None else d
                continue
            if (expands(use.value) if word is None else (word.glob or word.tilde or "=~" in use.value or ":~" in use.value)):
                # bash expands `~`, globs and braces in a path word before the program sees
                # it, through symlinks planted in scope; the gate judges the literal text.
                return deny(f"`{what} {use.value}`: write the path out (no `~`, globs or braces), "
                            "so the gate judges the path the program will use", self.atom, what)
            if use.type == ROOT:
                d = self._inside_root(what, use.value, cmd, ctx)
                if d is not None:
                    return d
                continue
            if any(ch in use.value for ch in "*?[{"):
                # Quoted for the shell, a pattern still reaches the program, and some expand their own
                # (prettier, eslint, black's --include): a write names its files.
                return deny(f"`{what} {use.value}`: name the files to write; a pattern may be expanded by the "
                            "program itself into paths the gate never sees", self.atom, what)
            if use.type == COPY_TO:
                copies.append(use.value)  # sources read, the last written: judged once all are known
                continue
            if use.type == FILE and any(os.path.isdir(os.path.join(cwd, use.value)) for cwd in cmd.cwds):
                return deny(f"`{what} {use.value}` is a folder; name the files to write (the program would rewrite "
                            "whatever it finds inside, through links the gate never sees)", self.atom, what)
            d = ctx.check_write(use.value, cmd.cwds, what, folder=use.type == FOLDER)
            if d.verdict == DENY:
                return d
            pending = pending if d.verdict == ALLOW else d
            if use.type == COPY:
                copies.append(use.value)
        if copies and any(use.type == COPY_TO for use in uses):
            d = self._copy_sources(name, copies, cmd, ctx)
            if d is not None and d.verdict == DENY:
                return d
            pending = pending if d is None or d.verdict == ALLOW else d
        below = below_copies(copies, cmd.cwds)
        if below is None:
            return deny(f"`{name} {' '.join(copies)}`: the folders copied hold more than {MAX_COPIED_NAMES} names for "
                        "the gate to judge one by one; copy fewer at a time", self.atom, name)
        for inside in into_folder(copies) + below:
            d = ctx.check_write(inside, cmd.cwds, f"{name} {' '.join(copies)} (writes {inside})")
            if d.verdict == DENY:
                return d
            pending = pending if d.verdict == ALLOW else d
        if cmd.deletes is not None:
            from runtime.gate.find_deletes import check_removals

            d = check_removals(cmd, ctx, self.atom)
            if d is not None and d.verdict == DENY:
                return d
            pending = pending if d is None or d.verdict == ALLOW else d
        if rule.grammar.stdin == DIFF or any(use.type == DIFF for use in uses):
            d = self._diff_writes(rule, uses, cmd, ctx)
            if d is not None and d.verdict == DENY:
                return d
            pending = pending if d is None or d.verdict == ALLOW else d
        if pending is not None:
            return pending
        if rule.ask:
            return ask(f"`{name}` needs approval under this role's rules (its rule says `ask = true`; drop `ask` from the "
                       f"rule of role `{ctx.policy.role}` to allow it without asking)", self.atom, name)
        return allow(f"`{name}` is allowed by its rule", self.atom, name)

    def _copy_sources(self, name: str, operands: list[str], cmd: Command, ctx: Context) -> GateDecision | None:
        """cp's operands: the last is written (and, a folder, receives each source by name, checked by the
        caller); the others are only read. A source is fine if the role may write it (a folder in the scope
        copies what the scope holds), or if it is a plain file, which brings in its content and nothing
        else (or a name nothing holds yet: cp then fails); a folder or a symlink from elsewhere could bring in
        a `.git` or `.claude`, or a link the gate would have to follow later."""
        import stat

        pending = None
        d = ctx.check_write(operands[-1], cmd.cwds, f"{name} {operands[-1]}")
        if d.verdict == DENY:
            return d
        pending = pending if d.verdict == ALLOW else d
        for source in operands[:-1]:
            d = ctx.check_write(source, cmd.cwds, f"{name} {source}")
            if d.verdict != DENY:
                pending = pending if d.verdict == ALLOW else d
                continue
            for cwd in cmd.cwds:
                try:
                    plain = stat.S_ISREG(os.lstat(os.path.join(cwd, source)).st_mode)
                except FileNotFoundError:
                    plain = True  # cp fails and copies nothing; only code the sandbox holds could make it first
                except OSError:
                    plain = False
                if not plain:
                    return deny(f"`{name} {source}`: a source from outside what you may write must be a plain file "
                                "(a folder or a link could bring in control folders, or links the gate never sees); "
                                "copy the files one by one", self.atom, name)
        return pending

    def _diff_writes(self, rule: Rule, uses: list[Use], cmd: Command, ctx: Context) -> GateDecision | None:
        """GNU patch: the files it writes besides those its options name. Given a file operand, that file, with
        the backup (`FILE.orig`, unless --no-backup-if-mismatch) and the rejects (`FILE.rej`, unless -r names
        them) beside it; without one, the same for every file the diff names (``runtime.gate.diff_targets``),
        the diff read from where patch reads it: inline (a heredoc, a here-string), or a file the agent cannot
        change. A file it can change may differ by the time patch reads it (a command left running in the
        background can rewrite it in between), so it is refused. With --dry-run patch writes nothing."""
        from runtime.gate.diff_targets import DiffError, diff_targets

        name = cmd.name
        given = {use.spelled for use in uses}
        if "--dry-run" in given:
            return None
        targets = [use.value for use in uses if not use.spelled and (use.type == SCOPE or use.type == FILE)]
        texts: list[str] = []
        if not targets:
            found = self._diff_text(uses, cmd, ctx)
            if not isinstance(found, list):
                return found
            texts = found
        strip: int | None = None
        for use in uses:
            if use.spelled in ("-p", "--strip"):
                if not use.value.isdigit():
                    return deny(f"`{name} {use.spelled} {use.value}`: the strip count must be a number (`-p1`)",
                                self.atom, name)
                strip = int(use.value)
        for text in texts:
            try:
                targets += diff_targets(text, strip)
            except DiffError as exc:
                return deny(f"`{name}`: {exc}", self.atom, name)
        pending = None
        for target in dict.fromkeys(targets):
            writes = [target]
            if "--no-backup-if-mismatch" not in given:
                writes.append(target + ".orig")
            if not given & {"-r", "--reject-file"}:
                writes.append(target + ".rej")
            for path in writes:
                d = ctx.check_write(path, cmd.cwds, f"`{name}` writes `{path}` (the diff names `{target}`)")
                if d.verdict == DENY:
                    return d
                pending = pending if d.verdict == ALLOW else d
        return pending

    def _diff_text(self, uses: list[Use], cmd: Command, ctx: Context) -> list[str] | GateDecision:
        """The diff patch will read, once per folder the shell may be in; or why the gate cannot know it."""
        name = cmd.name
        inline = f"give the diff inline instead: `{name} -p1 <<'EOF'`, the diff, then `EOF` on a line of its own"
        source = next((use.value for use in reversed(uses) if use.type == DIFF), None)
        if source is None or source == "-":  # `-i -` reads standard input too
            if cmd.stdin is None:
                return deny(f"`{name}` reads its diff from standard input here, which the gate cannot see; {inline}",
                            self.atom, name)
            if cmd.stdin.text is not None:
                return [cmd.stdin.text]
            source = cmd.stdin.path or ""
        texts = []
        for cwd in cmd.cwds:
            d = ctx.check_write(source, (cwd,), f"`{name}`")
            if d.verdict != DENY:
                return deny(f"`{name}` would read `{source}` when it runs, and it is a file you can change, so what the "
                            f"gate read may not be what patch reads; {inline} (or check it with `{name} --dry-run`)",
                            self.atom, name)
            text = _read_diff(os.path.join(cwd, source))
            if text is None:
                return deny(f"`{name}`: `{source}` cannot be read as a diff here (missing, not a plain file, a "
                            f"symlink or over {MAX_DIFF_BYTES} bytes); {inline}", self.atom, name)
            texts.append(text)
        return texts

    def _expansion(self, rule: Rule, use: Use, cmd: Command) -> GateDecision | None:
        """A word bash expands (a glob, `~`) becomes other words before the program runs: names from a folder,
        any number of them, which the grammar then reads in the places after it. Allowed only where every one
        lands in the same type, the repeating operand (`path...`), and that type is judged for each name: a
        path read, a path in the worktree (expanded and checked), a write of a program that expands no
        pattern itself (`glob-writes`: expanded and checked), or any word of a program none of whose
        options writes or runs anything. Anywhere else the gate would judge the pattern's text and the
        program get a file's name: `sed s*a*b* f` ran the script of a file named `s|a|b|e`, `uniq in*`
        wrote the second match."""
        word = use.word
        if word is None or not (word.glob or word.tilde or "=~" in use.value or ":~" in use.value):
            return None  # a value attached to an option is part of a word starting with `-`, never expanded
        vtype = use.type
        if use.rest and (vtype == PATH or vtype == ROOT or (vtype == FREE and rule.harmless_options)):
            return None
        if use.rest and word.glob and rule.glob_writes and (vtype == SCOPE or vtype == FILE):
            return None  # expanded and each match checked below
        if vtype in _PATH_TYPES:
            return None  # a write: its own check refuses the pattern and says what to write instead
        what = f"{cmd.name} {use.spelled}".rstrip()
        if vtype == PATH or vtype == ROOT:
            return deny(f"`{what} {use.value}`: write the path out (no `~`, globs or braces): bash would replace it "
                        "with every name it matches, and each after the first would be read as another argument",
                        self.atom, what)
        if word.tilde or "=~" in use.value or ":~" in use.value:
            return deny(f"`{what} {use.value}`: bash replaces `~` with a home folder there; quote it, or write the "
                        "value out", self.atom, what)
        return deny(f"`{what} {use.value}` is a pattern bash replaces with the names it matches before `{cmd.name}` "
                    f"runs; quote it (`'{use.value}'`) to pass it as it is", self.atom, what)

    def _glob_writes(self, what: str, use: Use, cmd: Command, ctx: Context) -> GateDecision | None:
        """A glob naming files a program that expands no pattern itself writes: each name it matches now, from
        every folder the shell may be in, is checked like the Write tool, and so is the pattern's own text
        (which bash passes on when nothing matches).

        Matched as generously as any shell setting could (hidden names, as with dotglob; any case, as with
        nocaseglob), and a pattern's quoted wildcards as wildcards: a superset of what bash passes. The
        wildcards may stand in the last part only, so every name the glob can match, now or later, lies in
        one folder: a name made there after the decision was made by a write the gate checked, or by code
        the program runs, which is the sandbox's to contain. It cannot start with `-` (a glob that could is
        refused before the grammar reads the words)."""
        import fnmatch  # with `re`: only a write through a glob pays for them
        import re

        value = use.value
        folder, slash, pattern = value.rpartition("/")
        if any(ch in value for ch in "[]()|") or "**" in value or any(ch in folder for ch in "*?") \
                or len(pattern.encode()) > 255:
            return deny(f"`{what} {value}`: a glob for files to write may use `*` and `?` in its last part only "
                        "(`src/app/*.py`); write the paths out otherwise", self.atom, what)
        folder = folder or ("/" if slash else ".")
        matcher = re.compile(fnmatch.translate(pattern), re.IGNORECASE | re.DOTALL)
        pending = None
        for cwd in cmd.cwds:
            names = [value]  # bash passes the word itself when nothing matches
            try:
                with os.scandir(os.path.join(cwd, folder)) as entries:
                    for n, entry in enumerate(entries):
                        if n >= _MAX_GLOB_SCAN or len(names) > _MAX_GLOB_MATCHES:
                            return deny(f"`{what} {value}` matches too many names; name a narrower glob or the files",
                                        self.atom, what)
                        if matcher.match(entry.name):
                            names.append(f"{folder.rstrip('/')}/{entry.name}" if folder != "/" else f"/{entry.name}")
            except OSError:
                pass  # no such folder: nothing matches
            for path in names:
                if use.type == FILE and os.path.isdir(os.path.join(cwd, path)):
                    return deny(f"`{what} {value}` matches the folder `{path}`; name the files to write (the program "
                                "would rewrite whatever it finds inside, through links the gate never sees)",
                                self.atom, what)
                d = ctx.check_write(path, (cwd,), f"{what} {value} (matches {path})")
                if d.verdict == DENY:
                    return d
                pending = pending if d.verdict == ALLOW else d
        return pending

    def _glob_inside_root(self, what: str, value: str, cmd: Command, ctx: Context) -> GateDecision | None:
        """A glob for paths that must stay in the worktree: every name it matches now, from every folder the
        shell may be in. `[` classes are refused (bash reads `[^a]` and `[!a]` alike, Python's fnmatch does
        not), and so is `**` (with bash's globstar it descends; the gate would have to follow every folder)."""
        import glob as globbing

        if "[" in value or "**" in value:
            return deny(f"`{what} {value}`: write the glob with `*` and `?` only (no `[...]` classes or `**`), or the "
                        "paths out", self.atom, what)
        if any(ch in part for part in value.split("/")[:-2] for ch in "*?"):
            # The walk stays short: wildcards in the last two components only (`tests/*/test_*.py`).
            return deny(f"`{what} {value}`: put wildcards in the last two parts of the path only, or write the paths "
                        "out", self.atom, what)
        for cwd in cmd.cwds:
            # Hidden names too: with bash's dotglob on, `tests/*` would give `tests/.x` as well.
            found = globbing.iglob(value, root_dir=cwd, include_hidden=True)
            matches = [m for _, m in zip(range(_MAX_GLOB_MATCHES + 1), found, strict=False)]  # stops past the cap
            if len(matches) > _MAX_GLOB_MATCHES:
                return deny(f"`{what} {value}` matches more than {_MAX_GLOB_MATCHES} paths; name a narrower glob or "
                            "the folder", self.atom, what)
            # No match: bash passes the word itself, which names a path in its folder part's folder.
            for path in matches or [value.rsplit("/", 1)[0] if "/" in value else "."]:
                d = self._inside_root(what, path, cmd, ctx, (cwd,))
                if d is not None:
                    return d
        return None

    def _inside_root(self, what: str, value: str, cmd: Command, ctx: Context,
                     cwds: tuple[str, ...] | None = None) -> GateDecision | None:
        for cwd in cmd.cwds if cwds is None else cwds:
            try:
                resolved = resolve(value, cwd)
            except PathError as exc:
                return deny(f"`{what}`: {exc}", self.atom, what)
            if relative_to(resolved, ctx.policy.root) is None:
                return deny(f"`{what} {value}` is outside the worktree; this program loads code from the paths it is given, "
                            "so keep them inside", self.atom, what)
            why = protected_reason(resolved, ctx.policy.protected, ctx.policy.exempt, ctx.policy.root, ctx.policy.audience)
            if why is not None:
                # It loads code from there and writes its caches there (pytest's .pytest_cache in `.git`).
                return deny(f"`{what} {value}`: {why}", self.atom, what)
        return None
