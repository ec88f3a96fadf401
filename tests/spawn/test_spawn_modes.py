"""A spawned agent inside the OS sandbox is judged in the sandboxed mode; with `--no-os-sandbox`, strictly.

Real git, real bubblewrap, the real CLI; the builtin agent driven by the scripted model. The same task
runs both ways: inside the sandbox a script the agent wrote, a `python -c` one-liner and a loop over
`$(...)` run (their output is committed, and says it came from inside bubblewrap), while `git status`
and `curl` are denied as early feedback; without the sandbox all five are denied by the typed rules.
"""

from __future__ import annotations

import json

from tests.spawn.conftest import FIX_TURN, REPORT, TEST_TURN, Spawner

PROBE = ("import os\n"
         "with open('/proc/1/comm') as fh:\n"
         "    first = fh.read().strip()\n"
         "with open('tests/probe_out.txt', 'w') as out:\n"
         "    out.write(first + '\\n')\n")
ALLOWED = [
    "python3 tests/probe.py",
    "python3 -c \"open('tests/oneliner.txt', 'w').write('one-liner ran\\n')\"",
    "for f in $(ls tests/*.py); do echo \"$f\"; done > tests/loop.txt",
]
DENIED = ["git status", "curl -fsS https://example.com/install.sh"]


def _script() -> list:
    turns: list = [[{"name": "Write", "input": {"file_path": "tests/probe.py", "content": PROBE}}]]
    turns += [[{"name": "Bash", "input": {"command": c}}] for c in ALLOWED + DENIED]
    return [*turns, FIX_TURN, TEST_TURN, REPORT]


def _bash_decisions(s: Spawner, agent: str) -> dict[str, dict]:
    return {g["data"]["input"]["command"]: g["data"] for g in s.audit(kind="gate", agent=agent)
            if g["data"]["tool"] == "Bash"}


def test_inside_the_sandbox_scripts_one_liners_and_loops_run_and_git_and_curl_are_early_denials(spawner: Spawner):
    s = spawner
    r = s.spawn(s.task(agent_id="ag-sandboxed", script=_script()))
    assert r.code == 0, r.describe()
    policy = json.loads((s.run_dir("ag-sandboxed") / "agent-ro" / "policy.json").read_text())
    assert policy["mode"] == "sandboxed"
    decisions = _bash_decisions(s, "ag-sandboxed")
    for command in ALLOWED:
        assert decisions[command]["decision"] == "allow", decisions[command]
    git, curl = (decisions[c] for c in DENIED)
    assert git["decision"] == "deny" and git["atom"] == "policy::no-git-ops" and "agents never run git" in git["reason"]
    assert curl["decision"] == "deny" and curl["atom"] == "net::no-network" and "uses the network" in curl["reason"]
    assert all("refused before it runs" in d["reason"] for d in (git, curl))  # said to be early feedback
    # What they wrote is in the verified commit, and the script saw bubblewrap as the first process.
    commit = r.outcome["commit"]
    assert s.show(commit, "tests/probe_out.txt") == "bwrap\n"
    assert s.show(commit, "tests/oneliner.txt") == "one-liner ran\n"
    assert "tests/probe.py" in (s.show(commit, "tests/loop.txt") or "").split()


def test_without_the_sandbox_the_same_task_is_judged_strictly(spawner: Spawner):
    s = spawner
    # Unattended: what the strict gate would ask a person is refused at once, as nobody watches this run.
    r = s.spawn(s.task(agent_id="ag-strict", script=_script()), "--no-os-sandbox", "--unattended")
    assert r.code == 0, r.describe()
    policy = json.loads((s.run_dir("ag-strict") / "agent-ro" / "policy.json").read_text())
    assert policy["mode"] == "strict"
    decisions = _bash_decisions(s, "ag-strict")
    for command in ALLOWED + DENIED:
        assert decisions[command]["decision"] == "deny", decisions[command]
    assert decisions["git status"]["atom"] == "policy::no-git-ops"
    assert "refused before it runs" not in decisions["git status"]["reason"]
    commit = r.outcome["commit"]
    for name in ("tests/probe_out.txt", "tests/oneliner.txt", "tests/loop.txt"):
        assert s.show(commit, name) is None, name  # nothing of what was denied ran
    assert s.show(commit, "tests/probe.py") == PROBE  # the Write tool's scope is the same in both modes
