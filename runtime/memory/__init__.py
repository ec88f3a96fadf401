"""Shared memory (R5): accepted results and curated facts, in one SQLite file.

``store`` holds the database, the read-only handle every part of the runtime
gets (``open_memory``) and the writer only the meta-validation step obtains
(``open_for_meta_validation`` with a ``MetaValidationToken``). ``curate``
promotes or discards the learnings a reviewer left pending. The planner reads
relevant entries (tags and full-text search) before it plans; nothing is
written unless a run's merged result was accepted. Standard library only.
"""
