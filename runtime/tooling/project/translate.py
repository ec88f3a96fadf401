"""A repository's command, as its file writes it, into the command the agent and verify run.

- Placeholders of the file's tool: tox's `{posargs}` (its default, or nothing),
  `{toxinidir}`, `{envpython}`; hatch's and pdm's `{args}`, `{root}`. Any other
  is filled in only by that tool when it runs: the command is left out, said why.
- Runners are replaced by what they run: `tox -e lint` by the environment's
  commands, `nox -s tests` by the session's, `hatch run test` and `pdm run
  lint` by the script's, `make test` by the target's recipe (make itself is
  allowed only through toolchain.toml's make-targets), `pre-commit run` by the
  hooks' tools. `uv run X` becomes `uv run --no-sync X` where the uv preset
  applies (the sandbox has no network to sync with), `X` elsewhere; `poetry
  run X` and `npx X` become `X`, `yarn lint` `npm run lint`; a package
  manager's own command (`yarn install`, `npm ci`) is no check, and goes
  without a word.
- Formatters and fixers take their checking form (`black --check`, `ruff
  check` without `--fix`, `cargo fmt --check`): a check must not change the
  work it checks.
- What the gate would never take as one command (pipes, redirections,
  `$VAR`, `cd`: a task's commands have no folder of their own to run in) is
  left out, said why, when it looks like a check.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from runtime.tooling.project.found import Found, Raw, Skipped, classify, hint_of
from runtime.tooling.project.scan import Scan

MAX_DEPTH = 4  # runners calling runners (`make check` -> `tox -e lint` -> ...)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Programs that are never a repository's test, lint, type or format command, whatever holds them.
UTILITIES = frozenset({
    "rm", "echo", "mkdir", "cp", "mv", "touch", "cat", "ls", "printf", "true", "false", "pip", "pip3", "uv", "poetry",
    "pdm", "hatch", "git", "curl", "wget", "sleep", "find", "sed", "chmod", "test", "[", "export", "set", "exit",
    "rmdir", "ln", "tar", "cd", "npm", "yarn", "pnpm", "node", "docker", "sudo", "apt-get", "apt", "brew", "rustup",
    "cargo", "go", "conda", "mamba", "virtualenv", "env", "coverage", "twine", "sphinx-build", "mkdocs",
})
# yarn's, pnpm's and bun's own commands, which `yarn NAME` runs instead of a package.json script of that name:
# installing, adding, publishing, never a check. `check` is not among them: yarn 1 has one, but a repository
# that writes `yarn check` far more likely means its package.json's `check` script.
PACKAGE_MANAGER_COMMANDS = frozenset({
    "install", "i", "add", "remove", "rm", "uninstall", "ci", "audit", "upgrade", "upgrade-interactive", "up",
    "update", "outdated", "why", "dlx", "create", "init", "link", "unlink", "publish", "pack", "config", "cache",
    "info", "import", "rebuild", "prune", "store", "setup", "dedupe", "licenses", "global", "login", "logout",
    "version", "versions", "workspace", "workspaces", "bin", "list", "ls", "owner", "tag", "team", "policies",
    "patch", "patch-commit", "plugin", "set", "fetch", "autoclean", "generate-lock-entry", "help", "pm",
})
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_TOX_SCRATCH = re.compile(r"(?:^|(?<=\s))(?:--?[\w-]+=)?\{(?:envtmpdir|env_tmp_dir|envlogdir|env_log_dir|temp_dir)\}\S*")
_BIN_PREFIXES = (".venv/bin/", "venv/bin/", ".tox/bin/", "node_modules/.bin/", "./node_modules/.bin/", "bin/")


@dataclass(frozen=True)
class Context:
    scan: Scan
    uv: bool  # the uv preset applies: `uv run` runs without syncing


class Untranslatable(Exception):
    """The command cannot become one the gate judges as the file meant it: the reason, for the person."""


def _placeholders(text: str, dialect: str) -> str:
    if dialect == "shell" or dialect == "nox":
        if dialect == "nox" and "{computed}" in text:
            raise Untranslatable("an argument is computed when the session runs")
        if "${{" in text:
            raise Untranslatable("uses the workflow's `${{ }}` expressions")
        return text

    def fill(m: re.Match[str]) -> str:
        name, _sep, default = m.group(1).partition(":")
        name = name.strip()
        if name in ("posargs", "args") or (dialect == "tox" and m.group(1) == "[]"):
            return default
        if name in ("toxinidir", "root", "tox_root"):
            return "."
        if name == "envpython":
            return "python"
        if name in ("envbindir", "env_bin_dir"):
            return ".venv/bin"
        if name == "env" and default:
            return default.partition(":")[2]
        raise Untranslatable(f"holds `{m.group(0)}`, which only {dialect} fills in when it runs")

    if dialect == "tox":
        # A folder tox makes for its own environment (`--basetemp={envtmpdir}`) is scratch space a run
        # outside tox does without: the option goes, and the tool keeps its default.
        text = _TOX_SCRATCH.sub(" ", text)
    # Innermost first, until none is left: a default may hold a placeholder of its own
    # (`{posargs:{toxinidir}/tests}`), which one pass fills in, leaving the outer one for the next. Each pass
    # takes at least one pair of braces away (no value filled in holds one), so this ends.
    while True:
        filled = _PLACEHOLDER.sub(fill, text)
        if filled == text:
            break
        text = filled
    if dialect == "tox":
        text = re.sub(r"(^|\s)\[\](?=\s|$)", " ", text)  # tox 3's old posargs
    return text


def _segments(text: str) -> list[list[str]]:
    """The simple commands of a `&&` or `;` list, as words; anything else of the shell is untranslatable."""
    if "$" in text or "`" in text:
        raise Untranslatable("uses shell variables or substitutions")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise Untranslatable(f"cannot be read as a shell command ({exc})") from None
    out: list[list[str]] = [[]]
    for token in tokens:
        if token in ("&&", ";"):
            out.append([])
        elif token and set(token) <= set("();<>|&"):
            raise Untranslatable(f"uses the shell's `{token}`: give the command alone")
        else:
            out[-1].append(token)
    return [words for words in out if words]


def _program(word: str) -> str:
    for prefix in _BIN_PREFIXES:
        if word.startswith(prefix) and "/" not in word[len(prefix):]:
            word = word[len(prefix):]
    if re.match(r"^python3\.\d+$", word):
        return "python3"
    return {"py.test": "pytest"}.get(word, word)


def _options_then_rest(words: list[str], takes_value: set[str]) -> list[str]:
    """The words after a runner's own options (`uv run --extra test pytest` -> `pytest`)."""
    n = 0
    while n < len(words) and words[n].startswith("-"):
        n += 2 if words[n] in takes_value else 1
    return words[n:]


