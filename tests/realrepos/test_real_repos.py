"""The first realistic task on a real repository is accepted the first time, with `runtime init` as written.

For each project of projects.py (two Python libraries, an npm package, a Rust crate and a Go module,
none written here): a repository made as a user has it, `runtime init` run in it, and then, with the
role init wrote and the repository's own test and check commands,

- a one-line fix of a bug planted in its large module, through `runtime spawn`;
- a new function with its test, through `runtime spawn`;
- both as a two-subtask plan, through `runtime run --merge`;

each by a scripted agent that also runs the repository's test and check commands in its shell, through
the gate. Every one must be accepted on its first attempt (no retries are allowed), the agent's shell
calls allowed and passing, and the commit holding exactly the change. The real Claude Code CLI (against the
fake model server) makes the fix in every project, and the new function in the Python and npm ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from tests.conftest import RUNTIME, require
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import missing_cli_reason
from tests.orchestration.conftest import result_of
from tests.realrepos.conftest import BASE_BRANCH, RealRepo, builtin_turns, init_template, own_commands
from tests.realrepos.projects import PROJECTS, Change

ALL = [p.name for p in PROJECTS]
PYTHON = [p.name for p in PROJECTS if p.kind == "python"]
SECRET = "sk-test-real-repos-0123456789"


# -- reading outcomes -------------------------------------------------------------------------------

def _outcome(proc: subprocess.CompletedProcess) -> dict[str, Any]:
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _failures(outcome: dict[str, Any]) -> str:
    """Each attempt's checks that did not pass, with their feedback: why a spawn was not accepted."""
    lines = []
    for attempt in outcome.get("attempts") or []:
        for check in attempt.get("checks") or []:
            if check.get("status") != "passed":
                lines.append(f"attempt {attempt.get('number')}: {check.get('atom')} {check.get('status')}: "
                             f"{str(check.get('feedback') or check.get('detail') or '')[:1500]}")
    return "\n".join(lines)


def _describe(repo: RealRepo, proc: subprocess.CompletedProcess, agent_id: str) -> str:
    outcome = _outcome(proc)
    return (f"{repo.project.name}: exit {proc.returncode}, label {outcome.get('label')}\n"
            f"failed checks:\n{_failures(outcome)}\nstderr:\n{proc.stderr[-3000:]}\n"
            + ("" if outcome else f"stdout:\n{proc.stdout[-3000:]}") + repo.agent_logs(agent_id))


def assert_accepted_first_time(repo: RealRepo, proc: subprocess.CompletedProcess, agent_id: str) -> dict[str, Any]:
    outcome = _outcome(proc)
    why = _describe(repo, proc, agent_id)
    assert proc.returncode == 0 and outcome.get("label") == "ok", why
    assert len(outcome["attempts"]) == 1, why
    assert all(c["status"] == "passed" for c in outcome["attempts"][0]["checks"]), why
    return outcome


def assert_commit_holds(repo: RealRepo, base: str, commit: str, *changes: Change) -> None:
    """``commit`` changes exactly the files of ``changes``, to exactly what they make of ``base``."""
    expected = repo.expected(base, *changes)
    assert repo.changed(base, commit) == sorted(expected)
    for path, text in expected.items():
        assert repo.show(commit, path) == text, path


def assert_shell_calls_passed(repo: RealRepo, agent_id: str) -> None:
    """The agent ran the repository's test and check commands in its shell: each allowed, each passing."""
    test, checks = own_commands(repo)
    calls = [e for e in repo.tool_events(agent_id) if e["tool"] == "Bash"]
    assert [c["input"]["command"] for c in calls] == [test, *checks], calls
    for call in calls:
        assert call["decision"] == "allow" and not call["is_error"], (
            f"{call['input']['command']}: {call['decision']} ({call.get('reason')}): {call.get('result')}")


