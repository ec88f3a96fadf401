"""Python projects' declarations: tox (ini and TOML), nox (read as a syntax tree, never imported),
pyproject.toml (pytest, hatch and pdm scripts, tool sections), setup.cfg and the tools' own files."""

from __future__ import annotations

import ast
import configparser
import itertools
import json
import re
import shlex
from typing import Any

from runtime.errors import ManifestError
from runtime.tooling.project.found import Origin, Raw, hint_of
from runtime.tooling.project.scan import Scan, line_of, parse_toml, python_targets, read_text

# -- tox ---------------------------------------------------------------------------------------------

_FACTOR = re.compile(r"^[A-Za-z0-9_.,!{}-]+:\s+(?=\S)")  # `py311,lint: pytest`: a line for some environments only
_REFERENCE = re.compile(r"^\{\[([^\]]+)\]([A-Za-z_]+)\}$")  # `{[testenv]commands}`


def expand_braces(name: str) -> list[str]:
    """tox's generative names: `py{38,39}-lint` is py38-lint and py39-lint."""
    parts = re.split(r"(\{[^{}]*\})", name)
    choices = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
    return ["".join(c.strip() for c in combo) for combo in itertools.product(*choices)]


def _split_list(value: str) -> list[str]:
    """An ini list: names split on commas and newlines, outside braces."""
    out, depth, word = [], 0, ""
    for ch in value:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch in ",\n" and depth == 0:
            out.append(word.strip())
            word = ""
        else:
            word += ch
    out.append(word.strip())
    return [n for w in out if w and not w.startswith("#") for n in expand_braces(w)]


def _tox_lines(value: str, parser: configparser.ConfigParser) -> list[str]:
    lines: list[str] = []
    joined = ""
    for line in value.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            joined += line[:-1] + " "
            continue
        line, joined = joined + line, ""
        ref = _REFERENCE.match(line)
        if ref and parser.has_option(ref.group(1), ref.group(2)):
            lines += _tox_lines(parser.get(ref.group(1), ref.group(2)), parser)
            continue
        line = _FACTOR.sub("", line)
        lines.append(line.lstrip("-! ").strip())
    return [line for line in lines if line]


def ini_error(exc: configparser.Error) -> tuple[int, str]:
    """The line configparser stopped at, and what is wrong there. A line that is no option, section or
    continuation raises ParsingError, which keeps its lines in ``errors``, not in ``lineno``, and whose
    message names only the file."""
    errors = getattr(exc, "errors", None) if isinstance(exc, configparser.ParsingError) else None
    if errors:
        line, text = errors[0]
        try:
            text = str(ast.literal_eval(text)).strip()  # configparser keeps the line's repr
        except (ValueError, SyntaxError):
            pass
        return int(line), f"a line that is no section, `key = value` or continuation: `{text}`"
    return int(getattr(exc, "lineno", None) or 1), exc.message.splitlines()[0]


def _read_tox_ini(out: Scan, text: str, file: str, first_line: int = 1) -> None:
    parser = configparser.ConfigParser(interpolation=None, strict=False, delimiters=("=",))
    try:
        parser.read_string(text, source=file)
    except configparser.Error as exc:
        line, what = ini_error(exc)
        raise ManifestError(file, first_line - 1 + line, f"not an ini file tox can read: {what}") from None
    for key in ("envlist", "env_list"):
        for section in ("tox", "tox:tox"):
            if parser.has_option(section, key):
                out.tox_envlist += _split_list(parser.get(section, key))
    base = "testenv"
    for section in parser.sections():
        if section != base and not section.startswith(f"{base}:"):
            continue
        header = line_of(text, f"[{section}]") + first_line - 1
        names = ["*"] if section == base else expand_braces(section.split(":", 1)[1].strip())
        value = parser.get(section, "commands", fallback=None) if parser.has_option(section, "commands") else None
        if value is None:
            continue
        raws = []
        for command in _tox_lines(value, parser):
            what = "tox: every environment" if section == base else f"tox env {section.split(':', 1)[1].strip()}"
            hint = "test" if section == base else hint_of(names[0])
            start = header - first_line + 1
            found = line_of(text, command, start)
            if found == start and command not in text.splitlines()[start - 1]:
                found = line_of(text, command.split()[0], start + 1)  # a command joined from continued lines
            origin = Origin(file, found + first_line - 1, what)
            raws.append(Raw(command, origin, hint, "tox"))
        for name in names:
            out.tox_envs[name] = raws
        out.entries += raws


