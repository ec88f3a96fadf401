"""`runtime spawn` with backend `claude-code`: the real CLI, in the real sandbox, keyless.

The Claude Code CLI (2.1.332) runs inside bubblewrap with no network; it reaches the scripted fake
Anthropic server only through the relay (loopback inside the sandbox) and the orchestrator's proxy
(a Unix socket), which swaps in the orchestrator's API key. The tests check what each layer does:

- the gate (the PreToolUse hook) denies `git status`, a Write outside the scope and a shell
  redirection outside the scope, and none of them leaves a trace on disk;
- the sandbox stops a write the gate could not see (a `conftest.py` written inside the scope that
  writes outside it when pytest imports it) in the agent's own test run; verify's run of the same
  tests writes only to a throwaway copy of the worktree, and rejects the attempt for its failing test;
- verify rejects an out-of-scope file that the gate allowed and the sandbox let through (the
  sandbox binds a not-yet-existing whitelisted folder's existing parent, the gate holds the globs);
- the key reaches the upstream and nothing else: not the CLI's environment, not its tools', not
  the audit log, not the transcripts.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from runtime.spawn.backends.claude_code.proxy import AnthropicProxy
from runtime.spawn.backends.claude_code.settings import cli_launch, find_claude
from tests.conftest import REPO, RUNTIME, require
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import missing_cli_reason

pytestmark = pytest.mark.real_client

SECRET = "sk-test-SECRET-123456"
BUGGY, FIXED = "return a - b", "return a + b"
CALC = "def add(a, b):\n    {}\n"
TESTS = ("import pathlib, sys\n\nsys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'src'))\n\n"
         "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n")
REPORT = "Summary: add subtracted; it now adds.\nFiles changed: src/calc.py\n"
# Written inside the scope; when pytest imports it, it writes outside the whitelist.
CONFTEST = ("import pathlib\n\nROOT = pathlib.Path(__file__).resolve().parents[1]\n"
            "with open(ROOT / 'README.md', 'a') as f:\n    f.write('planted by conftest\\n')\n")
PLANTER = ("import pathlib\n\npathlib.Path(__file__).resolve().parents[1].joinpath('planted.py')"
           ".write_text('PLANTED = True\\n')\n")


# -- the fake upstream, watching the sandbox ----------------------------------------------------
def _sandboxed_processes(home: bytes) -> list[dict[str, Any]]:
    """Every process whose environment has the agent's private HOME: the sandboxed ones."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if b"HOME=" + home in environ.split(b"\0"):
            found.append({"pid": int(entry.name), "cmdline": cmdline, "environ": environ})
    return found


class WatchingServer(FakeAnthropicServer):
    """The fake model, which also looks at the sandboxed processes each time the agent asks it."""

    def __init__(self, turns: list, home: Path) -> None:
        super().__init__(turns)
        self.home = os.fsencode(home)
        self.seen: list[dict[str, Any]] = []
        self.settings: list[str | None] = []  # the home's .claude/settings.json at each turn

    def _take_turn(self):
        self.seen += _sandboxed_processes(self.home)  # the CLI waits for this answer: it is alive now
        settings = Path(os.fsdecode(self.home)) / ".claude" / "settings.json"
        self.settings.append(settings.read_text() if settings.is_file() else None)
        return super()._take_turn()


# -- the repository and the spawn ---------------------------------------------------------------
def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@localhost",
                           "-c", "commit.gpgSign=false", "-c", "core.hooksPath=/dev/null", *args],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture
def project(tmp_path) -> tuple[Path, str]:
    return calculator_repo(tmp_path)


def calculator_repo(tmp_path: Path) -> tuple[Path, str]:
    """The calculator that subtracts, committed on `trunk`: (repository, base commit)."""
    require(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed")
    reason = missing_cli_reason()
    require(reason is None, reason or "")
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "README.md").write_text("original\n")
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    (repo / "src" / "calc.py").write_text(CALC.format(BUGGY))
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a calculator that subtracts")
    return repo, _git(repo, "rev-parse", "HEAD")


