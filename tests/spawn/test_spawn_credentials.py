"""Credentials added at the egress, end to end: an agent in the OS sandbox clones a repository over HTTPS with
git, downloads from an authenticated package index with pip, installs from an authenticated npm registry and calls
an API with curl, each through the egress proxy, which adds the declared secret; nothing the agent can reach holds
the secret (its environment, /proc, its files, the transcripts, the audit log, the host's echo of the request).

The host is a loopback HTTPS server with a certificate of a CA of the test's own (given to the orchestrator as
its system roots, `SSL_CERT_FILE`), answering only requests with the right basic auth: git's smart HTTP
(`git http-backend`), a PyPI simple index with one wheel, an npm registry with one package, and an echo of what
it saw.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.sandbox.egress_ca import RunCA
from tests.conftest import REPO, require
from tests.spawn.conftest import Spawner
from tests.support import git

SECRET = "reg-6b1f0c9e2d7a4f38a5c1"
USER = "ci"
PY = sys.executable


def _npm_tarball() -> bytes:
    """A real npm package tarball: package/package.json and its one module."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed, tarfile.open(fileobj=packed, mode="w") as tar:
        for name, data in (("package/package.json", b'{"name": "tinypkg", "version": "1.0.0", "main": "index.js"}\n'),
                           ("package/index.js", b"module.exports = 42;\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _wheel() -> tuple[str, bytes]:
    """A real, minimal wheel: its name and bytes."""
    name = "tinypkg-1.0-py3-none-any.whl"
    files = {"tinypkg/__init__.py": b"ANSWER = 42\n",
             "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
             "tinypkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n"
                     for p, d in files.items()) + "tinypkg-1.0.dist-info/RECORD,,\n"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr("tinypkg-1.0.dist-info/RECORD", record)
    return name, out.getvalue()


class _Registry(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    git_root: Path
    wheel: tuple[str, bytes]
    seen: list[tuple[str, str | None]] = []

    def _authorised(self) -> bool:
        auth = self.headers.get("Authorization")
        type(self).seen.append((self.path, auth))
        if auth == "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode():
            return True
        self._send(401, b"who are you?\n", [("WWW-Authenticate", 'Basic realm="registry"')])
        return False

    def _send(self, status: int, body: bytes, headers: list[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        self._serve(b"")

    def do_POST(self):  # noqa: N802
        self._serve(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def _serve(self, body: bytes) -> None:
        if not self._authorised():
            return
        name, data = self.wheel
        if self.path == "/echo":
            self._send(200, json.dumps({k.lower(): v for k, v in self.headers.items()}).encode())
        elif self.path.rstrip("/") == "/simple/tinypkg":
            page = f'<html><body><a href="/files/{name}#sha256={hashlib.sha256(data).hexdigest()}">{name}</a></body></html>'
            self._send(200, page.encode(), [("Content-Type", "text/html")])
        elif self.path == f"/files/{name}":
            self._send(200, data, [("Content-Type", "application/octet-stream")])
        elif self.path == "/npm/tinypkg":
            tarball = _npm_tarball()
            base = f"https://{self.headers['Host']}/npm"
            doc = {"name": "tinypkg", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
                "name": "tinypkg", "version": "1.0.0", "main": "index.js",
                "dist": {"tarball": f"{base}/tinypkg/-/tinypkg-1.0.0.tgz", "shasum": hashlib.sha1(tarball).hexdigest(),
                         "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()}}}}
            self._send(200, json.dumps(doc).encode(), [("Content-Type", "application/json")])
        elif self.path == "/npm/tinypkg/-/tinypkg-1.0.0.tgz":
            self._send(200, _npm_tarball(), [("Content-Type", "application/octet-stream")])
        elif self.path.startswith("/git/"):
            self._git(body)
        else:
            self._send(404, b"no\n")

    def _git(self, body: bytes) -> None:
        path, _, query = self.path[len("/git"):].partition("?")
        env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(self.git_root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body))}
        out = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, check=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(": ")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value))
        self._send(status, payload, headers)

    def log_message(self, *args):
        pass


@pytest.fixture
def registry(tmp_path) -> Iterator[tuple[int, Path]]:
    """The authenticated host on localhost, its CA's certificate in a file (what the orchestrator trusts)."""
    ca = RunCA.make(("localhost",))
    remote = tmp_path / "remote" / "repo.git"
    source = tmp_path / "remote" / "work"
    source.mkdir(parents=True)
    git(source, "init", "-q", "-b", "trunk")
    (source / "README").write_text("cloned through the egress proxy\n")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "remote")
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(remote)], check=True)
    _Registry.git_root, _Registry.wheel, _Registry.seen = remote.parent, _wheel(), []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    server.socket = ca.server_context("localhost").wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    roots = tmp_path / "roots.pem"
    roots.write_bytes(ca.certificate_pem)
    yield server.server_address[1], roots
    server.shutdown()
    server.server_close()


def _catalog(tmp_path: Path, port: int) -> Path:
    """The shipped catalog, its read-only role opening loopback on the registry's port with the credential."""
    catalog = tmp_path / "catalog"
    shutil.copytree(REPO / "capabilities", catalog / "capabilities")
    shutil.copytree(REPO / "roles", catalog / "roles")
    role = catalog / "roles" / "read-only.toml"
    role.write_text(role.read_text() + f'\n[params."net::egress-allowlist"]\naddresses = ["127.0.0.1/32"]\n'
                                       f"ports = [{port}]\n"
                                       'credentials = [{ host = "localhost", env = "REGISTRY_TOKEN", send = "basic", '
                                       f'username = "{USER}" }}]\n')
    return catalog


def test_git_pip_npm_and_curl_get_through_with_a_secret_the_sandbox_never_holds(spawner: Spawner, registry, tmp_path):
    require(shutil.which("curl") is not None, "curl is not installed")
    s = spawner
    port, roots = registry
    url = f"https://localhost:{port}"
    probe = "; ".join([
        f"curl -sS {url}/echo > $HOME/curl.json 2> $HOME/curl.err",
        f"git clone -q {url}/git/repo.git $HOME/clone > $HOME/git.out 2>&1",
        f"{PY} -m pip download -q --no-deps --disable-pip-version-check --no-cache-dir --index-url {url}/simple/ "
        "tinypkg -d $HOME/dl > $HOME/pip.out 2>&1",
        f"npm install -q --no-audit --no-fund --no-save --prefix $HOME/npmproj --registry {url}/npm/ tinypkg "
        "> $HOME/npm.out 2>&1",
        # what the agent could look at for the secret: its environment, every process's, its own files
        "env > $HOME/env.txt", "cat /proc/[0-9]*/environ > $HOME/proc.txt 2>/dev/null",
        "printf 'Summary: fetched\\n## Findings\\n- [LOW] none\\n' > $RUNTIME_REPORT_FILE",
    ])
    task = s.task(agent_id="ag-cred", role="read-only", scope={}, verification={}, output={}, command=probe)
    task.write_text(task.read_text() + '\n[network]\nallowed-domains = ["localhost"]\n')
    proc = s.cli("spawn", "--json", "--unattended", "--catalog", str(_catalog(tmp_path, port)), str(task), timeout=150,
                 env={"REGISTRY_TOKEN": SECRET, "SSL_CERT_FILE": str(roots)})
    outcome = json.loads(proc.stdout)
    assert outcome["label"] == "ok", proc.stdout + proc.stderr
    home = s.run_dir("ag-cred") / "home"
    # each client got through, the credential added on the way
    basic = "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
    assert ("/echo", basic) in _Registry.seen
    # the host sent the header back: the agent read it blanked
    assert json.loads((home / "curl.json").read_text())["authorization"] == "*" * len(basic)
    assert (home / "clone" / "README").read_text() == "cloned through the egress proxy\n", (home / "git.out").read_text()
    assert (home / "dl" / "tinypkg-1.0-py3-none-any.whl").is_file(), (home / "pip.out").read_text()
    installed = home / "npmproj" / "node_modules" / "tinypkg" / "index.js"
    assert installed.read_text() == "module.exports = 42;\n", (home / "npm.out").read_text()
    assert all(auth is not None for _, auth in _Registry.seen)  # no request reached the host without it
    # and the secret is nowhere the agent reaches, nor in what the run keeps
    env = (home / "env.txt").read_text()
    assert "REGISTRY_TOKEN" not in env and "SSL_CERT_FILE=" in env and "egress-trust.pem" in env
    assert SECRET not in (home / "proc.txt").read_text(errors="replace")
    forms = [SECRET.encode(), basic.encode(), basic.removeprefix("Basic ").encode()]
    for path in [*s.run_dir("ag-cred").rglob("*"), *s.state.rglob("*.jsonl")]:
        if path.is_file():
            assert not any(form in path.read_bytes() for form in forms), path
    ends = [e["data"] for e in s.audit(kind="egress", agent="ag-cred") if e["data"]["event"] == "end"]
    assert sum(e.get("credentialed") or 0 for e in ends) >= 6  # curl, git's two or more, pip's and npm's two each


@pytest.mark.parametrize("declared,env,said", [
    ('{ host = "localhost", env = "REGISTRY_TOKEN" }', {}, "environment variable REGISTRY_TOKEN, which is not set"),
    ('{ host = "registry.example.com", env = "REGISTRY_TOKEN" }', {"REGISTRY_TOKEN": SECRET},
     "`registry.example.com`, which is not among the domains"),
])
def test_a_credential_that_cannot_be_used_stops_the_spawn_before_anything_is_made(spawner: Spawner, tmp_path,
                                                                                   declared, env, said):
    s = spawner
    catalog = tmp_path / "catalog"
    shutil.copytree(REPO / "capabilities", catalog / "capabilities")
    shutil.copytree(REPO / "roles", catalog / "roles")
    role = catalog / "roles" / "read-only.toml"
    role.write_text(role.read_text() + f'\n[params."net::egress-allowlist"]\ncredentials = [{declared}]\n')
    task = s.task(agent_id="ag-nocred", role="read-only", scope={}, verification={}, output={}, command="true")
    task.write_text(task.read_text() + '\n[network]\nallowed-domains = ["localhost"]\n')
    proc = s.cli("spawn", "--json", "--catalog", str(catalog), str(task), env={"REGISTRY_TOKEN": "", **env})
    assert proc.returncode == 1 and said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert s.git("branch", "--list", "agent/ag-nocred") == "" and not s.run_dir("ag-nocred").exists()
