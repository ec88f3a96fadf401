"""A check that is bash's do-nothing builtin (`true`, `:`) is answered without starting anything: whatever the
sandbox or the tree holds, it cannot do otherwise. Shown here by a tree that is not there, where any process
would fail to start."""

from __future__ import annotations

import anyio
import pytest

from runtime.verify.commands import command_runner


def test_true_is_answered_without_a_process_and_anything_else_still_runs(tmp_path):
    run = command_runner(tmp_path / "gone", None, tmp_path / "home")
    assert anyio.run(run, "true", 10.0) == (0, "")
    assert anyio.run(run, "  :  ", 10.0) == (0, "")
    with pytest.raises(FileNotFoundError):  # not the builtin alone: run as written, and it cannot start here
        anyio.run(run, "true && true", 10.0)