# make's options that change what it prints or whether it goes on after a failure, never what a recipe runs.
_MAKE_QUIET = frozenset({"-s", "--silent", "--quiet", "-k", "--keep-going"})

_UV_VALUES = {"--extra", "--group", "--only-group", "--with", "--python", "-p", "--package", "--env-file", "--index",
              "--directory", "--project", "--with-requirements", "--no-group", "--no-extra"}


_RUFF_SUBCOMMANDS = frozenset({"check", "format", "rule", "config", "linter", "clean", "server", "analyze", "version",
                               "help", "generate-shell-completion"})
_RUFF_FIXES = frozenset({"--fix", "--unsafe-fixes", "--exit-non-zero-on-fix"})


def _ruff_subcommand(args: list[str]) -> int | None:
    """Where ruff's subcommand is among its arguments, after its global options (`--config FILE`, `-q`), or
    None for the command line of before subcommands."""
    n = 0
    while n < len(args) and args[n].startswith("-"):
        n += 2 if args[n] == "--config" else 1
    return n if n < len(args) and args[n] in _RUFF_SUBCOMMANDS else None


def checking_form(words: list[str]) -> tuple[list[str], bool]:
    """A formatter's or fixer's command in the form that only checks, and whether it now only checks."""
    program, args = words[0], words[1:]
    if program == "black" and not {"--check", "--diff"} & set(args):
        return [program, "--check", *args], True
    if program == "isort" and not {"--check-only", "--check", "-c", "--diff"} & set(args):
        return [program, "--check-only", *args], True
    if program == "ruff":
        at = _ruff_subcommand(args)
        if at is None and {"--version", "-V", "--help", "-h"} & set(args):
            return words, True  # ruff telling about itself, no check: nothing classifies it
        # ruff's old command line, with no subcommand (`ruff [OPTIONS] PATHS`), is `ruff check`: `ruff --fix .`
        # must lose `--fix` as `ruff check --fix .` does, and `ruff --select E .` is a lint, not nothing.
        head, sub, rest = (args[:at], args[at], args[at + 1:]) if at is not None else ([], "check", args)
        if sub == "format":
            if {"--check", "--diff"} & set(rest):
                return words, True
            return [program, *head, "format", "--check", *rest], True
        if sub == "check":
            return [program, *head, "check", *[a for a in rest if a not in _RUFF_FIXES]], "--fix-only" not in rest
    if program == "prettier":
        rest = ["--check" if a in ("--write", "-w") else a for a in args]
        if not {"--check", "-c", "--list-different", "-l"} & set(rest):
            rest = ["--check", *rest]
        return [program, *rest], True
    if program == "eslint":
        return [program, *[a for a in args if a != "--fix"]], True
    if program == "tsc" and "--noEmit" not in args:
        return [program, "--noEmit", *args], True
    if program == "cargo" and args[:1] == ["fmt"] and "--check" not in args:
        return [program, *args, "--check"], True
    if program == "gofmt" or (program == "go" and args[:1] == ["fmt"]) or program in ("autopep8", "yapf"):
        return words, False  # no form that fails on a difference: a formatter for the agent, not a check
    return words, True


