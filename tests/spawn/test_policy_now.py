"""A rule a person adds while an agent runs ("always" in the console, `runtime allow`) holds for its next
attempt and for `runtime again`: the policy is compiled again from the catalog as it is now, written where the
gate reads it, and each attempt records the policy it ran under. Real catalogs and the real `runtime allow`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

from runtime.audit.records import AuditRecord
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import PROJECT_FOLDER, catalog_now, shipped_catalog
from runtime.manifests.task import load_task
from runtime.policy.compile import compile_document
from runtime.policy.document import PolicyDocument
from runtime.spawn.attempts import policy_now
from tests.conftest import run_cli

TASK = """[task]
role = "edit-local"
agent-id = "ag-always"
goal = "Lint the project."

[scope]
files-whitelist = ["src/**"]

[verification]
test-command = "true"
test-results = "exit-code"
check-commands = []

[body]
text = "Lint it."
"""


class Audit:
    def __init__(self) -> None:
        self.records: list[tuple[str, dict]] = []

    def append(self, record: AuditRecord, agent: str | None = None) -> None:
        self.records.append((record.kind_name(), record.data()))


def _run(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "Makefile").write_text("lint:\n\ttrue\n")
    shipped = shipped_catalog()
    assert shipped is not None
    catalog = Catalog(Path(shipped))
    (tmp_path / "task.toml").write_text(TASK)
    task = load_task(catalog, tmp_path / "task.toml")
    run_ro = tmp_path / "agent-ro"
    run_ro.mkdir()
    policy = compile_document(task.role, task, repo, catalog)
    (run_ro / "policy.json").write_text(json.dumps(policy.raw))
    run = SimpleNamespace(catalog=catalog, git=SimpleNamespace(root=repo), task=task, worktree=repo, submodules=(),
                          audit=Audit(), agent_id="ag-always", run_ro=run_ro)
    return run, policy


def _verdict(policy: PolicyDocument, root: Path) -> str:
    return decide(Policy(policy), "Bash", {"command": "make lint"}, str(root)).verdict


def test_a_rule_always_wrote_holds_for_the_next_attempt(tmp_path):
    run, first = _run(tmp_path)
    assert _verdict(first, run.worktree) != "allow"
    assert policy_now(run, first, 2) is first  # nothing changed: the same policy, nothing written
    proc = run_cli("allow", "make lint", "--role", "edit-local", cwd=run.worktree)  # as "always" writes it
    assert proc.returncode == 0, proc.stderr
    second = policy_now(run, first, 2)
    assert second.hash != first.hash and _verdict(second, run.worktree) == "allow"
    written = PolicyDocument.read(json.loads((run.run_ro / "policy.json").read_text()))
    assert written.hash == second.hash  # where the gate reads the policy
    assert run.audit.records[-1] == ("policy", {"attempt": 2, "hash": second.hash,
                                                "catalog": str(run.worktree / PROJECT_FOLDER)})
    assert _verdict(second, run.worktree) == "allow" and not list(run.run_ro.glob(".policy.json.*"))


def test_a_catalog_that_no_longer_compiles_keeps_the_policy_in_force(tmp_path):
    run, first = _run(tmp_path)
    assert run_cli("allow", "make lint", "--role", "edit-local", cwd=run.worktree).returncode == 0
    role = run.worktree / PROJECT_FOLDER / "roles" / "edit-local.toml"
    role.write_text(role.read_text() + "\nthis is not toml = = \n")
    assert policy_now(run, first, 2) is first
    kind, data = run.audit.records[-1]
    assert kind == "policy" and data["kept"] is True and data["hash"] == first.hash and data["error"]


def test_runtime_again_reads_the_project_catalog_made_since_the_run(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    shipped = shipped_catalog()
    assert shipped is not None
    assert catalog_now(shipped, repo) == shipped  # no project catalog yet
    assert run_cli("allow", "make lint", "--role", "edit-local", cwd=repo).returncode == 0
    assert Path(catalog_now(shipped, repo)) == (repo / PROJECT_FOLDER).resolve()
    assert catalog_now(tmp_path / "elsewhere", repo) == str(tmp_path / "elsewhere")  # a catalog named: kept
