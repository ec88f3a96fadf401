"""The gate kinds: one module each, looked up by name in the registry of ``runtime.manifests.kinds.GATE_KINDS``.

A kind's module is imported when a policy names the kind: the hook is a fresh process per call, and a
policy uses some of the kinds only.
"""

from __future__ import annotations

from runtime.gate.kinds.base import Gate, PolicyError
from runtime.manifests.kinds import GATE_KINDS


def gate_class(kind: str) -> type[Gate] | None:
    """The class of gate ``kind``, its module imported now; None for a kind the registry does not hold."""
    spec = GATE_KINDS.get(kind)
    if spec is None:
        return None
    cls: type[Gate] = spec.load()
    return cls


def all_gates() -> dict[str, type[Gate]]:
    """Every kind's class, by kind (each module imported)."""
    return {kind: cls for kind in GATE_KINDS if (cls := gate_class(kind)) is not None}


__all__ = ["Gate", "PolicyError", "all_gates", "gate_class"]
