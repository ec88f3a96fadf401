"""The compiled policy as a typed, versioned document: the one reader every layer uses.

`runtime.policy.compile` writes the document (a JSON object sealed by its content hash);
`PolicyDocument.read` checks and types it; everything else asks the document, never the JSON:
the gate (`runtime.gate.policy` builds its gate objects from `gates`), the sandbox (the write
scope, the egress rules, the control files a task may change), the spawn (the verify entries, the
change limit, the tools shown) and verify. A question two layers ask is answered here once, so the
sandbox never works out the write scope or the domains again apart from the gate.

Standard library only, and nothing heavier than `json`: the hook is a fresh process per tool call
and reads a policy on every one (``python -X importtime`` shows this module in the hook's imports).

Versions: 2 added `mode`; a version 1 document predates it and was always judged strictly, so it
is read as strict. Any other version is refused in one line.
"""

from __future__ import annotations

import os

from runtime.lang import hotjson

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence
    from typing import Any, Literal, overload

    from runtime.lang.jsontypes import JSON, JSONDict, JSONObject
    from runtime.policy.compiled import (
        BashAllowlistParams,
        CredentialJSON,
        EgressAllowlistParams,
        EntryPart,
        PolicyBody,
        WriteDenylistParams,
        WriteWhitelistParams,
    )

from runtime.lang.audience import AGENT, AUDIENCES, SESSION

FORMAT = "agent-runtime-policy"
VERSION = 2
VERSIONS = (1, 2)
# `strict`: shell commands need a typed rule (the drop-in hook, `--no-os-sandbox`). `sandboxed`: the
# policy of an agent the runtime runs inside its OS sandbox, where shell commands are judged by the
# effects the gate can see (runtime.gate.sandboxed); it decides nothing outside that sandbox.
STRICT = "strict"
SANDBOXED = "sandboxed"
MODES = (STRICT, SANDBOXED)
WEB_TOOLS = frozenset({"WebFetch", "WebSearch"})


class PolicyError(ValueError):
    """The compiled policy is missing, corrupt or not understood: the gate denies, a spawn stops."""


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


def canonical(doc: PolicyBody | JSONObject) -> bytes:
    """A policy (or any JSON object) in the one form its hash is taken over and it is written in."""
    return _canonical(doc)


def _canonical(value: object) -> bytes:
    import json  # writing a policy, or checking one written otherwise: never a cold hook's cache hit

    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def content_hash(doc: PolicyBody | JSONObject) -> str:
    """The hash that seals ``doc``: over every member but `hash` itself."""
    body = {k: v for k, v in doc.items() if k != "hash"}
    digest: str = new_sha256(_canonical(body)).hexdigest()
    return "sha256:" + digest


def _bytes_hashed(data: bytes, digest: object) -> bool:
    """Whether ``data``, a policy file in its canonical form (`PolicyDocument.write`), holds the content whose hash is
    ``digest``: the file's own bytes, less its `hash` member and the final newline, are the canonical body the
    hash is taken over. Hashing them costs microseconds where writing the body out again (`content_hash`) costs
    milliseconds on every call of a fresh hook. Any other form (indented, the member twice) is not taken: the
    caller then checks the hash the long way. A match is the hash's own guarantee: no other bytes hash to it."""
    if not isinstance(digest, str) or not digest.startswith("sha256:") or len(digest) != 71:
        return False
    member = b',"hash":"' + digest.encode("ascii", "replace") + b'"'
    if data.count(member) != 1:
        return False
    return bool(new_sha256(data.removesuffix(b"\n").replace(member, b"")).hexdigest() == digest[7:])


def seal(*, role: str, root: str, tools: Collection[str] = (), gates: Collection[EntryPart] = (),
         verify: Collection[EntryPart] = (), sandbox: Collection[Mapping[str, str]] = (),
         protected: Collection[str] = (), mode: str = STRICT, **fields: Any) -> PolicyDocument:
    """A document made from its parts, sealed and read: for what makes one without a role (an atom's or a
    grammar's examples in `runtime lint`, tests, benchmarks). Gate entries without an `atom` are named
    after their kind."""
    doc: JSONDict = {
        "format": FORMAT, "version": VERSION, "mode": mode, "role": role, "root": root, "tools": list(tools),
        "protected": list(protected),
        "gates": [{"atom": g.get("atom", g["kind"]), "kind": g["kind"], "params": dict(g["params"])} for g in gates],
        "verify": [{"atom": v.get("atom", v["kind"]), "kind": v["kind"], "params": dict(v["params"])} for v in verify],
        "sandbox": [{"atom": e.get("atom", e["kind"]), "kind": e["kind"]} for e in sandbox],
        **fields,
    }
    doc["hash"] = content_hash(doc)
    return PolicyDocument(doc)


