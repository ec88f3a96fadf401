"""`runtime check` as Claude Code runs it: a fresh process, JSON in, decision out."""

import json
import os

import pytest

from tests.conftest import REPO, run_cli


def hook_input(tool, tool_input, cwd, **extra):
    return json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": tool_input, "cwd": str(cwd), "tool_use_id": "toolu_1", **extra})


@pytest.fixture
def policy_file(policy_for, tmp_path):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy_for("edit-local").doc))
    return path


def decision(proc):
    return json.loads(proc.stdout)["hookSpecificOutput"]


def test_allow_answers_json_and_exits_zero(policy_file, worktree):
    proc = run_cli("check", "--policy", str(policy_file), input=hook_input("Bash", {"command": "pytest -q"}, worktree))
    assert proc.returncode == 0 and proc.stderr == ""
    out = decision(proc)
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "allow"


def test_deny_exits_two_with_the_reason_on_stderr(policy_file, worktree):
    proc = run_cli("check", "--policy", str(policy_file), input=hook_input("Bash", {"command": "git push"}, worktree))
    assert proc.returncode == 2
    out = decision(proc)
    assert out["permissionDecision"] == "deny"
    assert "agents never run git" in proc.stderr and "[policy::no-git-ops]" in proc.stderr
    assert out["permissionDecisionReason"] == proc.stderr.strip()


@pytest.mark.parametrize("payload", [
    "", "not json", "[]", "null", '{"tool_name": "Read"}',
    '{"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": "x"}, "cwd": "/"}',
    '{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "x"}}',
    '\xff\xfe',
])
def test_malformed_input_is_a_deny_with_exit_two(policy_file, payload):
    proc = run_cli("check", "--policy", str(policy_file), input=payload)
    assert proc.returncode == 2 and decision(proc)["permissionDecision"] == "deny"


def test_missing_or_corrupt_policy_denies(tmp_path, policy_file, worktree):
    call = hook_input("Read", {"file_path": "src/pkg/mod.py"}, worktree)
    missing = run_cli("check", "--policy", str(tmp_path / "nope.json"), input=call)
    assert missing.returncode == 2 and "no usable policy" in missing.stderr
    doc = json.loads(policy_file.read_text())
    doc["tools"].append("WebFetch")
    policy_file.write_text(json.dumps(doc))
    edited = run_cli("check", "--policy", str(policy_file), input=call)
    assert edited.returncode == 2 and "content hash" in edited.stderr
    policy_file.write_text("{ truncated")
    corrupt = run_cli("check", "--policy", str(policy_file), input=call)
    assert corrupt.returncode == 2 and "not valid JSON" in corrupt.stderr


@pytest.mark.parametrize("args", [[], ["--bogus"], ["--policy"], ["--policy", "a", "--role", "b"], ["--role", "x", "--main-session", "maybe"]])
def test_usage_errors_deny_instead_of_exiting_one(args, worktree):
    proc = run_cli("check", *args, input=hook_input("Read", {"file_path": "x"}, worktree))
    assert proc.returncode == 2 and decision(proc)["permissionDecision"] == "deny"


def test_role_policies_are_compiled_once_and_cached(worktree, tmp_path):
    cache = tmp_path / "cache"
    env = {"RUNTIME_CACHE_DIR": str(cache)}
    call = hook_input("Bash", {"command": "pytest -q"}, worktree)
    first = run_cli("check", "--role", "explorer", "--catalog", str(REPO), input=call, env=env)
    assert first.returncode == 0 and decision(first)["permissionDecision"] == "allow"
    cached = list(cache.glob("explorer-*.json"))
    assert len(cached) == 1
    mtime = cached[0].stat().st_mtime_ns
    again = run_cli("check", "--role", "explorer", "--catalog", str(REPO), input=hook_input("Bash", {"command": "touch x"}, worktree), env=env)
    assert again.returncode == 2
    assert list(cache.glob("explorer-*.json")) == cached and cached[0].stat().st_mtime_ns == mtime


