"""`[notify]` in the project catalog: the person's own command is told, with the event as JSON on its stdin,
when an agent's call waits for them and when a run ends; a command that is not there is refused at its line
before anything is made; one that hangs is stopped, and how each ended is in the audit log."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from runtime.audit.log import AuditLog, records
from runtime.errors import ManifestError
from runtime.manifests.notify import load_notify
from runtime.spawn.notify import Notifier
from tests.spawn.conftest import SH_FIX, SH_REPORT, Spawner

RECORDER = "import json, sys; open(sys.argv[1], 'a').write(json.dumps(json.loads(sys.stdin.read())) + '\\n')"


def notify_toml(folder: Path, out: Path, extra: str = "") -> Path:
    script = folder / "record.py"
    script.write_text(RECORDER)
    path = folder / "notify.toml"
    path.write_text(f"[notify]\ncommand = {json.dumps([sys.executable, str(script), str(out)])}\n{extra}")
    return path


def wait_lines(path: Path, n: int, timeout: float = 10) -> list[dict]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.is_file() and len(path.read_text().splitlines()) >= n:
            return [json.loads(line) for line in path.read_text().splitlines()]
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {n} events within {timeout} s")


def test_the_command_gets_the_event_as_json_and_its_end_is_audited(tmp_path):
    out = tmp_path / "events.jsonl"
    config = load_notify(notify_toml(tmp_path, out, 'on = ["waiting"]\n'), "notify.toml")
    audit = AuditLog(tmp_path / "audit.jsonl")
    notifier = Notifier(config, tmp_path / "state", audit)
    assert not notifier.send("finished", "ag-1", label="ok")  # not an event it wants
    assert notifier.send("waiting", "ag-1", request="1a2b3c4d", call="Bash: make deploy <script>", reason="asked")
    (event,) = wait_lines(out, 1)
    assert event["event"] == "waiting" and event["agent"] == "ag-1" and event["call"] == "Bash: make deploy <script>"
    assert event["state_dir"] == str(tmp_path / "state") and event["time"].endswith("Z")
    end = time.monotonic() + 5
    while not list(records(audit.path, kind="notify")) and time.monotonic() < end:
        time.sleep(0.05)
    (done,) = [r.to_json() for r in records(audit.path, kind="notify")]
    assert done["data"]["exit_code"] == 0 and done["data"]["event"] == "waiting"


def test_a_command_that_hangs_is_stopped(tmp_path):
    path = tmp_path / "notify.toml"
    path.write_text(f"[notify]\ncommand = {json.dumps([sys.executable, '-c', 'import time; time.sleep(60)'])}\n"
                    "timeout-s = 1\n")
    audit = AuditLog(tmp_path / "audit.jsonl")
    started = time.monotonic()
    assert Notifier(load_notify(path, "notify.toml"), tmp_path, audit).send("finished", "ag-1")
    assert time.monotonic() - started < 1  # the run never waits for it
    end = time.monotonic() + 10
    while not list(records(audit.path, kind="notify")) and time.monotonic() < end:
        time.sleep(0.05)
    (done,) = [r.to_json() for r in records(audit.path, kind="notify")]
    assert done["data"]["error"] == "stopped after 1 s"


@pytest.mark.parametrize("text,line,what", [
    ("[notify]\ncommand = []\n", 2, "command"),
    ("[notify]\ncommand = [\"x\"]\non = [\"always\"]\n", 3, "on"),
    ("[notify]\ncommand = \"ntfy publish\"\n", 2, "command"),
    ("[notify]\ncommand = [\"x\"]\nshell = true\n", 3, "shell"),
])
def test_a_bad_notify_file_is_one_line_at_its_line(tmp_path, text, line, what):
    path = tmp_path / "notify.toml"
    path.write_text(text)
    with pytest.raises(ManifestError) as info:
        load_notify(path, "notify.toml")
    assert str(info.value).startswith(f"notify.toml:{line}: ") and what in str(info.value)


@pytest.mark.slow
def test_a_spawn_tells_the_command_when_it_ends_and_a_missing_command_is_refused_first(spawner: Spawner,
                                                                                       catalog_copy: Path):
    s = spawner
    out = s.tmp / "events.jsonl"
    notify_toml(catalog_copy, out)
    task = s.task(agent_id="ag-told", command=f"{SH_FIX}; {SH_REPORT}")
    done = s.spawn(task, "--catalog", str(catalog_copy))
    assert done.label == "ok", done.describe()
    (event,) = wait_lines(out, 1)
    assert event["event"] == "finished" and event["agent"] == "ag-told" and event["label"] == "ok"
    assert event["commit"] == done.outcome["commit"]
    (catalog_copy / "notify.toml").write_text("[notify]\n\ncommand = [\"no-such-notifier-7731\"]\n")
    refused = s.spawn(s.task(agent_id="ag-untold", command=SH_REPORT), "--catalog", str(catalog_copy))
    assert refused.code == 1 and refused.stderr.strip().endswith("[notify] command runs `no-such-notifier-7731`, "
                                                                 "which is not on PATH")
    assert "notify.toml:3: " in refused.stderr and s.sha("agent/ag-untold") is None


def test_an_event_sent_just_before_the_process_ends_is_still_told(tmp_path):
    """A plan's last event is sent as `runtime run` ends: the event is handed to the command before `send`
    returns, so a slow command still reads it after the sender is gone."""
    import subprocess

    out = tmp_path / "events.jsonl"
    slow = tmp_path / "slow.py"
    slow.write_text("import sys, time\ntime.sleep(0.5)\n" + RECORDER.replace("import json, sys; ", "import json; "))
    config = tmp_path / "notify.toml"
    config.write_text(f"[notify]\ncommand = {json.dumps([sys.executable, str(slow), str(out)])}\n")
    # The sender's threads never run (as a daemon thread need not before its process ends, on a busy machine).
    sender = ("import sys, threading\nthreading.Thread.start = lambda self: None\n"
              "from pathlib import Path\nfrom runtime.manifests.notify import load_notify\n"
              "from runtime.spawn.notify import Notifier\n"
              f"n = Notifier(load_notify(Path({str(config)!r}), 'notify.toml'), Path({str(tmp_path)!r}))\n"
              "assert n.send('plan-finished', run='r1', status='accepted', report='x')\n"
              "import os\nos._exit(0)\n")  # ends at once, no thread of it run on: the command still asleep
    subprocess.run([sys.executable, "-c", sender], check=True, timeout=30)
    (event,) = wait_lines(out, 1)
    assert event["event"] == "plan-finished" and event["run"] == "r1"
