"""Shared memory (R5): accepted results and curated facts, in one SQLite file.

Two handles, two ways in:

- ``reader.open_memory(path) -> MemoryReader``: what the planner and every
  other part of the runtime gets; it cannot write.
- ``writer.open_for_meta_validation(path, token) -> MemoryWriter``: the only
  way to a writer, for the meta-validation step once a merged result was
  accepted (``writer`` explains the token). A rejected run never calls it,
  so nothing is written.

``schema`` holds the file's tables, migrations and connection settings,
``records`` what an entry is and the checks before a write, ``queries`` the
search both handles share, ``curate`` promotes or discards the learnings a
reviewer left pending. Standard library only.
"""
