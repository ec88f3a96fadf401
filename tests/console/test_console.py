"""`runtime console`: the token, the Host check, the CSRF token and the headers on every request, text a run
wrote shown as text, and a run's change reaching an open page's event stream.

A real `runtime console --no-open` process on loopback over a state folder written by the runtime's own
`StateDir`; requests over real HTTP (`http.client`, which sends the Host header it is told to).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import time
from urllib.parse import urlsplit

import pytest

from runtime.spawn.outcome import Attempt
from runtime.spawn.state import RunRecord, StateDir
from tests.conftest import RUNTIME

HOSTILE = "<script>alert(1)</script>\x1b]0;pwned\x07\u202e<img src=x onerror=alert(2)>"


@pytest.fixture
def console(tmp_path):
    state = StateDir(tmp_path / "state")
    (state.root / "runs").mkdir(parents=True)
    state.write(RunRecord(agent_id="ag-one", status="ok", role="edit-local", label="ok", message=HOSTILE,
                          attempts=(Attempt(number=1, turns=4, tool_calls=7, denials=2, tokens=1200, cost_usd=0.0123),)))
    proc = subprocess.Popen([RUNTIME, "console", "--no-open", "--state-dir", str(state.root)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "?token=" in url, (url, proc.stderr.read() if proc.poll() else "")
        parts = urlsplit(url)
        yield state, parts.port, parts.query.split("=", 1)[1]
    finally:
        proc.terminate()
        proc.wait(10)


def request(port: int, path: str, *, method: str = "GET", host: str | None = None, token: str | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """One request as the console's script makes it: ``token`` in its header."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    sent = {"Host": host or f"127.0.0.1:{port}", **(headers or {})}
    if token is not None:
        sent["X-Console-Token"] = token
    conn.request(method, path, headers=sent)
    answer = conn.getresponse()
    body = answer.read().decode()
    conn.close()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body


NAVIGATION = {"Accept": "text/html,application/xhtml+xml", "Sec-Fetch-Dest": "document"}


def test_the_printed_url_opens_a_shell_without_data_and_the_token_fetches_the_page(console):
    state, port, token = console
    for path in (f"/?token={token}", "/", "/agents/ag-one", f"/approvals?token={token}"):
        status, headers, body = request(port, path, headers=NAVIGATION)  # the browser opening a page
        assert status == 200 and 'id="opening"' in body and '<script src="/static/console.js"' in body, body
        assert "set-cookie" not in headers  # nothing the browser would send to another port
        assert "ag-one" not in body and "csrf-token" not in body and token not in body
    status, headers, body = request(port, "/", token=token)  # the script's fetch
    assert status == 200 and "ag-one" in body and "edit-local" in body
    assert ">7<" in body and ">2<" in body and "$0.0123" in body  # tool calls, denials, cost
    assert headers["content-security-policy"].startswith("default-src 'none'; script-src 'self'")
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert "set-cookie" not in headers
    assert token not in body  # the page never shows the token


@pytest.mark.parametrize("how", ["no token", "token in the query alone", "a cookie", "wrong token on a navigation",
                                 "wrong token", "foreign host", "rebinding name", "post without csrf",
                                 "post from another origin"])
def test_every_request_without_what_it_needs_is_refused(console, how):
    state, port, token = console
    csrf = _csrf(port, token)
    asks = {
        "no token": dict(path="/"),
        "token in the query alone": dict(path=f"/runs?token={token}"),
        "a cookie": dict(path="/runs", headers={"Cookie": f"runtime_console={token}"}),
        "wrong token on a navigation": dict(path="/", token="x" * len(token), headers=NAVIGATION),
        "wrong token": dict(path="/", token="x" * len(token)),
        "foreign host": dict(path="/", token=token, host=f"example.com:{port}"),
        "rebinding name": dict(path=f"/?token={token}", host=f"attacker.test:{port}"),
        "post without csrf": dict(path="/", method="POST", token=token),
        "post from another origin": dict(path="/", method="POST", token=token,
                                         headers={"X-CSRF-Token": csrf, "Origin": "http://attacker.test"}),
    }[how]
    status, headers, body = request(port, **asks)
    assert status == 403 and body.startswith("refused: "), (status, body)
    assert "content-security-policy" in headers
    assert "ag-one" not in body


def test_a_request_with_the_csrf_token_passes_the_guard(console):
    state, port, token = console
    csrf = _csrf(port, token)
    status, _, body = request(port, "/", method="POST", token=token,
                              headers={"X-CSRF-Token": csrf, "Origin": f"http://127.0.0.1:{port}"})
    assert status == 405, body  # past the guard: the home page takes no POST