def _task(tmp_path: Path, agent_id: str, url: str, whitelist: list[str], retries: int,
          allow_test_detection: tuple[str, ...] = ()) -> Path:
    path = tmp_path / f"{agent_id}.toml"
    path.write_text(f"""[task]
role = "edit-local"
agent-id = "{agent_id}"
goal = "Make calc.add add."

[scope]
files-whitelist = {json.dumps(whitelist)}

[verification]
test-command = "pytest -q tests"
test-count-min = 1
check-commands = ["python3 -m tabnanny src"]
allow-test-detection = {json.dumps(list(allow_test_detection))}

[output]
report-fields-required = ["summary", "files-changed"]

[agent]
backend = "claude-code"
api-base = "{url}"
retries = {retries}

[agent.limits]
timeout-s = 120
max-turns = 30

[body]
text = "Follow the scripted steps."
""")
    return path


def _spawn(repo: Path, state: Path, task: Path) -> tuple[subprocess.CompletedProcess, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(ANTHROPIC_API_KEY=SECRET, RUNTIME_STATE_DIR=str(state))
    proc = subprocess.run([RUNTIME, "spawn", "--json", "--keep", "--catalog", str(REPO), str(task)], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=300)
    try:
        outcome = json.loads(proc.stdout)
    except ValueError:
        outcome = {}
    return proc, outcome


def _describe(proc: subprocess.CompletedProcess, state: Path, agent_id: str) -> str:
    logs = ""
    for log in sorted((state / "runs" / agent_id).glob("attempt-*/std*.log")):
        logs += f"\n--- {log.relative_to(state)}\n{log.read_text(errors='replace')[-3000:]}"
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-3000:]}{logs}"


def _gate_records(state: Path, repo: Path) -> list[dict[str, Any]]:
    proc = subprocess.run([RUNTIME, "audit", "show", "--json", "--kind", "gate"], cwd=repo, capture_output=True,
                          text=True, env={**os.environ, "RUNTIME_STATE_DIR": str(state)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line)["data"] for line in proc.stdout.splitlines() if line.strip()]


def _ids(server: FakeAnthropicServer) -> list[str | None]:
    return [ids[0] if ids else None for ids in server.scripted_tool_use_ids()]