def test_the_cache_is_protected_from_the_agent(worktree, tmp_path):
    cache = worktree / "src" / "cache"
    env = {"RUNTIME_CACHE_DIR": str(cache)}
    call = hook_input("Write", {"file_path": str(cache / "edit-local-x.json"), "content": "{}"}, worktree)
    task = tmp_path / "t.toml"
    task.write_text('[task]\nrole = "edit-local"\ngoal = "g"\n[scope]\nfiles-whitelist = ["src/**"]\n'
                    '[verification]\ntest-command = "pytest"\ncheck-commands = ["true"]\n[body]\ntext = "x"\n')
    proc = run_cli("check", "--role", "edit-local", "--task", str(task), "--catalog", str(REPO), input=call, env=env)
    assert proc.returncode == 2 and "runtime's own policy" in proc.stderr


def test_subagents_are_gated_by_the_role_named_by_agent_type(worktree):
    env = {"CLAUDE_PROJECT_DIR": str(worktree)}
    read_only = hook_input("Bash", {"command": "ls"}, worktree, agent_type="read-only", agent_id="a1")
    proc = run_cli("check", "--catalog", str(REPO), "--main-session", "defer", input=read_only, env=env)
    assert proc.returncode == 2 and "not available to role `read-only`" in proc.stderr
    explorer = hook_input("Bash", {"command": "ls"}, worktree, agent_type="explorer", agent_id="a2")
    proc = run_cli("check", "--catalog", str(REPO), "--main-session", "defer", input=explorer, env=env)
    assert proc.returncode == 0 and decision(proc)["permissionDecision"] == "allow"
    unknown = hook_input("Bash", {"command": "ls"}, worktree, agent_type="no-such-role")
    proc = run_cli("check", "--catalog", str(REPO), "--main-session", "defer", input=unknown, env=env)
    assert proc.returncode == 2 and "not in the catalog" in proc.stderr
    hostile = hook_input("Bash", {"command": "ls"}, worktree, agent_type="../../etc/x")
    proc = run_cli("check", "--catalog", str(REPO), "--main-session", "defer", input=hostile, env=env)
    assert proc.returncode == 2


def test_main_session_defers_only_when_asked(worktree):
    call = hook_input("Bash", {"command": "git status"}, worktree)
    deferred = run_cli("check", "--catalog", str(REPO), "--main-session", "defer", input=call)
    assert deferred.returncode == 0 and deferred.stdout == ""
    gated = run_cli("check", "--catalog", str(REPO), input=call)
    assert gated.returncode == 2 and "no role for this call" in gated.stderr


def test_the_hook_never_reads_a_catalog_planted_in_the_worktree(worktree, tmp_path):
    (worktree / "roles").mkdir()
    (worktree / "capabilities").mkdir()
    (worktree / "roles" / "evil.toml").write_text("[role]\n")
    call = hook_input("Bash", {"command": "ls"}, worktree, agent_type="evil")
    proc = run_cli("check", "--main-session", "defer", input=call, cwd=worktree)
    assert proc.returncode == 2 and "not in the catalog" in proc.stderr


def test_git_ops_can_never_gate_a_session(worktree):
    proc = run_cli("check", "--role", "git-ops", "--catalog", str(REPO), input=hook_input("Bash", {"command": "git status"}, worktree))
    assert proc.returncode == 2 and "not spawnable" in proc.stderr


def test_the_hook_process_imports_no_heavy_modules(policy_file, worktree):
    probe = (
        "import sys, io; sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()));"
        "from runtime.cli.main import main; rc = main(['check', '--policy', sys.argv[2]]);"
        "heavy = sorted(m for m in ('pydantic', 'rich', 'tomlkit', 'litellm', 'argparse', 'anyio', 'psutil') if m in sys.modules);"
        "print('HEAVY', heavy, rc, file=sys.stderr)"
    )
    import subprocess
    import sys
    for call in (hook_input("Bash", {"command": "pytest -q && git push"}, worktree), hook_input("Edit", {"file_path": "src/pkg/mod.py", "old_string": "x", "new_string": "y"}, worktree)):
        proc = subprocess.run([sys.executable, "-c", probe, call, str(policy_file)], capture_output=True, text=True, env={**os.environ})
        assert "HEAVY [] " in proc.stderr, proc.stderr