def assert_lint_passes(repo: RealRepo, task: Path) -> None:
    """`runtime lint` on the task, as a user runs it before spawning, with the project catalog init wrote."""
    lint = repo.cli("lint", task)
    assert lint.returncode == 0, lint.stdout[-3000:] + lint.stderr[-3000:]


# -- runtime init -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_init_writes_the_repositorys_own_commands(real_repo, name):
    """init finds the repository's test and lint commands and writes them into a task template, each
    allowed to the role it writes (issue 18, item 2)."""
    repo = real_repo(name)
    wrote = sorted(str(p.relative_to(repo.root)) for p in repo.init_wrote)
    template = init_template(repo)
    assert template is not None, f"runtime init wrote no task template with a test command: {wrote}"
    test, checks = own_commands(repo)
    assert repo.project.runner in test, (test, repo.project.test_command)
    if any("flake8" in c for c in repo.project.check_commands):  # those that configure flake8 in setup.cfg
        assert any("flake8" in c for c in checks), checks
    for command in (test, *checks):
        explain = repo.cli("explain", "--role", "project", command)
        assert explain.returncode == 0, f"{command}: {explain.stdout}{explain.stderr}"


# -- a repository's own world in every worktree ------------------------------------------------------

@pytest.mark.parametrize("name", [p.name for p in PROJECTS if p.editable_src or p.world_wheels])
def test_the_worktree_gets_the_repository_s_world_and_a_second_agent_takes_it_from_the_cache(real_repo, name):
    """exceptiongroup imports the version file its build writes and git ignores: `runtime init` declares it
    ([worktree] include). bleach's tests need dependencies its tools venv does not hold: each worktree makes
    an environment of its own ([worktree] setup, from a registry on loopback through setup's egress)."""
    repo = real_repo(name)
    toolchain = tomllib.loads((repo.root / ".agent-runtime/toolchain.toml").read_text())
    if repo.project.editable_src:
        assert toolchain["worktree"]["include"] == [f"src/{name}/_version.py"]  # written by init itself
    change, agent_id = repo.project.fix, "ag-world"
    task = repo.write_task(change, agent_id, repo.builtin_agent(change, agent_id))
    outcome = assert_accepted_first_time(repo, repo.cli("spawn", "--json", task), agent_id)
    made = json.loads((repo.state / "runs" / agent_id / "state.json").read_text())["setup"]
    assert made["cached"] is False
    if repo.project.world_wheels:
        assert ".wt" in made["entries"] and ".venv" not in made["entries"]  # the tools venv is the main checkout's
        assert [c["exit_code"] for c in made["commands"]] == [0, 0, 0]
        egress = [json.loads(line)["data"] for line in (repo.state / "audit.jsonl").read_text().splitlines()
                  if '"kind":"egress"' in line.replace(" ", "")]
        assert any(e["decision"] == "allow" and e["host"] == "localhost" for e in egress), egress
    assert not (repo.root / ".wt").exists() and repo.git("status", "--porcelain") == ""  # the main checkout as it was
    again = repo.write_task(change, "ag-world-2", repo.builtin_agent(change, "ag-world-2"))
    assert_accepted_first_time(repo, repo.cli("spawn", "--json", again), "ag-world-2")
    second = json.loads((repo.state / "runs" / "ag-world-2" / "state.json").read_text())["setup"]
    # A version file names no worktree: the second agent takes it from the cache. A virtualenv's scripts name
    # the worktree it was made in: the second agent, in a worktree of its own, makes its own.
    assert made["shared"] is (not repo.project.world_wheels) and second["cached"] is made["shared"]
    assert outcome["commit"]


