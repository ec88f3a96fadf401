"""A person's own Claude Code setup, read where Claude Code reads it: the MCP servers they configured and the
permission rules they wrote.

The gate of a person's session (`runtime hook install`) asks about what no rule of its role decides. Two of
those questions the person has often answered already, in Claude Code itself:

- **Which MCP servers they use.** Claude Code starts the servers of the repository's `.mcp.json` (project
  scope), of `~/.claude.json` (user scope: its `mcpServers`; local scope: `projects[<project>].mcpServers`),
  of the organisation (`/etc/claude-code/managed-mcp.json`, `managedMcpServers` in managed settings) and of
  every enabled plugin (`enabledPlugins` in a settings file, installed as `plugins/installed_plugins.json`
  lists, its servers in the plugin's `.mcp.json` or its manifest's `mcpServers`). A tool of one of them is
  asked of the person unless a rule decides; a server nobody configured stays refused.
- **Which calls they allow.** `permissions.allow` in their settings files (user, project, local, managed).
  Where one of their rules allows a call the gate would only ask about, the gate defers to Claude Code,
  which applies that rule (and its own deny and ask rules); the gate's denials still win.

This runs in the hook, a fresh process per call, and only for an MCP call or a call the gate asks about:
standard library only, each file read once per process, any file that is missing or not what Claude Code
writes read as empty (the gate then asks, or refuses, as without it). `CLAUDE_CONFIG_DIR` moves the user
files as it moves Claude Code's.
"""

from __future__ import annotations

import os

from runtime.lang import hotjson

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from collections.abc import Mapping

    from runtime.lang.jsontypes import JSONObject

MANAGED_DIR = "/etc/claude-code"  # Linux; where Claude Code reads an organisation's managed files
# Claude Code's own bound on the files it reads here is far above any real one; ours keeps a hostile one cheap.
_MAX_BYTES = 64 * 1024 * 1024

PROJECT, LOCAL, USER, MANAGED, PLUGIN = "project", "local", "user", "managed", "plugin"


class McpServer:
    """One configured MCP server: its name as tool names carry it (`mcp__<name>__<tool>`), where it was
    configured (``place``: project, local, user, managed, or plugin ``NAME@MARKETPLACE``) and the file.
    (Not a dataclass: the hook imports this module, and `dataclasses` costs it `inspect`.)"""

    __slots__ = ("name", "place", "source")

    def __init__(self, name: str, place: str, source: str) -> None:
        self.name = name
        self.place = place
        self.source = source

    def __repr__(self) -> str:
        return f"McpServer({self.name!r}, {self.place!r}, {self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, McpServer) and (self.name, self.place, self.source) == (other.name, other.place,
                                                                                          other.source)

    def __hash__(self) -> int:
        return hash((self.name, self.place, self.source))

    @property
    def where(self) -> str:
        """Where it was configured, as a person reads it."""
        if self.place == PROJECT:
            return f"the repository's {self.source}"
        if self.place == LOCAL:
            return f"your local scope for this project ({self.source})"
        if self.place == USER:
            return f"your user scope ({self.source})"
        if self.place == MANAGED:
            return f"your organisation's managed settings ({self.source})"
        return f"the plugin `{self.place[len(PLUGIN) + 1:]}` ({self.source})"


def tool_server_name(name: str) -> str:
    """A server's name as Claude Code puts it into tool names: every character but letters, digits, `_` and `-`
    becomes `_`."""
    return "".join(c if (c.isascii() and c.isalnum()) or c in "_-" else "_" for c in name)


def config_home(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(the global config file, the user settings folder): `~/.claude.json` and `~/.claude`, or both inside
    `CLAUDE_CONFIG_DIR` where it is set."""
    env = os.environ if env is None else env
    moved = env.get("CLAUDE_CONFIG_DIR")
    if moved:
        return os.path.join(moved, ".claude.json"), moved
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".claude.json"), os.path.join(home, ".claude")


# path -> (its stat, its value): read again once the file changes (the resident hook lives for minutes).
_read_cache: dict[str, tuple[tuple[int, int, int], object]] = {}


def _json(path: str) -> object:
    """The JSON value of ``path``, or None (missing, too large, not JSON)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _read_cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    value: object = None
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_BYTES + 1)
        if len(data) <= _MAX_BYTES:
            value = hotjson.loads(data)
    except (OSError, ValueError, RecursionError):
        value = None
    _read_cache[path] = (stamp, value)
    return value


