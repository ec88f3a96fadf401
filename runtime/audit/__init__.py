"""Audit trail and secret redaction for spawned agents.

``log`` is an append-only, hash-chained JSONL log of everything a spawn does
(gate decisions, tool calls, checks, retries, commits), so that an edited,
deleted or reordered record is detectable afterwards; ``records`` holds one
class per kind of record it writes and reads back. ``redact`` removes known
secret values, in the encodings they commonly travel in, from everything the
runtime writes down: transcripts, reports and audit records. Standard library
only, so the hook and the agent side can import them cheaply.
"""
