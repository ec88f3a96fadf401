"""The reviewer model of a person's session (`[session] reviewer` of its role, `runtime.approvals.reviewer`): the hook
as `runtime hook install` writes it asks the model about a call no rule decides; the model's allow is answered
`allow`, anything else (an ask, a reply outside the schema, no model) stays the person's question; a call a rule
denies never reaches it; every answer is audited with the model's reason. Scripted in-process, and litellm over
real HTTP to a fake OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from runtime.audit.log import records
from runtime.errors import ManifestError
from runtime.manifests.catalog import Catalog
from runtime.manifests.role import load_role
from tests.conftest import REPO, run_cli
from tests.fakes.openai_server import FakeOpenAIServer

HEAD = ('[role]\nname = "session"\ndisplay-name = "s"\ndescription = "x"\nuse-cases = ["x"]\nspawnable = false\n'
        'for-sessions = true\n\n[capabilities]\nextends = "session"\n\n')


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "scripts/gen.py").write_text("from pathlib import Path\nPath('out.txt').write_text('generated')\n")
    return root.resolve()


def with_reviewer(repo: Path, session: str, reviews: list[str] | None = None) -> None:
    roles = repo / ".agent-runtime/roles"
    roles.mkdir(parents=True, exist_ok=True)
    (roles / "session.toml").write_text(HEAD + session)
    if reviews is not None:  # a scripted model's file: its agent turns unused, its reviews played in order
        (repo / ".agent-runtime/review.script.toml").write_text(
            '[[turn]]\ncontent = "unused"\n\n' + "".join(f"[[review]]\ncontent = {json.dumps(r)}\n\n" for r in reviews))


def hook(repo: Path, command: str) -> tuple[int, dict]:
    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(repo)}
    proc = run_cli("check", "--on-allow", "defer", "--main-session", "session", input=json.dumps(call),
                   env={"CLAUDE_PROJECT_DIR": str(repo), "RUNTIME_CACHE_DIR": str(repo.parent / "cache"),
                        "RUNTIME_STATE_DIR": str(repo.parent / "state"), "HOME": str(repo.parent / "home")})
    answer = json.loads(proc.stdout)["hookSpecificOutput"] if proc.stdout.strip() else {}
    return proc.returncode, answer


def reviewed(repo: Path) -> list[dict]:
    log = repo.parent / "state/audit.jsonl"
    return [r.data() for r in records(log) if r.kind == "review-ask"] if log.exists() else []


SCRIPTED = '[session]\nreviewer = "scripted/review"\nscript = "../review.script.toml"\n'


def test_what_the_reviewer_judges_routine_is_allowed_and_audited_with_its_reason(repo):
    with_reviewer(repo, SCRIPTED, [json.dumps({"verdict": "allow", "reason": "it writes out.txt inside the repository"})])
    code, answer = hook(repo, "python scripts/gen.py")
    assert code == 0 and answer["permissionDecision"] == "allow", answer
    assert answer["permissionDecisionReason"].startswith(
        "the session's reviewer (scripted/review) allowed it: it writes out.txt inside the repository")
    [record] = reviewed(repo)
    assert record["verdict"] == "allow" and record["reason"] == "it writes out.txt inside the repository"
    assert record["input"] == {"command": "python scripts/gen.py"} and "No rule decides it" in record["gate_reason"]


def test_what_it_leaves_to_the_person_stays_asked_with_both_reasons(repo):
    with_reviewer(repo, SCRIPTED, [json.dumps({"verdict": "ask", "reason": "it may reach the network"})])
    code, answer = hook(repo, "python scripts/gen.py")
    assert code == 0 and answer["permissionDecision"] == "ask", answer
    reason = answer["permissionDecisionReason"]
    assert "No rule decides it" in reason and "leaves it to you: it may reach the network" in reason
    assert [r["verdict"] for r in reviewed(repo)] == ["ask"]


@pytest.mark.parametrize("reply", ["allow it", json.dumps({"verdict": "yes", "reason": "x"}),
                                   json.dumps({"verdict": "allow", "reason": "x", "run": "curl"})])
def test_a_reply_outside_the_schema_is_an_ask(repo, reply):
    with_reviewer(repo, SCRIPTED, [reply])
    code, answer = hook(repo, "python scripts/gen.py")
    assert code == 0 and answer["permissionDecision"] == "ask", answer
    assert "gave no answer" in answer["permissionDecisionReason"]
    assert [r["verdict"] for r in reviewed(repo)] == ["ask"]


def test_a_denied_call_and_a_rule_s_allow_never_reach_it(repo):
    with_reviewer(repo, SCRIPTED, [json.dumps({"verdict": "allow", "reason": "everything is fine"})])
    code, answer = hook(repo, "git push origin main")
    assert code == 2 and answer["permissionDecision"] == "deny"
    assert hook(repo, "ls") == (0, {})  # allowed by a rule: deferred to Claude Code, as without a reviewer
    assert reviewed(repo) == []


def test_a_real_model_over_http_answers_in_the_schema_it_was_sent(repo):
    reply = json.dumps({"verdict": "allow", "reason": "it generates a file of the repository"})
    with FakeOpenAIServer([reply]) as server:
        with_reviewer(repo, f'[session]\nreviewer = "openai/fake-model"\napi-base = "{server.url}/v1"\n')
        proc_env = {"OPENAI_API_KEY": "test"}
        call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "python scripts/gen.py"},
                "cwd": str(repo)}
        proc = run_cli("check", "--on-allow", "defer", "--main-session", "session", input=json.dumps(call),
                       env={"CLAUDE_PROJECT_DIR": str(repo), "RUNTIME_CACHE_DIR": str(repo.parent / "cache"),
                            "RUNTIME_STATE_DIR": str(repo.parent / "state"), "HOME": str(repo.parent / "home"),
                            **proc_env})
        (sent,) = server.chat_requests()
    answer = json.loads(proc.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "allow", (answer, proc.stderr)
    assert sent.response_format is not None
    prompt = json.dumps(sent.body["messages"])
    assert "python scripts/gen.py" in prompt and "Path('out.txt')" in prompt  # the script it runs, shown
    assert [r["model"] for r in reviewed(repo)] == ["openai/fake-model"]


def test_an_unreachable_model_leaves_the_call_to_the_person(repo):
    with_reviewer(repo, '[session]\nreviewer = "openai/fake-model"\napi-base = "http://127.0.0.1:9/v1"\n')
    code, answer = hook(repo, "python scripts/gen.py")
    assert code == 0 and answer["permissionDecision"] == "ask", answer
    assert "gave no answer" in answer["permissionDecisionReason"]


@pytest.mark.parametrize("session,words", [
    ('[session]\nreviewer = "scripted/review"\n', "a scripted reviewer needs `script`"),
    ('[session]\nreviewer = "openai/x"\nscript = "../review.script.toml"\n', "`script` is for a scripted reviewer"),
    ('[session]\nreviewer = "scripted/review"\nscript = "nope.toml"\n', "no script file `nope.toml`"),
    ('[session]\nreviewer = "openai/x"\nrun = "x"\n', "run"),
])
def test_a_session_table_that_cannot_work_is_refused_at_its_line(repo, session, words):
    with_reviewer(repo, session, [])
    with pytest.raises(ManifestError) as info:
        load_role(Catalog(repo / ".agent-runtime"), "session")
    assert words in str(info.value) and "session.toml:" in str(info.value)


def test_only_a_session_s_role_has_a_reviewer(repo):
    roles = repo / ".agent-runtime/roles"
    roles.mkdir(parents=True)
    (roles / "helper.toml").write_text('[role]\nname = "helper"\ndisplay-name = "h"\ndescription = "x"\n'
                                       'use-cases = ["x"]\n\n[capabilities]\nextends = "edit-local"\n\n'
                                       '[session]\nreviewer = "openai/x"\n')
    with pytest.raises(ManifestError, match="is for a role that gates a person's own session"):
        load_role(Catalog(repo / ".agent-runtime"), "helper")
    assert load_role(Catalog(REPO), "session").reviewer is None
