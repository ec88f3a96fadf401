"""runtime doctor: what this machine gives a spawned agent, as a person and a program read it."""

from __future__ import annotations

import json
import os
import subprocess

from tests.conftest import RUNTIME


def _doctor(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([RUNTIME, "doctor", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def test_json_names_each_controller_and_the_limits_line():
    result = _doctor("--json")
    report = json.loads(result.stdout)
    assert result.returncode == (0 if report["spawn_in_os_sandbox"] else 1)
    names = [f["what"] for f in report["limits"]]
    assert names[:4] == ["limits", "cgroup pids", "cgroup memory", "cgroup cpu"]
    line = report["limits"][0]["detail"]
    assert "tmpfs sized" in line and "disk" in line


def test_without_cgroups_the_fallbacks_are_named_with_why():
    report = json.loads(_doctor("--json", RUNTIME_NO_CGROUPS="1").stdout)
    line = report["limits"][0]["detail"]
    assert "processes by RLIMIT_NPROC" in line and "memory by RLIMIT_DATA" in line
    assert "pids: RUNTIME_NO_CGROUPS=1" in line
    assert not any(f["ok"] for f in report["limits"] if f["what"].startswith("cgroup "))


def test_plain_output_without_a_terminal_is_one_row_per_check():
    result = _doctor()
    assert result.returncode in (0, 1)
    for what in ("bubblewrap", "limits", "cgroup pids", "prlimit", "disk meter"):
        assert what in result.stdout
    assert "\x1b[" not in result.stdout


def test_it_says_how_the_hook_of_a_person_s_session_judges_bash_and_why(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude/settings.json").write_text(json.dumps({"sandbox": {
        "enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False}}))
    on = subprocess.run([RUNTIME, "doctor", "--json"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    found = json.loads(on.stdout)["session"][0]
    assert found["what"] == "session gate" and "sandbox is on, fail-closed" in found["detail"]
    assert "strict mode" in found["detail"]
    (tmp_path / ".claude/settings.json").write_text("{}")
    off = subprocess.run([RUNTIME, "doctor", "--json"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "not set fail-closed" in json.loads(off.stdout)["session"][0]["detail"]


def test_the_mcp_servers_of_a_person_s_setup_are_listed_with_their_rule(tmp_path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    (home / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {"command": "gh"}}}))
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"notes": {"command": "n"}}}))
    (home / ".claude/settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__notes__search"]}}))
    roles = repo / ".agent-runtime/roles"
    roles.mkdir(parents=True)
    (roles / "session.toml").write_text('[role]\nname = "session"\ndisplay-name = "s"\ndescription = "x"\n'
                                        'use-cases = ["x"]\nspawnable = false\nfor-sessions = true\n\n'
                                        '[capabilities]\nextends = "session"\n\n'
                                        '[[params."tools::mcp-allowlist".servers]]\nserver = "github"\ntools = ["get_*"]\n')
    result = subprocess.run([RUNTIME, "doctor", "--json"], capture_output=True, text=True, timeout=60, cwd=repo,
                            env={**os.environ, "HOME": str(home), "RUNTIME_CACHE_DIR": str(tmp_path / "cache")})
    found = {f["what"]: f["detail"] for f in json.loads(result.stdout)["session"]}
    assert found["MCP server github"] == "the repository's .mcp.json; rule of role `session`: allowed: get_*"
    assert found["MCP server notes"].startswith(f"your user scope ({home}/.claude.json); no rule: each call asked")
    assert "your Claude Code rules allow mcp__notes__search" in found["MCP server notes"]


def test_the_signing_key_is_named_before_and_after_it_is_made(tmp_path):
    key = tmp_path / "keys" / "signing"
    before = json.loads(_doctor("--json", RUNTIME_SIGNING_KEY=str(key)).stdout)["provenance"][:1]
    assert before == [{"what": "signing key", "ok": True,
                       "detail": f"none yet: made at {key} (named by RUNTIME_SIGNING_KEY) when the first verified "
                                 "commit is attested"}]
    made = subprocess.run([RUNTIME, "attest", "key", "--json"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "RUNTIME_SIGNING_KEY": str(key)})
    fingerprint = json.loads(made.stdout)["fingerprint"]
    after, ca = json.loads(_doctor("--json", RUNTIME_SIGNING_KEY=str(key)).stdout)["provenance"]
    assert after["ok"] and str(key) in after["detail"] and fingerprint in after["detail"]
    assert ca["what"] == "egress CA" and ca["ok"] and "handshake with its leaf verified" in ca["detail"]
    key.chmod(0o644)
    loose = json.loads(_doctor("--json", RUNTIME_SIGNING_KEY=str(key)).stdout)["provenance"][0]
    assert not loose["ok"] and "chmod 600" in loose["detail"]
