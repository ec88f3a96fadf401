"""The `claude-code` backend: the real Claude Code CLI as a sandboxed, gated, keyless agent.

The CLI runs inside the agent's bubblewrap sandbox, under the relay (`runtime.sandbox.netrelay`)
that gives it `http://127.0.0.1:8082` in the sandbox's own network namespace, leading to the
orchestrator's proxy (`runtime.spawn.backends.claude_code.proxy`), which alone holds the API key. The CLI's
"key" is a per-run secret the proxy checks, so the proxy serves this agent and nobody else, and the
proxy forwards only plain model calls. Every tool call passes the PreToolUse hook `runtime check
--policy` (matcher `*`), given by `--settings` from the run's read-only folder, with
`--setting-sources ""`: no user, project or local settings file is read at all (the user's lives
in the agent's home, which code it runs can write: `disableAllHooks`, allow rules, an
`apiKeyHelper` there were all honoured once), and the home itself starts empty at every attempt.
`--permission-mode dontAsk` and no allow rules, so nothing runs that the gate did not allow; the
hook carries `onFailure: block`, so a hook that cannot start, crashes or times out blocks the call
(`runtime.spawn.backends.claude_code.cli`; the preflight refuses a CLI too old for it). The
prompt (the bundle, plus the verify feedback on a retry) goes in on stdin; stream-JSON comes out,
and `stream_event` turns it into the facts the orchestrator tracks.

Claude Code 2.1.330, checked: `--output-format stream-json` needs `--verbose` with `-p`;
`--tools` accepts Read, Write, Edit, Bash, Glob, Grep, WebFetch, WebSearch and NotebookEdit (Glob,
Grep and WebFetch exist although the default set leaves them out) and silently drops names it does
not know (MultiEdit is gone: Edit covers it); a settings file that fails validation is silently
ignored under `-p`, hook included, so the file written here is kept minimal.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.audit.records import Gated, ToolRan
from runtime.policy.document import PolicyDocument
from runtime.sandbox.netrelay import MODEL_PORT, command_prefix
from runtime.spawn.backends.claude_code.cli import cli_launch, find_claude, gate_hook
from runtime.spawn.backends.claude_code.proxy import DEFAULT_UPSTREAM, AnthropicProxy, upstream_credentials
from runtime.spawn.progress import Denial, Progress
from runtime.spawn.sockets import remove_socket_folder, socket_folder
from runtime.workspace.safe_files import UnsafeFile, folder_under

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject
    from runtime.models.broker import Usage
    from runtime.spawn.agent_process import AttemptSetup
    from runtime.spawn.pipeline import SpawnRun

# Tools of a role that the CLI offers under the same name; the rest are skipped (never Agent/Task:
# delegation would start a second agent loop).
CLI_TOOLS = frozenset({"Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch", "NotebookEdit"})
# Quiet the CLI: no telemetry, update checks or error reports (they could not get out anyway).
CLI_ENV = {"DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
           "CLAUDE_CODE_MAX_RETRIES": "2"}  # a broken model API ends the run (failed(llm)), as in the broker


def egress_domains(policy: PolicyDocument) -> tuple[str, ...]:
    """The domains the role may reach: all that server-side web tools in a model call may cover."""
    return policy.egress_domains()


def start_claude_proxy(run: SpawnRun) -> tuple[AnthropicProxy, Path]:
    """The run's model proxy on a Unix socket in a short temporary folder (removed by the caller).
    On a cluster's worker node it has no credentials: the orchestrator makes each call
    (`SpawnOptions.orchestrator`)."""
    cli_launch(find_claude())  # a missing CLI fails before anything starts
    remote = run.options.orchestrator
    credentials = upstream_credentials(os.environ) if remote is None else {}
    folder = socket_folder(run.state.root)
    try:
        proxy = AnthropicProxy(folder / "api.sock", run.agent.api_base or DEFAULT_UPSTREAM, credentials,
                               token=secrets.token_urlsafe(32), egress=egress_domains(run.policy),
                               forward=remote.forward if remote is not None else None).start()
    except BaseException:
        remove_socket_folder(run.state.root, folder)
        raise
    return proxy, folder


def _hook_command(policy: Path) -> str:
    script = Path(sys.executable).with_name("runtime")
    program = [str(script)] if script.is_file() else [sys.executable, "-m", "runtime.cli.main"]
    return shlex.join([*program, "check", "--policy", str(policy)])


def write_settings(run_ro: Path) -> Path:
    """The CLI's only settings: the gate as the PreToolUse hook for every tool, blocking a call it
    cannot answer (the preflight refused a CLI too old to honour that)."""
    hook = gate_hook(_hook_command(run_ro / "policy.json"))
    path = run_ro / "claude-settings.json"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]}}, indent=1) + "\n",
                    encoding="utf-8")
    return path


def claude_command(setup: AttemptSetup, feedback_path: Path | None) -> tuple[list[str], bytes, dict[str, str]]:
    """The relay and the CLI under it, the prompt for stdin, and the CLI's extra variables.

    Also binds the CLI's folders into the sandbox when the sandbox would hide them (under the
    orchestrator's masked home, or under /tmp), and lets the limit check see the cost and tokens
    the CLI reports.
    """
    agent = setup.task.agent
    assert agent is not None  # spawn refuses a task without an [agent] table
    prefix, folders = cli_launch(find_claude())
    if setup.sandbox is not None:
        setup.sandbox.expose(folders)
    tools = [t for t in setup.policy.tools if t in CLI_TOOLS]
    # No setting source at all: the user-level settings live in the agent's home, which code the agent
    # runs can write, and they can switch hooks off or run an apiKeyHelper. Only the orchestrator's
    # --settings file (read-only, rewritten each attempt) and the host's managed policy apply.
    argv = [*command_prefix({MODEL_PORT: str(setup.broker_socket)}),
            *prefix, "-p", "--output-format", "stream-json", "--verbose",
            "--settings", str(write_settings(setup.run_ro)), "--setting-sources", "",
            "--permission-mode", "dontAsk", "--permission-prompts", "none", "--strict-mcp-config",
            "--tools", ",".join(tools)]
    if agent.model:
        argv += ["--model", agent.model]
    prompt = (setup.run_ro / "bundle.md").read_text(encoding="utf-8")
    if feedback_path is not None:
        prompt += ("\n\n---\n\nYour previous attempt was not accepted:\n\n"
                   + feedback_path.read_text(encoding="utf-8") + "\n")
    if setup.usage is not None:
        setup.usage = _with_reported(setup.usage, setup.progress)
    env = {**CLI_ENV, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{MODEL_PORT}",
           # The per-run secret the model proxy checks; the real key is added outside the sandbox.
           "ANTHROPIC_API_KEY": (setup.model.token if isinstance(setup.model, AnthropicProxy) else None) or ""}
    return argv, prompt.encode(), env


def _with_reported(proxy_usage: Callable[[], Usage], progress: Progress) -> Callable[[], Usage]:
    """The proxy's counts, raised to what the CLI reported (its cost is known only to it)."""
    def usage() -> Usage:
        u = proxy_usage()
        extra = max(0, progress.tokens - u.total_tokens)
        return replace(u, prompt_tokens=u.prompt_tokens + extra, cost_usd=max(u.cost_usd, progress.cost_usd))
    return usage


