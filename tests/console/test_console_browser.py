"""The console in a real browser: headless Chromium (Debian's) driven by Selenium through chromedriver.

A real `runtime console` over a state folder the runtime's own `StateDir` and `ApprovalStore` write: the
page opens from the printed URL and drops the token from the address bar; a run written while it is open
appears without a reload; an agent whose names and output carry HTML and terminal escapes renders as text
(no script runs, no element is made); a waiting call is approved with a click. Screenshots of each page
are kept in `.cache/console-screenshots/`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from runtime.spawn.outcome import Attempt
from runtime.spawn.state import RunRecord, StateDir
from tests.console.conftest import Console
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
    row = browser.find_element("css selector", f'tr[data-id="{asked.id}"]')
    assert "make deploy" in row.text and "s" in row.find_element("css selector", "td.expiry").text
    _shot(browser, "approvals")
    row.find_element("css selector", 'button[data-decision="approve"]').click()
    assert _wait(lambda: store.get(asked.id).allowed)
    assert _wait(lambda: "approved" in browser.find_element("css selector", f'tr[data-id="{asked.id}"]').text)
    assert "(console)" in (store.get(asked.id).decided_by or "")
    _shot(browser, "approvals-decided")


def test_without_the_token_the_browser_gets_only_a_refusal(browser, console):
    state, url = console
    browser.get(url.split("?")[0])
    assert browser.find_element("tag name", "body").text.startswith("refused: ")
    assert "ag-first" not in browser.page_source
