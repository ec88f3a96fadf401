"""The runtime's pytest plugin: each test's outcome, as pytest decides it, sent to the orchestrator's socket
named in AGENT_RUNTIME_TEST_REPORT (outside the tree; the orchestrator reads it as it is written: nothing sent
can be taken back; the variable is removed before any test runs), one JSON object a line, ending with the
session's exit status. Each record carries the run's key, read from the file AGENT_RUNTIME_REPORT_KEY names and
removed at once (before any code of the tree runs), and its number in the stream: a record the code under
test adds is seen as such. Loaded with `-p <its random name>`, before
any conftest of the tree. Runs inside the sandbox under the project's own interpreter: standard library and
pytest only."""

from __future__ import annotations

import json
import os
import socket
from typing import Any

_PATH = os.environ.pop("AGENT_RUNTIME_TEST_REPORT", None)
_CHARS = 2000


def _key(where: str | None) -> str:
    if where is None:
        return ""
    try:
        with open(where, encoding="utf-8") as f:
            key = f.read().strip()
        os.unlink(where)
    except OSError:
        return ""
    return key


_KEY = _key(os.environ.pop("AGENT_RUNTIME_REPORT_KEY", None))
_DUMPS = json.dumps  # bound now, before any code of the tree can replace it


class _Reporter:
    def __init__(self, path: str) -> None:
        channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        channel.connect(path)
        self._out = channel.makefile("w", encoding="utf-8")  # open for the whole session
        self._n = 0

    def write(self, record: dict[str, Any]) -> None:
        self._out.write(_DUMPS({**record, "k": _KEY, "n": self._n}) + "\n")
        self._out.flush()
        self._n += 1

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.write({"event": "collect-error", "id": report.nodeid, "message": str(report.longrepr)[:_CHARS]})

    def pytest_collection_finish(self, session: Any) -> None:
        self.write({"event": "collected", "ids": [item.nodeid for item in session.items]})

    def pytest_runtest_logreport(self, report: Any) -> None:
        record = {"event": "report", "id": report.nodeid, "when": report.when, "outcome": report.outcome,
                  "xfail": hasattr(report, "wasxfail")}
        if report.failed:
            record["message"] = str(report.longreprtext)[:_CHARS]
        self.write(record)

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        self.write({"event": "finish", "exitstatus": int(exitstatus)})
        self._out.close()


def pytest_configure(config: Any) -> None:
    if _PATH is None or hasattr(config, "workerinput"):  # an xdist worker: its reports reach the controller
        return
    reporter = _Reporter(_PATH)
    config.pluginmanager.register(reporter, "agent-runtime-report")
    plugins = sorted({f"{dist.project_name} {dist.version}" for _, dist in config.pluginmanager.list_plugin_distinfo()})
    reporter.write({"event": "start", "rootdir": str(config.rootpath), "inifile": str(config.inipath or ""),
                    "args": [str(a) for a in config.args], "plugins": plugins})
