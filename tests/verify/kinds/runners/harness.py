"""Running a test plan's steps as `runtime.verify.test_runs` does, without a sandbox: the reporters written
to a support folder under a random module name (`_write_support`), each step rendered with its own report
path and run as `bash -c "<step> 2>&1"` in the project's folder, its report read back (`_report`) with the
runner's own `read`."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runtime.verify.kinds.runners.base import Reading
from runtime.verify.kinds.runners.plan import TestPlan, plan_tests
from runtime.verify.kinds.runners.registry import BY_NAME
from runtime.verify.kinds.runners.results import TestCase
from runtime.verify.test_runs import Channel, _write_support

STEP_TIMEOUT_S = 300


@dataclass
class Ran:
    """One step as it ran: the command, its exit code and output, and its report as read."""

    command: str
    code: int
    output: str
    reading: Reading | None
    data: bytes | None = None  # the report as the runner wrote it
    tampered: str = ""  # why the report cannot be its runner's (`runtime.verify.test_runs.keyed_stream`)

    @property
    def outcomes(self) -> dict[str, str]:
        assert self.reading is not None
        return {t.id: t.outcome for t in self.reading.tests}

    @property
    def cases(self) -> dict[str, TestCase]:
        assert self.reading is not None
        return {t.id: t for t in self.reading.tests}

    def __str__(self) -> str:  # what an assertion shows when it fails
        return f"$ {self.command}\n[exit {self.code}]\n{self.output[-6000:]}\n{self.reading!r}"


def write(root: Path, files: Mapping[str, str]) -> Path:
    """The files of a project (dedented), under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def run_plan(plan: TestPlan, root: Path, reports: Path, env: Mapping[str, str] | None = None) -> list[Ran]:
    """Every step of ``plan`` in ``root`` (a failing step ends it, as `&&` would)."""
    assert not plan.opaque, plan.opaque
    module = f"agent_runtime_{secrets.token_hex(6)}"
    support = reports / "support"
    reports.mkdir(parents=True, exist_ok=True)
    _write_support(support, module)
    out: list[Ran] = []
    for n, step in enumerate(plan.steps):
        if any(r.code != 0 for r in out):
            break
        channel = None
        sockets = None
        if step.runner is not None:
            folder = reports / f"step-{n}"
            folder.mkdir(mode=0o700)
            sockets = Path(tempfile.mkdtemp(prefix="rts-"))
            channel = Channel.open(BY_NAME[step.runner], folder, sockets, support, module, None)
        command = step.render(str(root), channel.paths if channel is not None else None)
        done = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=root, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env=environment(env), timeout=STEP_TIMEOUT_S)
        output = done.stdout.decode("utf-8", errors="replace")
        reading, data, tampered = None, None, ""
        if channel is not None:
            runner = BY_NAME[step.runner or ""]
            data, tampered = channel.close(done.returncode, output)
            if sockets is not None:
                shutil.rmtree(sockets, ignore_errors=True)
            reading = (Reading(problem="the runner wrote no report") if data is None
                       else runner.read(data, output, str(root)))
        out.append(Ran(command, done.returncode, output, reading, data, tampered))
    return out


def environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """This process's environment without what the suite's own pytest puts there for itself (xdist's worker
    name, PYTEST_ADDOPTS, PYTHONPATH), with ``env`` over it."""
    own = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COV_CORE_")) and k not in ("PYTHONPATH", "NODE_OPTIONS", "CI")}
    return {**{k: v for k, v in own.items() if k != "FORCE_COLOR"}, "NO_COLOR": "1", **(env or {})}


def run(command: str, root: Path, env: Mapping[str, str] | None = None, package_json: bool = False) -> Ran:
    """The one runner step of ``command`` (through the project's package.json when ``package_json``)."""
    pj = (root / "package.json").read_text() if package_json else None
    plan = plan_tests(command, pj)
    ran = run_plan(plan, root, root.parent / f"reports-{secrets.token_hex(4)}", env)
    runs = [r for r in ran if r.reading is not None]
    assert len(runs) == 1, [str(r) for r in ran]
    return runs[0]


def green(ran: Ran, expected: Mapping[str, str]) -> None:
    """The step's report is whole and readable and holds exactly ``expected`` (id -> outcome)."""
    assert ran.reading is not None, ran
    assert ran.reading.problem == "", ran
    assert ran.tampered == "", ran
    assert ran.reading.complete, ran
    assert ran.reading.config, ran
    assert ran.outcomes == dict(expected), ran


def dump(ran: Ran) -> str:
    return json.dumps(ran.outcomes, indent=1)
