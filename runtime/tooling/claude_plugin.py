"""The repository as a Claude Code plugin marketplace: the JSON files the CLI reads, as the code would write them.

The repository's root holds `.claude-plugin/marketplace.json`, a marketplace of one plugin, whose files
are in `plugin/`: `.claude-plugin/plugin.json` (the manifest), `hooks/hooks.json` (the gate) and
`commands/*.md` (written by hand: each runs one `runtime` verb). The plugin is a folder of its own, not
the root, because installing a plugin from a local marketplace copies the plugin's whole folder into
the CLI's cache, files git ignores included: the root would take a checkout's `.venv` and `.cache`
(some 750 MB) along.

The hook is the one `runtime hook install` writes without `--role` (`session_options`, `gate_hook`):
`runtime` by name, the shipped catalog, `onFailure: block` (a session without `runtime` on PATH gets
exit 127, and the call is blocked). The committed files must equal ``generated_files()``:
`scripts/claude_plugin.py` writes them and `--check` (in `make lint`) says which differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import runtime
from runtime.spawn.backends.claude_code.cli import gate_hook
from runtime.tooling.claude import session_options

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict

NAME = "agent-runtime"  # the plugin's and the marketplace's name: installed as agent-runtime@agent-runtime
FOLDER = "plugin"  # the plugin's folder, relative to the marketplace's root
MARKETPLACE_FILE = ".claude-plugin/marketplace.json"
MANIFEST_FILE = f"{FOLDER}/.claude-plugin/plugin.json"
HOOKS_FILE = f"{FOLDER}/hooks/hooks.json"
DESCRIPTION = ("agent-runtime's fail-closed PreToolUse gate on every tool call: the main session judged as the "
               "`session` role, subagents by the role of their type; a call the gate cannot answer is blocked. "
               "Needs the `runtime` command on PATH.")


def hook_command() -> str:
    """The command the plugin's hook runs: `runtime check` with the options `hook install` writes by default."""
    return " ".join(["runtime", "check", *session_options(None), "--resident"])


def hooks() -> JSONDict:
    return {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [gate_hook(hook_command())]}]}}


def manifest() -> JSONDict:
    # The version names the CLI's cached copy (~/.claude/plugins/cache/<marketplace>/<plugin>/<version>):
    # the package's, so an upgrade of the runtime is an upgrade of the plugin.
    # `network.hosts` empty: the hook and the commands reach no host (the CLI's validator asks plugins
    # whose parts run processes to say what they reach).
    return {"name": NAME, "version": runtime.__version__, "description": DESCRIPTION, "license": "MIT",
            "keywords": ["security", "hooks", "sandbox", "permissions"], "network": {"hosts": []}}


def marketplace() -> JSONDict:
    return {"name": NAME, "owner": {"name": NAME},
            "description": "The agent-runtime gate as a Claude Code plugin",
            "plugins": [{"name": NAME, "source": f"./{FOLDER}", "description": DESCRIPTION}]}


def generated_files() -> dict[str, str]:
    """Each generated file's path, relative to the repository's root, and its text."""
    def text(doc: JSONDict) -> str:
        return json.dumps(doc, indent=2) + "\n"

    return {MARKETPLACE_FILE: text(marketplace()), MANIFEST_FILE: text(manifest()), HOOKS_FILE: text(hooks())}


def stale_files(root: Path) -> list[str]:
    """The generated files under ``root`` that are missing or differ from what the code writes."""
    stale = []
    for rel, want in generated_files().items():
        try:
            have = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            have = None
        if have != want:
            stale.append(rel)
    return stale
