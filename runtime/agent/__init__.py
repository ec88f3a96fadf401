"""The builtin agent: the runtime's own agent loop, run as a separate process.

It runs inside the OS sandbox, judges every tool call with the gate in-process
before running it, and reaches the model only through the orchestrator's
broker (it never imports litellm and never holds an API key). It reports
what it does as JSON lines on stdout for the orchestrator to follow.
"""