# -- runtime spawn, builtin backend -----------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_a_planted_bug_is_fixed_in_one_line(real_repo, name):
    repo = real_repo(name)
    change, agent_id = repo.project.fix, "ag-fix"
    task = repo.write_task(change, agent_id, repo.builtin_agent(change, agent_id))
    proc = repo.cli("spawn", "--json", task)
    outcome = assert_accepted_first_time(repo, proc, agent_id)
    assert_commit_holds(repo, repo.base, outcome["commit"], change)
    assert repo.git("diff", "--numstat", repo.base, outcome["commit"]) == f"1\t1\t{repo.project.bug.path}"
    assert repo.show(outcome["commit"], change.files[0]) == repo.show(repo.initialised, change.files[0])
    assert_shell_calls_passed(repo, agent_id)
    assert repo.sha(BASE_BRANCH) == repo.base
    assert_lint_passes(repo, task)


@pytest.mark.parametrize("name", ALL)
def test_a_new_function_with_its_test(real_repo, name):
    repo = real_repo(name)
    change, agent_id = repo.project.feature, "ag-feature"
    task = repo.write_task(change, agent_id, repo.builtin_agent(change, agent_id))
    proc = repo.cli("spawn", "--json", "--base", repo.initialised, task)  # before the planted bug
    outcome = assert_accepted_first_time(repo, proc, agent_id)
    assert_commit_holds(repo, repo.initialised, outcome["commit"], change)
    assert_shell_calls_passed(repo, agent_id)
    assert_lint_passes(repo, task)


# -- runtime run --merge ----------------------------------------------------------------------------

def _subtask(repo: RealRepo, sid: str, sequence: int, change: Change, uses: list[str]) -> dict[str, Any]:
    doc = repo.task_doc(change, f"ag-{sid}")
    del doc["task"]["agent-id"], doc["task"]["parent-agent"]  # the run names its agents
    sub: dict[str, Any] = {"id": sid, "sequence": sequence, **({"uses": uses} if uses else {}), **doc}
    script = repo.script(f"plan-{sid}.script.toml", builtin_turns(repo, change))
    sub["agent"] = {"backend": "builtin", "model": f"scripted/{sid}", "script": script.name, "retries": 0,
                    "limits": {"timeout-s": 240, "max-turns": 20}}
    sub["body"] = sub.pop("body")
    return sub


@pytest.mark.parametrize("name", ALL)
def test_a_plan_fixes_and_extends_and_merges(real_repo, name):
    repo = real_repo(name)
    project = repo.project
    test, checks = own_commands(repo)
    plan = {"plan": {"goal": f"Fix the bug in {project.bug.path}, then: {project.feature.goal}",
                     "success-criteria": ["the repository's tests and checks pass"],
                     "checks": [test, *checks], "max-replans": 0, "concurrency": 2},
            "subtask": [_subtask(repo, "fix", 1, project.fix, []),
                        _subtask(repo, "feature", 2, project.feature, ["fix"])]}
    path = repo.tmp / "tasks" / "plan.toml"
    path.write_text(tomlkit.dumps(plan))
    proc = repo.cli("run", "--json", "--merge", path, timeout=600)
    r = result_of(proc.returncode, proc.stdout, proc.stderr)
    agents = {e["subtask"]: e["agent"] for e in r.of("dispatch")}
    why = r.describe() + "".join(repo.agent_logs(a) for a in agents.values())
    assert r.code == 0 and r.status == "accepted", why
    assert {e["subtask"]: e["label"] for e in r.of("subtask-end")} == {"fix": "ok", "feature": "ok"}, why
    assert len(r.of("dispatch")) == 2, why  # each subtask dispatched once
    assert [(e["command"], e["exit_code"]) for e in r.of("plan-check")] == [(c, 0) for c in (test, *checks)], why
    trunk = repo.sha(BASE_BRANCH)
    assert trunk != repo.base
    assert_commit_holds(repo, repo.base, trunk, project.fix, project.feature)
    for agent in agents.values():
        assert_shell_calls_passed(repo, agent)


# -- runtime spawn, claude-code backend -------------------------------------------------------------

