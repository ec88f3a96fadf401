"""The readers of a repository's declaration files, in their order of preference, and the scan that runs them
(`runtime.tooling.project.scan` holds what they share: the ``Scan`` they fill and the file helpers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.tooling.project import read_ci, read_other, read_python
from runtime.tooling.project.scan import Scan

if TYPE_CHECKING:
    from pathlib import Path


def scan(root: Path) -> Scan:
    out = Scan(root)
    for reader in (read_python.read_tox, read_python.read_nox, read_python.read_pyproject, read_python.read_setup_cfg,
                   read_python.read_tool_files, read_other.read_makefile, read_other.read_package_json,
                   read_other.read_cargo, read_other.read_go, read_ci.read_pre_commit, read_ci.read_workflows):
        reader(out)
    return out