def _servers_of(value: object) -> list[str]:
    """The server names of an `mcpServers` object."""
    if not isinstance(value, dict):
        return []
    return [name for name, spec in value.items() if isinstance(name, str) and name and isinstance(spec, dict)]


def _project_entry(config: object, project: str) -> JSONObject:
    """`projects[<project>]` of the global config, under the path as given or as resolved."""
    projects = config.get("projects") if isinstance(config, dict) else None
    if not isinstance(projects, dict):
        return {}
    for key in dict.fromkeys((project, os.path.realpath(project))):
        entry = projects.get(key)
        if isinstance(entry, dict):
            return entry
    return {}


def settings_files(project: str, env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(scope, path) of every settings file Claude Code reads for ``project``, lowest precedence first."""
    _, user_dir = config_home(env)
    return [(USER, os.path.join(user_dir, "settings.json")),
            (PROJECT, os.path.join(project, ".claude", "settings.json")),
            (LOCAL, os.path.join(project, ".claude", "settings.local.json")),
            (MANAGED, os.path.join(MANAGED_DIR, "managed-settings.json"))]


def _enabled_plugins(project: str, env: Mapping[str, str] | None) -> list[str]:
    """The plugins (`NAME@MARKETPLACE`) the settings files enable; a later file's `false` disables one."""
    enabled: dict[str, bool] = {}
    for _, path in settings_files(project, env):
        data = _json(path)
        value = data.get("enabledPlugins") if isinstance(data, dict) else None
        if isinstance(value, dict):
            enabled.update({k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, bool)})
        elif isinstance(value, list):  # an older form: the enabled plugins' names
            enabled.update({k: True for k in value if isinstance(k, str)})
    return [name for name, on in enabled.items() if on]


def _plugin_servers(plugin_id: str, install: str) -> list[tuple[str, str]]:
    """(server, file) of a plugin installed at ``install``: its `.mcp.json` (`mcpServers`, or the servers at the
    top level) and its manifest's `mcpServers` (an object, or a file of the plugin naming them)."""
    found: list[tuple[str, str]] = []
    root = os.path.realpath(install)
    sources: list[str] = [os.path.join(root, ".mcp.json")]
    manifest_path = os.path.join(root, ".claude-plugin", "plugin.json")
    manifest = _json(manifest_path)
    inline = manifest.get("mcpServers") if isinstance(manifest, dict) else None
    if isinstance(inline, dict):
        found += [(name, manifest_path) for name in _servers_of(inline)]
    for ref in ([inline] if isinstance(inline, str) else inline if isinstance(inline, list) else []):
        if isinstance(ref, str):
            path = os.path.realpath(os.path.join(root, ref))
            if path.startswith(root + os.sep) and path not in sources:
                sources.append(path)
    for path in sources:
        data = _json(path)
        if isinstance(data, dict):
            names = _servers_of(data["mcpServers"]) if "mcpServers" in data else _servers_of(data)
            found += [(name, path) for name in names]
    return found


def _plugins(project: str, env: Mapping[str, str] | None) -> list[McpServer]:
    enabled = _enabled_plugins(project, env)
    if not enabled:
        return []
    _, user_dir = config_home(env)
    listed = os.path.join(user_dir, "plugins", "installed_plugins.json")
    data = _json(listed)
    plugins = data.get("plugins") if isinstance(data, dict) else None
    if not isinstance(plugins, dict):
        return []
    out: list[McpServer] = []
    here = {project, os.path.realpath(project)}
    for plugin_id in enabled:
        installs = plugins.get(plugin_id)
        if isinstance(installs, dict):  # version 1: one install per plugin
            installs = [installs]
        if not isinstance(installs, list):
            continue
        plugin = plugin_id.rpartition("@")[0] or plugin_id
        for install in installs:
            if not isinstance(install, dict) or not isinstance(install.get("installPath"), str):
                continue
            scope = install.get("scope", USER)
            if scope in (PROJECT, LOCAL) and install.get("projectPath") not in here:
                continue  # installed for another project
            for server, path in _plugin_servers(plugin_id, install["installPath"]):
                name = tool_server_name(f"plugin_{plugin}_{server}")
                out.append(McpServer(name, f"{PLUGIN} {plugin_id}", path))
    return out