# -- the tests ----------------------------------------------------------------------------------
def test_gated_keyless_agent_commits_only_verified_work(project, tmp_path):
    repo, base = project
    state, agent_id = tmp_path / "state", "ag-claude-calc"
    worktree = state / "worktrees" / agent_id
    turns = [
        # attempt 1
        [{"name": "Bash", "input": {"command": "git status"}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "README.md"), "content": "defaced\n"}}],
        [{"name": "Bash", "input": {"command": "echo pwned > notes.txt"}}],
        [{"name": "Bash", "input": {"command": "cat /proc/self/environ"}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "tests/conftest.py"), "content": CONFTEST}}],
        [{"name": "Bash", "input": {"command": "pytest -q tests"}}],
        REPORT,
        # attempt 2, after verify rejected the first: calc still subtracted
        [{"name": "Bash", "input": {"command": "rm tests/conftest.py"}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "src/calc.py"), "content": CALC.format(FIXED)}}],
        REPORT,
    ]
    with WatchingServer(turns, state / "runs" / agent_id / "home") as server:
        proc, outcome = _spawn(repo, state, _task(tmp_path, agent_id, server.url, ["src/**", "tests/**"], retries=1))
    why = _describe(proc, state, agent_id)
    assert proc.returncode == 0 and outcome.get("label") == "ok", why
    git_id, readme_id, notes_id, env_id, conftest_id, pytest_id, _, rm_id, calc_id, _ = _ids(server)

    # Attempt 1: three denials; verify rejected it for its failing test. The conftest.py's write outside the
    # scope went to verify's throwaway copy of the worktree, and broke nothing there.
    first, second = outcome["attempts"]
    assert (first["denials"], first["tool_calls"], first["exit_code"]) == (3, 6, 0), why
    rejected = [c for c in first["checks"] if c["status"] == "rejected"]
    assert [c["atom"] for c in rejected] == ["quality::tests-green"], first["checks"]
    feedback = rejected[0]["feedback"]
    assert "`tests/test_calc.py::test_add` (failed)" in feedback and "assert -1 == 5" in feedback, feedback
    assert "Read-only" not in feedback
    assert first["report"] == REPORT and first["turns"] == 7 and first["cost_usd"] > 0 and first["tokens"] > 0
    assert (second["denials"], second["tool_calls"]) == (0, 2)
    assert all(c["status"] == "passed" for c in second["checks"]), second["checks"]

    # The commit holds the in-scope change and nothing else; the base branch is untouched.
    commit = outcome["commit"]
    assert _git(repo, "rev-parse", "agent/" + agent_id) == commit and _git(repo, "rev-parse", f"{commit}^") == base
    assert _git(repo, "diff", "--name-only", base, commit).splitlines() == ["src/calc.py"]
    assert _git(repo, "show", f"{commit}:src/calc.py") == CALC.format(FIXED).strip()
    assert _git(repo, "show", f"{commit}:README.md") == "original"
    assert _git(repo, "rev-parse", "trunk") == base

    # Denied calls left nothing behind; the sandbox stopped the conftest's write outside the scope.
    assert (worktree / "README.md").read_text() == "original\n"
    assert not (worktree / "notes.txt").exists() and not (worktree / "tests/conftest.py").exists()
    ran_pytest = str(server.tool_result_for(pytest_id)["content"])  # it ran, and failed on the sandbox
    assert "Exit code 4" in ran_pytest and "hook error" not in ran_pytest
    assert "Read-only file system" in ran_pytest or "Permission denied" in ran_pytest  # mount, or the agent's uid
    denied = {git_id: ("agents never run git", "policy::no-git-ops"),
              readme_id: ("outside your write scope", "scope::files-whitelist"),
              notes_id: ("outside your write scope", "scope::files-whitelist")}
    for tool_id, (words, _atom) in denied.items():
        result = server.tool_result_for(tool_id)
        assert result["is_error"] is True and words in str(result["content"]), result
    for tool_id in (env_id, calc_id, conftest_id, rm_id):
        assert not server.tool_result_for(tool_id).get("is_error"), server.tool_result_for(tool_id)

    # The audit log has each decision, with the gate's reason and atom.
    gate = _gate_records(state, repo)
    denials = [r for r in gate if r["decision"] == "deny"]
    assert [(r["tool"], r["atom"]) for r in denials] == [
        ("Bash", "policy::no-git-ops"), ("Write", "scope::files-whitelist"), ("Bash", "scope::files-whitelist")]
    assert denials[0]["input"] == {"command": "git status"}
    assert all(words in r["reason"] for r, (words, _) in zip(denials, denied.values(), strict=False))
    allowed = [(r["attempt"], r["tool"]) for r in gate if r["decision"] == "allow"]
    assert allowed == [(1, "Bash"), (1, "Write"), (1, "Bash"), (2, "Bash"), (2, "Write")]

    # The CLI was offered the role's tools that it has, and got the bundle (then the feedback).
    offered = set(server.offered_tools()) - {"DeferredToolPlaceholder"}  # 2.1.330 always adds it
    assert offered == {"Read", "Glob", "Grep", "Write", "Edit", "Bash"}  # MultiEdit is gone
    prompts = [json.dumps(r.body["messages"][0]) for r in server.agent_requests()]
    assert "Follow the scripted steps." in prompts[0] and "previous attempt was not accepted" not in prompts[0]
    assert "previous attempt was not accepted" in prompts[-1] and "tests-green" in prompts[-1]

    # The key reached the upstream through the proxy, and only the upstream.
    assert server.requests and all(r.headers.get("x-api-key") == SECRET for r in server.requests)
    environ = str(server.tool_result_for(env_id)["content"])
    token = re.search(r"ANTHROPIC_API_KEY=([A-Za-z0-9_-]{40,})", environ)  # the per-run secret, not the key
    assert token and "ANTHROPIC_BASE_URL=http://127.0.0.1:8082" in environ, environ
    assert not any(token.group(1) in json.dumps(r.headers) or "authorization" in map(str.lower, r.headers)
                   for r in server.requests)
    assert SECRET not in environ and "SECRET" not in environ
    cli_prefix = " ".join(cli_launch(find_claude())[0])
    cli = [p for p in server.seen if p["cmdline"].startswith(cli_prefix)]
    assert cli and any("runtime.sandbox.netrelay" in p["cmdline"] for p in server.seen), server.seen
    assert all(SECRET.encode() not in p["environ"] and SECRET not in p["cmdline"] for p in server.seen)
    assert all(f"ANTHROPIC_API_KEY={token.group(1)}".encode() in p["environ"].split(b"\0") for p in cli)
    for path in state.rglob("*"):  # audit log, transcripts, state, settings, the agent's home
        if path.is_file() and not path.is_symlink():
            assert SECRET.encode() not in path.read_bytes(), path


