"""Bad input gets one line, `file:line: what is wrong`, exit 1, no traceback, nothing written."""

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli, snapshot

ONE_LINE = re.compile(r"^error: (?P<file>[^:\n]+):(?P<line>\d+): (?P<msg>.+)\n$")


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1))


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


TASK = "manifests/examples/fix-tokenizer.toml"
CASES = {
    "malformed TOML": (lambda r: edit(r, "roles/explorer.toml", "[tools]", "[tools"), "roles/explorer.toml", "invalid TOML"),
    "unknown key": (lambda r: edit(r, "roles/explorer.toml", "[escalation]", "[escalation]\nmood = \"calm\""), "roles/explorer.toml", "unknown key `mood`"),
    "wrong type": (lambda r: edit(r, "roles/git-ops.toml", "spawnable = false", "spawnable = \"no\""), "roles/git-ops.toml", "spawnable"),
    "unknown atom": (lambda r: edit(r, "roles/read-only.toml", '"scope::read-only"', '"scope::reed-only"'), "roles/read-only.toml", "unknown atom `scope::reed-only`"),
    "unknown role": (lambda r: edit(r, TASK, 'role = "edit-local"', 'role = "edit-global"'), TASK, "unknown role `edit-global`"),
    "alias chain": (lambda r: write(r, "capabilities/tools/older/capability.toml", 'alias = "tools::read-only"\ndeprecated = "x"\n'), "capabilities/tools/older/capability.toml", "alias chains"),
    "alias cycle": (lambda r: write(r, "capabilities/tools/loop/capability.toml", 'alias = "tools::loop"\ndeprecated = "x"\n'), "capabilities/tools/loop/capability.toml", "alias of itself"),
        # reported once, at the first role of the cycle by name, whichever file closed it
    "role cycle": (lambda r: edit(r, "roles/read-only.toml", "[capabilities]", '[capabilities]\nextends = "edit-shared"'), "roles/edit-local.toml", "cycle: edit-local -> explorer -> read-only -> edit-shared -> edit-local"),
    "duplicate name": (lambda r: edit(r, "roles/read-only.toml", '"output::severity-grade",', '"output::severity-grade",\n    "output::severity-grade",'), "roles/read-only.toml", "listed twice"),
    "name not matching folder": (lambda r: edit(r, "capabilities/net/no-network/capability.toml", 'name = "net::no-network"', 'name = "net::offline"'), "capabilities/net/no-network/capability.toml", "does not match its folder"),
    "invalid glob": (lambda r: edit(r, TASK, '"src/tokenizer/**"', '"../src/**"'), TASK, "`..` component"),
    "invalid pattern": (lambda r: edit(r, "roles/explorer.toml", 'grammar = "tree"', 'options = { "o" = "path" }'), "roles/explorer.toml", "is not an option spelling"),
    "hostile agent id": (lambda r: edit(r, TASK, 'agent-id = "ag-fix-tokenizer"', 'agent-id = "../x"'), TASK, "agent id"),
    "task naming git-ops": (lambda r: edit(r, TASK, 'role = "edit-local"', 'role = "git-ops"'), TASK, "not spawnable"),
    "field the role ignores": (lambda r: edit(r, "manifests/examples/explore-build.toml", "[output]", '[scope]\nfiles-whitelist = ["src/**"]\n\n[output]'), "manifests/examples/explore-build.toml", "no atom that uses it"),
    "rule for a shell": (lambda r: edit(r, "roles/explorer.toml", 'program = "true"', 'program = "bash"'), "roles/explorer.toml", "shells, wrappers and runners"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lint_reports_one_line(catalog_copy, name):
    change, rel, words = CASES[name]
    change(catalog_copy)
    before = snapshot(catalog_copy)
    proc = run_cli("lint", cwd=catalog_copy)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    m = ONE_LINE.match(errors[0] + "\n")
    assert m and m.group("file") == rel and int(m.group("line")) >= 1 and words in m.group("msg"), errors[0]
    assert snapshot(catalog_copy) == before


def test_role_depth_over_sixteen(catalog_copy):
    roles = catalog_copy / "roles"
    for n in range(17):
        parent = f"extends = \"deep{n - 1}\"\n" if n else ""
        tools = "" if n else '[tools]\nshown = ["Read"]\n[escalation]\npolicy = "fail-fast"\n'
        (roles / f"deep{n}.toml").write_text(f'[role]\nname = "deep{n}"\ndisplay-name = "d"\ndescription = "d"\nuse-cases = ["u"]\n[capabilities]\n{parent}required = ["policy::no-git-ops"]\n{tools}')
    proc = run_cli("lint", cwd=catalog_copy)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 1 and len(errors) == 1 and "17 levels deep; the limit is 16" in errors[0]
    assert errors[0].startswith("error: roles/deep16.toml:7:")


def test_compose_reports_a_bad_task_in_one_line(catalog_copy):
    edit(catalog_copy, TASK, 'agent-id = "ag-fix-tokenizer"', 'agent-id = "../../etc"')
    before = snapshot(catalog_copy)
    proc = run_cli("compose", TASK, "--policy-out", "out.json", cwd=catalog_copy)
    assert proc.returncode == 1 and proc.stdout == ""
    assert ONE_LINE.match(proc.stderr) and proc.stderr.startswith(f"error: {TASK}:6: ")
    assert snapshot(catalog_copy) == before


def test_relaxing_an_absent_atom_is_a_printed_warning(catalog_copy):
    edit(catalog_copy, "roles/edit-shared.toml", 'extends = "edit-local"', 'extends = "edit-local"\nrelaxes = ["output::severity-grade"]')
    proc = run_cli("lint", cwd=catalog_copy)
    assert proc.returncode == 0
    assert "warning: roles/edit-shared.toml:15: relaxes `output::severity-grade`, which the role does not have" in proc.stderr


@pytest.mark.slow  # litellm, imported and asked
def test_run_refuses_a_model_that_cannot_be_called_before_anything_is_made(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    state = tmp_path / "state"
    proc = run_cli("run", "--goal", "add a feature", "--planner-model", "nosuchmodel-abc", cwd=repo,
                   env={"RUNTIME_STATE_DIR": str(state)})
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "--planner-model: litellm cannot tell which provider serves `nosuchmodel-abc`" in proc.stderr
    assert not state.exists()
