"""The console in a real browser: headless Chromium (Debian's) driven by Selenium through chromedriver.

A real `runtime console` over a state folder the runtime's own `StateDir` and `ApprovalStore` write: the
page opens from the printed URL, or a link to any page with the token, and drops the token from the address
bar; a service on another loopback port the same browser opens afterwards receives nothing that opens the
console; a run written while it is open
appears without a reload; an agent whose names and output carry HTML and terminal escapes renders as text
(no script runs, no element is made); a waiting call is approved with a click. Screenshots of each page
are kept in `.cache/console-screenshots/`.
"""

from __future__ import annotations

import http.client
import http.server
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from runtime.spawn.outcome import Attempt
from runtime.spawn.state import RunRecord, StateDir
from tests.console.conftest import Console
from tests.console.conftest import click as _click
from tests.console.conftest import shot as _shot
from tests.console.conftest import wait as _wait

pytestmark = pytest.mark.slow
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">\x1b[31mred\u202e"


@pytest.fixture
def console(tmp_path):
    state = StateDir(tmp_path / "state")
    (state.root / "runs").mkdir(parents=True)
    state.write(RunRecord(agent_id="ag-first", status="ok", role="edit-local", label="ok",
                          attempts=(Attempt(number=1, turns=3, tool_calls=5, denials=1, tokens=900, cost_usd=0.01),)))
    running = Console(state.root)
    try:
        yield state, running.url
    finally:
        running.stop()


def test_the_home_page_opens_from_the_printed_url_and_shows_a_new_run_live(browser, console):
    state, url = console
    browser.get(url)
    assert urlsplit(browser.current_url).query == ""  # the token left the address bar
    assert "ag-first" in browser.find_element("id", "runs").text
    _shot(browser, "home")
    state.write(RunRecord(agent_id="ag-later", status="running", role="explorer"))
    assert _wait(lambda: "ag-later" in browser.find_element("id", "runs").text), browser.page_source
    _shot(browser, "home-live")


def test_an_agent_s_hostile_names_and_output_render_as_text(browser, console):
    state, url = console
    state.write(RunRecord(agent_id="ag-hostile", status="rejected", role=HOSTILE, label=HOSTILE, message=HOSTILE))
    browser.get(url)
    browser.get(url.split("?")[0] + "agents/ag-hostile")
    browser.find_element("tag name", "main")  # the page's content is in place
    body = browser.find_element("tag name", "body").text
    assert "<script>window.pwned=1</script>" in body  # shown, as text
    assert browser.execute_script("return window.pwned === undefined")  # and nothing of it ran
    assert not browser.find_elements("css selector", "main img")  # nor became an element
    _shot(browser, "agent-hostile")


def test_a_waiting_call_is_approved_with_a_click(browser, console):
    from runtime.approvals.store import ApprovalStore

    state, url = console
    store = ApprovalStore.for_state(state.root)
    asked, _ = store.request("ag-first", "Bash", {"command": "make deploy"},
                             "no rule of role `edit-local` runs `make deploy`", 300)
    browser.get(url)
    browser.get(url.split("?")[0] + "approvals")
    row = f'tr[data-id="{asked.id}"]'  # looked up each time: the live update redraws the table

    def shown() -> bool:
        found = browser.find_element("css selector", row)
        return "make deploy" in found.text and "s" in found.find_element("css selector", "td.expiry").text

    assert _wait(shown), browser.page_source
    _shot(browser, "approvals")
    assert _click(browser, f'{row} button[data-decision="approve"]')
    assert _wait(lambda: store.get(asked.id).allowed)
    assert _wait(lambda: "approved" in browser.find_element("css selector", row).text)
    assert "(console)" in (store.get(asked.id).decided_by or "")
    _shot(browser, "approvals-decided")