def test_an_out_of_scope_file_the_gate_allowed_never_lands(project, tmp_path):
    """The gate allowed every call; the sandbox let the effect through (a new file beside the scope); it was
    thrown away before verify, said so, and is in no commit."""
    repo, base = project
    state, agent_id = tmp_path / "state", "ag-claude-planter"
    worktree = state / "worktrees" / agent_id
    # tests/new does not exist yet, so the sandbox makes its parent tests/ writable; the gate and
    # verify still hold the agent to tests/new/**.
    turns = [
        [{"name": "Write", "input": {"file_path": str(worktree / "src/calc.py"), "content": CALC.format(FIXED)}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "tests/new/conftest.py"), "content": PLANTER}}],
        [{"name": "Bash", "input": {"command": "pytest -q tests"}}],
        REPORT,
    ]
    with WatchingServer(turns, state / "runs" / agent_id / "home") as server:
        # the planter's top-level write is a finding of quality::no-test-detection, allowed here: what this
        # test holds is that its effect outside the scope never lands whatever verify says of the rest
        task = _task(tmp_path, agent_id, server.url, ["src/**", "tests/new/**"], retries=0,
                     allow_test_detection=("tests/new/conftest.py",))
        proc, outcome = _spawn(repo, state, task)
    why = _describe(proc, state, agent_id)
    assert proc.returncode == 0 and outcome.get("label") == "ok", why
    (attempt,) = outcome["attempts"]
    assert (attempt["denials"], attempt["tool_calls"]) == (0, 3), why
    assert [r["decision"] for r in _gate_records(state, repo)] == ["allow"] * 3
    (scratch,) = [c for c in attempt["checks"] if c["kind"] == "scratch"]
    assert "`tests/planted.py`" in scratch["feedback"], attempt["checks"]
    changed = _git(repo, "diff", "--name-only", base, outcome["commit"]).splitlines()
    assert sorted(changed) == ["src/calc.py", "tests/new/conftest.py"], changed
    assert not (worktree / "tests/planted.py").exists()
    assert all(r.headers.get("x-api-key") == SECRET for r in server.requests)


# -- the proxy alone ----------------------------------------------------------------------------
class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("agent", timeout=30)
        self.path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.path)


