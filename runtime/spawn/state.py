"""Where the orchestrator keeps its runs, and each run's recorded state.

The state folder lies outside the repository (agents never see it except
what is bound read-only into their sandbox): `worktrees/<id>` (the agent's
git worktree), `runs/<id>/` (bundle, policy, broker socket, private home,
one folder per attempt, `state.json`), `locks/` and `audit.jsonl`.
`state.json` is rewritten atomically at every phase, so `runtime status`
always reads a consistent picture, even after the orchestrator was killed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FINAL = ("ok", "rejected", "failed", "exhausted")


def default_state_dir(repo_top: Path) -> Path:
    explicit = os.environ.get("RUNTIME_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    digest = hashlib.sha256(str(repo_top.resolve()).encode()).hexdigest()[:10]
    return base / "agent-runtime" / f"{repo_top.name}-{digest}"


@dataclass(frozen=True)
class StateDir:
    root: Path

    def worktree(self, agent_id: str) -> Path:
        return self.root / "worktrees" / agent_id

    def run(self, agent_id: str) -> Path:
        return self.root / "runs" / agent_id

    def attempt(self, agent_id: str, n: int) -> Path:
        return self.run(agent_id) / f"attempt-{n}"

    @property
    def audit(self) -> Path:
        return self.root / "audit.jsonl"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    def read(self, agent_id: str) -> dict[str, Any] | None:
        path = self.run(agent_id) / "state.json"
        try:
            record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return record

    def write(self, agent_id: str, state: dict[str, Any]) -> None:
        folder = self.run(agent_id)
        folder.mkdir(parents=True, exist_ok=True)
        state = {**state, "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = folder / f".state.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, folder / "state.json")

    def all_runs(self) -> list[dict[str, Any]]:
        runs = []
        for folder in sorted((self.root / "runs").glob("*")):
            state = self.read(folder.name)
            if state is not None:
                runs.append(state)
        return runs
