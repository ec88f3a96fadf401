"""The sandbox `runtime hook install` sets takes effect in the real Claude Code CLI, seen from the host.

Each test installs the hook with the real `runtime hook install` into a project whose own settings
allow Bash and Write (as a person's might; the hook's allows defer to them), then runs the real CLI
with the project's settings files, as a person's session reads them, against the fake model.

The CLI's sandbox is no boundary for root (its commands run as host root), so when the suite runs as
root the CLI, the hook and the install run as the unprivileged user the runtime gives its agents
(`runtime.sandbox.identity`), switched to with setpriv; the project and the home are that user's, and
the folder written to outside the project is too: only the sandbox stands between a command and it.
Every refusal is then checked on the host, beside a write the same script made inside the scope, so
the script is known to have run.

- A test script the agent writes and runs with pytest (which the gate allows) tries to write outside
  the repository, into `.claude/` and into `.git/hooks/`: each fails with the kernel's read-only file
  system error, nothing lands, and its write inside the repository does.
- A role with one domain (`localhost`): a test script reaches the local site by that name through the
  CLI's proxy, and the same site by another name (127.0.0.1) is blocked by the allowlist; a direct
  connection fails too. The site saw the allowed request only.
- A Bash call with `dangerouslyDisableSandbox` is refused by the gate (its reason is what the model
  got back), and what it would have done did not happen.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from runtime.sandbox.agent import runtime_binds
from runtime.sandbox.identity import agent_user
from tests.conftest import REPO, RUNTIME, require
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import find_cli, missing_cli_reason, run_claude
from tests.support import user_git

pytestmark = pytest.mark.real_client

VENV_BIN = str(Path(RUNTIME).parent)
PATH = f"{VENV_BIN}:/usr/bin:/bin"

FETCHER = """[role]
name = "fetcher"
display-name = "explorer that may reach one site"
description = "The explorer's probes, with the network open to the domains below and nothing else."
use-cases = ["Tests that call a local site"]

[capabilities]
extends = "explorer"
relaxes = ["net::no-network"]
required = ["net::egress-allowlist"]

[tools]
shown = ["Read", "Glob", "Grep", "Bash"]

[escalation]
policy = "ask-via-return"