def test_without_the_token_the_browser_gets_only_a_refusal(browser, console):
    state, url = console
    browser.get(url.split("?")[0])
    assert _wait(lambda: browser.find_element("tag name", "body").text.startswith("refused: ")), browser.page_source
    assert "ag-first" not in browser.page_source


def test_a_deep_link_with_the_token_opens_its_page_and_leaves_no_token_behind(browser, console):
    state, url = console
    base = url.split("?")[0].rstrip("/")
    token = url.split("token=", 1)[1]
    browser.get(f"{base}/agents/ag-first?token={token}")
    assert browser.find_element("tag name", "h1").text == "agent ag-first"
    assert "edit-local" in browser.find_element("tag name", "main").text
    assert browser.current_url == f"{base}/agents/ag-first"  # out of the address bar and the history entry
    assert token not in browser.execute_script("return window.location.href + document.documentElement.outerHTML")
    browser.find_element("css selector", 'nav a[href="/approvals"]').click()  # a link: the token is kept
    assert _wait(lambda: browser.current_url == f"{base}/approvals")
    assert browser.find_element("tag name", "h1").text == "waiting for you"
    browser.back()  # the history holds the page, never the link that brought the token
    assert _wait(lambda: browser.current_url == f"{base}/agents/ag-first"), browser.current_url
    assert browser.find_element("tag name", "h1").text == "agent ag-first"
    browser.back()
    assert token not in browser.current_url


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Another service on loopback (a dev server, something an agent started): it keeps what it is sent."""

    seen: list[tuple[str, dict[str, str]]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        answer = b"<!doctype html><title>dev server</title><p>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


def test_a_service_on_another_loopback_port_receives_nothing_that_opens_the_console(browser, console):
    state, url = console
    token = url.split("token=", 1)[1]
    port = int(urlsplit(url).port or 0)
    browser.get(url)  # the person uses the console
    assert "ag-first" in browser.find_element("id", "runs").text
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    _Recorder.seen = []
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        for host in ("127.0.0.1", "localhost"):
            browser.get(f"http://{host}:{other.server_address[1]}/page")
            assert "hello" in browser.find_element("tag name", "body").text
            stored = browser.execute_script("return JSON.stringify(window.localStorage)")
            assert token not in stored  # another origin's storage: the console's token is not there
    finally:
        other.shutdown()
        other.server_close()
    assert len(_Recorder.seen) >= 2
    for path, headers in _Recorder.seen:
        assert "cookie" not in headers and token not in path and not any(token in v for v in headers.values())
        # Replayed at the console, what that service received opens nothing: the shell alone, or a refusal.
        replay = {k: v for k, v in headers.items() if k not in ("host", "connection")}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/runs", headers={**replay, "Host": f"127.0.0.1:{port}"})
        answer = conn.getresponse()
        body = answer.read().decode()
        conn.close()
        assert "ag-first" not in body and "csrf-token" not in body, (answer.status, body)


def test_waiting_calls_are_decided_with_keys(browser, console):
    from runtime.approvals.store import ApprovalStore

    state, url = console
    store = ApprovalStore.for_state(state.root)
    first, _ = store.request("ag-first", "Bash", {"command": "make one"}, "asked", 300)
    second, _ = store.request("ag-first", "Bash", {"command": "make two"}, "asked", 300)
    base = url.split("?")[0].rstrip("/")
    browser.get(f"{base}/approvals?token={url.split('token=', 1)[1]}")
    assert "2" in browser.find_element("css selector", "#waiting .count").text  # the header counts them
    browser.implicitly_wait(0)  # what is gone is looked for at once: the waits below poll
    body = browser.find_element("tag name", "body")
    body.send_keys("j")
    body.send_keys("j")  # the second call
    assert "selected" in browser.find_element("css selector", f'tr[data-id="{second.id}"]').get_attribute("class")
    body.send_keys("d")
    assert _wait(lambda: store.get(second.id).status == "denied"), store.get(second.id)
    assert store.get(first.id).pending  # only the chosen call was decided
    assert _wait(lambda: not browser.find_elements("css selector", f'table.approvals tr[data-id="{second.id}"]'))
    browser.find_element("tag name", "body").send_keys("a")  # none chosen: the first waiting call
    assert _wait(lambda: store.get(first.id).allowed)
    assert _wait(lambda: not browser.find_elements("css selector", "#waiting .count"))  # nothing waits now


def _agent_change(tmp_path: Path, agent_id: str, files: dict[str, str]) -> tuple[Path, StateDir]:
    """A repository whose agent ``agent_id`` committed ``files`` on its branch, and a state folder whose record of
    that agent's run names the change (the console opened in the repository shows it)."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", *args], check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    (repo / "README.md").write_text("# r\n")
    git("add", "-A")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    git("checkout", "-qb", f"agent/{agent_id}")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git("add", "-A")
    git("commit", "-qm", "the agent's change")
    head = git("rev-parse", "HEAD")
    git("checkout", "-q", "main")
    state = StateDir(tmp_path / "state")
    (state.root / "runs").mkdir(parents=True)
    state.write(RunRecord(agent_id=agent_id, status="ok", role="edit-local", base=base, branch=f"agent/{agent_id}",
                          commit=head, attempts=(Attempt(number=1),)))
    return repo, state


