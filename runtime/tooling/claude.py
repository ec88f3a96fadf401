"""Claude Code integration: the hook in settings.json, roles as subagents."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import FatalError, ManifestError
from runtime.manifests.catalog import Catalog
from runtime.manifests.compose import compose_bundle
from runtime.manifests.role import ResolvedRole, load_role
from runtime.manifests.task import Task
from runtime.spawn.backends.claude_code.cli import gate_hook

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONDict, JSONObject


def _in_project(path: str, project: str | None) -> str | None:
    """``path`` as `"$CLAUDE_PROJECT_DIR"/...` when it lies in the project, else None."""
    real = os.path.realpath(path)
    if project is None or not (real + "/").startswith(os.path.realpath(project) + "/"):
        return None
    rel = os.path.relpath(real, os.path.realpath(project))
    return '"$CLAUDE_PROJECT_DIR"' + ("" if rel == "." else "/" + shlex.quote(rel))


def hook_command(executable: str, catalog_root: str, role: str | None, project: str | None = None,
                 task: str | None = None, resident: bool = False) -> tuple[str, bool]:
    """The hook's command line, and whether it works on every clone (no path of this machine in it).

    `runtime` is called by name when that name finds this very executable; the catalog is left out
    when it is the one shipped with the package, and given as ``"$CLAUDE_PROJECT_DIR"/...`` (Claude
    Code runs hook commands through a shell and sets that variable) when it lies in the project.
    """
    from runtime.manifests.locate import shipped_catalog

    on_path = shutil.which("runtime")
    portable = on_path is not None and os.path.realpath(on_path) == os.path.realpath(executable)
    words = [shlex.quote("runtime" if portable else executable), "check"]
    catalog = os.path.realpath(catalog_root)
    shipped = shipped_catalog()
    if shipped is None or os.path.realpath(shipped) != catalog:
        inside = _in_project(catalog, project)
        words += ["--catalog", inside or shlex.quote(catalog)]
        portable = portable and inside is not None
    if task is not None:
        inside = _in_project(task, project)
        words += ["--task", inside or shlex.quote(os.path.realpath(task))]
        portable = portable and inside is not None
    return " ".join(words + session_options(role) + (["--resident"] if resident else [])), portable


def session_options(role: str | None) -> list[str]:
    """The options of `runtime check` that gate a person's own session, shell-quoted: allowed calls
    deferred to Claude Code's own rules, the main session judged by ``role`` (else `SESSION_ROLE`).

    `hook install` and the plugin's hooks file (``runtime.tooling.claude_plugin``) both end their
    command with these, so the two ways in gate alike.
    """
    # An interactive session: a call the gate allows gets no decision, so Claude Code's own rules and
    # prompts still apply to it (an `allow` would skip them: every gate miss would run unasked).
    return ["--on-allow", "defer", *(["--role", shlex.quote(role)] if role else ["--main-session", SESSION_ROLE])]


# The role `runtime hook install` gates a person's own main session with, when no --role is given.
SESSION_ROLE = "session"


def needs_task_scope(role: ResolvedRole) -> bool:
    """Whether ``role`` writes only inside a task's scope and sets none of its own: without a task,
    a session gated by it could write nothing."""
    atoms = {a.name for a in role.atoms}
    globs = role.params.get("scope::files-whitelist", {}).get("globs")
    writes = {"Write", "Edit", "MultiEdit", "NotebookEdit"} & set(role.tools)
    return bool(writes) and "scope::files-whitelist" in atoms and not globs


def _is_ours(entry: JSON, executable: str) -> bool:
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    if not isinstance(hooks, list):
        return False
    for hook in hooks:
        command = hook.get("command", "") if isinstance(hook, dict) else ""
        if not isinstance(command, str):
            continue
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        if len(words) > 1 and words[1] == "check" and (words[0] == executable or os.path.basename(words[0]) == "runtime"):
            return True
    return False


def has_hook(settings: JSONObject, executable: str) -> bool:
    """Whether ``settings`` already hold a PreToolUse hook of ours (in any form, old or current)."""
    hooks = settings.get("hooks")
    entries = hooks.get("PreToolUse") if isinstance(hooks, dict) else None
    return isinstance(entries, list) and any(_is_ours(e, executable) for e in entries)


def merge_hook(settings: JSONDict, command: str, executable: str) -> JSONDict:
    """``settings`` with our PreToolUse hook in place exactly once; the rest untouched.

    An entry of ours already there is replaced where it stands, so re-running the install upgrades
    an older hook (one without `onFailure: block`, which ran the call when `runtime` was not found).
    """
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise FatalError("settings: `hooks` is not an object; fix it by hand before installing")
    entries = hooks.setdefault("PreToolUse", [])
    if not isinstance(entries, list):
        raise FatalError("settings: `hooks.PreToolUse` is not a list; fix it by hand before installing")
    ours: JSONDict = {"matcher": "*", "hooks": [gate_hook(command)]}
    kept = [e for e in entries if not _is_ours(e, executable)]
    position = next((i for i, e in enumerate(entries) if _is_ours(e, executable)), len(kept))
    kept.insert(min(position, len(kept)), ours)
    hooks["PreToolUse"] = kept
    return settings


def read_settings(path: Path) -> JSONDict:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(str(path), exc.lineno, f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ManifestError(str(path), 1, "settings must be a JSON object")
    return data


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def agent_markdown(role: ResolvedRole) -> str:
    description = " ".join(role.description.split())
    front = [
        "---",
        f"name: {role.name}",
        f"description: {json.dumps(description)}",
        f"tools: {', '.join(role.tools)}",
        "---",
        "",
    ]
    return "\n".join(front) + compose_bundle(role, None)


def export_task_agent(task: Task, out: Path) -> Path:
    """The subagent file of one task's role, its bundle composed with the task (its scope, checks)."""
    role = task.role
    description = " ".join(role.description.split())
    front = ["---", f"name: {role.name}", f"description: {json.dumps(description)}", f"tools: {', '.join(role.tools)}",
             "---", ""]
    path = out / f"{role.name}.md"
    write_atomic(path, "\n".join(front) + compose_bundle(role, task))
    return path


def export_agents(catalog: Catalog, out: Path) -> list[Path]:
    written = []
    for name in catalog.role_names():
        role = load_role(catalog, name)
        if not role.spawnable:
            continue
        path = out / f"{role.name}.md"
        write_atomic(path, agent_markdown(role))
        written.append(path)
    return written