def _claude_turns(repo: RealRepo, change: Change, worktree: Path) -> list:
    """The real CLI's calls for ``change``: each file read before its first edit, as the CLI requires."""
    test, checks = own_commands(repo)
    turns: list = []
    read: set[str] = set()
    for edit in change.edits:
        path = str(worktree / edit.path)
        if not edit.old:
            turns.append([{"name": "Write", "input": {"file_path": path, "content": edit.new}}])
            continue
        if edit.path not in read:
            read.add(edit.path)
            turns.append([{"name": "Read", "input": {"file_path": path}}])
        turns.append([{"name": "Edit", "input": {"file_path": path, "old_string": edit.old, "new_string": edit.new}}])
    turns += [[{"name": "Bash", "input": {"command": command}}] for command in (test, *checks)]
    turns.append(change.report)
    return turns


def _claude_spawn(repo: RealRepo, change: Change, agent_id: str, *flags: str) -> dict[str, Any]:
    """``change`` made by the real Claude Code CLI in a spawn, each of its calls answered without an error."""
    require(missing_cli_reason() is None, missing_cli_reason() or "")
    turns = _claude_turns(repo, change, repo.state / "worktrees" / agent_id)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(ANTHROPIC_API_KEY=SECRET, RUNTIME_STATE_DIR=str(repo.state))
    with FakeAnthropicServer(turns) as server:
        agent = {"backend": "claude-code", "api-base": server.url, "retries": 0,
                 "limits": {"timeout-s": 240, "max-turns": 30}}
        task = repo.write_task(change, agent_id, agent)
        proc = subprocess.run([RUNTIME, "spawn", "--json", *flags, str(task)], cwd=repo.root, env=env,
                              capture_output=True, text=True, timeout=400)
    why = _describe(repo, proc, agent_id)
    used = server.scripted_tool_use_ids()
    assert len(used) == len(turns), f"the CLI took {len(used)} of {len(turns)} scripted turns\n{why}"
    for turn, ids in zip(turns, used, strict=True):
        for call, tool_id in zip(turn if isinstance(turn, list) else [], ids, strict=True):
            result = server.tool_result_for(tool_id)
            what = call["input"].get("command") or call["input"].get("file_path")
            assert result is not None and not result.get("is_error"), f"{call['name']} {what}: {result}\n{why}"
    return assert_accepted_first_time(repo, proc, agent_id)


@pytest.mark.real_client
@pytest.mark.parametrize("name,which", [*((n, "fix") for n in ALL),
                                        *((n, "feature") for n in ("more-itertools", "cachetools", "proxy-addr"))])
def test_claude_code_makes_the_change(real_repo, name, which):
    """The real CLI: the one-line fix in every project, a new function with its test in the Python projects
    and the npm package (cachetools' `pytest --cov` writes `.coverage` at the worktree's top, proxy-addr's
    `npm test` has c8 write `coverage/` beside its scoped index.js)."""
    repo = real_repo(name)
    change = repo.project.fix if which == "fix" else repo.project.feature
    base = repo.base if which == "fix" else repo.initialised
    outcome = _claude_spawn(repo, change, f"ag-claude-{which}", "--base", base)
    assert_commit_holds(repo, base, outcome["commit"], change)  # nothing the CLI wrote beside its files


# -- a repository that is not clean at its base -----------------------------------------------------

def test_with_baseline_a_lint_the_base_already_fails_does_not_reject_the_fix(real_repo):
    """more-itertools with a complexity lint its code predates (nine of its functions are over it): with
    `baseline = true` the one-line fix is accepted the first time, the lint judged by what the fix adds."""
    repo = real_repo("more-itertools")
    change, agent_id = repo.project.fix, "ag-unclean"
    lint = "flake8 --select C901 --max-complexity 8 more_itertools"
    task = repo.write_task(change, agent_id, repo.builtin_agent(change, agent_id))
    doc = tomlkit.parse(task.read_text())
    doc["verification"]["check-commands"] = [lint]
    doc["verification"]["baseline"] = True
    task.write_text(tomlkit.dumps(doc))
    proc = repo.cli("spawn", "--json", task)
    outcome = assert_accepted_first_time(repo, proc, agent_id)
    check = next(c for c in outcome["attempts"][0]["checks"] if c["atom"] == "quality::check-green")
    assert f"`{lint}` fail(s) there too, and the change adds nothing" in check["feedback"], check
    assert_commit_holds(repo, repo.base, outcome["commit"], change)