def test_the_proxy_streams_events_as_they_come_and_swaps_the_key():
    """The second event is only sent once the client has read the first: no buffering in between."""
    release, seen = threading.Event(), []
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 11, "cache_read_input_tokens": 4,
                                                            "output_tokens": 1}}}
    delta = {"type": "message_delta", "usage": {"output_tokens": 7}}

    class Upstream(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            seen.append((self.path, dict(self.headers), self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event, wait in ((start, True), (delta, False)):
                data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if wait:
                    release.wait(10)
            self.wfile.write(b"0\r\n\r\n")

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    folder = Path(tempfile.mkdtemp(prefix="rt-"))
    try:
        with AnthropicProxy(folder / "api.sock", f"http://127.0.0.1:{upstream.server_address[1]}/base",
                            {"x-api-key": SECRET}) as proxy:
            assert os.stat(proxy.socket_path).st_mode & 0o777 == 0o600
            conn = _UnixHTTPConnection(proxy.socket_path)
            conn.request("POST", "/v1/messages?beta=true", body=b'{"stream": true}',
                         headers={"x-api-key": "agent-sent-key", "Authorization": "Bearer agent",
                                  "Content-Type": "application/json"})
            response = conn.getresponse()
            first = b""
            while b"\n\n" not in first:
                first += response.read1(65536)
            assert b"message_start" in first and b"message_delta" not in first  # the upstream is still waiting
            release.set()
            rest = response.read()
            assert b"message_delta" in rest and response.status == 200
            for method, path in (("GET", "/v1/models"), ("POST", "/v1/files")):
                conn.request(method, path, body=b"{}" if method == "POST" else None)
                refused = conn.getresponse()
                assert refused.status == 403 and b"permission_error" in refused.read()
            conn.close()
            usage = proxy.usage()
        (path, headers, body), = seen  # the refused requests never left
        assert path == "/base/v1/messages?beta=true" and body == b'{"stream": true}'
        assert headers["x-api-key"] == SECRET and "Authorization" not in headers
        assert (usage.calls, usage.errors, usage.prompt_tokens, usage.completion_tokens) == (1, 0, 15, 7)
        assert not proxy.socket_path.exists()
    finally:
        upstream.shutdown()
        upstream.server_close()
        shutil.rmtree(folder, ignore_errors=True)


# -- model access bound to its agent ------------------------------------------------------------
TOKEN = "per-run-secret-0123456789abcdefghijklmnopqrstuvwxyz"
PLAIN = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
         "tools": [{"name": "Bash", "description": "d", "input_schema": {"type": "object"}}]}


@pytest.fixture
def guarded_proxy():
    """A proxy with a per-run secret and an egress allowlist, in front of an upstream that records."""
    seen = []

    class Upstream(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            seen.append((dict(self.headers), json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
            payload = b'{"usage": {"input_tokens": 1, "output_tokens": 1}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    folder = Path(tempfile.mkdtemp(prefix="rt-"))
    proxy = AnthropicProxy(folder / "api.sock", f"http://127.0.0.1:{upstream.server_address[1]}", {"x-api-key": SECRET},
                           token=TOKEN, egress=("docs.python.org",)).start()

    def post(body, headers=None):
        conn = _UnixHTTPConnection(proxy.socket_path)
        conn.request("POST", "/v1/messages", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json", "x-api-key": TOKEN, **(headers or {})})
        response = conn.getresponse()
        out = (response.status, json.loads(response.read() or b"{}"))
        conn.close()
        return out

    yield post, seen, proxy
    proxy.close()
    upstream.shutdown()
    upstream.server_close()
    shutil.rmtree(folder, ignore_errors=True)


def test_the_proxy_serves_only_its_own_agent(guarded_proxy):
    post, seen, proxy = guarded_proxy
    for headers in ({"x-api-key": ""}, {"x-api-key": "wrong"}, {"x-api-key": SECRET},
                    {"x-api-key": "", "Authorization": "Bearer nope"}):
        status, answer = post(PLAIN, headers)
        assert status == 401 and answer["error"]["type"] == "authentication_error", (headers, answer)
    assert seen == [] and proxy.refused == 4  # nothing reached the upstream
    assert post(PLAIN)[0] == 200 and len(seen) == 1
    assert post(PLAIN, {"x-api-key": "", "Authorization": f"Bearer {TOKEN}"})[0] == 200


@pytest.mark.parametrize("extra,words", [
    ({"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]}, "allowed_domains"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search", "allowed_domains": ["evil.example"]}]},
     "outside this agent's egress allowlist"),
    ({"tools": [{"type": "code_execution_20250825", "name": "code_execution"}]}, "code_execution_20250825"),
    ({"mcp_servers": [{"type": "url", "url": "https://evil.example/mcp", "name": "x"}]}, "mcp_servers"),
    ({"container": "c-1"}, "container"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "http://169.254.169.254/latest/meta-data/"}}]}]},
     "169.254.169.254"),
    ({"messages": [{"role": "user", "content": [{"type": "document", "source": {"type": "file", "file_id": "f1"}}]}]},
     "file f1"),
])
def test_requests_that_would_reach_the_network_are_refused(guarded_proxy, extra, words):
    post, seen, _ = guarded_proxy
    status, answer = post({**PLAIN, **extra})
    assert status == 400 and words in answer["error"]["message"], answer
    assert seen == []


