"""The console's readers and watcher on state folders the runtime's own writers make: the transcript pairs each
gate decision with what the call returned, the watcher names what changed and what a person wants to hear,
the diff reader numbers every line on both sides, and what is sent back quotes the change, not the request."""

from __future__ import annotations

import pytest

from runtime.approvals.store import ApprovalStore
from runtime.audit.log import AuditLog
from runtime.audit.records import Again, Gated, Retried, ToolRan
from runtime.console.diff_view import highlighted, parse_diff
from runtime.console.reading import AuditIndex, Call, Note, transcript
from runtime.console.send_back import Refused, comments_from, feedback
from runtime.console.watch import Watcher
from runtime.printable import printable
from runtime.spawn.state import RunRecord, StateDir

DIFF = """diff --git a/src/calc.py b/src/calc.py
index 1..2 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -1,3 +1,3 @@
 def add(a, b):
-    return a - b
+    return a + b  # "fixed
 x = 1
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+\x1b[31mred
"""


def test_a_transcript_pairs_each_decision_with_its_result_and_keeps_the_other_events(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append(Gated(attempt=1, tool="Bash", input={"command": "git push"}, decision="deny", reason="no git",
                     atom="policy::no-git-ops", rule="git"), "ag")
    log.append(Gated(attempt=1, tool="Bash", input={"command": "ls"}, decision="allow", reason="ok", atom=None,
                     rule="sandboxed"), "ag")
    log.append(Gated(attempt=1, tool="Bash", input={"command": "ls"}, decision="allow", reason="ok", atom=None,
                     rule=None), "other")
    log.append(ToolRan(attempt=1, tool="Bash", is_error=False, result="a.py\n"), "ag")
    log.append(Retried(attempt=1, checks=("quality::tests-green",)), "ag")
    log.append(Again(previous="rejected", head="abc", series=2, sent_back=True), "ag")
    index = AuditIndex(log.path)
    shown = transcript(index.of("ag"))
    assert [type(x) for x in shown] == [Call, Call, Note, Note]
    denied, listed, retry, again = shown
    assert (denied.decision, denied.atom, denied.rule, denied.result) == ("deny", "policy::no-git-ops", "git", None)
    assert (listed.decision, listed.result) == ("allow", "a.py\n")
    assert "quality::tests-green" in retry.text and "series 2" in again.text and "sent back" in again.text
    log.append(Gated(attempt=2, tool="Read", input={"file_path": "a"}, decision="allow", reason="ok", atom=None,
                     rule=None), "ag")
    assert len(transcript(index.of("ag"))) == 5  # the log read on from where it was
    assert len(index.of("other")) == 1


def test_the_watcher_names_what_changed_and_tells_a_person_what_waits_and_what_ended(tmp_path):
    state = StateDir(tmp_path / "state")
    state.write(RunRecord(agent_id="ag-old", status="ok", label="ok"))
    watcher = Watcher(state)
    assert watcher.look() is None  # what was there already is no news
    state.write(RunRecord(agent_id="ag-new", status="running"))
    change = watcher.look()
    assert change is not None and change.topics == {"runs", "agent:ag-new"} and not change.notices
    AuditLog(state.audit).append(Gated(attempt=1, tool="Read", input={}, decision="allow", reason=None, atom=None,
                                       rule=None), "ag-new")
    assert watcher.look().topics == {"agent:ag-new", "runs"}  # a tool call: its row's live count too
    asked, _ = ApprovalStore.for_state(state.root).request("ag-new", "Bash", {"command": "make x"}, "asked", 60)
    change = watcher.look()
    assert "approvals" in change.topics
    assert [(n.title, n.url) for n in change.notices] == [("agent ag-new waits for you", "/approvals")]
    state.write(RunRecord(agent_id="ag-new", status="rejected", label="rejected"))
    change = watcher.look()
    assert [n.title for n in change.notices] == ["agent ag-new: rejected"]
    events = change.events().decode()
    assert events.startswith('event: change\ndata: ["agent:ag-new", "runs"]\n\n') and "event: notify\n" in events
    assert watcher.look() is None


def test_a_diff_is_numbered_on_both_sides_and_highlighted_as_its_language():
    files = parse_diff(DIFF)
    assert [f.path for f in files] == ["src/calc.py", "new.txt"]
    calc = files[0]
    assert [(ln.kind, ln.old, ln.new) for ln in calc.lines] == [
        ("hunk", None, None), ("ctx", 1, 1), ("del", 2, None), ("add", None, 2), ("ctx", 3, 3)]
    assert calc.line("new", 2).text == '    return a + b  # "fixed'
    assert calc.line("old", 2).text == "    return a - b" and calc.line("new", 9) is None
    shown = highlighted(calc)
    assert '<span class="k">return</span>' in shown[3] and "&quot;fixed" in shown[3]
    assert "\x1b" not in files[1].lines[1].text and highlighted(files[1])[1].endswith("red")


def test_what_is_sent_back_quotes_the_change_and_refuses_what_it_does_not_have():
    files = parse_diff(DIFF)
    comments, note = comments_from({"comments": [{"path": "src/calc.py", "side": "new", "line": 2, "text": "why?"}],
                                    "note": " please "})
    sent = feedback(comments, note, files)
    assert sent.startswith("please\n\n") and '`src/calc.py`, line 2: `return a + b  # "fixed`\n    why?' in sent
    nowhere = comments_from({"comments": [{"path": "src/calc.py", "side": "new", "line": 40, "text": "x"}]})[0]
    with pytest.raises(Refused, match="has no new line 40"):
        feedback(nowhere, "", files)
    for bad in ({"comments": "x"}, {"note": 3}, {"comments": [], "note": ""}, {"other": 1},
                {"comments": [{"path": "a", "side": "left", "line": 1, "text": "x"}]},
                {"comments": [{"path": "a", "side": "new", "line": True, "text": "x"}]},
                {"comments": [{"path": "a", "side": "new", "line": 1, "text": "x" * 5000}]},
                {"comments": [{"path": "a", "side": "new", "line": 1, "text": "x"}] * 101}):
        with pytest.raises(Refused):
            comments_from(bad)


NAMES = ["café.md", "with space.txt", 'q"uote.md', "ctl\tx.md", "back\\slash.md", "nl\nname.md", "ünï cödé/ö.py"]


def test_every_file_of_a_real_change_is_shown_under_its_real_name(tmp_path):
    """git quotes a name with bytes past ASCII, a quote, a backslash or a control character, and ends a name
    with a space with a tab: each is read back as the name it is, never /dev/null or git's quoting."""
    from runtime.workspace.git import Git
    from tests.support import user_git, user_repo

    repo = user_repo(tmp_path, {"old name.txt": "moved\n" * 5, "gone é.txt": "bye\n", "bin.dat": "x"})
    for name in NAMES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"{name!r}\n")
    (repo / "bïn é.dat").write_bytes(b"\x00\x01binary")
    user_git(repo, "mv", "old name.txt", "new nämé.txt")
    user_git(repo, "rm", "-q", "gone é.txt")
    user_git(repo, "add", "-A")
    user_git(repo, "commit", "-qm", "names")
    diff = Git(repo).run("diff", "--no-color", "-M", "HEAD~1", "HEAD").stdout.decode("utf-8", errors="replace")
    assert '"b/caf\\303\\251.md"' in diff  # git's quoting, which the reader undoes
    files = {f.path: f for f in parse_diff(diff)}
    assert set(files) == {*NAMES, "bïn é.dat", "new nämé.txt", "gone é.txt"}
    assert files["café.md"].line("new", 1).text == "'café.md'"
    assert files["bïn é.dat"].binary and files["new nämé.txt"].lines == []
    assert files["gone é.txt"].line("old", 1).text == "bye"
    # A comment names a file as its page shows it: found, and quoted from the change.
    comments, _ = comments_from({"comments": [{"path": printable("ctl\tx.md"), "side": "new", "line": 1, "text": "ok?"}]})
    assert "ok?" in feedback(comments, "", list(files.values()))


