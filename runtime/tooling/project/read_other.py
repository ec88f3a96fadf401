"""The Makefile (targets and the recipes of the usual ones), package.json's scripts, Cargo.toml, go.mod."""

from __future__ import annotations

import json
import re

from runtime.errors import ManifestError
from runtime.tooling.project.found import Origin, Raw, hint_of
from runtime.tooling.project.scan import Scan, line_of, parse_toml, read_text

# Targets whose recipes are read (and which `runtime init` offers as make-targets).
COMMON_TARGETS = ("test", "tests", "check", "lint", "typecheck", "types", "mypy", "fmt", "format", "format-check",
                  "fmt-check", "check-format", "build", "unit", "coverage", "style")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|::=|\?=|=)\s*(.*)$")
_VARIABLE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def make_targets(text: str) -> list[str]:
    """The common targets a Makefile defines, in its order."""
    found = []
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep and not rest.startswith("=") and name.strip() in COMMON_TARGETS and not line[:1].isspace():
            found.append(name.strip())
    return list(dict.fromkeys(found))


def _substitute(line: str, variables: dict[str, str]) -> str:
    """Make's `$(VAR)` replaced by a plain value the Makefile assigns (one level); anything else left as it is."""
    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        found = variables.get(name)
        return found if found is not None and "$" not in found else m.group(0)
    return _VARIABLE.sub(value, line)


def read_makefile(out: Scan) -> None:
    text = read_text(out.root, "Makefile")
    if text is None:
        return
    out.read.append("Makefile")
    variables: dict[str, str] = {}
    lines = text.splitlines()
    for line in lines:
        m = _ASSIGN.match(line)
        if m and not line[:1].isspace():
            variables.setdefault(m.group(1), m.group(2).split("#")[0].strip())
    for target in make_targets(text):
        header = next(n for n, line in enumerate(lines, 1) if line.partition(":")[0].strip() == target
                      and not line[:1].isspace())
        raws = []
        for n in range(header, len(lines)):
            line = lines[n]
            if not line.startswith("\t"):
                if line.strip() and not line.lstrip().startswith("#"):
                    break
                continue
            command = _substitute(line.strip().lstrip("@-+").strip(), variables)
            if command and not command.startswith("#"):
                raws.append(Raw(command, Origin("Makefile", n + 1, f"make {target}"), hint_of(target)))
        out.make_targets[target] = raws
        out.entries += raws


# package.json scripts and the kind each is, by name; `test` is `npm test`.
NPM_SCRIPTS = ("test", "lint", "lint:check", "typecheck", "type-check", "types", "tsc", "test:types", "test:typescript",
               "test:tsd", "check", "format:check",
               "format-check", "check-format", "fmt:check", "prettier:check", "format", "fmt")
_NO_TEST = "no test specified"  # npm init's placeholder, which only fails


def read_package_json(out: Scan) -> None:
    text = read_text(out.root, "package.json")
    if text is None:
        return
    out.read.append("package.json")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError("package.json", exc.lineno, f"not JSON: {exc.msg}") from None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return
    out.npm_scripts = {k: v for k, v in scripts.items() if isinstance(k, str) and isinstance(v, str)}
    header = line_of(text, '"scripts"')
    for name in NPM_SCRIPTS:
        body = out.npm_scripts.get(name)
        if body is None or (name == "test" and _NO_TEST in body):
            continue
        command = "npm test" if name == "test" else f"npm run {name}"
        out.entries.append(Raw(command, Origin("package.json", line_of(text, f'"{name}"', header), f"script {name}"),
                               "test" if name == "test" else hint_of(name)))


def read_cargo(out: Scan) -> None:
    text = read_text(out.root, "Cargo.toml")
    if text is None:
        return
    out.read.append("Cargo.toml")
    data = parse_toml(text, "Cargo.toml")
    line = line_of(text, "[package]") if "package" in data else line_of(text, "[workspace]")
    origin = Origin("Cargo.toml", line, "a cargo " + ("package" if "package" in data else "workspace"))
    out.entries += [Raw("cargo test", origin, "test"), Raw("cargo clippy", origin, "lint")]
    # rustfmt's check fails wherever the code was never formatted by this rustfmt (strsim's own tests are
    # not): taken only from a repository that configures it, else every change would fail a check its base
    # fails. clippy exits 0 on warnings unless told otherwise, so it stays.
    for config in ("rustfmt.toml", ".rustfmt.toml"):
        if (out.root / config).is_file():
            out.entries.append(Raw("cargo fmt --check", Origin(config, 1, "rustfmt's configuration"), "format"))
            break


def read_go(out: Scan) -> None:
    text = read_text(out.root, "go.mod")
    if text is None:
        return
    out.read.append("go.mod")
    line = line_of(text, "module ")
    if not text.strip() or not re.search(r"^\s*module\s+\S", text, re.M):
        raise ManifestError("go.mod", 1, "names no module (`module PATH`)")
    origin = Origin("go.mod", line, "a go module")
    out.entries += [Raw("go test ./...", origin, "test"), Raw("go vet ./...", origin, "lint")]