class _Unresolved(Exception):
    """A word of a tox TOML command that only tox, when it runs, gives a value: why, for the person."""


def _tox_words(item: Any) -> list[str]:
    """The words one item of a tox TOML command stands for: a string is itself; `{replace = "posargs"}` its
    default's words (none without one: what a run without arguments gives); `{replace = "env", name = ...}`
    its default, one word, as tox gives it. An empty list is words too (none), never a missing value."""
    if isinstance(item, str):
        return [item]
    if isinstance(item, dict) and item.get("replace") == "posargs":
        default = item.get("default", [])
        if not isinstance(default, list):
            raise _Unresolved(f"holds posargs whose default is no list of words (`{default!r}`)")
        return [w for inner in default for w in _tox_words(inner)]
    if isinstance(item, dict) and item.get("replace") == "env":
        default = item.get("default")
        if isinstance(default, str):
            # One word, as tox gives it; an empty one that `extend` spreads into the command is none.
            return [] if default == "" and item.get("extend") else [default]
        if default is None:
            # Its value is whatever the environment holds when tox runs (nothing, mostly): no command the agent
            # and verify run would be the one the file means.
            raise _Unresolved(f"takes a word from the environment variable `{item.get('name', '?')}`, which has "
                              "no default: give the command its arguments")
        raise _Unresolved(f"holds an env replacement whose default is no string (`{default!r}`)")
    if isinstance(item, dict):
        raise _Unresolved(f"holds a tox replacement init does not follow (`{item.get('replace', '?')}`)")
    raise _Unresolved(f"holds a word that is no string (`{item!r}`)")


def _tox_command(command: list[Any]) -> tuple[list[str], str, str]:
    """A tox TOML command's words, its text as the person reads it, and why it is left out ("" when it is not)."""
    words: list[str] = []
    shown: list[str] = []
    why = ""
    for item in command:
        try:
            found = _tox_words(item)
        except _Unresolved as exc:
            why = why or str(exc)
            shown.append("{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in item.items()) + " }"
                         if isinstance(item, dict) else json.dumps(item))
            continue
        words += found
        shown += [shlex.quote(w) for w in found]
    return words, " ".join(shown), why


def _read_toxparse_toml(out: Scan, data: dict[str, Any], text: str, file: str, prefix: str) -> None:
    names = data.get("env_list", data.get("envlist", []))
    if isinstance(names, list):
        out.tox_envlist += [str(n) for n in names]
    tables: list[tuple[str, Any]] = [("*", data.get("env_run_base", {}))]
    envs = data.get("env", {})
    if isinstance(envs, dict):
        tables += list(envs.items())
    for name, table in tables:
        commands = table.get("commands") if isinstance(table, dict) else None
        if not isinstance(commands, list):
            continue
        header = line_of(text, f"[{prefix}env_run_base]" if name == "*" else f"[{prefix}env.{name}]")
        raws = []
        for command in commands:
            if not isinstance(command, list):
                continue
            words, shown, why = _tox_command(command)
            if not words and not why:
                continue
            what = "tox: every environment" if name == "*" else f"tox env {name}"
            first = words[0] if words else "replace"
            raws.append(Raw(shlex.join(words) if not why else shown, Origin(file, line_of(text, first, header), what),
                            "test" if name == "*" else hint_of(name), "shell", why=why))
        out.tox_envs[name] = raws
        out.entries += raws


def read_tox(out: Scan) -> None:
    text = read_text(out.root, "tox.ini")
    if text is not None:
        out.read.append("tox.ini")
        _read_tox_ini(out, text, "tox.ini")
        return
    text = read_text(out.root, "tox.toml")
    if text is not None:
        out.read.append("tox.toml")
        _read_toxparse_toml(out, parse_toml(text, "tox.toml"), text, "tox.toml", "")