def test_what_a_run_wrote_is_shown_as_text(console):
    state, port, token = console
    state.write(RunRecord(agent_id="ag-two", status="rejected", role=HOSTILE, label=HOSTILE))
    _, _, body = request(port, "/", token=token)
    assert "<script>alert" not in body and "<img src=x" not in body and "\x1b" not in body and "\u202e" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_a_run_that_changes_reaches_an_open_page_as_an_event(console):
    state, port, token = console
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{port}", "X-Console-Token": token})
    stream = conn.getresponse()
    assert stream.status == 200 and stream.getheader("content-type").startswith("text/event-stream")
    assert stream.readline() == b"retry: 1000\n" and stream.readline().startswith(b":")  # the opening comment
    stream.readline()
    started = time.monotonic()
    state.write(RunRecord(agent_id="ag-three", status="running", role="explorer"))
    assert stream.readline() == b"event: change\n"
    assert json.loads(stream.readline().removeprefix(b"data: ")) == ["agent:ag-three", "runs"]
    assert time.monotonic() - started < 2
    stream.readline()
    state.write(RunRecord(agent_id="ag-three", status="ok", role="explorer", label="ok"))
    assert stream.readline() == b"event: change\n" and stream.readline() and stream.readline() == b"\n"
    assert stream.readline() == b"event: notify\n"  # a run ended: a person is told
    notice = json.loads(stream.readline().removeprefix(b"data: "))
    assert notice == {"title": "agent ag-three: ok", "body": "its run ended", "url": "/agents/ag-three"}
    conn.close()
    _, _, fragment = request(port, "/runs", token=token)
    assert fragment.startswith('<section id="runs"') and "ag-three" in fragment


def _csrf(port: int, token: str) -> str:
    _, _, body = request(port, "/", token=token)
    start = body.index('name="csrf-token" content="') + len('name="csrf-token" content="')
    return body[start:body.index('"', start)]


def test_the_static_script_runs_nothing_inline_and_talks_only_to_the_console(console):
    state, port, token = console
    status, headers, script = request(port, "/static/console.js")  # the same for everyone: no token asked
    assert status == 200 and 'get("/events")' in script and '"X-Console-Token": token' in script
    assert "http" not in script.split("\n", 2)[-1]  # no other origin
    assert "document.cookie" not in script and 'credentials: "omit"' in script
    _, _, body = request(port, "/", token=token)
    assert "<script>" not in body and "onerror" not in body.replace("onerror=alert(2)", "")
    json.dumps(body)  # the page is text


def test_an_agent_s_page_shows_its_attempts_checks_and_every_gate_decision_with_its_rule(console):
    from runtime.audit.log import AuditLog
    from runtime.audit.records import Gated
    from runtime.verify.kinds.record import CheckRecord

    state, port, token = console
    check = CheckRecord(atom="quality::tests-green", kind="tests-green", status="rejected",
                        feedback="`tests/test_calc.py::test_add` (failed)\nassert -1 == 5")
    state.write(RunRecord(agent_id="ag-four", status="ok", role="edit-local", label="ok", commit="a" * 40,
                          attempts=(Attempt(number=1, turns=3, tool_calls=2, denials=1, checks=[check]),)))
    log = AuditLog(state.audit)
    log.append(Gated(attempt=1, tool="Bash", input={"command": "git push origin main"}, decision="deny",
                     reason="agents never run git", atom="policy::no-git-ops", rule="git"), agent="ag-four")
    log.append(Gated(attempt=1, tool="Write", input={"file_path": HOSTILE, "content": "x"}, decision="allow",
                     reason="inside the scope", atom="scope::files-whitelist", rule="files-whitelist"), agent="ag-four")
    log.append(Gated(attempt=1, tool="Bash", input={"command": "ls"}, decision="allow", reason="ok", atom=None, rule=None),
               agent="ag-one")
    status, _, body = request(port, "/agents/ag-four", token=token)
    assert status == 200
    assert "quality::tests-green" in body and "assert -1 == 5" in body and "rejected" in body
    assert "git push origin main" in body and "policy::no-git-ops" in body and "agents never run git" in body
    assert body.count('<tr class="call ') == 2  # this agent's two decisions, not another's
    assert "<script>alert" not in body and "&lt;script&gt;" in body
    _, _, home = request(port, "/", token=token)
    assert '<a href="/agents/ag-four">ag-four</a>' in home


@pytest.mark.parametrize("agent", ["nobody", "..%2Fstate", "ag-one%00", "%2E%2E"])
def test_an_agent_page_of_no_run_is_not_found(console, agent):
    state, port, token = console
    status, _, body = request(port, f"/agents/{agent}", token=token)
    assert status == 404 and "ag-one" not in body


