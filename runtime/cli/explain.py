"""runtime explain: would this call be allowed, and why? No hook JSON needed.

``runtime explain --role explorer "pytest --junitxml r.xml"`` judges a Bash
command; ``--tool Write PATH`` (or Edit, Read, ...) a file tool on a path. The
policy is compiled exactly as for ``runtime check`` (from ``--role`` or a task
manifest, anchored at ``--root``, default the current folder), and the answer
is the gate's own: the decision, the atom and rule that decided, and the
reason, which says what would be allowed instead.

``--mode`` picks the policy's mode: `strict` (the default: what `runtime
check --role` and `runtime spawn --no-os-sandbox` use) or `sandboxed` (what a
spawned agent inside the OS sandbox is judged by, answered here as if inside
it). The answer names the mode.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import UsageError
from runtime.gate.decision import ALLOW, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.lang.audience import AGENT, SESSION
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import find_catalog
from runtime.manifests.role import load_role
from runtime.policy.build import build_policy
from runtime.policy.document import MODES, SANDBOXED, STRICT

if TYPE_CHECKING:
    from runtime.cli.settings import Explain

_PATH_KEYS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path", "Glob": "path", "Grep": "path"}


def tool_input(tool: str, subject: str) -> dict[str, object]:
    if tool == "Bash":
        return {"command": subject}
    if tool in ("Write",):
        return {"file_path": subject, "content": ""}
    if tool in ("Edit",):
        return {"file_path": subject, "old_string": "a", "new_string": "b"}
    if tool == "MultiEdit":
        return {"file_path": subject, "edits": [{"old_string": "a", "new_string": "b"}]}
    if tool == "NotebookEdit":
        return {"notebook_path": subject, "new_source": ""}
    if tool == "Glob":
        return {"pattern": "*", "path": subject}
    if tool == "Grep":
        return {"pattern": "x", "path": subject}
    if tool == "Read":
        return {"file_path": subject}
    if tool == "WebFetch":
        return {"url": subject, "prompt": "x"}
    if tool == "WebSearch":
        return {"query": subject}
    raise UsageError(f"--tool {tool}: give Bash, Read, Write, Edit, MultiEdit, NotebookEdit, Glob, Grep, WebFetch or WebSearch")


_MODE_NOTE = {
    STRICT: "typed shell rules, as for `runtime check --role` and `runtime spawn --no-os-sandbox`",
    SANDBOXED: "as a spawned agent inside the OS sandbox is judged; `--mode strict` for the hook without one",
}


def run(args: Explain) -> int:
    if args.task and args.role:
        raise UsageError("give --role NAME or --task FILE (the policy to ask), not both")
    if not args.task and not args.role:
        raise UsageError("which policy to ask: give --role NAME (`runtime roles` lists them) or --task FILE")
    catalog = find_catalog(args.catalog)
    root = Path(args.root or ".").resolve()
    if not root.is_dir():
        raise UsageError(f"--root {args.root}: not a folder")
    mode = args.mode or STRICT
    if mode not in MODES:
        raise UsageError(f"--mode {mode}: give {' or '.join(MODES)}")
    # A role for a person's own session is never an agent's: its answer is worded for the session, as
    # the hook compiles it (runtime.gate.cache), so a person asking hears what the session is told.
    audience = AGENT
    if args.role and not args.task and load_role(Catalog(Path(catalog)), args.role).for_sessions:
        audience = SESSION
    # A sandboxed policy decides only inside its sandbox; asked here, it answers as it would there.
    policy = Policy(build_policy(catalog, args.role, args.task, root, mode=mode, audience=audience), assume_sandbox=True)
    cwd = str(Path(args.cwd).resolve()) if args.cwd else str(root)
    inp = tool_input(args.tool, args.subject)
    d = decide(policy, args.tool, inp, cwd)
    if args.json:
        print(json.dumps({"tool": args.tool, "input": inp, "cwd": cwd, "role": policy.role, "mode": mode, "decision": d.verdict,
                          "atom": d.atom, "rule": d.rule, "reason": d.reason}, indent=2))
    else:
        by = f" by {d.atom}" if d.atom else ""
        rule = f" (rule: {d.rule})" if d.rule else ""
        print(f"{d.verdict}{by}{rule}")
        print(f"  {d.reason}")
        print(f"  mode: {mode} ({_MODE_NOTE[mode]})")
        if sys.stdout.isatty() and d.verdict != ALLOW:
            print(f"  role `{policy.role}`, worktree {root}{'' if cwd == str(root) else f', working folder {cwd}'}")
    return 0 if d.verdict == ALLOW else 2 if d.verdict == DENY else 3
