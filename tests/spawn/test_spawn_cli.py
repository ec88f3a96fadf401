"""`runtime spawn` and `runtime verify` as users run them: refusals, exit codes, one-line errors.

Exit codes: 0 ok, 2 for any other outcome, 1 for usage and manifest errors
(which leave nothing behind: no branch, no worktree, no run).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, RUNTIME
from tests.spawn.conftest import (
    BASE_BRANCH,
    FIXED,
    REPORT,
    SH_FIX,
    SH_REPORT,
    Spawner,
    marker,
    no_survivors,
)
from tests.support import git, kill_group


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert proc.stdout == ""
    return lines[0]


def nothing_left(s: Spawner, agent_id: str) -> None:
    assert s.git("branch", "--list", f"agent/{agent_id}") == ""
    assert s.sha(BASE_BRANCH) == s.base
    assert len(s.git("worktree", "list").splitlines()) == 1
    assert not s.worktree(agent_id).exists()
    assert not (s.run_dir(agent_id) / "state.json").exists()


# -- refusals --------------------------------------------------------------------------------------

def test_git_ops_role_is_refused(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-gitops", role="git-ops", scope={}, verification={}, output={})
    line = one_line_error(s.spawn(task).proc)
    assert "git-ops" in line and "not spawnable" in line and str(task.name) in line
    nothing_left(s, "ag-gitops")


def test_task_without_agent_table_is_refused(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-noagent", no_agent=True)
    line = one_line_error(s.spawn(task).proc)
    assert "[agent]" in line and f"{task}:" in line
    nothing_left(s, "ag-noagent")


@pytest.mark.parametrize("problem", ["missing-file", "bad-toml", "unknown-key", "bad-script"])
def test_manifest_errors_exit_1(spawner: Spawner, problem: str):
    s = spawner
    task = s.task(agent_id="ag-bad")
    if problem == "missing-file":
        task = s.tmp / "nope.toml"
    elif problem == "bad-toml":
        task.write_text(task.read_text() + "\n[agent\n")
    elif problem == "unknown-key":
        task.write_text(task.read_text().replace("[agent]", "[agent]\nlanguage = \"python\"", 1))
    else:
        (s.tmp / "ag-bad.script.toml").write_text("[[turn]]\ncontent = 1\n")
    line = one_line_error(s.spawn(task).proc)
    assert ("nope.toml" if problem == "missing-file" else "ag-bad") in line
    nothing_left(s, "ag-bad")


def test_usage_errors_exit_1(spawner: Spawner):
    s = spawner
    for args in (["spawn", "--json"], ["spawn", "--bogus", "t.toml"], ["verify", "t.toml"]):
        proc = s.cli(*args)
        assert proc.returncode == 1, f"runtime {' '.join(args)}: exit {proc.returncode}, {proc.stderr}"


def test_unknown_base_is_refused(spawner: Spawner):
    s = spawner
    line = one_line_error(s.spawn(s.task(agent_id="ag-nobase"), "--base", "no-such-rev").proc)
    assert "no-such-rev" in line
    nothing_left(s, "ag-nobase")


@pytest.mark.parametrize("env", [["MISSING_VARIABLE"], ["LD_PRELOAD"]], ids=["undefined", "unsafe"])
def test_bad_declared_env_is_refused_before_anything_is_created(spawner: Spawner, env: list[str]):
    s = spawner
    task = s.task(agent_id="ag-env-bad", agent={"env": env})
    os.environ.pop("MISSING_VARIABLE", None)
    line = one_line_error(s.spawn(task, env={"LD_PRELOAD": ""} if env == ["LD_PRELOAD"] else None).proc)
    assert env[0] in line
    nothing_left(s, "ag-env-bad")
    if env == ["MISSING_VARIABLE"]:
        # Once the user sets the variable, the very same task runs.
        r = s.spawn(task, env={"MISSING_VARIABLE": "some value"})
        assert r.code == 0 and r.label == "ok", r.describe()


def test_agent_id_already_used_is_refused(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-twice", command=f"{SH_FIX}; {SH_REPORT}")
    first = s.spawn(task)
    assert first.code == 0, first.describe()
    second = s.spawn(task)
    line = one_line_error(second.proc)
    assert "ag-twice" in line and "already ran" in line
    assert s.sha("agent/ag-twice") == first.outcome["commit"]
    assert s.commits(f"{s.base}..agent/ag-twice") == [first.outcome["commit"]]
    assert s.state_json("ag-twice")["status"] == "ok"


def test_agent_id_whose_branch_exists_is_refused(spawner: Spawner):
    s = spawner
    s.git("branch", "agent/ag-taken")
    line = one_line_error(s.spawn(s.task(agent_id="ag-taken")).proc)
    assert "in use" in line and "agent/ag-taken" in line
    assert s.sha("agent/ag-taken") == s.base
    assert not s.worktree("ag-taken").exists()


def test_two_spawns_race_for_one_agent_id(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-race", command=f"{SH_FIX}; sleep 2; {SH_REPORT}")
    procs = [s.start(task), s.start(task)]
    try:
        results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    finally:
        for p in procs:
            kill_group(p)
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 1], results
    winner = next(r for r in results if r[0] == 0)
    loser = next(r for r in results if r[0] == 1)
    assert json.loads(winner[1])["label"] == "ok"
    assert loser[1] == "" and "in use" in loser[2] and len(loser[2].strip().splitlines()) == 1
    assert s.commits(f"{s.base}..agent/ag-race") == [json.loads(winner[1])["commit"]]
    assert [r["status"] for r in s.status()] == ["ok"]
    assert len(s.audit(kind="spawn")) == 1


# -- bubblewrap missing ----------------------------------------------------------------------------

def _path_without_bwrap(tmp: Path) -> str:
    bin_dir = tmp / "bin-without-bwrap"
    bin_dir.mkdir()
    for tool in ("git", "ssh-keygen"):  # ssh-keygen signs the attestation of verified work
        os.symlink(f"/usr/bin/{tool}", bin_dir / tool)
    return str(bin_dir)


def test_missing_bubblewrap_is_refused(spawner: Spawner):
    s = spawner
    env = {"PATH": _path_without_bwrap(s.tmp)}
    line = one_line_error(s.spawn(s.task(agent_id="ag-nobwrap"), env=env).proc)
    assert "bubblewrap" in line and "--no-os-sandbox" in line
    nothing_left(s, "ag-nobwrap")


@pytest.mark.parametrize(("says", "words"), [("2.1.294 (Claude Code)", "is Claude Code 2.1.294, older than 2.1.295"),
                                             ("claude, some version", "not a version")], ids=["older", "unreadable"])
def test_a_claude_cli_that_cannot_fail_closed_is_refused_before_anything_is_created(spawner: Spawner, tmp_path,
                                                                                   says: str, words: str):
    """The agent's settings block a call whose hook fails; a CLI that would ignore that never starts."""
    s = spawner
    cli = tmp_path / "claude-bin" / "claude"  # answers --version only: nothing else is asked before the refusal
    cli.parent.mkdir()
    cli.write_text(f"#!/bin/sh\necho '{says}'\n")
    cli.chmod(0o755)
    task = s.task(agent_id="ag-old-cli", agent={"backend": "claude-code", "model": "claude-sonnet-4-5"})
    line = one_line_error(s.spawn(task, env={"RUNTIME_CLAUDE_BIN": str(cli), "ANTHROPIC_API_KEY": "test"}).proc)
    assert line.startswith(f"error: {cli}") and words in line and "onFailure" in line, line
    nothing_left(s, "ag-old-cli")


