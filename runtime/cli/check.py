"""``runtime check``: the PreToolUse hook for Claude Code (and any agent that gates itself).

This module runs in a fresh process for every tool call. Its options are
parsed by hand and nothing heavier than the gate is imported: no argparse,
no pydantic, no rich. With ``--role``, a policy is compiled on first use and
cached (see ``runtime.policy.cache``).
"""

from __future__ import annotations

import os
import re
import sys

USAGE = (
    "usage: runtime check (--policy FILE | --role NAME [--task FILE]) [--catalog DIR] [--root DIR]"
    " [--main-session gate|defer]"
)
_OPTIONS = {"--policy", "--role", "--task", "--catalog", "--root", "--main-session"}
_ROLE = re.compile(r"^[a-z][a-z0-9-]{0,63}$")


def parse(argv: list[str]) -> dict[str, str]:
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        if key not in _OPTIONS:
            raise ValueError(f"unknown argument `{arg}`")
        if not eq:
            if i + 1 >= len(argv):
                raise ValueError(f"`{arg}` needs a value")
            value = argv[i + 1]
            i += 1
        if key in opts:
            raise ValueError(f"`{key}` given twice")
        opts[key] = value
        i += 1
    if "--policy" in opts and ({"--role", "--task"} & set(opts)):
        raise ValueError("--policy cannot be combined with --role or --task")
    if opts.get("--main-session", "gate") not in ("gate", "defer"):
        raise ValueError("--main-session must be gate or defer")
    return opts


def policy_selector(opts: dict[str, str]):
    """A function from hook input to the Policy that judges it (None = defer)."""
    if "--policy" in opts:
        from runtime.gate.policy import load_policy

        policy = load_policy(opts["--policy"])
        return lambda data: policy

    def select(data: dict):
        from runtime.manifests.locate import find_catalog
        from runtime.policy.cache import cached_policy

        agent_type = data.get("agent_type")
        role = opts.get("--role")
        task = opts.get("--task")
        if agent_type is not None:
            # A Claude Code subagent is gated by the role of the same name.
            if not isinstance(agent_type, str) or not _ROLE.match(agent_type):
                raise ValueError(f"subagent type {agent_type!r} is not a role name")
            role, task = agent_type, None
        if role is None:
            if opts.get("--main-session") == "defer":
                return None
            raise ValueError("no role for this call: pass --policy FILE or --role NAME (or --main-session defer)")
        catalog = find_catalog(opts.get("--catalog"), search_cwd=False)
        if not os.path.isfile(os.path.join(catalog, "roles", f"{role}.toml")):
            raise ValueError(f"role `{role}` is not in the catalog {catalog}")
        root = opts.get("--root") or os.environ.get("CLAUDE_PROJECT_DIR") or data.get("cwd")
        if not isinstance(root, str) or not root.startswith("/"):
            raise ValueError("no absolute worktree root (pass --root, or set CLAUDE_PROJECT_DIR)")
        return cached_policy(catalog, role, os.path.realpath(task) if task else None, os.path.realpath(root))

    return select


def main(argv: list[str]) -> int:
    from runtime.gate.decision import deny
    from runtime.gate.hook import answer, run_hook

    try:
        opts = parse(argv)
        raw = sys.stdin.buffer.read()
        try:
            select = policy_selector(opts)
        except Exception as exc:  # noqa: BLE001 - a policy that cannot load denies every call
            result = answer(deny(f"no usable policy: {exc}", None, "policy"))
        else:
            result = run_hook(raw, select)
    except Exception as exc:  # noqa: BLE001 - fail closed, never exit 1
        result = answer(deny(f"runtime check: {exc}. {USAGE}", None, "usage"))
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.stdout.flush()
    return result.exit_code
