"""The short-lived folders of Unix sockets a spawn serves its agent on, and their clean-up.

Unix socket paths are limited to 107 bytes, so the folders live under the
temporary folder, not the state folder. Each one is recorded in the state
folder (`sockets/<folder name>`, holding the owner's pid) when it is made and
forgotten when it is removed; a run killed in between leaves the record, and
the next spawn in the same state folder removes the folders whose owner is
dead. Only folders recorded here are ever removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from runtime.pids import alive


def _registry(state_root: Path) -> Path:
    return state_root / "sockets"


def socket_folder(state_root: Path) -> Path:
    """A new, private folder for sockets, recorded as this process's."""
    folder = Path(tempfile.mkdtemp(prefix="rt-"))
    registry = _registry(state_root)
    registry.mkdir(parents=True, exist_ok=True)
    (registry / folder.name).write_text(f"{os.getpid()}\n{folder}\n", encoding="utf-8")
    return folder


def remove_socket_folder(state_root: Path, folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    (_registry(state_root) / folder.name).unlink(missing_ok=True)


def clean_stale_socket_folders(state_root: Path) -> list[Path]:
    """Remove the recorded folders whose owner process is gone; returns them."""
    registry = _registry(state_root)
    removed = []
    for record in sorted(registry.glob("rt-*")) if registry.is_dir() else []:
        try:
            pid_text, path_text = record.read_text(encoding="utf-8").split("\n")[:2]
            pid, folder = int(pid_text), Path(path_text)
        except (OSError, ValueError):
            record.unlink(missing_ok=True)
            continue
        if alive(pid) or folder.name != record.name:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        record.unlink(missing_ok=True)
        removed.append(folder)
    return removed
