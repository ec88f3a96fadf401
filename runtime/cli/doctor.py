"""runtime doctor: what this machine gives a spawned agent, checked, and what is missing, in one line each.

Also what a person's own session meets here: how its hook judges Bash, and every MCP server their Claude Code
starts in this repository (`runtime.gate.claude_setup`) with the rule the session's gate holds its calls to.

The OS sandbox (platform, bubblewrap, setpriv or user namespaces, libseccomp) and the limits the
kernel holds for each run (`runtime.sandbox.limits.describe`: each cgroup controller where it is
attached, or why not, and what stands in for it). Exit 0 when a spawn can run its agents in the OS
sandbox here, 1 when it cannot (the first failing line says why, as the spawn's preflight would).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.cli.settings import Doctor


@dataclass(frozen=True)
class Finding:
    what: str
    ok: bool
    detail: str


def _sandbox() -> list[Finding]:
    from runtime.errors import FatalError
    from runtime.sandbox.bwrap import bwrap_path, check_user_namespaces, setpriv_path
    from runtime.sandbox.launch import platform_line
    from runtime.sandbox.seccomp import filter_program

    if not sys.platform.startswith("linux"):
        return [Finding("OS sandbox", False, platform_line())]
    out = []
    exe = bwrap_path()
    out.append(Finding("bubblewrap", exe is not None, exe or "not installed (apt-get install bubblewrap)"))
    try:
        filter_program()
        out.append(Finding("seccomp", True, "libseccomp and its Python bindings"))
    except FatalError as exc:
        out.append(Finding("seccomp", False, str(exc)))
    if os.geteuid() == 0:
        try:
            out.append(Finding("agent user", True, f"root: agents run as an unprivileged uid through {setpriv_path()}"))
        except FatalError as exc:
            out.append(Finding("agent user", False, str(exc)))
    elif exe is not None:
        try:
            check_user_namespaces(exe)
            out.append(Finding("user namespaces", True, "an unprivileged bubblewrap can start"))
        except FatalError as exc:
            out.append(Finding("user namespaces", False, str(exc)))
    return out


def _session() -> list[Finding]:
    """How the hook of a person's Claude Code session judges Bash here, and why (`runtime hook install`)."""
    from runtime.tooling.claude_sandbox import strict_reason, unavailable_note

    settings = [p for p in (".claude/settings.json", ".claude/settings.local.json") if os.path.exists(p)]
    sandboxed = False
    for path in settings:
        try:
            with open(path, encoding="utf-8") as fh:
                block = json.load(fh).get("sandbox")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(block, dict) and block.get("enabled") is True:
            sandboxed = block.get("failIfUnavailable") is True and block.get("allowUnsandboxedCommands") is False
    where = ("Claude Code's sandbox is on, fail-closed, in this repository's settings; "
             if sandboxed else "Claude Code's sandbox is not set fail-closed in this repository's settings; ")
    out = [Finding("session gate", True, where + strict_reason(os.geteuid() == 0))]
    note = unavailable_note()
    if sandboxed and note:
        out.append(Finding("session sandbox", False, note))
    return out


def _mcp(root: str) -> list[Finding]:
    """The MCP servers the person's Claude Code starts in this repository, each with what the session's gate does
    with their calls (`runtime hook install`): a rule's tools, or asked."""
    from runtime.gate.cache import cached_policy
    from runtime.gate.claude_setup import allow_rules, configured_servers
    from runtime.gate.kinds.mcp import McpAllowlist
    from runtime.manifests.locate import PROJECT_FOLDER, find_catalog, project_catalog
    from runtime.tooling.claude import SESSION_ROLE

    servers = configured_servers(root)
    if not servers:
        return []
    catalog = project_catalog(os.path.join(root, PROJECT_FOLDER)) or find_catalog(None)
    try:
        rules = [r for g in cached_policy(catalog, SESSION_ROLE, None, root).tool_gates if isinstance(g, McpAllowlist)
                 for r in g.rules]
    except Exception as exc:  # noqa: BLE001 - a catalog that does not compile: say so, per server
        return [Finding(f"MCP server {s.name}", False, f"{s.where}; the session's policy does not compile: {exc}")
                for s in servers]
    theirs = allow_rules(root)
    out = []
    for server in servers:
        named = [r for r in rules if r.server == server.name]
        if named:
            tools = ", ".join(t for r in named for t in r.tools)
            how = f"rule of role `{SESSION_ROLE}`: {'asked' if any(r.ask for r in named) else 'allowed'}: {tools}"
        else:
            how = "no rule: each call asked of you"
        own = [rule for rule, _ in theirs if rule == f"mcp__{server.name}" or rule.startswith(f"mcp__{server.name}__")]
        if own:
            how += f"; your Claude Code rules allow {', '.join(own)} (the gate defers to them where it would ask)"
        out.append(Finding(f"MCP server {server.name}", True, f"{server.where}; {how}"))
    return out