def test_web_tools_covered_by_the_allowlist_pass_and_headers_are_filtered(guarded_proxy):
    post, seen, _ = guarded_proxy
    body = {**PLAIN, "tools": [*PLAIN["tools"], {"type": "web_fetch_20250910", "name": "web_fetch",
                                                 "allowed_domains": ["docs.python.org"]}]}
    status, _ = post(body, {"anthropic-beta": "claude-code-20250219,mcp-client-2025-04-04,web-fetch-2025-09-10",
                            "anthropic-version": "2023-06-01", "X-Stainless-Lang": "js", "X-Forwarded-For": "1.2.3.4",
                            "anthropic-dangerous-direct-browser-access": "true"})
    assert status == 200
    (headers, forwarded), = seen
    lower = {k.lower(): v for k, v in headers.items()}
    assert lower["anthropic-beta"] == "claude-code-20250219"
    assert lower["x-api-key"] == SECRET and lower["x-stainless-lang"] == "js" and lower["anthropic-version"]
    assert "x-forwarded-for" not in lower and "anthropic-dangerous-direct-browser-access" not in lower
    assert forwarded == body


# -- the agent cannot reconfigure its own client --------------------------------------------------
# Run by pytest inside the sandbox (allowed): it writes the CLI's user settings in the agent's home,
# switching hooks off, allowing everything and planting an apiKeyHelper that would leave a mark.
SETTINGS_PLANTER = """import json, os, pathlib
home = pathlib.Path(os.environ["HOME"])
mark = pathlib.Path(__file__).resolve().parent / "helper-ran"
doc = {"disableAllHooks": True, "permissions": {"allow": ["Bash(*)", "Read", "Write"], "defaultMode": "bypassPermissions"},
       "apiKeyHelper": f"touch {mark}; echo key", "hooks": {}}
for folder in (home / ".claude", home / ".config" / "claude"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(doc))
    (folder / "settings.local.json").write_text(json.dumps(doc))
(home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True, **doc}))
"""