def test_a_waiting_call_is_listed_with_its_reason_and_decided_with_the_csrf_token(console):
    from runtime.approvals.store import ApprovalStore

    state, port, token = console
    store = ApprovalStore.for_state(state.root)
    asked, _ = store.request("ag-one", "Bash", {"command": "make deploy"},
                             "no rule of role `edit-local` runs `make deploy`; `runtime allow 'make deploy'` writes it", 300)
    other, _ = store.request("ag-one", "Bash", {"command": HOSTILE}, "asked", 300)
    status, _, body = request(port, "/approvals", token=token)
    assert status == 200 and "make deploy" in body and "runtime allow" in body and "&lt;script&gt;" in body
    assert f'data-id="{asked.id}"' in body and 'data-decision="approve"' in body
    assert "<script>alert" not in body
    csrf = _csrf(port, token)
    status, _, _ = request(port, f"/approvals/{asked.id}/approve", method="POST", token=token)
    assert status == 403 and store.get(asked.id).pending  # no CSRF token: nothing decided
    status, _, said = request(port, f"/approvals/{asked.id}/approve", method="POST", token=token,
                              headers={"X-CSRF-Token": csrf})
    assert status == 200 and said.strip() == "approved"
    taken = store.get(asked.id)
    assert taken.allowed and "(console)" in taken.decided_by
    status, _, said = request(port, f"/approvals/{asked.id}/deny", method="POST", token=token,
                              headers={"X-CSRF-Token": csrf})
    assert status == 409  # decided once
    status, _, said = request(port, f"/approvals/{other.id}/deny", method="POST", token=token,
                              headers={"X-CSRF-Token": csrf})
    assert status == 200 and said.strip() == "denied" and store.get(other.id).reason


def test_the_change_is_shown_file_by_file_with_test_edits_marked_and_every_line_escaped(tmp_path):
    from runtime.verify.kinds.record import CheckRecord

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (repo / "src/calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests/test_calc.py").write_text("def test_add():\n    assert True\n")
    git("add", "-A")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    git("checkout", "-qb", "agent/ag-diff")
    (repo / "src/calc.py").write_text("def add(a, b):\n    return a + b  # <script>alert(1)</script>\n")
    (repo / "tests/test_calc.py").write_text("def test_add():\n    assert add(2, 3) == 5\n")
    (repo / "src/<b>bold<i>.py").write_text("x = 1\n")
    git("add", "-A")
    git("commit", "-qm", "fix")
    head = git("rev-parse", "HEAD")
    git("checkout", "-q", "main")
    state = StateDir(tmp_path / "state")
    (state.root / "runs").mkdir(parents=True)
    edits = CheckRecord(atom="quality::tests-protected", kind="tests-protected", status="passed", feedback="",
                        test_edits=["tests/test_calc.py"])
    state.write(RunRecord(agent_id="ag-diff", status="ok", role="edit-local", base=base, branch="agent/ag-diff",
                          commit=head, attempts=(Attempt(number=1, checks=[edits]),)))
    proc = subprocess.Popen([RUNTIME, "console", "--no-open", "--state-dir", str(state.root)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=repo)
    try:
        parts = urlsplit(proc.stdout.readline().strip())
        port, token = parts.port, parts.query.split("=", 1)[1]
        status, _, body = request(port, "/agents/ag-diff/diff", token=token)
        assert status == 200, body
        assert "<h2>src/calc.py</h2>" in body and '<tr class="del" data-side="old" data-line="2">' in body
        assert '<tr class="add" data-side="new" data-line="2">' in body
        assert '<span class="k">return</span>' in body  # highlighted as Python
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and "<script>alert" not in body
        assert ('<section class="file test-edit" data-path="tests/test_calc.py"><h2>tests/test_calc.py '
                '<span class="badge">test edit') in body
        assert "&lt;b&gt;bold&lt;i&gt;.py" in body and "<b>bold" not in body
        status, _, _ = request(port, "/agents/nobody/diff", token=token)
        assert status == 404
    finally:
        proc.terminate()
        proc.wait(10)


def test_sending_back_needs_the_csrf_token_a_finished_run_and_a_well_formed_request(console):
    state, port, token = console
    csrf = _csrf(port, token)
    body = json.dumps({"comments": [], "note": "again"})

    def send(agent: str, data: str = body, with_csrf: bool = True) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Host": f"127.0.0.1:{port}", "X-Console-Token": token,
                   "Content-Type": "application/json", **({"X-CSRF-Token": csrf} if with_csrf else {})}
        conn.request("POST", f"/agents/{agent}/send-back", body=data, headers=headers)
        answer = conn.getresponse()
        text = answer.read().decode()
        conn.close()
        return answer.status, text

    assert send("ag-one", with_csrf=False)[0] == 403
    assert send("nobody")[0] == 404
    state.write(RunRecord(agent_id="ag-busy", status="running", role="edit-local"))
    status, said = send("ag-busy")
    assert status == 409 and json.loads(said)["sent"] is False
    status, said = send("ag-one", data="{not json")
    assert status == 409 and json.loads(said)["sent"] is False
    status, said = send("ag-one", data=json.dumps({"comments": "x"}))
    assert status == 409 and "comments a list" in json.loads(said)["message"]
    status, said = send("ag-one", data="x" * (300 * 1024))
    assert status == 409 and "bytes" in json.loads(said)["message"]
    assert not list((state.root / "runs" / "ag-one").glob("sent-back-*"))  # nothing was started


