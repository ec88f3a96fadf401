"""Whether an agent may run the commands its task is judged by.

Verify runs a task's test and check commands in the sandbox, outside the
gate; the agent is told to run them first. A command its role refuses is one
the agent can never run, so the task fails where the agent could not have
seen it coming (a repository's `python -m unittest` or `flake8` under a role
that allows neither). `runtime lint` therefore asks the gate, in strict mode
(the drop-in hook's and `--no-os-sandbox`'s, the stricter of the two), about
each, as the agent would run it from the repository's root.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import ManifestError
from runtime.gate.decision import ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import PROJECT_FOLDER
from runtime.manifests.task import Task
from runtime.policy.compile import compile_policy
from runtime.policy.document import STRICT

if TYPE_CHECKING:
    from runtime.lang.verdicts import GateVerdict


@dataclass(frozen=True)
class Verdict:
    command: str
    verdict: GateVerdict
    reason: str
    undecided: bool = False  # an ask because no rule decides the command


def repository_root(catalog: Catalog) -> Path:
    """The repository a catalog's tasks run in: the folder holding a project catalog, else the working folder."""
    top = catalog.layers[-1]
    return top.parent if top.name == PROJECT_FOLDER else Path.cwd().resolve()


def judge(policy: Policy, commands: list[str], root: Path) -> list[Verdict]:
    """The gate's answer for each command, run from ``root`` as a Bash call."""
    out = []
    for command in commands:
        d = decide(policy, "Bash", {"command": command}, str(root))
        out.append(Verdict(command, d.verdict, d.reason, d.undecided))
    return out


def task_command_errors(task: Task, catalog: Catalog, root: Path) -> tuple[list[ManifestError], list[str]]:
    """Errors for each test or check command of ``task`` its role refuses in strict mode, and warnings
    for those it would ask a person about."""
    items: list[tuple[tuple[object, ...], str, str]] = []
    test = task.verification.test_command
    if test:
        items.append((("verification", "test-command"), test, "test command"))
    for n, command in enumerate(task.verification.check_commands or []):
        items.append((("verification", "check-commands", n), command, "check command"))
    if not items:
        return [], []
    policy = Policy(compile_policy(task.role, task, root, catalog, mode=STRICT))
    errors: list[ManifestError] = []
    warnings: list[str] = []
    for (loc, command, what), verdict in zip(items, judge(policy, [c for _l, c, _w in items], root), strict=True):
        if verdict.verdict == DENY:
            errors.append(task.src.error(loc, f"{what} `{command}` is refused to role `{task.role.name}` (strict "
                                              f"mode), so its agent cannot run it: {verdict.reason}"))
        elif verdict.undecided:
            errors.append(task.src.error(loc, f"no rule of role `{task.role.name}` decides the {what} `{command}` "
                                              "(strict mode), so its agent could run it only with a person's "
                                              f"approval each time: {verdict.reason}"))
        elif verdict.verdict == ASK:
            err = task.src.error(loc, f"{what} `{command}` needs a person's approval each time role "
                                      f"`{task.role.name}` runs it")
            warnings.append(str(err))
    return errors, warnings