# -- nox ---------------------------------------------------------------------------------------------

def _session_name(func: ast.FunctionDef) -> str | None:
    """The session's name when ``func`` is decorated as a nox session (`@nox.session`, `@nox.session(name=...)`)."""
    for deco in func.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        dotted = ast.unparse(target)
        if dotted not in ("nox.session", "session", "nox.session_decorator"):
            continue
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    return kw.value.value
        return func.name
    return None


def read_nox(out: Scan) -> None:
    text = read_text(out.root, "noxfile.py")
    if text is None:
        return
    out.read.append("noxfile.py")
    try:
        tree = ast.parse(text, "noxfile.py")
    except SyntaxError as exc:
        raise ManifestError("noxfile.py", exc.lineno or 1, f"not Python this runtime can read: {exc.msg}") from None
    for func in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        name = _session_name(func)
        if name is None or not func.args.args:
            continue
        session = func.args.args[0].arg
        raws = []
        for node in ast.walk(func):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == session):
                continue
            words: list[str] = []
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    words.append(shlex.quote(arg.value))
                elif isinstance(arg, ast.Starred) and ast.unparse(arg.value) == f"{session}.posargs":
                    continue  # what the person adds on nox's command line: nothing, here
                else:
                    words.append("{computed}")  # a value the session computes when it runs
            if words:
                raws.append(Raw(" ".join(words), Origin("noxfile.py", node.lineno, f"nox session {name}"),
                                hint_of(name), "nox"))
        out.nox_sessions[name] = raws
        out.entries += raws


# -- pyproject.toml, hatch.toml ----------------------------------------------------------------------

def _hatch_scripts(out: Scan, envs: Any, text: str, file: str, prefix: str) -> None:
    if not isinstance(envs, dict):
        return
    for env, table in envs.items():
        scripts = table.get("scripts") if isinstance(table, dict) else None
        if not isinstance(scripts, dict):
            continue
        header = line_of(text, f"[{prefix}envs.{env}.scripts]")
        for name, value in scripts.items():
            commands = [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)] \
                if isinstance(value, list) else []
            start = line_of(text, f"{name} =", header)
            raws = [Raw(c, Origin(file, line_of(text, c, start), f"hatch script {env}:{name}"), hint_of(name), "hatch", env)
                    for c in commands]
            out.scripts[f"hatch:{env}:{name}"] = raws
            if env == "default":
                out.scripts[f"hatch:{name}"] = raws
            out.entries += raws


def _pdm_scripts(out: Scan, scripts: Any, text: str, file: str) -> None:
    if not isinstance(scripts, dict):
        return
    header = line_of(text, "[tool.pdm.scripts")
    for name, value in scripts.items():
        if name.startswith("_"):
            continue  # settings shared by the scripts, not a script
        line = line_of(text, f"{name} =", header)
        commands: list[str] = []
        if isinstance(value, str):
            commands = [value]
        elif isinstance(value, dict):
            cmd = value.get("cmd", value.get("shell"))
            if isinstance(cmd, str):
                commands = [cmd]
            elif isinstance(cmd, list) and all(isinstance(w, str) for w in cmd):
                commands = [shlex.join(cmd)]
            elif isinstance(value.get("composite"), list):
                commands = [c for c in value["composite"] if isinstance(c, str)]
        raws = [Raw(c, Origin(file, line, f"pdm script {name}"), hint_of(name), "pdm") for c in commands]
        out.scripts[f"pdm:{name}"] = raws
        out.entries += raws


def _tool_table(out: Scan, name: str, conf: dict[str, Any], text: str, file: str) -> None:
    """What a tool's configuration section implies: the tool is how this repository checks itself."""
    section = f"[tool.{name}]"
    origin = Origin(file, line_of(text, f"[tool.{name}"), section)
    if name == "ruff":
        out.entries.append(Raw("ruff check .", origin, "lint"))
        if "format" in conf:
            out.entries.append(Raw("ruff format --check .", Origin(file, line_of(text, "[tool.ruff.format]", origin.line),
                                                                   "[tool.ruff.format]"), "format"))
    elif name == "mypy":
        out.entries.append(Raw("mypy" if conf.get("files") else shlex.join(["mypy", *python_targets(out.root)]),
                               origin, "type"))
    elif name == "black":
        out.entries.append(Raw("black --check .", origin, "format"))
    elif name == "isort":
        out.entries.append(Raw("isort --check-only .", origin, "format"))


