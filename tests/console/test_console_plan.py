"""The console in a real browser against real runs: a plan of three agents played by the scripted model, in a
real repository, in the OS sandbox, with `runtime console` open on its state folder while it runs.

What a person does and sees, each asserted in the page and checked in the state after:
- the home page shows the plan run and its agents as they appear, and its end, without a reload;
- an agent's call that its role asks about waits on "waiting for you", and one click approves it: the agent
  goes on and its subtask is accepted (and the person's `[notify]` command is told it waited);
- the plan's page shows its groups, what ran alongside, the merges and the judge's verdict;
- an agent's page shows its denial with the atom and rule that decided it, and its transcript;
- the change of an agent whose file names and content carry HTML and terminal escapes renders as text;
- a comment on a line of a change and "send back" start a new series of attempts, which appears on the
  agent's page as it runs, the comment in the agent's first message;
- in a strict run (no OS sandbox), "always" approves a call no rule decides and writes the rule that allows
  it (as `runtime allow`), which the gate then applies.
Screenshots of every page are kept in `.cache/console-screenshots/`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit

from runtime.approvals.store import ApprovalStore
from tests.conftest import REPO, RUNTIME
from tests.console.conftest import Console, click, shot, wait
from tests.spawn.conftest import make_repo
from tests.support import git, have_bwrap

HOSTILE_NAME = "docs/<img src=x onerror=window.pwned=1>.md"
HOSTILE_TEXT = "<script>window.pwned=2</script>\u001b[31mred\u001b[0m \u202eevil"
OVERLAY = """[role]
name = "edit-local"
display-name = "code implementer (local edit scope)"
description = "edit-local, where touch waits for a person's approval"
use-cases = ["the console's tests"]
spawnable = true

[capabilities]
extends = "edit-local"

[[params."tools::bash-allowlist".rules]]
program = "touch"
grammar = "touch"
ask = true
"""
RECORDER = "import json, sys; open(sys.argv[1], 'a').write(json.dumps(json.loads(sys.stdin.read())) + '\\n')"


def script(folder: Path, name: str, turns: list) -> str:
    doc = {"turn": [{"content": t} if isinstance(t, str) else {"tool_calls": t} for t in turns]}
    (folder / f"{name}.script.toml").write_text(tomlkit.dumps(doc))
    return f"{name}.script.toml"


def the_plan(folder: Path) -> Path:
    fix = script(folder, "fix-mean", [
        [{"name": "Bash", "input": {"command": "git push origin HEAD"}}],
        [{"name": "Bash", "input": {"command": "touch src/calc/approved.txt"}}],
        [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": "(len(values) + 1)",
                                    "new_string": "len(values)"}}],
        "Summary: calc.mean now divides by len(values).\nFiles changed: src/calc/__init__.py, src/calc/approved.txt\n"])
    median = (REPO / "manifests/examples/plan/add-median.script.toml").read_text()
    (folder / "add-median.script.toml").write_text(median)
    document = script(folder, "document", [
        [{"name": "Write", "input": {"file_path": "docs/calc.md", "content": "# calc\n\nmean and median.\n"}}],
        [{"name": "Write", "input": {"file_path": HOSTILE_NAME, "content": HOSTILE_TEXT + "\n"}}],
        f"Summary: documented mean and median {HOSTILE_TEXT}\nFiles changed: docs/calc.md\n"])

    def subtask(sid: str, seq: int, files: list[str], test: str, count: int, name: str, **extra: object) -> dict:
        return {"id": sid, "sequence": seq, **extra,
                "task": {"role": "edit-local", "goal": f"{sid} in the calculator"},
                "scope": {"files-whitelist": files},
                "verification": {"test-command": test, "test-count-min": count,
                                 "check-commands": ["pytest --collect-only -q tests"]},
                "agent": {"backend": "builtin", "model": f"scripted/{sid}", "script": name, "retries": 0},
                "body": {"text": f"Do {sid}."}}

    plan = {"plan": {"goal": "Fix calc.mean, add calc.median, and document both.", "checks": ["pytest -q tests"],
                     "success-criteria": ["mean and median are right and tested", "docs/calc.md documents both"],
                     "max-replans": 0, "concurrency": 2},
            "subtask": [subtask("fix-mean", 1, ["src/calc/__init__.py", "src/calc/approved.txt"], "pytest -q tests", 4, fix),
                        subtask("add-median", 1, ["src/calc/median.py", "tests/test_median.py"],
                                "pytest -q tests/test_median.py", 2, "add-median.script.toml"),
                        subtask("document", 2, ["docs/**"], "pytest -q tests", 4, document, uses=["fix-mean", "add-median"])]}
    path = folder / "plan.toml"
    path.write_text(tomlkit.dumps(plan))
    return path


@pytest.fixture
def project(tmp_path):
    """The spawn demo's project with a project catalog: edit-local where `touch` asks, and a `[notify]` command."""
    have_bwrap()
    repo, _ = make_repo(tmp_path)
    catalog = repo / ".agent-runtime"
    (catalog / "roles").mkdir(parents=True)
    (catalog / "roles" / "edit-local.toml").write_text(OVERLAY)
    recorder = tmp_path / "record.py"
    recorder.write_text(RECORDER)
    events = tmp_path / "notified.jsonl"
    (catalog / "notify.toml").write_text(f"[notify]\ncommand = {json.dumps([sys.executable, str(recorder), str(events)])}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the project's catalog")
    plans = tmp_path / "plans"
    plans.mkdir()
    return repo, tmp_path / "state", the_plan(plans), events