# -- the first hour ---------------------------------------------------------------------------------

def test_a_task_rejected_for_its_own_file_runs_again_afresh_once_fixed(real_repo):
    """cachetools: the task asks for more tests than the project has, so the fix is rejected whatever the agent
    does. The person fixes the count; the same command is refused naming `--afresh`, which runs the task again
    from the base and the fixed file, and it is accepted; the first run's branch is kept under a named ref."""
    repo = real_repo("cachetools")
    change, agent_id = repo.project.fix, "ag-count"
    task = repo.write_task(change, agent_id, repo.builtin_agent(change, agent_id))
    doc = tomlkit.parse(task.read_text())
    doc["verification"]["test-count-min"] = 5000
    task.write_text(tomlkit.dumps(doc))
    first = repo.cli("spawn", "--json", task)
    assert first.returncode == 2 and _outcome(first).get("label") == "rejected", _describe(repo, first, agent_id)
    assert "at least 5000 must run and pass" in _failures(_outcome(first))
    kept = repo.sha(f"agent/{agent_id}")
    doc["verification"]["test-count-min"] = repo.project.test_count_min
    task.write_text(tomlkit.dumps(doc))
    refused = repo.cli("spawn", "--json", task)
    assert refused.returncode == 1 and "--afresh` starts it again from the current base" in refused.stderr, refused.stderr
    proc = repo.cli("spawn", "--json", "--afresh", task)
    outcome = assert_accepted_first_time(repo, proc, agent_id)
    assert_commit_holds(repo, repo.base, outcome["commit"], change)
    assert repo.sha(f"refs/agent-runtime/previous/{agent_id}/1") == kept


def test_tests_that_need_what_the_checkout_has_and_git_ignores_are_the_world_s_not_the_change_s(real_repo):
    """exceptiongroup imports the version file its build writes and git ignores. Without `[worktree]` declaring
    it, every worktree fails its tests at the base while the person's checkout passes them: the fix is not
    rejected as the change's fault but stopped as the world's, naming `runtime init --probe`; with the
    declaration back, the same fix is accepted the first time."""
    repo = real_repo("exceptiongroup")
    toolchain = repo.root / ".agent-runtime/toolchain.toml"
    declared = toolchain.read_text()
    doc = tomlkit.parse(declared)
    del doc["worktree"]
    toolchain.write_text(tomlkit.dumps(doc))
    change, agent_id = repo.project.fix, "ag-world-less"
    task = repo.write_task(change, agent_id, repo.builtin_agent(change, agent_id))
    tdoc = tomlkit.parse(task.read_text())
    tdoc["verification"]["baseline"] = True  # as `runtime init --probe` writes it where the base fails
    task.write_text(tomlkit.dumps(tdoc))
    proc = repo.cli("spawn", "--json", task)
    outcome = _outcome(proc)
    assert proc.returncode != 0 and outcome.get("label") == "failed(verify)", _describe(repo, proc, agent_id)
    assert "so the shortfall is not the change's" in outcome.get("message", "") + _failures(outcome), outcome
    assert "`runtime init --probe` names them" in outcome.get("message", "") + _failures(outcome)
    toolchain.write_text(declared)
    again = repo.write_task(change, "ag-world-back", repo.builtin_agent(change, "ag-world-back"))
    assert_accepted_first_time(repo, repo.cli("spawn", "--json", again), "ag-world-back")