# -- the stream -------------------------------------------------------------------------------
_HOOK_ERROR = re.compile(r"^PreToolUse:\S* hook error: (?:\[[^\]\n]*\]: )?(.*)$", re.DOTALL)
_ATOM = re.compile(r"\s*\[([A-Za-z0-9_.-]+::[A-Za-z0-9_.-]+)\]\s*$")


@dataclass
class _Stream:
    """What one attempt's stream has shown so far (kept on its Progress)."""

    messages: set[str] = field(default_factory=set)
    calls: dict[str, tuple[JSON, JSON]] = field(default_factory=dict)  # id -> the CLI's name and input, as given
    denied: set[str] = field(default_factory=set)


def _object(value: JSON) -> JSONObject:
    """An object of the stream, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def _array(value: JSON) -> list[JSON]:
    """An array of the stream, or none for anything else."""
    return value if isinstance(value, list) else []


def _text(content: JSON) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _source(decision: JSONObject) -> str:
    source = decision.get("source")
    return "the gate (PreToolUse hook)" if source == "hook" else f"Claude Code's own permissions ({source})"


def _deny(progress: Progress, state: _Stream, tool_id: str, tool: JSON, tool_input: JSON, reason: str) -> None:
    if tool_id in state.denied:
        return
    state.denied.add(tool_id)
    match = _ATOM.search(reason)
    atom = match.group(1) if match else None
    reason = reason[:match.start()] if match else reason
    progress.denials += 1
    progress.denied.append(Denial(_name(tool), reason))
    progress.record(Gated(attempt=progress.attempt, tool=_name(tool), input=tool_input, decision="deny", reason=reason,
                          atom=atom, rule=None))


def _name(tool: JSON) -> str | None:
    return tool if isinstance(tool, str) else None  # a name the CLI gave, or nothing


def _assistant(progress: Progress, state: _Stream, event: JSONObject) -> None:
    message = _object(event.get("message"))
    key = str(message.get("id") or event.get("uuid"))
    if key not in state.messages:  # the CLI emits one line per content block of a message
        state.messages.add(key)
        progress.turns += 1
    for block in _array(message.get("content")):
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id") not in state.calls:
            state.calls[str(block.get("id"))] = (block.get("name"), block.get("input"))
            progress.tool_calls += 1


def _user(progress: Progress, state: _Stream, event: JSONObject) -> None:
    meta = {m.get("id"): _object(m.get("permission_decision")) for m in _array(event.get("tool_result_meta"))
            if isinstance(m, dict)}
    for block in _array(_object(event.get("message")).get("content")):
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        tool_id = str(block.get("tool_use_id"))
        tool, tool_input = state.calls.get(tool_id, (None, None))
        text, is_error = _text(block.get("content")), bool(block.get("is_error"))
        decision = meta.get(tool_id, {})
        hook = _HOOK_ERROR.match(text) if is_error and decision.get("decision") != "accept" else None
        if hook or decision.get("decision") == "reject":
            # Bash denials read "PreToolUse:Bash hook error: <reason>"; file tools get the bare reason.
            reason = hook.group(1) if hook else text if is_error and text else f"refused by {_source(decision)}"
            _deny(progress, state, tool_id, tool, tool_input, reason.strip())
        elif decision.get("decision") == "accept":
            progress.record(Gated(attempt=progress.attempt, tool=_name(tool), input=tool_input, decision="allow",
                                  reason=f"allowed by {_source(decision)}", atom=None, rule=None))
            progress.record(ToolRan(attempt=progress.attempt, tool=_name(tool), is_error=is_error, result=text[:400]))
        else:  # the CLI answered itself (an unknown tool, bad input): the gate never saw it
            progress.record(ToolRan(attempt=progress.attempt, tool=_name(tool), is_error=is_error, result=text[:400]))


def _result(progress: Progress, state: _Stream, event: JSONObject) -> None:
    for denial in _array(event.get("permission_denials")):
        if isinstance(denial, dict):
            _deny(progress, state, str(denial.get("tool_use_id")), denial.get("tool_name"), denial.get("tool_input"),
                  "refused by Claude Code's permission mode")
    usage = _object(event.get("usage"))
    tokens = sum(v for k, v in usage.items() if k.endswith("_tokens") and isinstance(v, int))
    progress.tokens = max(progress.tokens, tokens)
    cost = event.get("total_cost_usd")
    if isinstance(cost, (int, float)):
        progress.cost_usd = max(progress.cost_usd, float(cost))
    result = event.get("result")
    if isinstance(result, str):
        progress.report = result
    if event.get("is_error") or event.get("subtype") != "success":
        # 2.1.330 reports a model API failure as subtype "success" with is_error and api_error_status.
        api_status = event.get("api_error_status")
        errors = event.get("errors") or []
        listed = errors if isinstance(errors, (list, dict, str)) else [errors]
        detail = result or "; ".join(map(str, listed)) or "no detail"
        what = f"the model API failed (status {api_status})" if api_status else f"it ended with {event.get('subtype')}"
        progress.error = {"kind": "llm" if api_status else "agent",
                          "message": f"Claude Code reported an error: {what}: {str(detail)[:500]}"}


# Claude Code's Edit and Write replace a file atomically: they write `<file>.tmp.<pid>.<12 hex digits>` beside
# it and rename that over it (2.1.332: `${path}.tmp.${process.pid}.${randomBytes(6).toString("hex")}`, opened
# O_CREAT|O_EXCL|O_NOFOLLOW; on a failed write the CLI removes it itself). A CLI stopped between the two (a
# limit, Ctrl-C) leaves it behind: it is never the agent's work, and the agent could not remove it (outside
# a scope naming single files, the gate refuses it).
_STAGING_SUFFIX = r"\.tmp\.[0-9]+\.[0-9a-f]{12}"
_FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")


def written_files(progress: Progress) -> list[str]:
    """The paths the CLI's file tools were asked to write in this attempt, as given."""
    state = progress.__dict__.get("_claude_stream")
    out: list[str] = []
    for tool, tool_input in state.calls.values() if state is not None else ():
        if tool in _FILE_TOOLS and isinstance(tool_input, dict):
            path = tool_input.get("file_path") or tool_input.get("notebook_path")
            if isinstance(path, str) and path not in out:
                out.append(path)
    return out