_PYTHON_VERSION = re.compile(r"^(?:pypy)?\d+(?:\.\d+)*t?$")  # nox's `-3.11`, `-pypy3.10`, `-3.13t`


def nox_session(name: str, sessions: Iterable[str]) -> str | None:
    """The session of the noxfile's that ``name`` on nox's command line runs: the name itself, or the name
    nox gives a parametrized session, `NAME-PYTHON` and `NAME(param=...)`. A session's own name may hold a `-`
    (`type-check-3.11`), so the longest known name that leaves only a Python version is taken, never the
    name cut at its first `-`."""
    known = set(sessions)
    if name in known:
        return name
    bare = name.split("(", 1)[0]
    for session in sorted(known, key=len, reverse=True):
        if bare == session or (bare.startswith(f"{session}-") and _PYTHON_VERSION.match(bare[len(session) + 1:])):
            return session
    return None


def layout_form(words: list[str], root: Path) -> list[str]:
    """The command as it works in this checkout and as verify reads it: flake8 given the tree whole
    (no paths) also lints a `.venv` the repository keeps at its top, which its own configuration did not
    foresee (tox runs it from an environment elsewhere), so `.venv` is excluded; `go test` prints how many
    tests passed only with `-v`, and tests-green needs that count."""
    program, args = (words[0], words[1:]) if words else ("", [])
    if program == "flake8" and (root / ".venv").is_dir() and [a for a in args if not a.startswith("-")] in ([], ["."]) \
            and not any(a.startswith(("--exclude", "--extend-exclude")) for a in args):
        return [program, "--extend-exclude", ".venv", *args]
    if program == "go" and args[:1] == ["test"] and not {"-v", "-json"} & set(args):
        return [program, "test", "-v", *args[1:]]
    return words


