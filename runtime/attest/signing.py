"""The orchestrator's signing key, and signatures made and checked with OpenSSH's `ssh-keygen -Y`, as git's SSH
signing does: a key file, a namespace, and an `allowed_signers` file as the trust root a CI step or a server hook
reads.

The key is the orchestrator's alone: by default ``$XDG_CONFIG_HOME/agent-runtime/attest/signing_ed25519``
(``~/.config/...``), made on first use (ed25519, no passphrase: the orchestrator signs unattended), mode 0600 in
a folder of mode 0700; ``RUNTIME_SIGNING_KEY`` names another. No sandbox binds it, and the catalog's
`safety::no-secrets` keeps the default folder from every file tool and shell word of an agent without one.

`ssh-keygen` does the cryptography (a process per signature, a few milliseconds): the format is then exactly
what `ssh-keygen -Y verify` and git read, with nothing of ours to get wrong.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import FatalError

NAMESPACE = "agent-runtime-attestation"
PRINCIPAL = "agent-runtime"
ENV = "RUNTIME_SIGNING_KEY"
_ARMOUR = ("-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----")
_TIMEOUT_S = 30


class SignatureError(ValueError):
    """A signature that does not hold: one line saying why."""


def key_path() -> Path:
    """Where the orchestrator's signing key is (or will be made)."""
    explicit = os.environ.get(ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "agent-runtime" / "attest" / "signing_ed25519"


def fingerprint(public: str) -> str:
    """``SHA256:...`` of an OpenSSH public key line (`ssh-keygen -l`'s form)."""
    parts = public.split()
    if len(parts) < 2:
        raise SignatureError(f"not an OpenSSH public key: {public[:60]!r}")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except ValueError:
        raise SignatureError(f"not an OpenSSH public key: {public[:60]!r}") from None
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class SigningKey:
    path: Path
    public: str  # the public key line: type, base64, comment

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public)

    def allowed_signers_line(self) -> str:
        """This key as a line of an `allowed_signers` file, for attestations alone."""
        kind, blob = self.public.split()[:2]
        return f'{PRINCIPAL} namespaces="{NAMESPACE}" {kind} {blob}'