def test_no_os_sandbox_runs_with_a_loud_warning(spawner: Spawner):
    s = spawner
    env = {"PATH": _path_without_bwrap(s.tmp)}
    task = s.task(agent_id="ag-nosandbox", script=[
        [{"name": "Write", "input": {"file_path": "README.md", "content": "x\n"}}],
        [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": "(len(values) + 1)",
                                     "new_string": "len(values)"}}],
        REPORT,
    ])
    r = s.spawn(task, "--no-os-sandbox", env=env)
    assert r.code == 0, r.describe()
    assert "WARNING" in r.stderr and "--no-os-sandbox" in r.stderr and "WITHOUT an OS sandbox" in r.stderr
    assert r.outcome["label"] == "ok" and r.outcome["attempts"][0]["denials"] == 1  # the gate still applies
    assert s.show(r.outcome["commit"], "README.md") == "# calc\n\nA tiny calculator.\n"
    assert s.audit(kind="spawn")[0]["data"]["sandbox"] is False


def test_human_summary_without_json(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-summary", command=f"{SH_FIX}; {SH_REPORT}")
    proc = subprocess.run([RUNTIME, "spawn", "--catalog", str(REPO), str(task)], cwd=s.repo, capture_output=True,
                          text=True, env=s.full_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.lstrip().startswith("ok") and "ag-summary" in proc.stdout
    assert "agent/ag-summary" in proc.stdout and "quality::tests-green" in proc.stdout
    failing = s.task(agent_id="ag-summary-2", command="exit 4")
    proc = subprocess.run([RUNTIME, "spawn", "--catalog", str(REPO), str(failing)], cwd=s.repo, capture_output=True,
                          text=True, env=s.full_env(), timeout=120)
    assert proc.returncode == 2 and proc.stdout.lstrip().startswith("failed(agent)"), proc.stdout + proc.stderr


# -- runtime verify on a hand-made worktree -----------------------------------------------------------

@pytest.fixture
def hand_made(spawner: Spawner):
    """A linked worktree on its own branch, as a CI job might prepare one; the task and a good report."""
    s = spawner
    wt = s.tmp / "wt"
    s.git("worktree", "add", "-q", "-b", "agent/by-hand", str(wt), s.base)
    task = s.task(agent_id="ag-verify")
    report = s.tmp / "report.md"
    report.write_text(REPORT)
    path = wt / "src" / "calc" / "__init__.py"
    path.write_text(path.read_text().replace("(len(values) + 1)", FIXED))
    return s, wt, task, report


def verify(s: Spawner, task: Path, wt: Path, report: Path | None, base: str, *extra: str):
    args = ["verify", "--catalog", str(REPO), str(task), "--worktree", str(wt), "--base", base, *extra]
    if report is not None:
        args += ["--report", str(report)]
    proc = s.cli(*args, cwd=wt)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = None
    return proc, data


def test_verify_clean_worktree(hand_made):
    s, wt, task, report = hand_made
    proc, data = verify(s, task, wt, report, s.base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["failed"] == [] and "quality::tests-green" in data["passed"] and "scope::files-whitelist" in data["passed"]
    assert data["base"] == s.base


@pytest.mark.parametrize("change", ["untracked-in-new-folder", "rename-out", "deletion", "modified-committed",
                                    "symlink-out"])
def test_verify_out_of_scope_change(hand_made, change: str):
    s, wt, task, report = hand_made
    if change == "untracked-in-new-folder":
        (wt / "newpkg" / "deep").mkdir(parents=True)
        (wt / "newpkg" / "deep" / "mod.py").write_text("x = 1\n")
        offending = "newpkg/deep/mod.py"
    elif change == "rename-out":
        git(wt, "mv", "tests/test_calc.py", "test_calc_moved.py")
        offending = "test_calc_moved.py"
    elif change == "deletion":
        (wt / "docs" / "notes.md").unlink()
        offending = "docs/notes.md"
    elif change == "modified-committed":
        (wt / "README.md").write_text("changed and committed\n")
        git(wt, "commit", "-q", "-am", "an agent commit touching README")
        offending = "README.md"
    else:
        os.symlink("/etc/passwd", wt / "src" / "calc" / "passwd")
        offending = "src/calc/passwd"
    proc, data = verify(s, task, wt, report, s.base)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    scope = [f for f in data["failed"] if f["capability"] == "scope::files-whitelist"]
    assert scope and scope[0]["reason"] == "rejected" and offending in scope[0]["detail"]
    # verify changes nothing it checks.
    assert git(wt, "rev-parse", "HEAD") == s.sha("agent/by-hand")


def test_verify_failing_tests_and_missing_report(hand_made):
    s, wt, task, _ = hand_made
    path = wt / "src" / "calc" / "__init__.py"
    path.write_text(path.read_text().replace("return a + b", "return a - b"))
    proc, data = verify(s, task, wt, None, s.base)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    failed = {f["capability"]: f["reason"] for f in data["failed"]}
    assert failed == {"quality::tests-green": "rejected", "output::report-format": "rejected"}


@pytest.mark.parametrize("problem", ["unknown-base", "not-a-repo", "missing-report"])
def test_verify_errors_exit_1(hand_made, problem: str):
    s, wt, task, report = hand_made
    base, where = s.base, wt
    if problem == "unknown-base":
        base = "no-such-rev"
    elif problem == "not-a-repo":
        where = s.tmp / "plain"
        where.mkdir()
    else:
        report = s.tmp / "no-report.md"
    proc, _ = verify(s, task, where, report, base)
    one_line_error(proc)


def test_verify_on_a_plain_checkout_as_in_ci(spawner: Spawner):
    """CI checks the agent's branch out in an ordinary clone, not in a linked worktree."""
    s = spawner
    clone = s.tmp / "ci-checkout"
    git(s.tmp, "clone", "-q", str(s.repo), str(clone))
    path = clone / "src" / "calc" / "__init__.py"
    path.write_text(path.read_text().replace("(len(values) + 1)", FIXED))
    git(clone, "commit", "-q", "-am", "the agent's work")
    report = s.tmp / "report.md"
    report.write_text(REPORT)
    task = s.task(agent_id="ag-ci")
    proc, data = verify(s, task, clone, report, "origin/" + BASE_BRANCH)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["failed"] == []
    (clone / "stray.txt").write_text("out of scope\n")
    proc, data = verify(s, task, clone, report, "origin/" + BASE_BRANCH)
    assert proc.returncode == 2, proc.stdout + proc.stderr


def test_no_survivors_helper_sees_live_processes():
    """Sanity: the helper sees a live process and reports it (guards the orphan tests against false passes)."""
    n = marker()
    proc = subprocess.Popen(["sleep", n])
    try:
        with pytest.raises(AssertionError):
            no_survivors(f"sleep {n}", timeout=0.3)
    finally:
        proc.kill()
        proc.wait()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(("agent", "says"), [
    ({"model": "no-such-model-xyz"}, "cannot tell which provider serves `no-such-model-xyz`"),
    ({"model": "cohere/command-r"}, "needs COHERE_API_KEY in the environment"),
    # A local server does not spare the key litellm's OpenAI client insists on (it used to fail as
    # three "HTTP 500" retries that were never sent, after the worktree and branch were made).
    ({"model": "openai/local", "api-base": "http://127.0.0.1:8000/v1"},
     "needs OPENAI_API_KEY in the environment (even with `api-base`"),
    ({"model": "hosted_vllm/local", "api-base": f"http://127.0.0.1:{_closed_port()}/v1"},
     "cannot reach the model server at http://127.0.0.1:"),
], ids=["unknown", "no-key", "no-key-local", "server-down"])
def test_a_model_that_cannot_be_called_is_refused_before_anything_is_made(spawner, agent, says):
    s = spawner
    assert "COHERE_API_KEY" not in os.environ and "OPENAI_API_KEY" not in os.environ
    task = s.task(agent_id="ag-model", agent=agent)
    r = s.spawn(task)
    assert r.code == 1, r.describe()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "[agent] model" in lines[0], r.stderr
    assert s.git("branch", "--list", "agent/ag-model") == ""
    assert not s.run_dir("ag-model").exists()


def test_prune_removes_finished_merged_runs_keeps_unmerged_work_and_frees_the_id(spawner):
    s = spawner

    def prune(*flags):
        proc = subprocess.run([RUNTIME, "prune", "--json", *flags], cwd=s.repo, capture_output=True, text=True,
                              env=s.full_env())
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    merged_task = s.task(agent_id="ag-merged", command=f"{SH_FIX}; {SH_REPORT}")
    assert s.spawn(merged_task, "--merge").code == 0
    kept_task = s.task(agent_id="ag-kept", goal="Note something.", command=f"echo '# note' >> src/calc/__init__.py; {SH_REPORT}")
    kept = s.spawn(kept_task)  # verified work on its branch, never merged
    assert kept.code in (0, 2) and s.git("branch", "--list", "agent/ag-kept"), kept.describe()
    dry = prune("--dry-run")
    assert [p["agent"] for p in dry["pruned"]] == ["ag-merged"] and dry["dry_run"]
    assert s.git("branch", "--list", "agent/ag-merged") != ""
    done = prune()
    assert [p["agent"] for p in done["pruned"]] == ["ag-merged"]
    assert s.git("branch", "--list", "agent/ag-merged") == "" and not s.run_dir("ag-merged").exists()
    assert [k["agent"] for k in done["kept"]] == ["ag-kept"] and s.git("branch", "--list", "agent/ag-kept")
    assert [r["data"]["agents"] for r in s.audit(kind="prune")] == [["ag-merged"]]
    s.audit_intact()
    # The agent id is free again.
    again = s.spawn(merged_task)
    assert again.code == 0, again.describe()
    assert [p["agent"] for p in prune("--unmerged")["pruned"]] == ["ag-kept", "ag-merged"]


def test_a_repository_without_commits_is_refused_before_anything_is_made(spawner, tmp_path):
    s = spawner
    empty = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", str(empty)], check=True)
    task = s.task(agent_id="ag-empty", command=f"{SH_REPORT}")
    proc = s.cli("spawn", str(task), cwd=empty)
    assert proc.returncode == 1 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "has no commits yet" in proc.stderr
    assert not s.run_dir("ag-empty").exists()
    bad_base = s.cli("spawn", "--base", "no-such-rev", str(task))
    assert bad_base.returncode == 1 and "--base no-such-rev: no such revision" in bad_base.stderr


def test_verify_refuses_a_checkout_holding_a_nested_repository(hand_made):
    """In a person's checkout nothing is deleted: the nested repository is refused before git reads the
    tree, in one line, and left as it was."""
    s, wt, task, report = hand_made
    nested = wt / "src" / "calc" / "vendored"
    git(wt, "init", "-q", str(nested))
    proc, data = verify(s, task, wt, report, s.base)
    assert proc.returncode == 1 and data is None, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "nested repositories ('src/calc/vendored')" in lines[0], proc.stderr
    assert (nested / ".git").is_dir()


def test_verify_needs_no_agent_table(spawner: Spawner):
    """`[agent]` is for spawning: verify in CI checks a task without one, under a task's default limits."""
    s = spawner
    task = s.task(agent_id="ag-verify-noagent", no_agent=True)
    wt = s.tmp / "by-hand-noagent"
    s.git("worktree", "add", "-q", "-b", "by-hand-noagent", str(wt), s.base)
    path = wt / "src" / "calc" / "__init__.py"
    path.write_text(path.read_text().replace("(len(values) + 1)", FIXED))
    report = s.tmp / "report-noagent.md"
    report.write_text(REPORT)
    proc, data = verify(s, task, wt, report, s.base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["failed"] == [] and "quality::tests-green" in data["passed"]


# -- nothing runs that cannot pass ----------------------------------------------------------------------

def test_a_check_whose_program_verify_would_not_find_is_refused_before_anything(spawner: Spawner, tmp_path):
    s = spawner
    task = s.task(agent_id="ag-typo", command=SH_REPORT,
                  verification={"test-command": "pytest -q tests", "check-commands": ["flake9 src"]})
    line = one_line_error(s.spawn(task).proc)
    assert f"{task}:" in line and "a check command runs `flake9`, which verify would not find" in line
    assert "/usr/bin" in line and "install it into the repository's toolchain" in line
    nothing_left(s, "ag-typo")
    # A program this machine has outside every sandbox (a `uv tool` or pipx install): where it is, and the fix.
    elsewhere = tmp_path / "tools"
    elsewhere.mkdir()
    (elsewhere / "flake9").write_text("#!/opt/tool-venv/bin/python\n")
    (elsewhere / "flake9").chmod(0o755)
    line = one_line_error(s.spawn(task, env={"PATH": f"{elsewhere}:{os.environ['PATH']}"}).proc)
    assert f"it is at {elsewhere}/flake9 on this machine, which the sandbox does not show" in line
    assert 'presets = ["python"]' in line
    nothing_left(s, "ag-typo")


def test_a_write_scope_that_names_nothing_of_the_repository_is_refused_before_anything(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-scope", command=SH_REPORT, scope={"files-whitelist": ["scr/calc/**"]})
    line = one_line_error(s.spawn(task).proc)
    assert "the write scope `scr/calc/**` matches nothing in the repository at its base" in line
    assert "`scr` is not one of its folders" in line
    nothing_left(s, "ag-scope")
    # A new file, or a new folder, in a folder the repository has: what the agent is to create.
    for fresh in (["src/calc/median.py"], ["tests/unit/**"], ["notes/**"]):
        task = s.task(agent_id="ag-fresh", command=SH_REPORT, scope={"files-whitelist": ["src/calc/**", *fresh]},
                      verification={"test-command": "true", "test-results": "exit-code", "check-commands": []})
        done = s.spawn(task)
        assert done.proc.returncode in (0, 2) and "matches nothing" not in done.stderr, done.describe()
        s.cli("prune", "--unmerged")
