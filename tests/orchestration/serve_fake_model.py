"""The fake OpenAI-compatible server as a process of its own, for a test's network namespace.

`python serve_fake_model.py TURNS.json PORT OUT.json`: serves the turns on 127.0.0.1:PORT until
SIGTERM, then writes what each chat request carried (its Authorization header and model) to OUT.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402


def main() -> int:
    turns, port, out = json.loads(Path(sys.argv[1]).read_text()), int(sys.argv[2]), Path(sys.argv[3])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with FakeOpenAIServer(turns, port=port) as server:
        stop.wait()
        seen = [{"authorization": r.headers.get("Authorization") or r.headers.get("authorization"),
                 "model": r.body.get("model") if isinstance(r.body, dict) else None} for r in server.chat_requests()]
    out.write_text(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
