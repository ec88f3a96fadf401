"""Egress end to end: a read-only agent fetches from an allowed site, through its proxy, and nowhere else.

The site is a local HTTP server; a project catalog (a copy of the shipped one)
opens 127.0.0.1 and the server's port for the read-only role, the only way a
loopback address is ever reachable. The task declares `localhost` as its
domain. The agent's WebFetch to the site passes the gate, leaves the sandbox
through the relay and the proxy, and is audited; a fetch of another host is
denied by the gate; nothing else leaves. The proxy's audit records say so: the
decision when it was made, and the bytes each way when the exchange ended.
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading

import pytest

from tests.conftest import REPO
from tests.spawn.conftest import Spawner


class _Site(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self):  # noqa: N802
        type(self).seen.append(self.path)
        body = b"The answer is 42."
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    _Site.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def catalog_opening_loopback(tmp_path, port: int):
    catalog = tmp_path / "catalog"
    shutil.copytree(REPO / "capabilities", catalog / "capabilities")
    shutil.copytree(REPO / "roles", catalog / "roles")
    role = catalog / "roles" / "read-only.toml"
    role.write_text(role.read_text() + f'\n[params."net::egress-allowlist"]\naddresses = ["127.0.0.1/32", "::1/128"]\n'
                                       f"ports = [80, 443, {port}]\n")
    return catalog


def test_a_read_only_agent_reaches_its_allowed_site_and_nothing_else(spawner: Spawner, site, tmp_path):
    s = spawner
    catalog = catalog_opening_loopback(tmp_path, site)
    report = "Summary: the site says 42.\n## Findings\n- [LOW] the answer is 42\n"
    task = s.task(agent_id="ag-web", role="read-only", scope={}, verification={}, output={},
                  script=[[{"name": "WebFetch", "input": {"url": f"http://localhost:{site}/page", "prompt": "read"}}],
                          [{"name": "WebFetch", "input": {"url": "http://example.org/", "prompt": "read"}}],
                          report])
    text = task.read_text() + '\n[network]\nallowed-domains = ["localhost"]\n'
    task.write_text(text)
    # Unattended: a domain off the list, which a person would be asked about, is refused at once.
    proc = s.cli("spawn", "--json", "--unattended", "--catalog", str(catalog), str(task), timeout=150)
    outcome = json.loads(proc.stdout)
    assert outcome["label"] == "ok", proc.stdout + proc.stderr
    assert _Site.seen == ["/page"]  # the one allowed fetch arrived, through the proxy
    egress = [e["data"] for e in s.audit(kind="egress", agent="ag-web")]
    assert [(e["event"], e["host"], e.get("decision")) for e in egress] == [
        ("request", "localhost", "allow"), ("end", "localhost", None)]  # the decision first, then the tally
    assert egress[1]["id"] == egress[0]["id"] and egress[1]["bytes_down"] > 0 and egress[1]["ended"] == "closed"
    gate = [e["data"] for e in s.audit(kind="gate", agent="ag-web") if e["data"].get("tool") == "WebFetch"]
    assert [e["decision"] for e in gate] == ["allow", "deny"]
    assert "example.org" in gate[1]["reason"]


def test_without_declared_domains_there_is_no_way_out(spawner: Spawner, site, tmp_path):
    s = spawner
    catalog = catalog_opening_loopback(tmp_path, site)
    probe = (f"python3 -c \"import urllib.request as u; print(u.urlopen('http://localhost:{site}/x', timeout=5).read())\" "
             "> $HOME/out 2>&1; printf 'Summary: none\\n## Findings\\n- [LOW] none\\n' > $RUNTIME_REPORT_FILE")
    task = s.task(agent_id="ag-noweb", role="read-only", scope={}, verification={}, output={}, command=probe)
    proc = s.cli("spawn", "--json", "--catalog", str(catalog), str(task), timeout=150)
    assert json.loads(proc.stdout)["label"] == "ok", proc.stdout + proc.stderr
    assert _Site.seen == []
    assert "refused" in (s.run_dir("ag-noweb") / "home" / "out").read_text().lower()
    assert s.audit(kind="egress", agent="ag-noweb") == []