[params."net::egress-allowlist"]
domains = ["localhost"]
"""


def _showing_the_interpreter() -> list[str]:
    """A bubblewrap over the whole host that only puts an empty /root in place of root's home, with the
    folders of the interpreter that runs the runtime bound back in where they lie below it (a pyenv
    Python in /root/.pyenv): the hook, which the CLI starts as the unprivileged user, must be able to run.
    Everything else is the host itself, so what the tests check afterwards is the host."""
    binds = [p for p in runtime_binds() if p.is_relative_to("/root")]
    if not binds:
        return []
    folders = sorted({str(a) for p in binds for a in p.parents if a.is_relative_to("/root") and str(a) != "/root"})
    return ["bwrap", "--dev-bind", "/", "/", "--tmpfs", "/root",
            *[arg for a in folders for arg in ("--perms", "0755", "--dir", a)],  # bubblewrap copies 0700 otherwise
            *[arg for p in binds for arg in ("--ro-bind", str(p), str(p))], "--die-with-parent", "--"]


class Session:
    """A project, a home and a policy cache owned by the user the CLI runs as, and how to run as it."""

    def __init__(self, tmp: Path) -> None:
        user = agent_user()
        self.prefix = [] if user is None else [*_showing_the_interpreter(), "setpriv", f"--reuid={user.uid}",
                                                f"--regid={user.gid}", "--clear-groups", "--inh-caps=-all"]
        self.owner = None if user is None else (user.uid, user.gid)
        self.project = tmp / "project"
        self.home = tmp / "home"
        self.outside = tmp / "outside"  # the user's own folder beside the project
        self.cache = tmp / "cache"
        for folder in (self.home, self.outside, self.cache):
            folder.mkdir()
        self.env = {"PATH": PATH, "RUNTIME_CACHE_DIR": str(self.cache), "RUNTIME_CLAUDE_BIN": str(find_cli())}

    def own(self, *paths: Path) -> None:
        if self.owner is None:
            return
        for path in paths:
            for p in [path, *path.rglob("*")]:
                os.lchown(p, *self.owner)

    def prepare(self, files: dict[str, str]) -> None:
        user_git(self.project.parent, "init", "-q", str(self.project))
        for name, text in files.items():
            (self.project / name).parent.mkdir(parents=True, exist_ok=True)
            (self.project / name).write_text(text)
        claude = self.project / ".claude"
        claude.mkdir()
        (claude / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash", "Write"]}}))
        # The person has opened the project before (the CLI honours a project's allow rules only then).
        (self.home / ".claude.json").write_text(json.dumps({"projects": {str(self.project): {"hasTrustDialogAccepted": True}}}))
        self.own(self.project, self.home, self.outside, self.cache)

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*self.prefix, *args], cwd=cwd or self.project, capture_output=True, text=True,
                              timeout=120, env={**self.env, "HOME": str(self.home)})

    def install(self, *args: str) -> str:
        proc = self.run(RUNTIME, "hook", "install", *args)
        assert proc.returncode == 0, proc.stderr
        data = json.loads((self.project / ".claude/settings.json").read_text())
        assert data["permissions"] == {"allow": ["Bash", "Write"]}, data  # the person's own keys stay
        assert data["sandbox"]["enabled"] is True and data["sandbox"]["allowUnsandboxedCommands"] is False, data
        return proc.stdout

    def claude(self, turns: list, tools: list[str]):
        with FakeAnthropicServer(turns) as server:
            run = run_claude("Follow the scripted steps.", self.project, None, server.url, tools=tools,
                             home=self.home, prefix=self.prefix, env=self.env, timeout=180)
        assert run.returncode == 0 and run.result is not None, run.describe()
        return run, server


@pytest.fixture
def session():
    reason = missing_cli_reason()
    require(reason is None, reason or "")
    for program in ("bwrap", "socat", "setpriv"):
        require(shutil.which(program) is not None, f"{program} is not installed (the CLI's Linux sandbox needs "
                                                   "bubblewrap and socat)")
    # Not below pytest's own temporary folder, which only root may enter.
    base = Path(tempfile.mkdtemp(prefix="cc-sandbox-"))
    base.chmod(0o755)
    try:
        s = Session(base)
        probe = s.run(RUNTIME, "--version", cwd=base) if s.prefix else None
        require(probe is None or probe.returncode == 0,
                f"the unprivileged user cannot run the runtime from {VENV_BIN}: {probe.stderr if probe else ''}")
        yield s
    finally:
        shutil.rmtree(base)


def _content(server, tool_id: str) -> str:
    result = server.tool_result_for(tool_id)
    assert result is not None
    return str(result.get("content"))


def test_writes_outside_the_scope_from_a_script_the_agent_runs_are_refused_by_the_os(session):
    s = session
    s.prepare({"src/app.py": "x = 1\n", "tests/__init__.py": ""})
    out = s.install("--catalog", str(REPO))
    assert "Claude Code's sandbox set for role `session`" in out and "network to no domain" in out, out
    assert "the gate judges Bash in strict mode" in out, out
    escaped, planted, hook = s.outside / "escaped.txt", s.project / ".claude/planted.json", s.project / ".git/hooks/pre-commit"
    script = f'''import pathlib


def attempt(path):
    try:
        pathlib.Path(path).write_text("escaped\\n")
    except OSError as exc:
        return exc.strerror
    return "written"


def test_escape():
    tried = {{name: attempt(path) for name, path in (("outside", {str(escaped)!r}), ("claude", ".claude/planted.json"),
                                                    ("git-hook", ".git/hooks/pre-commit"), ("inside", "src/inside.txt"))}}
    assert tried == {{}}, tried
'''
    turns = [
        [{"name": "Write", "input": {"file_path": str(s.project / "tests/test_escape.py"), "content": script}}],
        [{"name": "Bash", "input": {"command": "pytest -q tests/test_escape.py"}}],
        "Done.",
    ]
    run, server = s.claude(turns, ["Bash", "Write"])
    (write_id,), (pytest_id,), () = server.scripted_tool_use_ids()
    assert (s.project / "tests/test_escape.py").is_file(), run.describe()
    assert (s.project / "tests/test_escape.py").read_text() == script
    said = _content(server, pytest_id)
    for name in ("outside", "claude", "git-hook"):
        assert f"'{name}': 'Read-only file system'" in said, said
    assert "'inside': 'written'" in said, said  # the script ran, and the scope is writable
    # The host afterwards: only the write inside the repository landed.
    assert (s.project / "src/inside.txt").read_text() == "escaped\n"
    assert not escaped.exists() and not planted.exists() and not hook.exists()
    assert sorted(p.name for p in s.outside.iterdir()) == []


class _Site(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self):  # noqa: N802
        type(self).seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "7")
        self.end_headers()
        self.wfile.write(b"reached")

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


def test_the_network_reaches_the_roles_domains_only(session, site):
    s = session
    script = f'''import os
import urllib.request


def fetch(url, proxy):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({{"http": proxy}} if proxy else {{}}))
    try:
        return opener.open(url, timeout=10).read().decode()
    except Exception as exc:  # noqa: BLE001
        return f"failed: {{exc}}"


def test_net():
    proxy = os.environ.get("http_proxy")
    for name in ("no_proxy", "NO_PROXY"):  # the sandbox lists loopback there; urllib would then go direct
        os.environ.pop(name, None)
    got = {{"listed": fetch("http://localhost:{site}/listed", proxy), "off-list": fetch("http://127.0.0.1:{site}/off-list", proxy),
           "direct": fetch("http://127.0.0.1:{site}/direct", None), "proxy": bool(proxy)}}
    assert got == {{}}, got
'''
    s.prepare({".agent-runtime/roles/fetcher.toml": FETCHER, "tests/test_net.py": script})
    out = s.install("--role", "fetcher")
    assert "Claude Code's sandbox set for role `fetcher`" in out and "network to localhost" in out, out
    data = json.loads((s.project / ".claude/settings.json").read_text())
    assert data["sandbox"]["network"]["allowedDomains"] == ["localhost"]
    run, server = s.claude([[{"name": "Bash", "input": {"command": "pytest -q tests/test_net.py"}}], "Done."], ["Bash"])
    (pytest_id,), () = server.scripted_tool_use_ids()
    said = _content(server, pytest_id)
    assert "'listed': 'reached'" in said and "'proxy': True" in said, said  # the way out works, for the listed name
    assert "'off-list': 'failed: HTTP Error 403" in said and "'direct': 'failed: " in said, said
    assert _Site.seen == ["/listed"], _Site.seen  # seen from the host: nothing else arrived


def test_a_call_asking_to_leave_the_sandbox_is_refused_by_the_gate(session):
    s = session
    s.prepare({"src/app.py": "x = 1\n"})
    s.install("--catalog", str(REPO))
    marker = s.outside / "unsandboxed.txt"
    turns = [[{"name": "Bash", "input": {"command": f"touch {marker}", "dangerouslyDisableSandbox": True}}], "Done."]
    run, server = s.claude(turns, ["Bash"])
    (bash_id,), () = server.scripted_tool_use_ids()
    assert [d["tool_use_id"] for d in run.permission_denials] == [bash_id], run.describe()
    said = _content(server, bash_id)
    assert said.startswith("PreToolUse:Bash") and "commands run only inside the sandbox" in said, said
    assert not marker.exists()