def test_a_plan_run_watched_approved_reviewed_and_sent_back_in_the_browser(browser, project):
    repo, state, plan, notified = project
    env = {**os.environ, "RUNTIME_STATE_DIR": str(state)}
    state.mkdir()
    console = Console(state, cwd=repo)
    run = subprocess.Popen([RUNTIME, "run", "--json", str(plan)], cwd=repo, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        browser.get(console.url)
        runs = lambda: browser.find_element("id", "runs").text  # noqa: E731
        assert wait(lambda: run.poll() is not None or (".fix-mean" in runs() and ".add-median" in runs()), 60), runs()
        assert run.poll() is None, run.communicate()[1]
        shot(browser, "plan-home-live")

        # The call edit-local asks about waits; one click approves it, and the agent goes on.
        browser.get(console.base + "/approvals")
        assert wait(lambda: browser.find_elements("css selector", "tr[data-id]"), 60), browser.page_source
        asked = browser.find_element("css selector", "tr[data-id]").get_attribute("data-id")
        row = f'tr[data-id="{asked}"]'  # looked up each time: the live update redraws the table
        assert wait(lambda: "touch src/calc/approved.txt" in (text := browser.find_element("css selector", row).text)
                    and "ask" in text.lower()), browser.page_source
        assert "notices" in browser.page_source
        shot(browser, "plan-approvals")
        assert click(browser, f'{row} button[data-decision="approve"]')
        store = ApprovalStore.for_state(state)
        assert wait(lambda: store.get(asked).allowed, 10)
        assert "(console)" in (store.get(asked).decided_by or "")

        out, err = run.communicate(timeout=240)
        assert run.returncode == 0, err[-3000:]
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        run_id = events[0]["run"]
        assert [e["status"] for e in events if e["event"] == "run-end"] == ["accepted"]

        browser.get(console.base + "/")
        assert wait(lambda: "accepted" in runs(), 10), runs()
        shot(browser, "plan-home-done")

        # The plan's page: groups, what ran alongside, merges, the judge's verdict.
        browser.get(f"{console.base}/plans/{run_id}")
        body = browser.find_element("tag name", "main").text
        assert "the judge's verdict" in body and "every subtask was accepted" in body
        fix_row = browser.find_element("css selector", 'tr[data-subtask="fix-mean"]').text
        assert "round 1, sequence 1" in fix_row and "add-median" in fix_row  # it ran alongside add-median
        doc_row = browser.find_element("css selector", 'tr[data-subtask="document"]').text
        assert "fix-mean, add-median" in doc_row and "sequence 2" in doc_row
        assert len(browser.find_elements("css selector", "svg.timeline rect.bar")) == 3
        assert "pytest -q tests" in body and "exit 0" in body
        shot(browser, "plan-page")

        # An agent's page: the denial with its atom and rule; the approved call and what it returned.
        fix_agent = f"{run_id}.fix-mean"
        browser.get(f"{console.base}/agents/{fix_agent}")
        denial = browser.find_element("css selector", "tr.call.deny").text
        assert "git push origin HEAD" in denial and "policy::no-git-ops" in denial and " git " in f" {denial} "
        transcript = browser.find_element("css selector", "table.transcript").text
        assert "touch src/calc/approved.txt" in transcript and "approved by" in transcript
        assert "memory" in browser.find_element("css selector", "table.limits").text
        assert "sandboxed" in browser.find_element("css selector", "dl.policy").text
        shot(browser, "agent-page")

        # The change of an agent whose names and output carry HTML and terminal escapes: text, nothing runs.
        browser.get(f"{console.base}/agents/{run_id}.document/diff")
        main = browser.find_element("tag name", "main").text
        assert "<img src=x onerror=window.pwned=1>.md" in main and "<script>window.pwned=2</script>" in main
        assert browser.execute_script("return window.pwned === undefined")
        assert not browser.find_elements("css selector", "main img") and "\x1b" not in browser.page_source
        shot(browser, "agent-hostile-diff")
        browser.get(f"{console.base}/agents/{run_id}.document")
        assert "<script>window.pwned=2</script>" in browser.find_element("tag name", "main").text
        assert browser.execute_script("return window.pwned === undefined")

        # Review: a comment on a line of add-median's change, sent back; the new series appears live.
        median_agent = f"{run_id}.add-median"
        browser.get(f"{console.base}/agents/{median_agent}/diff")
        line = browser.find_element("css selector", 'section[data-path="src/calc/median.py"] tr.add[data-line="3"]')
        assert "middle" in line.text
        assert line.find_elements("css selector", "code.hl span")  # highlighted as Python
        browser.execute_script("arguments[0].click()", line.find_element("css selector", "button.comment"))
        browser.find_element("css selector", "tr.comment-row textarea").send_keys("name it mid, please")
        browser.find_element("css selector", "tr.comment-row button.add-comment").click()
        browser.find_element("id", "note").send_keys("one more pass")
        assert "line 3: name it mid" in browser.find_element("id", "comments").text
        shot(browser, "diff-review")
        browser.find_element("id", "send").click()
        assert wait(lambda: "sent back" in browser.find_element("id", "sent").text, 10), \
            browser.find_element("id", "sent").text
        browser.get(f"{console.base}/agents/{median_agent}")
        attempts = lambda: browser.find_elements("css selector", "table.attempts tr[data-attempt]")  # noqa: E731
        assert wait(lambda: len(attempts()) == 2, 120), browser.find_element("id", "agent").text
        assert wait(lambda: "ok" in browser.find_element("css selector", "dd.status").text
                    and browser.find_element("css selector", "dd.series").text == "2", 60)
        shot(browser, "agent-sent-back")
        record = json.loads((state / "runs" / median_agent / "state.json").read_text())
        assert [a["series"] for a in record["attempts"]] == [1, 2] and record["status"] == "ok"
        first = (state / "runs" / median_agent / "agent-ro" / "feedback-2.md").read_text()
        assert "one more pass" in first and "`src/calc/median.py`, line 3" in first and "name it mid" in first
        assert "middle = len(ordered) // 2" in first  # the line quoted from the change, not from the request

        told = [json.loads(line) for line in notified.read_text().splitlines()]
        assert {"waiting", "plan-finished"} <= {e["event"] for e in told}
        assert any(e["event"] == "waiting" and "touch src/calc/approved.txt" in e["call"] for e in told)
    finally:
        if run.poll() is None:
            run.kill()
        console.stop()


def test_always_approves_a_call_no_rule_decides_and_writes_its_rule(browser, tmp_path):
    """A strict run (no OS sandbox) of an agent whose call no rule decides: "always" approves it and writes the
    narrowest rule into the repository's catalog, through the code `runtime allow` runs; the agent's next call
    of the same command is allowed by that rule, never asked again, and its attempt records the policy it ran
    under; and `runtime again` then reads the rule too."""
    repo, _ = make_repo(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    folder = tmp_path / "task"
    folder.mkdir()
    name = script(folder, "ag-always", [[{"name": "Bash", "input": {"command": "nproc"}}],
                                        [{"name": "Bash", "input": {"command": "nproc"}}],
                                        [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py",
                                                                    "old_string": "(len(values) + 1)",
                                                                    "new_string": "len(values)"}}],
                                        "Summary: fixed mean\nFiles changed: src/calc/__init__.py\n"])
    task = folder / "task.toml"
    task.write_text(tomlkit.dumps({
        "task": {"role": "edit-local", "agent-id": "ag-always", "goal": "Fix calc.mean."},
        "scope": {"files-whitelist": ["src/calc/**"]},
        "verification": {"test-command": "pytest -q tests", "test-count-min": 4, "check-commands": []},
        "output": {"report-fields-required": ["summary", "files-changed"]},
        "agent": {"backend": "builtin", "model": "scripted/always", "script": name, "retries": 0},
        "body": {"text": "Fix mean."}}))
    env = {**os.environ, "RUNTIME_STATE_DIR": str(state)}
    console = Console(state, cwd=repo)
    spawn = subprocess.Popen([RUNTIME, "spawn", "--json", "--no-os-sandbox", str(task)], cwd=repo, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        browser.get(console.url)
        browser.get(console.base + "/approvals")
        assert wait(lambda: browser.find_elements("css selector", 'button[data-decision="always"]'), 60), \
            browser.page_source
        assert wait(lambda: "nproc" in (text := browser.find_element("css selector", "tr[data-id]").text)
                    and "runtime allow" in text), browser.page_source
        assert click(browser, 'tr[data-id] button[data-decision="always"]')
        assert wait(lambda: "rule added to .agent-runtime/roles/edit-local.toml" in
                    browser.find_element("css selector", "main").text, 10), browser.find_element("css selector", "main").text
        shot(browser, "approvals-always")
        out, err = spawn.communicate(timeout=120)
        assert spawn.returncode == 0, err[-2000:]
        assert json.loads(out)["label"] == "ok"
        rules = (repo / ".agent-runtime" / "roles" / "edit-local.toml").read_text()
        assert 'program = "nproc"' in rules
        explained = subprocess.run([RUNTIME, "explain", "nproc", "--role", "edit-local"], cwd=repo, env=env,
                                   capture_output=True, text=True, timeout=60)
        assert explained.stdout.startswith("allow"), explained.stdout + explained.stderr
        # The same call, next: allowed by the rule "always" wrote, with no person asked again.
        assert len(ApprovalStore.for_state(state).all(limit=10)) == 1
        gates = [json.loads(line)["data"] for line in (state / "audit.jsonl").read_text().splitlines()
                 if json.loads(line)["kind"] == "gate" and json.loads(line)["data"].get("input") == {"command": "nproc"}]
        assert [g["decision"] for g in gates] == ["allow", "allow"], gates
        assert "approved by" in gates[0]["reason"] and "approved" not in gates[1]["reason"], gates  # the rule's
        record = json.loads((state / "runs" / "ag-always" / "state.json").read_text())
        assert record["attempts"][0]["policy"].startswith("sha256:")
        # `runtime again` reads the catalog as it is now: the run compiled from the shipped catalog, and the
        # repository has a project catalog since, whose rule allows the call; nobody is asked.
        again = subprocess.run([RUNTIME, "again", "ag-always", "--json"], cwd=repo, env=env, capture_output=True,
                               text=True, timeout=120)
        assert again.returncode == 0 and json.loads(again.stdout)["label"] == "ok", again.stdout + again.stderr
        assert len(ApprovalStore.for_state(state).all(limit=10)) == 1
        record = json.loads((state / "runs" / "ag-always" / "state.json").read_text())
        assert [a["series"] for a in record["attempts"]] == [1, 2]
        assert record["catalog"] == str((repo / ".agent-runtime").resolve())
    finally:
        if spawn.poll() is None:
            spawn.kill()
        console.stop()