class Translator:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def run(self, raw: Raw, depth: int = 0) -> list[Found | Skipped]:
        if raw.why:  # its reader could not read it as the file means it
            return [Skipped(raw.text, raw.origin, raw.why)] if self._looks_relevant(raw) else []
        try:
            text = _placeholders(raw.text, raw.dialect)
            segments = _segments(text)
        except Untranslatable as exc:
            return [Skipped(raw.text, raw.origin, str(exc))] if self._looks_relevant(raw) else []
        out: list[Found | Skipped] = []
        if any(words[0] == "cd" for words in segments):
            # Not translated into the command run in that folder: a task's test and check commands have no
            # working directory of their own (verification holds only the commands), and verify runs them at
            # the root, where `pytest -q` of `cd src && pytest -q` would collect another tree.
            if self._looks_relevant(raw) or any(self._relevant_after_cd(words, raw.hint) for words in segments):
                out.append(Skipped(raw.text, raw.origin, "runs in another folder (`cd`): the agent's and verify's "
                                                         "commands run at the repository's root, and a task names "
                                                         "no other folder to run them in"))
            return out
        for words in segments:
            try:
                out += self._one(raw, words, depth)
            except Untranslatable as exc:
                out.append(Skipped(raw.text, raw.origin, str(exc)))
        return out

    def _looks_relevant(self, raw: Raw) -> bool:
        """Whether a command left out is worth saying so: one of the four kinds, by its words or its holder's name
        (a workflow's `pip install` is not, and is dropped without a word)."""
        words = raw.text.replace("{", " ").split()
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        while len(words) > 1 and words[0] in ("uv", "poetry", "pipenv", "rye", "pdm", "hatch") and words[1] == "run":
            words = _options_then_rest(words[2:], _UV_VALUES)
        program = _program(words[0]) if words else ""
        return bool(words) and (raw.hint is not None and program not in UTILITIES or classify(words)[0] is not None
                                or program in ("tox", "nox", "make", "pre-commit"))

    @staticmethod
    def _relevant_after_cd(words: list[str], hint: str | None) -> bool:
        """Whether a simple command of a list that changes folder is worth saying it was left out: `cd` itself is
        a utility, so the whole list never looks like a check by its first word (`cd src && pytest -q`). A runner
        counts only when what it runs is named like a check (`make test`, not the docs' `make html`): it would
        read another folder's configuration, which init did not read."""
        rest = list(words)
        while rest and _ASSIGNMENT.match(rest[0]):
            rest = rest[1:]
        while len(rest) > 1 and rest[0] in ("uv", "poetry", "pipenv", "rye", "pdm", "hatch") and rest[1] == "run":
            rest = _options_then_rest(rest[2:], _UV_VALUES)
        if not rest:
            return False
        program = _program(rest[0])
        if program in ("tox", "nox", "make", "pre-commit"):
            return any(hint_of(w) for w in rest[1:] if not w.startswith("-"))
        return classify([program, *rest[1:]])[0] is not None or (hint is not None and program not in UTILITIES)

    def _expand(self, raws: list[Raw], depth: int, what: str) -> list[Found | Skipped]:
        if depth >= MAX_DEPTH:
            raise Untranslatable(f"{what} runs runners {MAX_DEPTH} deep")
        out: list[Found | Skipped] = []
        for inner in raws:
            out += self.run(inner, depth + 1)
        return out

    def _one(self, raw: Raw, words: list[str], depth: int) -> list[Found | Skipped]:
        scan = self.ctx.scan
        assigns = []
        while words and _ASSIGNMENT.match(words[0]):
            assigns.append(words.pop(0))
        if not words:
            return []
        words = [_program(words[0]), *words[1:]]
        uv = False
        while True:
            program, args = words[0], words[1:]
            if program == "uv" and args[:1] == ["run"]:
                uv, words = True, _options_then_rest(args[1:], _UV_VALUES)
            elif program in ("poetry", "pipenv", "rye") and args[:1] == ["run"]:
                words = args[1:]
            elif program == "npx" or (program in ("pnpm", "yarn") and args[:1] == ["exec"]) or program == "bunx" \
                    or (program == "bun" and args[:1] == ["x"]):
                words = _options_then_rest(args[1:] if args[:1] in (["exec"], ["x"]) else args, {"-p", "--package"})
            elif re.match(r"^python3?$", program) and args[:1] == ["-m"] and args[1:2] in (["tox"], ["nox"], ["coverage"]):
                words = args[1:]
            else:
                break
            if not words:
                return []
            words = [_program(words[0]), *words[1:]]
        program, args = words[0], words[1:]
        if program == "hatch" and args[:1] == ["run"]:
            rest = _options_then_rest(args[1:], {"-e", "--env"})
            if rest and (f"hatch:{rest[0]}" in scan.scripts or f"hatch:default:{rest[0]}" in scan.scripts):
                return self._expand(scan.scripts.get(f"hatch:{rest[0]}") or scan.scripts[f"hatch:default:{rest[0]}"],
                                    depth, f"hatch run {rest[0]}")
            if rest and ":" in rest[0] and f"hatch:{rest[0]}" in scan.scripts:
                return self._expand(scan.scripts[f"hatch:{rest[0]}"], depth, f"hatch run {rest[0]}")
            return self._one(raw, [*assigns, *rest], depth) if rest else []
        if program == "pdm" and args[:1] == ["run"]:
            rest = _options_then_rest(args[1:], set())
            if rest and f"pdm:{rest[0]}" in scan.scripts:
                return self._expand(scan.scripts[f"pdm:{rest[0]}"], depth, f"pdm run {rest[0]}")
            return self._one(raw, [*assigns, *rest], depth) if rest else []
        if raw.dialect == "hatch" and not args:  # a script naming another script of its environment
            key = next((k for k in (f"hatch:{raw.group}:{program}", f"hatch:{program}") if k in scan.scripts), None)
            if key is not None:
                return self._expand(scan.scripts[key], depth, f"hatch script {program}")
        if raw.dialect == "pdm" and f"pdm:{program}" in scan.scripts and not args:
            return self._expand(scan.scripts[f"pdm:{program}"], depth, f"pdm script {program}")
        if program == "tox":
            return self._tox(args, depth)
        if program == "nox":
            return self._nox(args, depth)
        if program == "make":
            return self._make(args, depth)
        if program == "pre-commit" and args[:1] == ["run"]:
            ids = [a for a in args[1:] if not a.startswith("-")]
            hooks = [r for hook_id, raws in scan.hooks.items() if not ids or hook_id in ids for r in raws]
            return self._expand(hooks, depth, "pre-commit run")
        if program in ("yarn", "pnpm", "bun") or (program == "npm" and args[:1] == ["run-script"]):
            rest = args[1:] if args[:1] in (["run"], ["run-script"]) else args
            if not rest or rest[0].startswith("-"):
                return []
            if args[:1] not in (["run"], ["run-script"]) and rest[0] in PACKAGE_MANAGER_COMMANDS:
                return []  # the package manager's own command (`yarn install`), never a script: like `npm ci`
            words = ["npm", "test"] if rest[0] == "test" else ["npm", "run", *rest]
            program, args = words[0], words[1:]
        if program == "npm" and args[:1] in (["test"], ["t"], ["run"]):
            name = "test" if args[0] != "run" else (args[1] if len(args) > 1 else "")
            if name not in scan.npm_scripts:
                raise Untranslatable(f"package.json has no `{name}` script")
        if program in ("sh", "bash", "dash", "zsh"):
            raise Untranslatable(f"runs a script through `{program}`: give the commands it runs")
        checking, check = checking_form(words)
        checking = layout_form(checking, scan.root)
        checking, dropped = without_reports(checking)
        if program == "npm" and len(args) >= 2 and args[0] == "run":
            body = scan.npm_scripts.get(args[1], "")
            check = not re.search(r"(--write|\s-w\b|--fix\b)", body)
        kind, family = classify([*assigns, *checking])
        if kind is None and raw.hint is not None and program not in UTILITIES:
            kind, family = raw.hint, program
        if kind is None:
            return []
        final = [*assigns, *(["uv", "run", "--no-sync"] if uv and self.ctx.uv else []), *checking]
        return [Found(shlex.join(final), kind, raw.origin, raw.text, check, family, tuple(dropped))]

    def _tox(self, args: list[str], depth: int) -> list[Found | Skipped]:
        scan = self.ctx.scan
        envs: list[str] = []
        n = 0
        while n < len(args):
            a = args[n]
            if a in ("-e", "--env") and n + 1 < len(args):
                envs += [e for e in args[n + 1].split(",") if e]
                n += 2
                continue
            if a.startswith("-e") and len(a) > 2:
                envs += [e for e in a[2:].lstrip("=").split(",") if e]
            elif a == "--":
                break
            n += 1
        envs = envs or scan.tox_envlist or [k for k in scan.tox_envs if k != "*"]
        out: list[Found | Skipped] = []
        for env in dict.fromkeys(envs):
            raws = scan.tox_envs.get(env, scan.tox_envs.get("*"))
            if raws is None:
                raise Untranslatable(f"tox has no environment `{env}` with commands")
            out += self._expand(raws, depth, f"tox -e {env}")
        return out

    def _nox(self, args: list[str], depth: int) -> list[Found | Skipped]:
        scan = self.ctx.scan
        names = [a for a in args if not a.startswith("-")]
        out: list[Found | Skipped] = []
        for name in names or list(scan.nox_sessions):
            base = nox_session(name, scan.nox_sessions)
            if base is None:
                raise Untranslatable(f"noxfile.py has no session `{name}`")
            out += self._expand(scan.nox_sessions[base], depth, f"nox -s {name}")
        return out

    def _make(self, args: list[str], depth: int) -> list[Found | Skipped]:
        scan = self.ctx.scan
        if any(a.startswith("-") and a not in _MAKE_QUIET for a in args) or any("=" in a for a in args):
            raise Untranslatable("make with options or variables: name the targets alone")
        # What is left once the options that change no recipe are set aside are the targets.
        targets = [a for a in args if a not in _MAKE_QUIET] or list(scan.make_targets)[:1]
        out: list[Found | Skipped] = []
        for target in targets:
            if target not in scan.make_targets:
                raise Untranslatable(f"the Makefile's target `{target}` is not one init reads (or not there): allow "
                                     "`make` targets in toolchain.toml's make-targets")
            out += self._expand(scan.make_targets[target], depth, f"make {target}")
        return out