def read_pyproject(out: Scan) -> None:
    text = read_text(out.root, "pyproject.toml")
    if text is not None:
        out.read.append("pyproject.toml")
        data = parse_toml(text, "pyproject.toml")
        tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
        tox = tool.get("tox")
        if isinstance(tox, dict) and "tox.ini" not in out.read and "tox.toml" not in out.read:
            legacy = tox.get("legacy_tox_ini")
            if isinstance(legacy, str):
                _read_tox_ini(out, legacy, "pyproject.toml", line_of(text, "legacy_tox_ini") + 1)
            else:
                _read_toxparse_toml(out, tox, text, "pyproject.toml", "tool.tox.")
        hatch = tool.get("hatch")
        if isinstance(hatch, dict):
            _hatch_scripts(out, hatch.get("envs"), text, "pyproject.toml", "tool.hatch.")
        pdm = tool.get("pdm")
        if isinstance(pdm, dict):
            _pdm_scripts(out, pdm.get("scripts"), text, "pyproject.toml")
        pytest = tool.get("pytest")
        if isinstance(pytest, dict):
            section = "[tool.pytest.ini_options]" if "ini_options" in pytest else "[tool.pytest]"
            out.entries.append(Raw("pytest", Origin("pyproject.toml", line_of(text, section), section), "test"))
        for name in ("ruff", "mypy", "black", "isort"):
            if isinstance(tool.get(name), dict):
                _tool_table(out, name, tool[name], text, "pyproject.toml")
    text = read_text(out.root, "hatch.toml")
    if text is not None:
        out.read.append("hatch.toml")
        _hatch_scripts(out, parse_toml(text, "hatch.toml").get("envs"), text, "hatch.toml", "")


def read_setup_cfg(out: Scan) -> None:
    text = read_text(out.root, "setup.cfg")
    if text is None:
        return
    out.read.append("setup.cfg")
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source="setup.cfg")
    except configparser.Error as exc:
        line, what = ini_error(exc)
        raise ManifestError("setup.cfg", line, f"not an ini file: {what}") from None
    if parser.has_section("tox:tox") and not out.tox_envs:
        _read_tox_ini(out, text.replace("[tox:tox]", "[tox]"), "setup.cfg")
    for section, command, kind in (("tool:pytest", "pytest", "test"), ("flake8", "flake8", "lint"),
                                   ("isort", "isort --check-only .", "format")):
        if parser.has_section(section):
            out.entries.append(Raw(command, Origin("setup.cfg", line_of(text, f"[{section}]"), f"[{section}]"), kind))
    if parser.has_section("mypy"):
        files = parser.get("mypy", "files", fallback="")
        command = "mypy" if files.strip() else shlex.join(["mypy", *python_targets(out.root)])
        out.entries.append(Raw(command, Origin("setup.cfg", line_of(text, "[mypy]"), "[mypy]"), "type"))


def read_tool_files(out: Scan) -> None:
    """The tools' own configuration files: each says the repository runs that tool."""
    for file, command, kind in ((".flake8", "flake8", "lint"), ("ruff.toml", "ruff check .", "lint"),
                                (".ruff.toml", "ruff check .", "lint"), ("mypy.ini", "mypy", "type"),
                                (".mypy.ini", "mypy", "type"), (".isort.cfg", "isort --check-only .", "format"),
                                ("pytest.ini", "pytest", "test"), (".pytest.ini", "pytest", "test")):
        path = out.root / file
        if not path.is_file():
            continue
        out.read.append(file)
        if kind == "type":
            text = read_text(out.root, file) or ""
            if not re.search(r"^\s*files\s*=", text, re.M):
                command = shlex.join(["mypy", *python_targets(out.root)])
        out.entries.append(Raw(command, Origin(file, 1, file), kind))
