"""JSON-line events the agent process prints for the orchestrator.

`turn` (a model call starts), `tool` (a tool call: the gate's decision and,
when it ran, whether it failed), `final` (the report), `error` (the run
could not continue, with a kind such as `llm`).
"""

from __future__ import annotations

import json
import sys


def emit(event: str, **data) -> None:
    sys.stdout.write(json.dumps({"event": event, **data}) + "\n")
    sys.stdout.flush()
