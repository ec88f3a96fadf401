"""Loading a compiled policy (the JSON that ``runtime.policy.compile`` writes).

The gate trusts nothing in it: the content hash must match, the format and
version must be known, every gate kind must be in the registry and every
parameter must be what that kind expects. Any surprise is a PolicyError, and
the hook turns a PolicyError into a deny.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from typing import Any

from runtime.gate.audience import AGENT, AUDIENCES, SESSION
from runtime.gate.kinds import GATES, PolicyError

FORMAT = "agent-runtime-policy"
# Version 2 added `mode`. A version 1 document predates it and was always judged strictly, so it is
# read as `strict`; any other version is refused.
VERSION = 2
VERSIONS = (1, 2)
# `strict`: shell commands need a typed rule (the drop-in hook, `--no-os-sandbox`). `sandboxed`: the
# policy of an agent the runtime runs inside its OS sandbox, where shell commands are judged by the
# effects the gate can see (runtime.gate.sandboxed); it decides nothing outside that sandbox.
STRICT = "strict"
SANDBOXED = "sandboxed"
MODES = (STRICT, SANDBOXED)


def new_sha256(data: bytes = b"") -> Any:
    """A sha256 hasher without importing hashlib.

    _sha256 is built into CPython and imports in microseconds; hashlib pulls
    in the OpenSSL bindings, which the per-call hook process would pay for.
    """
    try:
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import sha256
    return sha256(data)


def canonical(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def content_hash(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "hash"}
    digest: str = new_sha256(canonical(body)).hexdigest()
    return "sha256:" + digest


class Policy:
    """A loaded policy: the gate objects, ready to decide."""

    __slots__ = ("doc", "role", "root", "tools", "gates", "tool_gates", "write_gates", "command_gates", "protected", "hash",
                 "tool_path", "exempt", "mode", "audience", "_outside", "package_scripts")

    def __init__(self, doc: dict[str, Any], extra_protected: tuple[str, ...] = (), *, assume_sandbox: bool = False) -> None:
        """``assume_sandbox``: judge a sandboxed policy as if inside its sandbox, without looking
        (`runtime explain --mode sandboxed` on the host, and tests of its judgements)."""
        if not isinstance(doc, dict):
            raise PolicyError("the policy is not a JSON object")
        version = doc.get("version")
        if doc.get("format") != FORMAT or type(version) is not int or version not in VERSIONS:
            raise PolicyError(f"not a {FORMAT} document of a version this runtime reads "
                              f"({', '.join(map(str, VERSIONS))}; version {version!r} given): compile it again")
        if doc.get("hash") != content_hash(doc):
            raise PolicyError("the policy's content hash does not match: it was edited or corrupted")
        self.doc = doc
        if version == 1:
            if "mode" in doc:
                raise PolicyError("`mode` is not a field of a version 1 policy")
            mode = STRICT
        elif "mode" not in doc:
            raise PolicyError("the policy states no `mode` (strict or sandboxed)")
        else:
            mode = doc["mode"]
        if mode not in MODES:
            raise PolicyError(f"unknown policy mode {mode!r}: a policy is {' or '.join(MODES)}")
        self.mode = mode
        # Who reads the reasons (runtime.gate.audience): optional in version 2, `agent` when absent.
        audience = doc.get("audience", AGENT)
        if audience not in AUDIENCES:
            raise PolicyError(f"unknown policy audience {audience!r}: a policy is for an {AGENT} or a {SESSION}")
        self.audience = audience
        # Why this sandboxed policy must not decide here (None: it may), found on the first decision.
        self._outside: str | None | bool = None if assume_sandbox or mode == STRICT else False
        self.hash = doc["hash"]
        self.role = _str(doc, "role")
        root = _str(doc, "root")
        if not root.startswith("/") or "\x00" in root:
            raise PolicyError("the policy's root is not an absolute path")
        self.root = os.path.realpath(root)
        tools = doc.get("tools")
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise PolicyError("`tools` must be a list of tool names")
        self.tools = frozenset(tools)
        protected = doc.get("protected")
        if not isinstance(protected, list) or not all(isinstance(p, str) and p.startswith("/") for p in protected):
            raise PolicyError("`protected` must be a list of absolute paths")
        self.protected = tuple(os.path.realpath(p) for p in protected) + tuple(extra_protected)
        # Folders of the repository's toolchain whose programs may be called by path (`.venv/bin`).
        toolchain = doc.get("toolchain", {"path": []})
        if not isinstance(toolchain, dict) or not isinstance(toolchain.get("path"), list) or not all(
                isinstance(p, str) and p and not p.startswith("/") and ".." not in p.split("/")
                for p in toolchain["path"]):
            raise PolicyError("`toolchain.path` must be a list of relative folders")
        self.tool_path = frozenset(os.path.normpath(os.path.join(self.root, p)) for p in toolchain["path"])
        # The worktree's package.json scripts when the policy was compiled (runtime.gate.package_scripts).
        scripts = doc.get("package-scripts", {})
        if not isinstance(scripts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in scripts.items()):
            raise PolicyError("`package-scripts` must map script names to commands")
        self.package_scripts: dict[str, str] = scripts
        raw_gates = doc.get("gates")
        if not isinstance(raw_gates, list):
            raise PolicyError("`gates` must be a list")
        self.gates = []
        for entry in raw_gates:
            if not isinstance(entry, dict) or set(entry) != {"atom", "kind", "params"}:
                raise PolicyError("a gate entry must have exactly atom, kind and params")
            cls = GATES.get(entry["kind"])
            if cls is None:
                raise PolicyError(f"unknown gate kind `{entry['kind']}`")
            if not isinstance(entry["params"], dict):
                raise PolicyError("gate params must be an object")
            self.gates.append(cls(str(entry["atom"]), entry["params"]))
        # Gates that only deny run before those that grant, so a denial names
        # the atom that forbids (no-git) rather than the one that did not allow.
        self.gates.sort(key=lambda g: g.grants)
        self.tool_gates = [g for g in self.gates if g.answers("on_tool")]
        self.write_gates = [g for g in self.gates if g.answers("on_write")]
        self.command_gates = [g for g in self.gates if g.answers("on_command")]
        # Control files the task may change (`[scope] control-files`), as absolute paths; `.git` never.
        self.exempt = tuple(os.path.normpath(os.path.join(self.root, path))
                            for g in self.write_gates for path in getattr(g, "control_files", ()))


    def outside_sandbox(self) -> str | None:
        """Why this policy may not decide here: a sandboxed policy outside the runtime's sandbox.
        Looked at once per process (the hook is one process per call; the builtin agent's loop lives in
        one sandbox for its whole run)."""
        if self._outside is False:
            from runtime.gate.confinement import sandbox_refusal

            self._outside = sandbox_refusal(self.root)
        return self._outside if isinstance(self._outside, str) else None


def _str(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise PolicyError(f"`{key}` must be a non-empty string")
    return value


def load_policy(path: str) -> Policy:
    """Read and check a compiled policy file; the file itself becomes protected."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise PolicyError(f"cannot read the policy {path}: {exc.strerror or exc}") from None
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise PolicyError(f"the policy {path} is not valid JSON: {exc}") from None
    real = os.path.realpath(path)
    return Policy(doc, (real,))