def test_a_big_change_is_shown_a_bounded_page_at_a_time():
    from runtime.console import diff_view
    from runtime.console.diff_view import FILE_LINES, LINE_CHARS, PAGE_LINES, diff_page

    big = "".join(f"+line {n}\n" for n in range(FILE_LINES + 500))
    wide = "+" + "x" * (LINE_CHARS + 4000) + "\n"
    many = "".join(f"diff --git a/f{k}.txt b/f{k}.txt\nnew file mode 100644\n--- /dev/null\n+++ b/f{k}.txt\n"
                   f"@@ -0,0 +1,{FILE_LINES} @@\n" + "".join(f"+{k}.{n}\n" for n in range(FILE_LINES))
                   for k in range(PAGE_LINES // FILE_LINES + 2))
    diff = (f"diff --git a/big.py b/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/big.py\n"
            f"@@ -0,0 +1,{FILE_LINES + 501} @@\n{big}{wide}" + many)
    files = parse_diff(diff)
    page = diff_page("ag-big", "a" * 40, "b" * 40, files, set(), "no")
    rows = page.count('<tr class="add"') + page.count('<tr class="hunk"')
    assert rows == PAGE_LINES  # the page's bound, over every file
    assert "502 more lines" in page and 'href="/agents/ag-big/diff?file=0">show all of this file' in page
    assert f"?file={len(files) - 1}\">show this file" in page  # a file past the page's bound: a link to it
    whole = diff_page("ag-big", "a" * 40, "b" * 40, files, set(), "no", whole=0)
    assert whole.count('<tr class="add"') == FILE_LINES + 501 and "f1.txt" not in whole  # the file alone
    assert "4000 more characters" in whole and "x" * (LINE_CHARS + 1) not in whole
    assert diff_view.FILE_LINES < diff_view.HIGHLIGHT_MAX_LINES


def test_a_long_transcript_is_read_a_window_at_a_time():
    from runtime.console.agent_view import WINDOW, agent_body
    from runtime.console.reading import Call

    record = RunRecord(agent_id="ag-long", status="running", role="edit-local")
    calls = [Call(1, "2026-12-04T10:00:00Z", "Bash", {"command": f"step {n}"}, "allow", "a", "r", "ok")
             for n in range(WINDOW * 2 + 100)]
    latest = agent_body(record, calls, [], None, {})
    assert latest.count('<tr class="call') == WINDOW and "step 699" in latest and "step 399" not in latest
    assert f"entries {WINDOW + 101}–{WINDOW * 2 + 100} of {WINDOW * 2 + 100}" in latest
    assert 'href="/agents/ag-long?from=100">earlier' in latest
    first = agent_body(record, calls, [], None, {}, start=0)
    assert "step 0&quot;" in first and "step 300&quot;" not in first and "?from=300\">later" in first


def test_evidence_reads_as_tables_and_lists_with_every_text_escaped():
    from runtime.console.agent_view import ROWS_SHOWN, readable

    shown = readable({"runner": "pytest", "complete": True, "counts": {"passed": 3, "failed": 1},
                      "failed": [{"id": "<script>x</script>", "outcome": "failed"}], "notes": ["a", "b"],
                      "many": list(range(ROWS_SHOWN + 5))})
    assert shown.startswith('<table class="evidence">') and "<th>runner</th><td>pytest</td>" in shown
    assert "<th>complete</th><td>yes</td>" in shown and "<th>passed</th><td>3</td>" in shown
    assert "<thead><tr><th>id</th><th>outcome</th></tr></thead>" in shown and "&lt;script&gt;" in shown
    assert "<script>" not in shown and "<li>a</li><li>b</li>" in shown and "and 5 more" in shown
    assert "{" not in shown  # no JSON left for a person to read