def remove_staging_files(worktree: Path, paths: list[str]) -> list[str]:
    """Remove the CLI's temporary files beside each of ``paths`` (in the worktree; relative ones to it),
    never through a symlink; the removed ones, relative to the worktree."""
    root = os.path.abspath(worktree)
    removed = []
    for path in paths:
        full = os.path.normpath(os.path.join(root, path))
        if not full.startswith(root + os.sep):
            continue
        folder, name = os.path.split(os.path.relpath(full, root))
        staging = re.compile(re.escape(name) + _STAGING_SUFFIX)
        try:
            with folder_under(root, folder) as fd, os.scandir(fd) as entries:
                for entry in entries:
                    if staging.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                        os.unlink(entry.name, dir_fd=fd)
                        removed.append(os.path.join(folder, entry.name))
        except (OSError, UnsafeFile):
            continue  # a folder that is gone or a symlink: the CLI wrote nothing there
    return removed


def stream_event(progress: Progress, line: str) -> None:
    """One line of the CLI's stream-JSON: turns, tool calls, gate decisions, the result."""
    try:
        event: JSON = json.loads(line)
    except ValueError:
        return
    if not isinstance(event, dict):
        return
    state = progress.__dict__.setdefault("_claude_stream", _Stream())
    kind = event.get("type")
    if kind == "assistant":
        _assistant(progress, state, event)
    elif kind == "user":
        _user(progress, state, event)
    elif kind == "result":
        _result(progress, state, event)
    else:
        return
    progress.changed()