# pytest's options that write a report for a person (HTML, XML, JSON) where verify never reads it, outside any
# write scope: dropped, and said so. Verify has reporters of its own; coverage's terminal report stays.
_PYTEST = re.compile(r"^(?:py\.test|pytest)$")
_REPORT_VALUED = ("--junitxml", "--junit-xml", "--html", "--json-report-file", "--alluredir", "--result-log",
                  "--report-log", "--md-report-output")
_REPORT_FLAGS = ("--self-contained-html", "--json-report")


def without_reports(words: list[str]) -> tuple[list[str], list[str]]:
    """A pytest command without the options that write a report file (`--cov-report html`, `--junitxml X`),
    and what was dropped; any other command as it is."""
    at = next((i for i, w in enumerate(words) if _PYTEST.match(w)), None)
    if at is None and "pytest" in words and words[max(words.index("pytest") - 1, 0)] == "-m":
        at = words.index("pytest")
    if at is None:
        return words, []
    kept, dropped = list(words[:at + 1]), []
    rest = iter(words[at + 1:])
    for word in rest:
        name, eq, value = word.partition("=")
        if name == "--cov-report":
            value = value if eq else next(rest, "")
            if value.split(":", 1)[0] in ("term", "term-missing"):
                kept.append(word if eq else f"--cov-report={value}")
            else:
                dropped.append(f"--cov-report {value}".strip())
        elif name in _REPORT_VALUED:
            dropped.append(word if eq else f"{word} {next(rest, '')}".strip())
        elif word in _REPORT_FLAGS:
            dropped.append(word)
        else:
            kept.append(word)
    return kept, dropped


def translate(scan: Scan, uv: bool) -> tuple[list[Found], list[Skipped]]:
    """Every command found, translated, each once (first origin kept), and what was left out."""
    translator = Translator(Context(scan, uv))
    found: dict[str, Found] = {}
    skipped: dict[tuple[str, str], Skipped] = {}
    for raw in scan.entries:
        for item in translator.run(raw):
            if isinstance(item, Found):
                found.setdefault(item.command, item)
            else:
                skipped.setdefault((item.written, str(item.origin)), item)
    return list(found.values()), list(skipped.values())