def test_agent_type_may_only_narrow_the_role_the_hook_was_started_with(worktree):
    """Family I: a session gated `--role read-only` whose hook input says `agent_type: explorer` gets no
    shell; a subagent may take a narrower role of the session's chain, never a wider or unrelated one."""
    env = {"CLAUDE_PROJECT_DIR": str(worktree)}

    def check(role, agent_type, tool, tool_input):
        call = hook_input(tool, tool_input, worktree, agent_type=agent_type, agent_id="a1")
        return run_cli("check", "--role", role, "--catalog", str(REPO), input=call, env=env)

    widened = check("read-only", "explorer", "Bash", {"command": "ls"})
    assert widened.returncode == 2 and "not available to role `read-only`" in widened.stderr
    unrelated = check("read-only", "edit-local", "Write", {"file_path": str(worktree / "x.py"), "content": "x"})
    assert unrelated.returncode == 2 and "read-only" in unrelated.stderr
    builtin_type = check("explorer", "general-purpose", "Bash", {"command": "ls"})
    assert builtin_type.returncode == 0  # judged as the session's role, which may run ls
    # read-only is explorer's parent, but shows WebFetch, which explorer does not: still explorer's rules
    parent_wider = check("explorer", "read-only", "WebFetch", {"url": "https://example.com/", "prompt": "x"})
    assert parent_wider.returncode == 2 and "not available to role `explorer`" in parent_wider.stderr
    same = check("explorer", "explorer", "Bash", {"command": "ls"})
    assert same.returncode == 0
    # narrowing is honoured: an edit-local session's explorer subagent writes nothing
    narrowed = check("edit-local", "explorer", "Write", {"file_path": str(worktree / "x.py"), "content": "x"})
    assert narrowed.returncode == 2 and "not available to role `explorer`" in narrowed.stderr


def test_on_allow_defer_leaves_allowed_calls_to_claude_code(worktree):
    """Interactive sessions: an allowed call gets no decision (Claude Code's own prompts still apply);
    denies and asks still come from the gate; spawned agents keep `allow`."""
    env = {"CLAUDE_PROJECT_DIR": str(worktree)}
    allowed = hook_input("Bash", {"command": "ls"}, worktree)
    denied = hook_input("Bash", {"command": "git status"}, worktree)
    base = ["check", "--role", "explorer", "--catalog", str(REPO)]
    quiet = run_cli(*base, "--on-allow", "defer", input=allowed, env=env)
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    loud = run_cli(*base, input=allowed, env=env)
    assert loud.returncode == 0 and decision(loud)["permissionDecision"] == "allow"
    refused = run_cli(*base, "--on-allow", "defer", input=denied, env=env)
    assert refused.returncode == 2 and decision(refused)["permissionDecision"] == "deny"
    bad = run_cli(*base, "--on-allow", "sometimes", input=allowed, env=env)
    assert bad.returncode == 2 and "--on-allow must be allow or defer" in bad.stderr