def test_command_logs_are_shown_escaped_and_only_from_the_attempt_s_folder(console):
    state, port, token = console
    logs = state.attempt("ag-one", 1) / "commands"
    logs.mkdir(parents=True)
    (logs / "01-work.log").write_text(f"$ pytest -q\n{HOSTILE}\n")
    status, _, body = request(port, "/agents/ag-one/attempts/1/commands/01-work.log", token=token)
    assert status == 200 and "$ pytest -q" in body and "<script>alert" not in body and "\x1b" not in body
    for name in ("..%2F..%2Fstate.json", ".hidden.log", "01-work.txt"):
        status, _, body = request(port, f"/agents/ag-one/attempts/1/commands/{name}", token=token)
        assert status == 404, name
    status, _, _ = request(port, "/plans/..%2Fx", token=token)
    assert status == 404
    status, _, _ = request(port, "/plans/rnothing", token=token)
    assert status == 404


def test_no_link_in_the_state_folder_is_followed_out_of_it(console, tmp_path):
    """A symlink where a command log, a kept task or a compiled policy would be, or on the way to one (an
    attempt's `commands` folder), is not followed: the file it points to outside the state folder is never
    shown."""
    state, port, token = console
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("TOP-SECRET-OUTSIDE\n")
    logs = state.attempt("ag-one", 1) / "commands"
    logs.mkdir(parents=True)
    (logs / "02-link.log").symlink_to(secret)
    status, _, body = request(port, "/agents/ag-one/attempts/1/commands/02-link.log", token=token)
    assert status == 404 and "TOP-SECRET" not in body
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "03-work.log").write_text("TOP-SECRET-FOLDER\n")
    second = state.attempt("ag-one", 2)
    second.mkdir(parents=True)
    (second / "commands").symlink_to(elsewhere, target_is_directory=True)
    status, _, body = request(port, "/agents/ag-one/attempts/2/commands/03-work.log", token=token)
    assert status == 404 and "TOP-SECRET" not in body
    policy = state.run("ag-one") / "agent-ro"
    policy.mkdir(parents=True)
    (policy / "policy.json").symlink_to(secret)
    state.task_manifest("ag-one").symlink_to(secret)
    status, _, body = request(port, "/agents/ag-one", token=token)
    assert status == 200 and "TOP-SECRET" not in body


def test_what_waits_for_the_person_comes_first_and_a_running_agent_s_calls_count_as_they_happen(console):
    from runtime.approvals.store import ApprovalStore
    from runtime.audit.log import AuditLog
    from runtime.audit.records import Gated

    state, port, token = console
    state.write(RunRecord(agent_id="ag-busy", status="running", role="edit-local"))
    audit = AuditLog(state.audit)
    for n, decision in enumerate(["allow"] * 8 + ["deny", "ask"]):
        audit.append(Gated(attempt=1, tool="Bash", input={"command": f"step {n}"}, decision=decision, reason=None,
                           atom=None, rule=None), "ag-busy")
    _, _, body = request(port, "/", token=token)
    row = body[body.index('<tr data-agent="ag-busy"'):]
    row = row[:row.index("</tr>")]
    assert "<td>10</td><td>1</td>" in row  # ten calls, one denied, of an attempt not finished
    assert 'id="waiting"' in body and 'class="count"' not in body  # nothing waits yet
    ApprovalStore.for_state(state.root).request("ag-busy", "Bash", {"command": "make deploy"}, "asked", 300)
    _, _, body = request(port, "/agents/ag-one", token=token)  # every page's header counts what waits
    assert '<span class="count">1</span>' in body
    _, _, fragment = request(port, "/runs", token=token)
    assert "1 call waits for you" in fragment and fragment.index("ag-busy") < fragment.index("ag-one")
    assert '<td class="status">waiting for you</td>' in fragment
    status, _, link = request(port, "/waiting", token=token)
    assert status == 200 and link.startswith('<a id="waiting"') and '<span class="count">1</span>' in link
