"""Where no rule decides: the gate asks, and says what would decide it.

The gate has three answers. A rule allows a call; a rule forbids it by what it would do (a push, a
history rewrite, a write to a control file or outside the repository, the network where the role has
none, a secret); or no rule decides it (a program no rule names, a form or option no rule declares,
code or shell constructs the gate cannot read) and nothing it can see is forbidden: then it asks. A
person's session asks through Claude Code's own prompt; a spawned agent through the approvals queue,
whose expiry is a denial; a run nobody watches denies at once.

The reason of every such ask says what would allow the call for good: the `runtime allow` command that
writes the rule into the repository's catalog, or, where no rule can (a script, a one-liner, a
construct the gate cannot read), that it is asked each time. `rule_refusal` is the one place that
knows which commands a rule can allow; `runtime allow` and `runtime init` write rules by it.
"""

from __future__ import annotations

from runtime.gate.decision import GateDecision, ask
from runtime.lang.audience import SESSION
from runtime.lang.shapes import is_dotted_name, is_interpreter, is_program_name

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from runtime.gate.policy import Policy



def rule_refusal(name: str, args: list[str]) -> str | None:
    """Why no shell rule can allow ``name args`` for good, or None when one can (a rule for the program
    with these words, or with its grammar)."""
    from runtime.lang.shell_programs import FORBIDDEN_BUILTINS, OPAQUE_RUNNERS, SHELLS

    if not is_program_name(name):
        return "it runs a program by its path, which can change between calls"
    if name in SHELLS or name in OPAQUE_RUNNERS or name in FORBIDDEN_BUILTINS or name in ("env", "xargs", "cd"):
        return f"`{name}` runs other commands, and a rule names the commands themselves"
    if any(not w or any(c.isspace() for c in w) for w in args):
        return "an argument holds a space, which a rule's words cannot"
    if any(w[:1] == "~" or any(c in w for c in "*?[") for w in args):
        return "an argument is a pattern, which bash may expand into other words than a rule names"
    if is_interpreter(name) and not (args[:1] == ["-m"] and len(args) > 1 and is_dotted_name(args[1])):
        return f"`{name}` runs a script or code given to it, which can change between calls"
    return None


def allow_command(line: str, role: str) -> str:
    """The `runtime allow` command a person runs to allow ``line`` for ``role``."""
    import shlex

    return f"runtime allow {shlex.quote(line)} --role {role}"


def undecided(reason: str, policy: Policy, atom: str | None, rule: str | None, *, line: str | None = None,
              name: str | None = None, args: list[str] | None = None, instead: str | None = None) -> GateDecision:
    """An ask for a call no rule decides: ``reason`` says what no rule covers; the rest, what would.
    ``line`` is the simple command (``name args``) a rule could allow, if any; ``instead``, the change to a
    rule that would, where `runtime allow` writes none."""
    why_not = rule_refusal(name, args or []) if name is not None else "the gate cannot read all of what it runs"
    if instead is not None:
        fix = f"it is asked each time, unless {instead}"
    elif line is not None and why_not is None:
        fix = (f"to allow it from now on, `{allow_command(line, policy.role)}` writes the rule into the repository's "
               "catalog (.agent-runtime/roles)")
    else:
        fix = f"no rule can allow it for good ({why_not}), so it is asked each time"
    if policy.audience == SESSION:
        return ask(f"{reason}. No rule decides it, so you are asked; {fix}", atom, rule, undecided=True)
    return ask(f"{reason}. No rule decides it, so it waits for a person's approval, and is refused if nobody gives "
               f"it (then do the work another way, or say in your report what you needed); {fix}", atom, rule,
               undecided=True)
