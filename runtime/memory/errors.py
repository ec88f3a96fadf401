"""What the memory store raises: one base, mapped to exit 1 by the CLI like every ``FatalError``."""

from __future__ import annotations

from runtime.errors import FatalError


class MemoryStoreError(FatalError):
    """The memory store cannot be used as asked: missing FTS5, a newer schema, a conflicting write."""


class MemoryAccessDenied(MemoryStoreError):
    """A writer was asked for by code that is not the meta-validation step."""


class CurationError(MemoryStoreError):
    """A curation decision names an unknown learning or one already curated."""