def configured_servers(project: str, env: Mapping[str, str] | None = None) -> list[McpServer]:
    """Every MCP server Claude Code starts for a session in ``project``, each where it was configured (a name
    configured in several places is listed in each)."""
    global_file, _ = config_home(env)
    config = _json(global_file)
    out: list[McpServer] = []
    project_file = os.path.join(project, ".mcp.json")
    data = _json(project_file)
    out += [McpServer(tool_server_name(n), PROJECT, ".mcp.json")
            for n in _servers_of(data.get("mcpServers") if isinstance(data, dict) else None)]
    out += [McpServer(tool_server_name(n), LOCAL, global_file)
            for n in _servers_of(_project_entry(config, project).get("mcpServers"))]
    out += [McpServer(tool_server_name(n), USER, global_file)
            for n in _servers_of(config.get("mcpServers") if isinstance(config, dict) else None)]
    managed_mcp = os.path.join(MANAGED_DIR, "managed-mcp.json")
    data = _json(managed_mcp)
    out += [McpServer(tool_server_name(n), MANAGED, managed_mcp)
            for n in _servers_of(data.get("mcpServers") if isinstance(data, dict) else None)]
    managed_settings = os.path.join(MANAGED_DIR, "managed-settings.json")
    data = _json(managed_settings)
    out += [McpServer(tool_server_name(n), MANAGED, managed_settings)
            for n in _servers_of(data.get("managedMcpServers") if isinstance(data, dict) else None)]
    out += _plugins(project, env)
    return out


def project_servers(project: str) -> list[str]:
    """The servers the repository's own `.mcp.json` configures (the project scope), sorted."""
    data = _json(os.path.join(project, ".mcp.json"))
    return sorted(tool_server_name(n) for n in _servers_of(data.get("mcpServers") if isinstance(data, dict) else None))


def server_configured(project: str, server: str, env: Mapping[str, str] | None = None) -> McpServer | None:
    """Where the person configured the MCP server ``server`` (its name in tool names), or None."""
    for found in configured_servers(project, env):
        if found.name == server:
            return found
    return None


# -- the person's own permission rules ----------------------------------------------------------------------

def allow_rules(project: str, env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(rule, file) of every `permissions.allow` entry of the person's settings files."""
    out: list[tuple[str, str]] = []
    for _, path in settings_files(project, env):
        data = _json(path)
        permissions = data.get("permissions") if isinstance(data, dict) else None
        rules = permissions.get("allow") if isinstance(permissions, dict) else None
        if isinstance(rules, list):
            out += [(rule, path) for rule in rules if isinstance(rule, str) and rule]
    return out


def _bash_rule_allows(pattern: str, command: str) -> bool:
    """Whether Claude Code's `Bash(PATTERN)` rule allows ``command``, read narrowly: the exact command, a
    `PREFIX:*` rule (the command is the prefix, or the prefix and a space and more), or a pattern whose only
    `*` is its last character after a space (`npm run test *`). A command holding anything the shell reads
    as more than one command or a substitution never matches: Claude Code splits those itself, and the
    gate does not guess how."""
    if any(c in command for c in ";&|`$<>()\n\r\\") or not command.strip():
        return False
    if pattern.endswith(":*"):
        prefix = pattern[:-2]
        return bool(prefix) and "*" not in prefix and (command == prefix or command.startswith(prefix + " "))
    if pattern.endswith(" *") and "*" not in pattern[:-2]:
        prefix = pattern[:-2]
        return bool(prefix) and (command == prefix or command.startswith(prefix + " "))
    return "*" not in pattern and command == pattern


def person_allows(project: str, tool: str, tool_input: object, env: Mapping[str, str] | None = None) -> str | None:
    """The person's own Claude Code rule (and its file) that allows this call, read narrowly; or None.

    Read: `Tool` alone (every call of a tool; not Bash, which no whole-tool rule of a person should turn into
    "anything"), `mcp__server` and `mcp__server__*` (a server's every tool), `mcp__server__tool`, and
    `Bash(...)` as `_bash_rule_allows` reads it. Any other form (paths, domains) is left to Claude Code's
    prompt: the gate keeps asking."""
    from runtime.gate.kinds.mcp import split_name

    named = split_name(tool)
    for rule, path in allow_rules(project, env):
        if named is not None:
            if rule in (tool, f"mcp__{named[0]}", f"mcp__{named[0]}__*"):
                return f"`{rule}` ({path})"
            continue
        if tool == "Bash":
            if rule.startswith("Bash(") and rule.endswith(")") and isinstance(tool_input, dict):
                command = tool_input.get("command")
                if isinstance(command, str) and _bash_rule_allows(rule[5:-1], command.strip()):
                    return f"`{rule}` ({path})"
            continue
        if rule == tool:
            return f"`{rule}` ({path})"
    return None
