"""`runtime explain`, `--version`, `check --help`: answers for a person, from the real gate."""

import json
import os

from tests.conftest import REPO, run_cli


def test_explain_gives_the_gates_decision_atom_and_reason(tmp_path):
    (tmp_path / "tests").mkdir()
    denied = run_cli("explain", "--role", "explorer", "pytest --junitxml r.xml", cwd=tmp_path)
    assert denied.returncode == 2
    assert denied.stdout.splitlines()[0] == "deny by scope::read-only (rule: read-only)"
    assert "may not write `r.xml`" in denied.stdout
    allowed = run_cli("explain", "--role", "explorer", "pytest -q --tb=short tests", cwd=tmp_path)
    assert allowed.returncode == 0 and allowed.stdout.startswith("allow")
    cluster = run_cli("explain", "--role", "explorer", "--json", "sort -no x y", cwd=tmp_path)
    doc = json.loads(cluster.stdout)
    # no rule declares `-o` for sort, and read leniently it writes `x`: a read-only role's deny (exit 2)
    assert cluster.returncode == 2 and doc["decision"] == "deny" and doc["atom"] == "scope::read-only"
    cluster = run_cli("explain", "--role", "explorer", "--json", "sort -nT /tmp y", cwd=tmp_path)
    doc = json.loads(cluster.stdout)
    # no rule declares `-T` for sort, and nothing read of it is forbidden: undecided, so asked (exit 3)
    assert cluster.returncode == 3 and doc["decision"] == "ask" and doc["atom"] == "tools::bash-allowlist"
    assert "`-T` inside the cluster" in doc["reason"] and "allowed: " in doc["reason"]


def test_explain_judges_file_tools_and_refuses_bad_input_in_one_line(tmp_path):
    write = run_cli("explain", "--role", "explorer", "--tool", "Write", "src/x.py", cwd=tmp_path)
    assert write.returncode == 2 and "`Write` is not available to role `explorer`" in write.stdout
    read = run_cli("explain", "--role", "explorer", "--tool", "Read", "/etc/hostname", cwd=tmp_path)
    assert read.returncode == 0
    bad = run_cli("explain", "--role", "explorer", "--tool", "Paint", "x", cwd=tmp_path)
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "--tool Paint" in bad.stderr
    neither = run_cli("explain", "x", cwd=tmp_path)
    assert neither.returncode == 1 and neither.stderr.startswith("error: which policy to ask: give --role NAME")
    assert "not both" not in neither.stderr  # none was given: it says so, not that two were
    (tmp_path / "t.toml").write_text("")
    both = run_cli("explain", "--role", "explorer", "--task", "t.toml", "x", cwd=tmp_path)
    assert both.returncode == 1 and "not both" in both.stderr


def test_version_and_check_help():
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("runtime 0.")
    helped = run_cli("check", "--help", input="")
    assert helped.returncode == 0 and "usage: runtime check" in helped.stdout and helped.stderr == ""


def test_json_on_the_maintenance_commands(tmp_path):
    from tests.conftest import REPO

    hook = run_cli("hook", "install", "--json", "--settings", str(tmp_path / "s.json"), "--catalog", str(REPO), cwd=tmp_path)
    doc = json.loads(hook.stdout)
    assert hook.returncode == 0 and doc["changed"] and doc["settings"].endswith("s.json") and " check " in doc["command"]
    export = run_cli("export", "claude-agents", "--json", "--catalog", str(REPO), cwd=tmp_path)
    assert sorted(map(str, json.loads(export.stdout)["written"])) == [
        ".claude/agents/edit-local.md", ".claude/agents/edit-shared.md", ".claude/agents/explorer.md", ".claude/agents/read-only.md"]
    doc_roles = run_cli("doc-roles", "--check", "--json", "--catalog", str(REPO))
    assert doc_roles.returncode == 0 and json.loads(doc_roles.stdout)["up_to_date"] is True
    migrate = run_cli("migrate", "--check", "--json", "--catalog", str(REPO), cwd=REPO)
    assert migrate.returncode == 0 and json.loads(migrate.stdout) == {"names": [], "rules": [], "examples": [], "renamed": [],
                                                                      "written": False}


def test_explain_words_a_session_role_as_its_hook_does(tmp_path):
    """A role for a person's own session answers with the words that session hears from the hook."""
    call = {"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": str(tmp_path),
            "tool_input": {"file_path": str(tmp_path / ".claude/settings.json"), "content": "{}"}}
    hook = run_cli("check", "--catalog", str(REPO), "--main-session", "session", input=json.dumps(call),
                   env={"CLAUDE_PROJECT_DIR": str(tmp_path), "RUNTIME_CACHE_DIR": str(tmp_path / "cache")})
    told = json.loads(hook.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    asked = run_cli("explain", "--role", "session", "--tool", "Write", "--json", ".claude/settings.json", cwd=tmp_path)
    reason = json.loads(asked.stdout)["reason"]
    assert hook.returncode == 2 and asked.returncode == 2 and told.startswith(reason), (told, reason)
    assert "tell the person" in reason and "report" not in reason and "orchestrator" not in reason, reason
    assert os.listdir(tmp_path) == ["cache"]  # nothing written but the hook's policy cache
