"""One error tree, mapped to exit codes in one place: bad input exits 1, a run that failed exits 2."""

from __future__ import annotations

import socket
import subprocess

import pytest

from runtime.errors import AgentFailed, AgentRuntimeError, FatalError, RunFailure
from runtime.models.types import ModelError
from tests.conftest import run_cli
from tests.fakes.openai_server import FakeOpenAIServer


def test_every_error_has_one_root_and_a_model_error_is_a_failed_run():
    assert issubclass(FatalError, AgentRuntimeError) and issubclass(RunFailure, AgentRuntimeError)
    err = ModelError("openai/x: cannot connect", kind="llm")
    assert isinstance(err, AgentFailed) and (err.outcome, err.detail, err.exit_code) == ("failed", "llm", 2)
    assert str(err) == "openai/x: cannot connect"  # what the broker sends and the agent loop reports
    assert ModelError.from_dict(err.to_dict()).to_dict() == err.to_dict()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _repo(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    return repo


@pytest.mark.slow  # litellm over real HTTP, with its retries
def test_a_planner_whose_model_fails_is_failed_llm_and_exit_2(tmp_path):
    repo = _repo(tmp_path)
    with FakeOpenAIServer() as server:
        server.fail_next(5, status=500)  # the server is up, its model calls fail
        proc = run_cli("run", "--goal", "do x", "--planner-model", "openai/gpt-4.1", "--planner-api-base",
                       server.url + "/v1", "--planner-retries", "0", cwd=repo, env={"OPENAI_API_KEY": "not-a-key"})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: failed(llm): openai/gpt-4.1: InternalServerError (HTTP 500)")
    assert "internal error" not in proc.stderr


@pytest.mark.slow  # litellm, imported and asked
def test_a_planner_whose_local_server_is_down_is_refused_before_anything_is_made(tmp_path):
    repo = _repo(tmp_path)
    state = tmp_path / "state"
    proc = run_cli("run", "--goal", "do x", "--planner-model", "openai/gpt-4.1", "--planner-api-base",
                   f"http://127.0.0.1:{_closed_port()}/v1", "--state-dir", str(state), cwd=repo,
                   env={"OPENAI_API_KEY": "not-a-key"})
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --planner-model: cannot reach the model server at "), lines
    assert not state.exists()


def test_an_internal_error_exits_70_with_the_traceback_in_a_file(tmp_path):
    """The runtime's own bug is neither bad input (1) nor a failed run (2), nor a plan's questions or an ask (3)."""
    import sys

    code = ("import sys, runtime.cli.roles as roles, runtime.cli.main as main\n"
            "def broken(args):\n    raise KeyError('the bug')\n"
            "roles.run = broken\nsys.exit(main.main(['roles']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert proc.returncode == 70, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: internal error (KeyError: 'the bug'); the traceback is in ")
    log = line.rsplit(" ", 1)[1]
    assert log.startswith(str(tmp_path))
    text = open(log, encoding="utf-8").read()
    assert text.startswith("runtime ") and "Traceback" in text and 'in broken' in text and "KeyError: 'the bug'" in text