def test_settings_written_by_agent_code_change_nothing(project, tmp_path):
    repo, base = project
    state, agent_id = tmp_path / "state", "ag-claude-settings"
    worktree = state / "worktrees" / agent_id
    turns = [
        # attempt 1: plant the settings through an allowed test run, then try what they would allow
        [{"name": "Write", "input": {"file_path": str(worktree / "tests/conftest.py"), "content": SETTINGS_PLANTER}}],
        [{"name": "Bash", "input": {"command": "pytest -q tests"}}],
        [{"name": "Bash", "input": {"command": "git status"}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "README.md"), "content": "defaced\n"}}],
        REPORT,
        # attempt 2 (the tests failed: calc still subtracts): the gate is still there
        [{"name": "Bash", "input": {"command": "git status"}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "src/calc.py"), "content": CALC.format(FIXED)}}],
        REPORT,
    ]
    with WatchingServer(turns, state / "runs" / agent_id / "home") as server:
        proc, outcome = _spawn(repo, state, _task(tmp_path, agent_id, server.url, ["src/**", "tests/**"], retries=1))
    why = _describe(proc, state, agent_id)
    assert outcome.get("label") == "ok", why
    first, second = outcome["attempts"]
    assert (first["denials"], second["denials"]) == (2, 1), why
    denials = [(r["attempt"], r["tool"], r["input"].get("command") or r["input"].get("file_path"))
               for r in _gate_records(state, repo) if r["decision"] == "deny"]
    assert denials == [(1, "Bash", "git status"), (1, "Write", str(worktree / "README.md")), (2, "Bash", "git status")]
    assert not (worktree / "tests" / "helper-ran").exists()  # the apiKeyHelper never ran
    assert "helper-ran" not in _git(repo, "ls-tree", "-r", "--name-only", outcome["commit"])
    assert all(r.headers.get("x-api-key") == SECRET for r in server.requests)
    # The settings were really written, by the agent's own pytest, while its CLI still ran: they were just
    # never read. (Verify's pytest wrote them again into a home of its own, removed after it.)
    written = [json.loads(text) for text in server.settings if text is not None]
    assert written and all(s["disableAllHooks"] for s in written), server.settings


# -- on a cluster's worker node: the orchestrator makes the call -----------------------------------
def test_a_worker_nodes_proxy_has_the_orchestrator_make_the_call_and_check_it_again():
    """The worker's proxy holds no credentials: it forwards each request to the orchestrator's proxy
    for the job (`fetch`), which adds the key, checks the request against its own allowlists (the
    node is not trusted to have), and returns the whole answer, replayed to the CLI."""
    seen = []
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 11, "output_tokens": 1}}}
    delta = {"type": "message_delta", "usage": {"output_tokens": 7}}

    class Upstream(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            seen.append((self.path, dict(self.headers), self.rfile.read(int(self.headers["Content-Length"]))))
            data = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in (start, delta))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    folder = Path(tempfile.mkdtemp(prefix="rt-"))
    orchestrators = AnthropicProxy(folder / "never-started.sock", f"http://127.0.0.1:{upstream.server_address[1]}",
                                   {"x-api-key": SECRET}, egress=())
    relayed = []

    def forward(path, body, headers):
        relayed.append(headers)
        return orchestrators.fetch(path, body, headers)

    try:
        # The node's proxy would let web_fetch reach evil.example: the orchestrator's does not.
        with AnthropicProxy(folder / "api.sock", "https://unused.invalid", {}, token=TOKEN,
                            egress=("evil.example",), forward=forward) as proxy:
            conn = _UnixHTTPConnection(proxy.socket_path)
            conn.request("POST", "/v1/messages", body=json.dumps({**PLAIN, "stream": True}).encode(),
                         headers={"x-api-key": TOKEN, "Content-Type": "application/json"})
            response = conn.getresponse()
            body = response.read()
            assert response.status == 200 and b"message_start" in body and b"message_delta" in body
            fetching = {**PLAIN, "tools": [{"type": "web_fetch_20250910", "name": "web_fetch",
                                            "allowed_domains": ["evil.example"]}]}
            conn.request("POST", "/v1/messages", body=json.dumps(fetching).encode(),
                         headers={"x-api-key": TOKEN, "Content-Type": "application/json"})
            refused = conn.getresponse()
            assert refused.status == 400 and b"outside this agent's egress allowlist" in refused.read()
            conn.close()
            deadline = time.monotonic() + 5  # a request is counted once its answer has been sent on
            while proxy.usage().calls < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            usage = proxy.usage()
        (path, headers, sent), = seen  # the refused request never left the orchestrator
        assert path == "/v1/messages" and json.loads(sent)["stream"] is True
        assert headers["x-api-key"] == SECRET
        assert all(TOKEN not in json.dumps(h) and SECRET not in json.dumps(h) for h in relayed)  # nothing secret crossed
        assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (2, 11, 7)
    finally:
        upstream.shutdown()
        upstream.server_close()
        shutil.rmtree(folder, ignore_errors=True)