def test_files_git_quotes_are_shown_in_the_browser_under_their_real_names(browser, tmp_path):
    names = ["café.md", 'q"uote.md', "with space.md", "naïve dir/ünï.py"]
    repo, state = _agent_change(tmp_path, "ag-names", {name: f"{name}\n" for name in names})
    running = Console(state.root, cwd=repo)
    try:
        base_url = running.url.split("?")[0].rstrip("/")
        browser.get(f"{base_url}/agents/ag-names/diff?token={running.url.split('token=', 1)[1]}")
        browser.find_element("css selector", "section.file")
        shown = [h.text for h in browser.find_elements("css selector", "section.file h2")]
        assert sorted(shown) == sorted(names), shown  # never /dev/null, never git's quoting
        paths = [s.get_attribute("data-path") for s in browser.find_elements("css selector", "section.file")]
        assert sorted(paths) == sorted(names)
        _shot(browser, "change-names")
    finally:
        running.stop()


def test_a_big_change_being_read_holds_up_no_live_page(browser, tmp_path):
    """A change of megabytes, asked for over and over, while a person's home page is open: a run written
    meanwhile still shows on that page live (the change is read in a worker, a page's worth at a time)."""
    import threading

    line = "value = compute(" + ", ".join(f"arg_{k}" for k in range(30)) + ")\n"
    repo, state = _agent_change(tmp_path, "ag-big", {f"gen_{f:02d}.py": line * (300_000 // len(line)) for f in range(24)})
    running = Console(state.root, cwd=repo)
    stop, answers = threading.Event(), []

    def read_the_change() -> None:
        import http.client

        port = int(urlsplit(running.url).port or 0)
        while not stop.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("GET", "/agents/ag-big/diff", headers={"Host": f"127.0.0.1:{port}",
                                                                  "X-Console-Token": running.url.split("token=", 1)[1]})
            answer = conn.getresponse()
            answers.append((answer.status, len(answer.read())))
            conn.close()

    reader = threading.Thread(target=read_the_change, daemon=True)
    try:
        browser.get(running.url)
        assert "ag-big" in browser.find_element("id", "runs").text
        reader.start()
        _wait(lambda: answers, 30)  # the change has been read once: the reader is at it again
        state.write(RunRecord(agent_id="ag-meanwhile", status="running", role="explorer"))
        assert _wait(lambda: "ag-meanwhile" in browser.find_element("id", "runs").text, 10), browser.page_source
        assert answers and all(status == 200 and size < 2_000_000 for status, size in answers), answers[:3]
    finally:
        stop.set()
        reader.join(120)
        running.stop()
