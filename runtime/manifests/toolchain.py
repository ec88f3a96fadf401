"""The target repository's toolchain: ``toolchain.toml`` in the project catalog.

A worktree holds what git tracks, and a repository's tools mostly are not
tracked: its virtualenv, its ``node_modules``, the ``uv`` that manages them.
``toolchain.toml`` (beside ``roles/`` in ``.agent-runtime/``) declares them,
typed:

- ``presets``: ``python`` (a virtualenv in ``.venv``), ``uv`` (the same,
  run through ``uv run``), ``node`` (``node_modules``), ``go`` (the host's
  Go and its module cache), ``rust`` (the host's cargo and rustup homes);
- ``folders``: folders of the repository bound read-only into every sandbox
  at the same place in the worktree (and at their own path, where a venv's
  scripts expect their interpreter);
- ``path``: folders among them whose programs are found by name (first on
  the sandbox's PATH) and may be called by their path (``.venv/bin/pytest``);
  the gate still judges each program by its name and the role's rules;
- ``programs``: host programs the sandbox shows (``uv``);
- ``make-targets``: ``make TARGET`` becomes an allowed command for every role
  with shell rules. The Makefile is the repository's own code, as conftest.py
  and npm scripts are: the sandbox, not the gate, contains what it does.

Paths are relative to the repository's root (the main checkout), never
absolute, never with ``..``: the toolchain is the repository's, not the
machine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from runtime.lang.shapes import is_program_name, is_target_name
from runtime.manifests.locate import TOOLCHAIN_FILE
from runtime.manifests.model import parse_model
from runtime.manifests.tomlsrc import TomlSource, read_toml
from runtime.model import Model, did_you_mean

FILE = TOOLCHAIN_FILE


@dataclass(frozen=True)
class Preset:
    folders: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    programs: tuple[str, ...] = ()
    # Set by the runtime, not declared: variables that keep the tool from writing or downloading.
    env: tuple[tuple[str, str], ...] = ()
    # A host probe (runtime.sandbox.toolchain.PROBES) that finds the toolchain's own folders on this
    # machine when the sandbox is built: Go's module cache and GOROOT, rustup's and cargo's homes.
    probe: str | None = None


PRESETS = {
    "python": Preset(folders=(".venv",), path=(".venv/bin",)),
    # `uv run` would first sync the environment (write .venv, download); in the sandbox it only runs.
    "uv": Preset(folders=(".venv",), path=(".venv/bin",), programs=("uv",),
                 env=(("UV_NO_SYNC", "1"), ("UV_OFFLINE", "1"), ("UV_PYTHON_DOWNLOADS", "never"),
                      ("UV_NO_CONFIG", "1"))),
    "node": Preset(folders=("node_modules",), path=("node_modules/.bin",)),
    # Modules come from the host's module cache, read-only; nothing is downloaded, no other Go toolchain.
    # The build cache goes to the sandbox's private /tmp, as cargo's builds do: memory the run's cgroup
    # counts, not the host's disk under the run's disk budget.
    "go": Preset(programs=("go",), probe="go",
                 env=(("GOPROXY", "off"), ("GOFLAGS", "-mod=readonly"), ("GOTOOLCHAIN", "local"),
                      ("GOCACHE", "/tmp/go-build"))),
    # Crates come from the host's cargo home, read-only (build once on the host so they are unpacked);
    # builds go to the sandbox's private /tmp, not into the worktree.
    "rust": Preset(programs=("cargo",), probe="rust",
                   env=(("CARGO_NET_OFFLINE", "true"), ("CARGO_TARGET_DIR", "/tmp/cargo-target"))),
}


class ToolchainSection(Model):
    presets: list[str] = Field(default_factory=list)
    folders: list[str] = Field(default_factory=list)
    path: list[str] = Field(default_factory=list)
    programs: list[str] = Field(default_factory=list)
    make_targets: list[str] = Field(default_factory=list)


class WorktreeSection(Model):
    include: list[str] = Field(default_factory=list)
    setup: list[str] = Field(default_factory=list)
    path: list[str] = Field(default_factory=list)
    setup_domains: list[str] = Field(default_factory=list)
    setup_addresses: list[str] = Field(default_factory=list)
    setup_ports: list[int] = Field(default_factory=lambda: [80, 443])
    setup_timeout_s: int = Field(default=600, gt=0, le=7200)


class ToolchainFile(Model):
    toolchain: ToolchainSection = Field(default_factory=ToolchainSection)
    worktree: WorktreeSection | None = None


@dataclass(frozen=True)
class Worktree:
    """What every tree of the repository the runtime makes holds beyond what git tracks (`[worktree]`):

    - ``include``: files and folders git ignores, copied from the main checkout into each agent's worktree
      and into every copy verify runs commands over (the work's and the base's), always from the main
      checkout: never linked, never the agent's to change for verify;
    - ``setup``: commands run in the worktree inside the sandbox before the agent starts, with their own
      egress (``setup_domains``, and ``setup_addresses`` and ``setup_ports`` as `net::egress-allowlist` has them,
      through the egress proxy and its audit) and never the agent's; what they make
      that git ignores is kept as the tree's world too, cached per base commit;
    - ``path``: folders of the tree (made by setup: a per-worktree environment's `bin`) first on PATH.
    """

    include: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    setup_domains: tuple[str, ...] = ()
    setup_addresses: tuple[str, ...] = ()  # non-public ranges setup may reach after all (an internal registry)
    setup_ports: tuple[int, ...] = (80, 443)
    setup_timeout_s: int = 600
    lines: tuple[tuple[str, int], ...] = ()  # an include, a setup command, a path folder -> its line

    def __bool__(self) -> bool:
        return bool(self.include or self.setup)

    def line(self, item: str) -> int:
        return dict(self.lines).get(item, 1)


@dataclass(frozen=True)
class Toolchain:
    folders: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    programs: tuple[str, ...] = ()
    make_targets: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    probes: tuple[str, ...] = ()
    source: str = ""  # the file it came from, for messages
    lines: tuple[tuple[str, int], ...] = ()  # folder or program -> the line declaring it
    worktree: Worktree = Worktree()

    def where(self, name: str) -> str:
        """``file:line`` of the declaration of folder or program ``name``."""
        return f"{self.source}:{dict(self.lines).get(name, 1)}"

    def __bool__(self) -> bool:
        return bool(self.folders or self.programs or self.make_targets or self.probes or self.worktree)


def _relative(value: str) -> str | None:
    """``value`` as a clean relative folder, or None when it is absolute, empty or climbs out."""
    if not value or value.startswith(("/", "~")) or "\\" in value or "\0" in value:
        return None
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or any(set(p) & set("*?[]{}$`") for p in parts):
        return None
    return "/".join(parts)


def worktree_from(section: WorktreeSection | None, src: TomlSource) -> Worktree:
    if section is None:
        return Worktree()
    lines: dict[str, int] = {}
    include: list[str] = []
    path: list[str] = []
    for key, values, out in (("include", section.include, include), ("path", section.path, path)):
        for n, value in enumerate(values):
            clean = _relative(value)
            if clean is None:
                raise src.error(("worktree", key, n), f"`{value}` must be a path of the repository, relative to its "
                                                     "root, without `..`, `~` or globs")
            if clean.split("/")[0] in (".git", ".agent-runtime", ".claude"):
                raise src.error(("worktree", key, n), f"`{value}` is the repository's own control folder, never "
                                                     "the agent's world")
            out.append(clean)
            lines.setdefault(clean, src.line_of(("worktree", key, n)))
    for n, command in enumerate(section.setup):
        if not command.strip() or "\0" in command:
            raise src.error(("worktree", "setup", n), "a setup command is a non-empty line")
        lines.setdefault(command, src.line_of(("worktree", "setup", n)))
    for n, domain in enumerate(section.setup_domains):
        from runtime.lang.domains import pattern_error

        if (why := pattern_error(domain)) is not None:
            raise src.error(("worktree", "setup-domains", n), why)
    if section.setup_domains and not section.setup:
        raise src.error(("worktree", "setup-domains"), "`setup-domains` is the egress of `setup`, which is empty")
    import ipaddress

    for n, cidr in enumerate(section.setup_addresses):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            raise src.error(("worktree", "setup-addresses", n), f"`{cidr}` is not an address or a range (CIDR)") from None
    for n, port in enumerate(section.setup_ports):
        if not 0 < port < 65536:
            raise src.error(("worktree", "setup-ports", n), f"{port} is not a port")
    return Worktree(tuple(dict.fromkeys(include)), tuple(section.setup), tuple(dict.fromkeys(path)),
                    tuple(section.setup_domains), tuple(section.setup_addresses), tuple(section.setup_ports),
                    section.setup_timeout_s, tuple(lines.items()))


def toolchain_from_data(data: Any, src: TomlSource) -> Toolchain:
    whole = parse_model(ToolchainFile, data, src)
    parsed = whole.toolchain
    worktree = worktree_from(whole.worktree, src)
    folders: list[str] = []
    path: list[str] = []
    programs: list[str] = []
    env: dict[str, str] = {}
    lines: dict[str, int] = {}
    probes: list[str] = []
    for n, name in enumerate(parsed.presets):
        preset = PRESETS.get(name)
        if preset is None:
            raise src.error(("toolchain", "presets", n), f"unknown preset `{name}`{did_you_mean(name, set(PRESETS))} "
                                                               f"(known: {', '.join(sorted(PRESETS))})")
        folders += preset.folders
        path += preset.path
        programs += preset.programs
        for item in (*preset.folders, *preset.programs):
            lines.setdefault(item, src.line_of(("toolchain", "presets", n)))
        env.update(preset.env)
        if preset.probe:
            probes.append(preset.probe)
            lines.setdefault(preset.probe, src.line_of(("toolchain", "presets", n)))
    declared_path: list[tuple[str, int]] = []
    for key, values in (("folders", parsed.folders), ("path", parsed.path)):
        for n, value in enumerate(values):
            clean = _relative(value)
            if clean is None:
                raise src.error(("toolchain", key, n), f"`{value}` must be a folder of the repository, relative to its "
                                                      "root, without `..`, `~` or globs")
            if key == "folders":
                folders.append(clean)
                lines.setdefault(clean, src.line_of(("toolchain", key, n)))
            else:
                declared_path.append((clean, n))
    for value, n in declared_path:
        if not any(value == f or value.startswith(f + "/") for f in folders):
            raise src.error(("toolchain", "path", n), f"path folder `{value}` is not inside one of the toolchain's "
                            f"folders ({', '.join(folders) or 'none'}): only what the sandbox binds can be run")
        path.append(value)
    for n, value in enumerate(parsed.programs):
        if not is_program_name(value):
            raise src.error(("toolchain", "programs", n), f"`{value}` is not a program name")
        programs.append(value)
        lines.setdefault(value, src.line_of(("toolchain", "programs", n)))
    for n, value in enumerate(parsed.make_targets):
        if not is_target_name(value):
            raise src.error(("toolchain", "make-targets", n), f"`{value}` is not a make target name")
    return Toolchain(tuple(dict.fromkeys(folders)), tuple(dict.fromkeys(path)), tuple(dict.fromkeys(programs)),
                     tuple(dict.fromkeys(parsed.make_targets)), tuple(sorted(env.items())), tuple(dict.fromkeys(probes)),
                     src.path, tuple(lines.items()), worktree)


def load_toolchain(path: Path, display: str) -> Toolchain:
    if not path.is_file():
        return Toolchain()
    data, src = read_toml(path, display)
    return toolchain_from_data(data, src)