def _env() -> dict[str, str]:
    # no agent socket: the key file given is the one that signs
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def _ssh_keygen(args: list[str], data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["ssh-keygen", *args], input=data if data is not None else b"", capture_output=True,
                              env=_env(), timeout=_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise FatalError("ssh-keygen is not installed: attestations are signed with it (Debian: openssh-client)") \
            from None


def _checked_private(path: Path) -> None:
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise FatalError(f"{path}: the signing key is not a regular file")
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise FatalError(f"{path}: the signing key must be this user's and readable by no one else (chmod 600)")


def load_key(path: Path | None = None) -> SigningKey | None:
    """The key at ``path`` (default: `key_path`), or None when there is none yet."""
    path = path or key_path()
    if not path.exists():
        return None
    _checked_private(path)
    public = path.with_name(path.name + ".pub")
    if public.is_file():
        line = public.read_text(encoding="utf-8").strip()
    else:
        proc = _ssh_keygen(["-y", "-f", str(path)])
        if proc.returncode != 0:
            raise FatalError(f"{path}: not an OpenSSH private key ({proc.stderr.decode(errors='replace').strip()})")
        line = proc.stdout.decode("utf-8").strip()
    fingerprint(line)
    return SigningKey(path, line)


def ensure_key(path: Path | None = None) -> SigningKey:
    """The signing key, made when there is none (several orchestrators at once make one between them)."""
    from filelock import FileLock

    path = path or key_path()
    found = load_key(path)
    if found is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with FileLock(str(path.parent / ".signing.lock")):
        found = load_key(path)
        if found is not None:
            return found
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            made = Path(tmp) / "key"
            proc = _ssh_keygen(["-q", "-t", "ed25519", "-N", "", "-C", f"{PRINCIPAL}@{socket.gethostname()}",
                                "-f", str(made)])
            if proc.returncode != 0:
                raise FatalError(f"ssh-keygen could not make a signing key: {proc.stderr.decode(errors='replace').strip()}")
            os.chmod(made, 0o600)
            os.replace(made.with_name("key.pub"), path.with_name(path.name + ".pub"))
            os.replace(made, path)
    key = load_key(path)
    assert key is not None
    return key


def sign(key: SigningKey, data: bytes) -> bytes:
    """An SSHSIG signature of ``data`` (binary, the armour taken off)."""
    proc = _ssh_keygen(["-Y", "sign", "-f", str(key.path), "-n", NAMESPACE], data)
    if proc.returncode != 0:
        raise FatalError(f"{key.path}: ssh-keygen could not sign: {proc.stderr.decode(errors='replace').strip()}")
    return _unarmoured(proc.stdout)


def sign_all(key: SigningKey, items: list[bytes]) -> list[bytes]:
    """The signatures of several messages, made by one `ssh-keygen` (it signs each file it is given)."""
    if len(items) < 2:
        return [sign(key, data) for data in items]
    with tempfile.TemporaryDirectory(prefix="rt-sign-") as tmp:
        files = [Path(tmp) / f"{n}" for n in range(len(items))]
        for file, data in zip(files, items, strict=True):
            file.write_bytes(data)
        proc = _ssh_keygen(["-Y", "sign", "-f", str(key.path), "-n", NAMESPACE, *map(str, files)])
        if proc.returncode != 0:
            raise FatalError(f"{key.path}: ssh-keygen could not sign: {proc.stderr.decode(errors='replace').strip()}")
        return [_unarmoured(file.with_name(file.name + ".sig").read_bytes()) for file in files]


def _unarmoured(text: bytes) -> bytes:
    lines = text.decode("ascii").strip().splitlines()
    return base64.b64decode("".join(line for line in lines if line not in _ARMOUR))


def _armoured(signature: bytes) -> bytes:
    b64 = base64.b64encode(signature).decode("ascii")
    lines = [b64[i:i + 70] for i in range(0, len(b64), 70)]
    return ("\n".join([_ARMOUR[0], *lines, _ARMOUR[1]]) + "\n").encode("ascii")


@dataclass(frozen=True)
class TrustRoot:
    """Whose signatures are accepted: an `allowed_signers` file's lines."""

    lines: tuple[str, ...]
    source: str  # where they came from, for messages

    @classmethod
    def of_key(cls, key: SigningKey) -> TrustRoot:
        return cls((key.allowed_signers_line(),), str(key.path) + ".pub")

    @classmethod
    def read(cls, path: Path) -> TrustRoot:
        """An `allowed_signers` file, or a public key file (its one key, allowed under our principal)."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise FatalError(f"{path}: cannot read the signers' keys ({exc})") from None
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if not lines:
            raise FatalError(f"{path}:1: no key in it (an allowed_signers file, or an OpenSSH public key)")
        if len(lines) == 1 and lines[0].split()[0].startswith(("ssh-", "ecdsa-", "sk-")):
            kind, blob = lines[0].split()[:2]
            lines = [f'{PRINCIPAL} namespaces="{NAMESPACE}" {kind} {blob}']
        return cls(tuple(lines), str(path))

    def check(self, data: bytes, signature: bytes) -> str:
        """The principal ``signature`` over ``data`` is good for; a SignatureError saying why it is not."""
        armoured = _armoured(signature)
        with tempfile.TemporaryDirectory(prefix="rt-attest-") as tmp:
            signers, sig = Path(tmp) / "allowed_signers", Path(tmp) / "sig"
            signers.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
            sig.write_bytes(armoured)
            found = _ssh_keygen(["-Y", "find-principals", "-f", str(signers), "-n", NAMESPACE, "-s", str(sig)])
            principals = found.stdout.decode("utf-8", errors="replace").split() if found.returncode == 0 else []
            if not principals:
                alone = _ssh_keygen(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], data)
                said = alone.stdout.decode("utf-8", errors="replace") + alone.stderr.decode("utf-8", errors="replace")
                key = next((w for w in said.split() if w.startswith("SHA256:")), None)
                if alone.returncode != 0:
                    raise SignatureError("the signature does not hold for what it signs")
                raise SignatureError(f"signed by {key or 'a key'}, which {self.source} does not allow")
            proc = _ssh_keygen(["-Y", "verify", "-f", str(signers), "-I", principals[0], "-n", NAMESPACE, "-s", str(sig)],
                               data)
            if proc.returncode != 0:
                raise SignatureError("the signature does not hold for what it signs")
            return principals[0]
