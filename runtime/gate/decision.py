"""The gate's answer."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from runtime.lang.verdicts import GateVerdict

ALLOW: GateVerdict = "allow"
DENY: GateVerdict = "deny"
ASK: GateVerdict = "ask"


class GateDecision:
    """A verdict (allow, deny or ask), why, and which atom and rule decided. ``undecided``: an ask because no
    rule decides the call (`runtime.gate.undecided`), not because a rule says to ask."""

    __slots__ = ("verdict", "reason", "atom", "rule", "undecided")

    def __init__(self, verdict: GateVerdict, reason: str, atom: str | None = None, rule: str | None = None,
                 undecided: bool = False) -> None:
        self.verdict = verdict
        self.reason = reason
        self.atom = atom
        self.rule = rule
        self.undecided = undecided

    @property
    def allowed(self) -> bool:
        return self.verdict == ALLOW

    def to_dict(self) -> dict[str, str | None]:
        return {"decision": self.verdict, "reason": self.reason, "atom": self.atom, "rule": self.rule}

    def __repr__(self) -> str:
        return f"GateDecision({self.verdict!r}, {self.reason!r}, atom={self.atom!r}, rule={self.rule!r})"


def deny(reason: str, atom: str | None = None, rule: str | None = None) -> GateDecision:
    return GateDecision(DENY, reason, atom, rule)


def allow(reason: str, atom: str | None = None, rule: str | None = None) -> GateDecision:
    return GateDecision(ALLOW, reason, atom, rule)


def ask(reason: str, atom: str | None = None, rule: str | None = None, undecided: bool = False) -> GateDecision:
    return GateDecision(ASK, reason, atom, rule, undecided)


def unattended(d: GateDecision) -> GateDecision:
    """What a run nobody watches answers: an ask is a deny at once, saying so (never a wait for an expiry)."""
    if d.verdict != ASK:
        return d
    return GateDecision(DENY, f"nobody approves calls in this run, so what would be asked is refused: {d.reason}",
                        d.atom, d.rule, d.undecided)
