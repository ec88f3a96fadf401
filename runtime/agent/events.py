"""JSON-line events the agent process prints for the orchestrator.

`turn` (a model call starts), `tool` (a tool call: the gate's decision and,
when it ran, whether it failed), `final` (the report), `error` (the run
could not continue, with a kind such as `llm`).
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from typing import Any


def emit(event: str, **data: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **data}) + "\n")
    sys.stdout.flush()