def test_the_role_cache_notices_an_edited_grammar_and_a_new_file(worktree, tmp_path, catalog_copy):
    """The index of the --role cache is checked by stat: any catalog edit, grammars included, compiles afresh."""
    env = {"RUNTIME_CACHE_DIR": str(tmp_path / "cache")}
    call = hook_input("Bash", {"command": "pytest -q --maxfail=1"}, worktree)

    def verdict():
        proc = run_cli("check", "--role", "explorer", "--catalog", str(catalog_copy), input=call, env=env)
        return decision(proc)["permissionDecision"]

    assert verdict() == "allow" and verdict() == "allow"
    assert len(list((tmp_path / "cache").glob("index-explorer-*.json"))) == 1
    grammar = catalog_copy / "programs/pytest.program.toml"
    grammar.write_text(grammar.read_text().replace('"--maxfail" = "int"\n', ""))
    assert verdict() == "ask"  # an option no rule declares: undecided
    grammar.write_text(grammar.read_text().replace('"-q|--quiet" = "flag"', '"-q|--quiet" = "flag"\n"--maxfail" = "int"'))
    assert verdict() == "allow"
    (catalog_copy / "programs/pytest.program.toml").rename(catalog_copy / "programs/pytest.program.toml.off")
    proc = run_cli("check", "--role", "explorer", "--catalog", str(catalog_copy), input=call, env=env)
    assert proc.returncode == 2 and "unknown grammar `pytest`" in proc.stderr


def test_claude_codes_built_in_subagents_have_one_clear_policy(worktree):
    """Explore reads like the explorer, Plan like read-only; general-purpose is denied with one reason."""
    env = {"CLAUDE_PROJECT_DIR": str(worktree)}

    def ask(agent_type, tool, tool_input):
        call = hook_input(tool, tool_input, worktree, agent_type=agent_type, agent_id="b1")
        return run_cli("check", "--catalog", str(REPO), "--main-session", "defer", input=call, env=env)

    assert ask("Explore", "Read", {"file_path": "src/pkg/mod.py"}).returncode == 0
    assert ask("Explore", "Bash", {"command": "ls src"}).returncode == 0
    assert ask("Explore", "Write", {"file_path": "src/x.py", "content": "x"}).returncode == 2
    assert ask("Plan", "Read", {"file_path": "src/pkg/mod.py"}).returncode == 0
    assert ask("Plan", "Bash", {"command": "ls"}).returncode == 2
    for tool, tool_input in (("Read", {"file_path": "src/pkg/mod.py"}), ("Bash", {"command": "ls"})):
        proc = ask("general-purpose", tool, tool_input)
        assert proc.returncode == 2 and "built-in `general-purpose` subagent has no role here" in proc.stderr


def test_hook_install_says_what_happens_to_built_in_subagents(tmp_path):
    proc = run_cli("hook", "install", "--settings", str(tmp_path / "settings.json"), "--catalog", str(REPO))
    assert proc.returncode == 0 and "Explore is gated as `explorer`" in proc.stdout
    assert "any other type (general-purpose, yours, a plugin's) by the session's own rules" in proc.stdout


def test_the_hook_denies_at_its_own_deadline(policy_file, worktree):
    """An input that takes the gate about a second to judge: with a deadline of 0.2 s the hook denies,
    exit 2 with the reason; with the default one it decides by itself."""
    command = " && ".join(["ls src"] * 40_000)
    call = hook_input("Bash", {"command": command}, worktree)
    late = run_cli("check", "--policy", str(policy_file), input=call, env={"RUNTIME_HOOK_DEADLINE": "0.2"})
    assert late.returncode == 2, late.stderr
    assert decision(late)["permissionDecision"] == "deny"
    assert "did not decide within 0.2 s" in late.stderr and late.stderr.strip() == decision(late)["permissionDecisionReason"]
    normal = run_cli("check", "--policy", str(policy_file), input=call)
    assert normal.returncode == 0 and decision(normal)["permissionDecision"] == "allow", normal.stderr


