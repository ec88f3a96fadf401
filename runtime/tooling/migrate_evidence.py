"""migrate: verify examples of the size kinds given the base they are now judged against.

size-limits and change-size judged whole files until they judged the change
against its base; their evidence gained the base's side (``base-files``,
``base-sizes``). An example written before names only the files, which meant
every file judged as new: the rewrite adds an empty base table, which means
exactly that, so each example decides as it did. The rewrite is on the TOML
document (tomlkit keeps comments and layout).
"""

from __future__ import annotations

from dataclasses import dataclass

import tomlkit

from runtime.errors import ManifestError
from runtime.manifests.tomlsrc import TomlSource
from runtime.verify.kinds.registry import KINDS


@dataclass(frozen=True)
class EvidenceChange:
    line: int
    key: str  # the base key added


def migrate_evidence(text: str, where: str) -> tuple[str, list[EvidenceChange]]:
    """The text with each old-form example of a size kind given an empty base, and where."""
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises its own ParseError family
        raise ManifestError(where, 1, f"invalid TOML: {exc}") from None
    kind = KINDS.get(str(doc.get("verify", "")))
    keys = kind.base_key if kind is not None else None
    examples = doc.get("examples")
    if keys is None or not isinstance(examples, list):
        return text, []
    now, base = keys
    src = TomlSource(where, text)
    changes = []
    for n, example in enumerate(examples):
        evidence = example.get("evidence") if isinstance(example, dict) else None
        if isinstance(evidence, dict) and now in evidence and base not in evidence:
            changes.append(EvidenceChange(src.line_of(("examples", n, "evidence")), base))
            evidence[base] = tomlkit.inline_table()
    return (tomlkit.dumps(doc), changes) if changes else (text, [])
