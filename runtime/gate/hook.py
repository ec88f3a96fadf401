"""Claude Code's PreToolUse protocol around the gate.

Input: one JSON object on stdin. Output: ``hookSpecificOutput`` with the
decision and reason on stdout; a deny also exits 2 with the reason on stderr,
because Claude Code runs the tool on any other non-zero exit (1, a crash, a
timeout) unless the hook carries `onFailure: block`, which a hand-written setting or an older
CLI may lack. So every failure here, including a missing or corrupt policy and
input we cannot read, becomes a deny with exit 2.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate import deadline
from runtime.gate.decision import ALLOW, ASK, DENY, GateDecision, deny
from runtime.gate.engine import decide, leaves_sandbox
from runtime.lang import hotjson  # json without `re` (a third of a cold hook's own cost): runtime.lang.hotjson

if TYPE_CHECKING:
    from collections.abc import Callable

    from runtime.gate.policy import Policy
    from runtime.lang.jsontypes import JSONObject


class HookAnswer:
    __slots__ = ("stdout", "stderr", "exit_code", "decision")

    def __init__(self, stdout: str, stderr: str, exit_code: int, decision: GateDecision | None) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
        self.decision = decision


DEFER = HookAnswer("", "", 0, None)  # no opinion: Claude Code's own permissions decide


def answer(decision: GateDecision) -> HookAnswer:
    reason = decision.reason + (f" [{decision.atom}]" if decision.atom else "")
    payload = {"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision.verdict,
        "permissionDecisionReason": reason,
    }}
    out = hotjson.dumps(payload) + "\n"
    if decision.verdict == DENY:
        return HookAnswer(out, reason + "\n", 2, decision)
    return HookAnswer(out, "", 0, decision)


def run_hook(raw: bytes, select_policy: Callable[[JSONObject], Policy | None],
             on_ask: Callable[[JSONObject, GateDecision], GateDecision] | None = None) -> HookAnswer:
    """Decide one hook call. ``select_policy(data)`` returns the Policy, or None to defer.

    ``on_ask(data, decision)``, when given, turns an ``ask`` into the allow or deny a person
    decided (``runtime check --approvals``); without it an ``ask`` is answered as it is.
    """
    try:
        try:
            data = hotjson.loads(raw)
        except ValueError as exc:
            return answer(deny(f"the hook input is not JSON ({exc}); the call is denied", None, "input"))
        if not isinstance(data, dict):
            return answer(deny("the hook input is not a JSON object; the call is denied", None, "input"))
        if data.get("hook_event_name") != "PreToolUse":
            return answer(deny("this hook only answers PreToolUse events; the call is denied", None, "input"))
        leaving = leaves_sandbox(data.get("tool_input"))
        if leaving is not None:
            return answer(leaving)  # before any policy: also where the main session is left to Claude Code (defer)
        try:
            policy = select_policy(data)
        except Exception as exc:  # noqa: BLE001 - no policy means no allow
            return answer(deny(f"no usable policy: {exc}", None, "policy"))
        if policy is None:
            return DEFER
        decision = decide(policy, data.get("tool_name"), data.get("tool_input"), data.get("cwd"))
        if decision.verdict == ASK and on_ask is not None:
            deadline.disarm()  # a person's answer has a bound of its own
            decision = on_ask(data, decision)
            if not isinstance(decision, GateDecision) or decision.verdict not in (ALLOW, DENY):
                return answer(deny("the approval step gave no clear answer; the call is denied", None, "approval"))
        return answer(decision)
    except Exception as exc:  # noqa: BLE001 - fail closed
        return answer(deny(f"the hook failed ({type(exc).__name__}: {exc}); the call is denied", None, "hook-error"))