class Entry:
    """One atom's contribution: a gate kind, a verify kind or a sandbox kind, with its parameter values."""

    __slots__ = ("atom", "kind", "params")

    def __init__(self, atom: str, kind: str, params: JSONObject) -> None:
        self.atom, self.kind, self.params = atom, kind, params

    def __repr__(self) -> str:
        return f"Entry({self.atom!r}, {self.kind!r})"


class Egress:
    """What a role may reach through the egress proxy (`net::egress-allowlist`): names, the non-public ranges its
    catalog opened, ports, and the credentials the proxy adds for some of those names."""

    __slots__ = ("addresses", "credentials", "domains", "ports")

    def __init__(self, domains: tuple[str, ...], addresses: tuple[str, ...], ports: tuple[int, ...],
                 credentials: tuple[CredentialJSON, ...]) -> None:
        self.domains, self.addresses, self.ports, self.credentials = domains, addresses, ports, credentials


class TaskRef:
    """The task a policy was compiled for."""

    __slots__ = ("path", "sha256", "agent_id", "parent_agent")

    def __init__(self, path: str, sha256: str, agent_id: str, parent_agent: str | None) -> None:
        self.path, self.sha256, self.agent_id, self.parent_agent = path, sha256, agent_id, parent_agent


class PolicyDocument:
    """A checked compiled policy. `raw` is the document exactly as compiled and sealed (what is written
    to disk and hashed); every other attribute is typed. Gate parameters are checked by each gate kind
    when the gate is built (`runtime.gate.policy`); here, the document's shape."""

    __slots__ = ("raw", "version", "mode", "audience", "role", "escalation", "task", "root", "tools", "gates",
                 "verify", "sandbox", "toolchain_path", "package_scripts", "protected", "hash", "subagents",
                 "reviewer")

    def __init__(self, raw: JSONObject, *, hashed: bool = False) -> None:
        """``raw``: the document as read. ``hashed``: its content hash was checked already, over the file's own
        bytes (`load`)."""
        self.raw = raw
        version = raw.get("version")
        if raw.get("format") != FORMAT or type(version) is not int or version not in VERSIONS:
            raise PolicyError(f"not a {FORMAT} document of a version this runtime reads "
                              f"({', '.join(map(str, VERSIONS))}; version {version!r} given): compile it again")
        digest = raw.get("hash")
        if (not hashed and digest != content_hash(raw)) or not isinstance(digest, str):
            raise PolicyError("the policy's content hash does not match: it was edited or corrupted")
        self.version: int = version
        self.hash: str = digest
        mode: JSON
        if version == 1:
            if "mode" in raw:
                raise PolicyError("`mode` is not a field of a version 1 policy")
            mode = STRICT
        elif "mode" not in raw:
            raise PolicyError("the policy states no `mode` (strict or sandboxed)")
        else:
            mode = raw["mode"]
        if not isinstance(mode, str) or mode not in MODES:
            raise PolicyError(f"unknown policy mode {mode!r}: a policy is {' or '.join(MODES)}")
        self.mode: str = mode
        # Who reads the reasons (runtime.lang.audience): optional in version 2, `agent` when absent.
        audience = raw.get("audience", AGENT)
        if not isinstance(audience, str) or audience not in AUDIENCES:
            raise PolicyError(f"unknown policy audience {audience!r}: a policy is for an {AGENT} or a {SESSION}")
        self.audience: str = audience
        self.role = _str(raw, "role")
        escalation = raw.get("escalation")
        if escalation is not None and not isinstance(escalation, str):
            raise PolicyError("`escalation` must be a string")
        self.escalation: str | None = escalation
        self.task = _task(raw.get("task"))
        root = _str(raw, "root")
        if not root.startswith("/") or "\x00" in root:
            raise PolicyError("the policy's root is not an absolute path")
        self.root = root
        tools = raw.get("tools")
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise PolicyError("`tools` must be a list of tool names")
        self.tools: tuple[str, ...] = tuple(tools)
        protected = raw.get("protected")
        if not isinstance(protected, list) or not all(isinstance(p, str) and p.startswith("/") for p in protected):
            raise PolicyError("`protected` must be a list of absolute paths")
        self.protected: tuple[str, ...] = tuple(protected)
        # Folders of the repository's toolchain whose programs may be called by path (`.venv/bin`).
        toolchain = raw.get("toolchain", {"path": []})
        if not isinstance(toolchain, dict) or not isinstance(toolchain.get("path"), list) or not all(
                isinstance(p, str) and p and not p.startswith("/") and ".." not in p.split("/")
                for p in toolchain["path"]):
            raise PolicyError("`toolchain.path` must be a list of relative folders")
        self.toolchain_path: tuple[str, ...] = tuple(toolchain["path"])
        # The worktree's package.json scripts when the policy was compiled (runtime.gate.package_scripts).
        scripts = raw.get("package-scripts", {})
        if not isinstance(scripts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in scripts.items()):
            raise PolicyError("`package-scripts` must map script names to commands")
        self.package_scripts: dict[str, str] = scripts
        # The subagent types a person's session may start (`Agent`/`Task`), each the role the hook gates it by:
        # optional, none when absent (a policy that shows no subagent tool).
        subagents = raw.get("subagents", {})
        if not isinstance(subagents, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                      for k, v in subagents.items()):
            raise PolicyError("`subagents` must map subagent types to the roles that gate them")
        self.subagents: dict[str, str] = subagents
        reviewer = raw.get("reviewer")
        if reviewer is not None and not (
                isinstance(reviewer, dict) and set(reviewer) == {"model", "api-base", "script"}
                and isinstance(reviewer["model"], str) and reviewer["model"]
                and all(v is None or isinstance(v, str) for v in (reviewer["api-base"], reviewer["script"]))):
            raise PolicyError("`reviewer` must name a model, and its api-base and script or null")
        # `[session] reviewer` of the role (runtime.approvals.reviewer): model, api-base, script.
        self.reviewer: dict[str, str | None] | None = reviewer
        self.gates = _entries(raw, "gates", params=True)
        self.verify = _entries(raw, "verify", params=True, optional=True)
        self.sandbox = _entries(raw, "sandbox", params=False, optional=True)

    @classmethod
    def read(cls, doc: object) -> PolicyDocument:
        """``doc`` checked, or PolicyError; a document read already is returned as it is."""
        if isinstance(doc, PolicyDocument):
            return doc
        if not isinstance(doc, dict):
            raise PolicyError("the policy is not a JSON object")
        return cls(doc)

    @classmethod
    def load(cls, path: str) -> PolicyDocument:
        """Read and check a compiled policy file."""
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise PolicyError(f"cannot read the policy {path}: {exc.strerror or exc}") from None
        try:
            doc = hotjson.loads(raw)
        except ValueError as exc:
            raise PolicyError(f"the policy {path} is not valid JSON: {exc}") from None
        if isinstance(doc, dict) and _bytes_hashed(raw, doc.get("hash")):
            return cls(doc, hashed=True)
        return cls.read(doc)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the policy where a gate reads it, whole (a gate reading meanwhile reads the old one or this), in
        its canonical form: its content hash is then checked over the file's bytes (`_bytes_hashed`)."""
        staged = f"{os.fspath(path)}.{os.getpid()}.new"
        with open(staged, "wb") as fh:
            fh.write(canonical(self.raw) + b"\n")
        os.replace(staged, path)

    def to_json(self) -> str:
        import json

        return json.dumps(self.raw, indent=2)

    # -- what the layers ask -----------------------------------------------------------------------

    if TYPE_CHECKING:
        @overload
        def gate_params(self, kind: Literal["bash-allowlist"]) -> list[BashAllowlistParams]: ...
        @overload
        def gate_params(self, kind: Literal["write-whitelist"]) -> list[WriteWhitelistParams]: ...
        @overload
        def gate_params(self, kind: Literal["write-denylist"]) -> list[WriteDenylistParams]: ...
        @overload
        def gate_params(self, kind: Literal["egress-allowlist"]) -> list[EgressAllowlistParams]: ...

    def gate_params(self, kind: str) -> Sequence[object]:
        """The parameter values of every gate of ``kind``, in the role's order, typed by the kind's own
        (`runtime.policy.compiled`): the compiler checked each one as its type, and the hash seals them."""
        return [entry.params for entry in self.gates if entry.kind == kind]

    def has_gate(self, kind: str) -> bool:
        return any(entry.kind == kind for entry in self.gates)

    def verify_entries(self, kinds: Collection[str] | None = None) -> list[Entry]:
        """The verify entries (of ``kinds``), in the role's order."""
        return [entry for entry in self.verify if kinds is None or entry.kind in kinds]

    def sandbox_kinds(self) -> frozenset[str]:
        return frozenset(entry.kind for entry in self.sandbox)

    def write_globs(self) -> list[str] | None:
        """The write scope's globs, or None when the policy has no write whitelist (nothing is outside)."""
        gates = self.gate_params("write-whitelist")
        if not gates:
            return None
        return [glob for params in gates for glob in params["globs"]]

    def control_files(self) -> list[str]:
        """The control files the policy's task may change (`[scope] control-files`), relative to the root."""
        return [path for params in self.gate_params("write-whitelist") for path in params.get("control-files", [])]

    def egress(self) -> Egress | None:
        """What the role may reach through the egress proxy, and the credentials the proxy adds; None when it
        shows no web tool or declares no domain (its sandbox has no way out)."""
        if not WEB_TOOLS & set(self.tools):
            return None
        domains: list[str] = []
        addresses: list[str] = []
        ports: list[int] = []
        credentials: list[CredentialJSON] = []
        for params in self.gate_params("egress-allowlist"):
            domains += params["domains"]
            addresses += params["addresses"]
            ports += params["ports"]
            credentials += params.get("credentials", [])
        if not domains:
            return None
        return Egress(tuple(dict.fromkeys(domains)), tuple(dict.fromkeys(addresses)), tuple(dict.fromkeys(ports)),
                      tuple(credentials))

    def egress_domains(self) -> tuple[str, ...]:
        rules = self.egress()
        return rules.domains if rules is not None else ()

    def change_limit(self) -> int | None:
        """The bytes a change may add (`scope::change-size`'s `max-change-bytes`); None without that check."""
        for entry in self.verify_entries(("change-size",)):
            limit = entry.params["max-change-bytes"]
            if not isinstance(limit, int):
                raise PolicyError("`change-size`'s `max-change-bytes` must be a number of bytes")
            return limit
        return None

    def real_root(self) -> str:
        return os.path.realpath(self.root)