@pytest.mark.parametrize("command,reason", [
    ("sed 's" + " " * 100_000 + "x' src/pkg/mod.py", "sed script"),
    ("sed -n '" + " " * 100_000 + "p x' src/pkg/mod.py", "sed script"),
    ("echo {" + "," * 100_000, "allow"),  # an unclosed brace expands nothing
    ("echo " + "{," * 50_000, "allow"),
    ("cd src;" * 14_000 + "ls", "more than 16 folders"),
    ("cd .;" * 20_000 + "pytest -q", "allow"),
    ("; ".join(f"cd a{i}/.." for i in range(10_000)), "does not exist"),
    (")" * 100_000, "could not be parsed"),
    ("<" * 100_000, "took too long to parse"),
    ("a=(" * 33_000, "took too long to parse"),
    ("ls " + " ".join(["src"] * 25_000), "allow"),
    ("find . -exec cat " + "+ " * 50_000 + "{} +", "allow"),
])
def test_adversarial_lengths_are_decided_by_the_gate_itself(policy_file, worktree, command, reason):
    """100 KB inputs the hook once spent minutes on: the gate decides them itself, well before its deadline."""
    proc = run_cli("check", "--policy", str(policy_file), input=hook_input("Bash", {"command": command}, worktree))
    assert "did not decide" not in proc.stderr
    if reason == "allow":
        assert proc.returncode == 0 and decision(proc)["permissionDecision"] == "allow", proc.stderr[:300]
    elif reason == "sed script":  # a script no rule declares (sed's `e` runs commands): undecided, so asked
        assert proc.returncode == 0 and decision(proc)["permissionDecision"] == "ask", proc.stdout[:300]
        assert reason in decision(proc)["permissionDecisionReason"]
    else:
        assert proc.returncode == 2 and reason in proc.stderr, proc.stderr[:300]


def test_the_role_cache_notices_an_edited_package_json(worktree, tmp_path):
    """The policy carries package.json's scripts (`npm test -- ARGS`): editing it compiles afresh."""
    import json as _json

    env = {"RUNTIME_CACHE_DIR": str(tmp_path / "cache")}
    call = hook_input("Bash", {"command": "npm test -- --watch=false"}, worktree)

    def verdict():
        proc = run_cli("check", "--role", "explorer", "--catalog", str(REPO), input=call, env=env)
        return decision(proc)["permissionDecision"]

    assert verdict() == "deny"  # no package.json: no script to pass arguments to
    (worktree / "package.json").write_text(_json.dumps({"scripts": {"test": "jest"}}))
    assert verdict() == "allow"  # jest --watch=false
    (worktree / "package.json").write_text(_json.dumps({"scripts": {"test": "node run-tests.js"}}))
    assert verdict() == "ask"  # no rule of explorer's runs a node script: undecided


def test_unattended_refuses_at_once_what_it_would_ask(policy_file, worktree):
    """`--unattended`: a run nobody watches. What no rule decides is a deny (exit 2), saying so and what would
    allow it; what a rule allows or forbids is answered as always."""
    asked = hook_input("Bash", {"command": "make all"}, worktree)
    plain = run_cli("check", "--policy", str(policy_file), input=asked)
    assert plain.returncode == 0 and decision(plain)["permissionDecision"] == "ask"
    alone = run_cli("check", "--policy", str(policy_file), "--unattended", input=asked)
    assert alone.returncode == 2 and decision(alone)["permissionDecision"] == "deny"
    reason = decision(alone)["permissionDecisionReason"]
    assert reason.startswith("nobody approves calls in this run, so what would be asked is refused: no rule of role "
                             "`edit-local` runs `make`") and "`runtime allow 'make all' --role edit-local`" in reason
    ok = run_cli("check", "--policy", str(policy_file), "--unattended",
                 input=hook_input("Bash", {"command": "pytest -q"}, worktree))
    assert ok.returncode == 0 and decision(ok)["permissionDecision"] == "allow"
    both = run_cli("check", "--policy", str(policy_file), "--unattended", "--approvals", "/tmp/x.sock", input=asked)
    assert both.returncode == 2 and "--unattended refuses what --approvals would ask" in both.stderr
    twice = run_cli("check", "--policy", str(policy_file), "--unattended", "--unattended", input=asked)
    assert twice.returncode == 2 and "given twice" in twice.stderr
