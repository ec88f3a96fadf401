"""After runs: what `runtime run` says about a subtask that was not accepted, what `runtime status` lists,
and what `runtime prune` leaves. The real CLI, real git and bubblewrap, scripted agents.
"""

from __future__ import annotations

import json
import subprocess

from tests.conftest import REPO, RUNTIME
from tests.orchestration.conftest import BASE_BRANCH, BUGGY, DOC_TEXT, FIX_REPORT, Orchestra

DOC_TURN = [{"name": "Write", "input": {"file_path": "docs/calc.md", "content": DOC_TEXT}}]
DOC_REPORT = "Summary: documented calc.mean.\nFiles changed: docs/calc.md\n"
NOTE_TURN = [{"name": "Write", "input": {"file_path": "docs/notes.md", "content": "# notes\n"}}]
NOTE_REPORT = "Summary: added notes.\nFiles changed: docs/notes.md\n"


def cli(o: Orchestra, *args: str) -> subprocess.CompletedProcess:
    """A command of the runtime on pipes, as a script or a CI log sees it."""
    return subprocess.run([RUNTIME, *args], cwd=o.repo, capture_output=True, text=True, env=o.full_env(), timeout=300)


def prune(o: Orchestra, *flags: str) -> dict:
    proc = cli(o, "prune", "--json", *flags)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_prune_removes_every_branch_of_a_merged_plan_and_keeps_unmerged_work(orchestra: Orchestra):
    o = orchestra
    empty = cli(o, "status")
    assert empty.returncode == 0 and empty.stdout.strip() == f"no runs in {o.state}", empty.stdout + empty.stderr

    fix = o.subtask("fix-mean", 1)
    doc = o.subtask("document", 2, uses=["fix-mean"], whitelist=["docs/**"], check_commands=["test -s docs/calc.md"],
                    turns=[DOC_TURN, DOC_REPORT])
    merged = o.run(o.plan([fix, doc], name="merged.toml"), "--merge")
    assert merged.code == 0 and merged.status == "accepted", merged.describe()
    # Accepted without --merge: its work is on its branches only.
    note = o.subtask("note", 1, whitelist=["docs/notes.md"], check_commands=["test -s docs/notes.md"],
                     turns=[NOTE_TURN, NOTE_REPORT])
    unmerged = o.run(o.plan([note], name="unmerged.toml", goal="Add notes."))
    assert unmerged.code == 0 and unmerged.status == "accepted", unmerged.describe()
    a, b = merged.run_id, unmerged.run_id
    agents_a = [f"agent/{a}.fix-mean", f"agent/{a}.document"]
    assert set(o.branches()) == {BASE_BRANCH, f"run/{a}", f"run/{b}", *agents_a, f"agent/{b}.note"}

    # `runtime status` lists the plan runs beside their agents, on one line each, however long.
    status = cli(o, "status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    for run_id, branch in ((a, BASE_BRANCH), (b, BASE_BRANCH)):
        (row,) = [line for line in lines if run_id in line and "accepted" in line and f"run/{run_id}" in line]
        assert branch in row
    assert any(f"{a}.fix-mean" in line and "ok" in line for line in lines), status.stdout
    assert max(len(line) for line in lines) > 80  # wide, not folded at 80 columns
    data = json.loads(cli(o, "status", "--json").stdout)
    plans = {e["run_id"]: e for e in data if e["kind"] == "plan"}
    assert set(plans) == {a, b} and plans[a]["integration"] == f"run/{a}"
    assert [(s["subtask"], s["label"]) for s in plans[a]["subtasks"]] == [("fix-mean", "ok"), ("document", "ok")]
    assert {e["agent_id"] for e in data if e["kind"] == "agent"} == {f"{a}.fix-mean", f"{a}.document", f"{b}.note"}

    done = prune(o)
    assert sorted(p["agent"] for p in done["pruned"] if p["kind"] == "agent") == sorted(x[6:] for x in agents_a)
    assert [(p["run"], p["branch"]) for p in done["pruned"] if p["kind"] == "plan"] == [(a, f"run/{a}")]
    assert sorted((k["kind"], k["branch"]) for k in done["kept"]) == [("agent", f"agent/{b}.note"), ("plan", f"run/{b}")]
    assert all(k["why"] == f"not merged into {BASE_BRANCH}" for k in done["kept"])
    # No leftover of the merged run: its branches, state folders and records are gone; trunk has its work.
    assert o.branches() == sorted([BASE_BRANCH, f"run/{b}", f"agent/{b}.note"])
    assert BUGGY not in o.show(BASE_BRANCH, "src/calc/__init__.py") and o.show(BASE_BRANCH, "docs/calc.md")
    assert not (o.state / "runs" / a).exists() and o.agent_folders() == [f"{b}.note"]
    assert [r["run_id"] for r in o.runs()] == [b]
    (record,) = o.audit("prune")
    assert sorted(record["data"]["agents"]) == sorted(x[6:] for x in agents_a) and record["data"]["runs"] == [a]

    # The unmerged work goes only when asked.
    assert prune(o, "--dry-run", "--unmerged")["dry_run"] and o.branches() == sorted(
        [BASE_BRANCH, f"run/{b}", f"agent/{b}.note"])
    gone = prune(o, "--unmerged")
    assert {(p["kind"], p["branch"]) for p in gone["pruned"]} == {("agent", f"agent/{b}.note"), ("plan", f"run/{b}")}
    assert o.branches() == [BASE_BRANCH] and o.runs() == [] and o.agent_folders() == []
    assert cli(o, "status").stdout.strip() == f"no runs in {o.state}"


def test_a_rejected_subtask_is_reported_by_its_first_real_cause(orchestra: Orchestra):
    """Tests fail, the retry gives up with an empty report: the run names the failing tests, in one
    line per subtask, not the missing report fields the role happens to list first."""
    o = orchestra
    wrong = "(len(values) + 2)"
    fix = o.subtask("fix-mean", 1, retries=1, report_fields=["summary", "files-changed"], turns=[
        [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": BUGGY, "new_string": wrong}}],
        FIX_REPORT,
        "",  # the retry gives up: an empty report, the work as it was
    ])
    plan = o.plan([fix])
    proc = subprocess.run([RUNTIME, "run", "--catalog", str(REPO), str(plan)], cwd=o.repo, capture_output=True,
                          text=True, env=o.full_env(), timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if "subtask fix-mean ended" in x]
    assert "ended rejected: quality::tests-green: The tests are not green" in line, proc.stdout
    assert "report" not in line.split("ended rejected:")[1], line
    # The same cause in the event stream and the report; the retry's missing fields are still recorded.
    run_id = o.runs()[-1]["run_id"]
    (end,) = o.stored_events(run_id, "subtask-end")
    assert end["cause"].startswith("quality::tests-green: The tests are not green"), end
    outcome = json.loads(o.subtasks(run_id)["fix-mean"]["outcome_json"])
    last = {c["atom"]: c["status"] for c in outcome["attempts"][-1]["checks"]}
    assert last["quality::tests-green"] == "rejected" and "rejected" in {s for a, s in last.items() if a.startswith("output::")}
    assert outcome["message"].startswith("## quality::tests-green"), outcome["message"][:200]
    report = (o.state / "runs" / run_id / "report.md").read_text()
    assert "**Cause:** quality::tests-green: The tests are not green" in report