def _limits() -> list[Finding]:
    from runtime.sandbox import disk
    from runtime.sandbox.cgroups import CONTROLLERS, support
    from runtime.sandbox.limits import describe
    from runtime.sandbox.rlimits import have_prlimit

    found = support()
    out = [Finding("limits", True, describe(found).removeprefix("limits: "))]
    for controller in CONTROLLERS:
        place = found.places.get(controller)
        if place is not None:
            out.append(Finding(f"cgroup {controller}", True, f"v{place.version}, runs' cgroups under {place.parent}"))
        else:
            out.append(Finding(f"cgroup {controller}", False, found.missing.get(controller, "not found")))
    out.append(Finding("prlimit", have_prlimit(), "util-linux's prlimit sets each run's rlimits" if have_prlimit()
                       else "not installed: no rlimits (file size, and processes or memory where no cgroup holds them)"))
    out.append(Finding("disk meter", disk.readable(), "per-process I/O figures (/proc/PID/io)" if disk.readable()
                       else "this kernel keeps no per-process I/O figures: only each file is capped"))
    return out


def _caches(root: Path) -> list[Finding]:
    """The toolchain's build caches a spawn in this repository starts from (`runtime.sandbox.caches`)."""
    from runtime.sandbox.caches import KINDS
    from runtime.sandbox.caches.store import snapshots
    from runtime.sandbox.identity import agent_user
    from runtime.spawn.state import default_state_dir

    if agent_user() is None:
        return [Finding("build caches", True, "not shared: the orchestrator is not root, so its agents run as its own "
                        "uid and could write a shared cache through its links; each run builds in its private /tmp")]
    folder = default_state_dir(root) / "caches"
    out = []
    for name in KINDS:
        found = snapshots(folder / name)
        if not found:
            detail = f"none yet: the first spawn on a base fills it (Go and Rust presets), in {folder / name}"
        else:
            size = sum(s.bytes for s in found) / 2**20
            detail = (f"{len(found)} sealed, {size:.1f} MiB, the newest from base {found[0].base} "
                      f"({found[0].path}); each sandbox gets a layer of its own")
        out.append(Finding(f"{name} build cache", True, detail))
    return out


def _signing() -> list[Finding]:
    """Where the key that signs verified commits' attestations is (`runtime.attest.signing`)."""
    import shutil

    from runtime.attest.signing import ENV, key_path, load_key
    from runtime.errors import FatalError

    if shutil.which("ssh-keygen") is None:
        return [Finding("signing key", False, "ssh-keygen is not installed (Debian: openssh-client): a spawn cannot "
                        "sign its verified commits' attestations")]
    path = key_path()
    named = f" (named by {ENV})" if os.environ.get(ENV) else ""
    try:
        key = load_key(path)
    except FatalError as exc:
        return [Finding("signing key", False, str(exc))]
    if key is None:
        return [Finding("signing key", True, f"none yet: made at {path}{named} when the first verified commit is "
                        "attested")]
    return [Finding("signing key", True, f"{path}{named}, {key.fingerprint}; `runtime attest key` prints its "
                    "allowed_signers line")]


def _egress_ca() -> list[Finding]:
    """Whether a run's CA can be made here and a client that trusts it completes a TLS handshake with a leaf it
    minted (what the egress proxy does for a host with a credential)."""
    import socket
    import ssl
    import threading
    import time

    from runtime.errors import FatalError
    from runtime.sandbox.egress_ca import RunCA, require, system_roots

    try:
        require()
    except FatalError as exc:
        return [Finding("egress CA", False, f"{exc}; other roles are not concerned")]
    started = time.perf_counter()
    try:
        ca = RunCA.make(("doctor.invalid",))
        server_ctx = ca.server_context("doctor.invalid")
        client_ctx = ssl.create_default_context(cadata=ca.certificate_pem.decode())
        left, right = socket.socketpair()
        with left, right:
            left.settimeout(10)
            right.settimeout(10)
            served = threading.Thread(target=lambda: server_ctx.wrap_socket(right, server_side=True).close(),
                                      daemon=True)
            served.start()
            client_ctx.wrap_socket(left, server_hostname="doctor.invalid").close()
            served.join(10)
    except Exception as exc:  # noqa: BLE001 - what failed is the finding
        return [Finding("egress CA", False, f"a run's CA cannot be used here ({type(exc).__name__}: {exc}): a role "
                        "with `credentials` cannot run")]
    roots = "the system's roots found" if system_roots() else "no system roots found: sites are verified against none"
    return [Finding("egress CA", True, f"a run's CA made and a handshake with its leaf verified in "
                    f"{(time.perf_counter() - started) * 1000:.0f} ms; {roots}")]


def run(args: Doctor) -> int:
    from runtime.cli.allow import repository

    sandbox, limits, session = _sandbox(), _limits(), _session()
    limits += _caches(repository(Path.cwd()))
    session += _mcp(str(repository(Path.cwd())))
    provenance = _signing() + _egress_ca()
    can_spawn = all(f.ok for f in sandbox)
    if args.json:
        print(json.dumps({"sandbox": [asdict(f) for f in sandbox], "limits": [asdict(f) for f in limits],
                          "session": [asdict(f) for f in session], "provenance": [asdict(f) for f in provenance],
                          "spawn_in_os_sandbox": can_spawn}, indent=2))
        return 0 if can_spawn else 1
    from rich.table import Table

    from runtime.cli.show import console, line, text

    out = console()
    table = Table(title="what a spawned agent gets on this machine")
    for col in ("", "check", "detail"):
        table.add_column(col, overflow="fold")
    for f in (*sandbox, *limits, *session, *provenance):
        table.add_row(text("ok", "green") if f.ok else text("no", "yellow"), text(f.what), text(f.detail))
    out.print(table)
    if not can_spawn:
        first = next(f for f in sandbox if not f.ok)
        out.print(line(("no OS sandbox here: ", "bold red"), first.detail))
    return 0 if can_spawn else 1