def _str(doc: JSONObject, key: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise PolicyError(f"`{key}` must be a non-empty string")
    return value


def _task(value: object) -> TaskRef | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) for k in ("path", "sha256", "agent_id")):
        raise PolicyError("`task` must name the task's path, sha256 and agent_id")
    parent = value.get("parent_agent")
    if parent is not None and not isinstance(parent, str):
        raise PolicyError("`task.parent_agent` must be a string")
    return TaskRef(value["path"], value["sha256"], value["agent_id"], parent)


def _entries(doc: JSONObject, key: str, *, params: bool, optional: bool = False) -> tuple[Entry, ...]:
    raw = doc.get(key, [] if optional else None)
    if not isinstance(raw, list):
        raise PolicyError(f"`{key}` must be a list")
    want = {"atom", "kind", "params"} if params else {"atom", "kind"}
    out = []
    for entry in raw:
        if not isinstance(entry, dict) or set(entry) != want:
            raise PolicyError(f"a `{key}` entry must have exactly {', '.join(sorted(want))}")
        if not isinstance(entry["atom"], str) or not isinstance(entry["kind"], str):
            raise PolicyError(f"a `{key}` entry's atom and kind must be strings")
        if params and not isinstance(entry["params"], dict):
            raise PolicyError(f"`{key}` params must be an object")
        out.append(Entry(entry["atom"], entry["kind"], entry["params"] if params else {}))
    return tuple(out)
