"""Inside the test's cluster namespace: start a run, SIGKILL its orchestrator once a given subtask's
job is out on a worker, then `--resume` it. Prints what both runs said, as one JSON object.

`python kill_and_resume.py SPEC.json`, SPEC: {"run": [argv of the first run], "resume": [argv of
the resumed run, without the run id], "subtask": the subtask whose dispatch triggers the kill,
"after_s": seconds to wait once it is dispatched}.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    first = subprocess.Popen(spec["run"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    dispatched = threading.Event()

    def read() -> None:
        for line in iter(first.stdout.readline, ""):
            lines.append(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "progress" and event.get("subtask") == spec["subtask"] \
                    and event.get("state") == "dispatched":
                dispatched.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    dispatched.wait(300)
    killed = first.poll() is None and dispatched.is_set()
    if killed:
        time.sleep(spec["after_s"])
        os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=60)
    reader.join(timeout=10)
    run_id = next((json.loads(line).get("run") for line in lines if line.startswith("{")), None)
    time.sleep(2)  # Ray notices the driver is gone and ends its tasks
    second = subprocess.run([*spec["resume"], "--resume", str(run_id)], capture_output=True, text=True) \
        if run_id else None
    print(json.dumps({"killed": killed, "first": "".join(lines), "first_stderr": first.stderr.read(),
                      "run": run_id, "code": second.returncode if second else None,
                      "stdout": second.stdout if second else "", "stderr": second.stderr if second else ""}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
