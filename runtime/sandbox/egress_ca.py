"""A certificate authority per run, for the hosts the egress proxy adds a credential for (`runtime.sandbox.egress`).

Only that run's sandbox trusts it (its trust store is the system's roots and this one certificate,
`trust_bundle`), and only for those hosts: the CA's certificate carries a name constraint permitting exactly the
credentialed names, it lives for a day at most, and its key never leaves the orchestrator's memory. The proxy
mints a leaf certificate per host on demand and terminates TLS with it; every other host stays a plain tunnel,
its certificate the site's own.

Made with the `cryptography` package's x509 builder (an EC P-256 key: fast to make, and every client here takes
it), which the `credentials` extra installs: only roles that declare credentials need it.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import FatalError

VALIDITY = datetime.timedelta(hours=24)
_SYSTEM_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem")


EXTRA = "agent-role-runtime[credentials]"


def require() -> None:
    """A FatalError saying what to install when the `credentials` extra (the `cryptography` package) is not there."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise FatalError(f"a role with egress `credentials` needs the per-run CA's library: install `{EXTRA}` "
                         "(the `cryptography` package)") from None


def system_roots() -> bytes:
    """The system's trusted roots as PEM (what the sandbox's clients keep trusting for every other host)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, *_SYSTEM_BUNDLES):
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_bytes()
    return b""


@dataclass
class RunCA:
    """The CA of one run: its certificate (PEM) to trust, and leaf contexts for the names it may sign."""

    hosts: tuple[str, ...]
    certificate_pem: bytes = b""
    _key: object = None
    _cert: object = None
    _leaves: dict[str, ssl.SSLContext] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def make(cls, hosts: tuple[str, ...]) -> RunCA:
        require()
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agent-runtime egress CA (one run)")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False, data_encipherment=False,
                                             key_agreement=False, encipher_only=False, decipher_only=False),
                               critical=True)
                .add_extension(x509.NameConstraints(permitted_subtrees=[x509.DNSName(h) for h in hosts],
                                                    excluded_subtrees=None), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return cls(hosts, cert.public_bytes(serialization.Encoding.PEM), key, cert)

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a leaf certificate for ``host`` (one of the CA's names), made once."""
        if host not in self.hosts:
            raise ValueError(f"`{host}` is not a name this run's CA signs for")
        with self._lock:
            found = self._leaves.get(host)
            if found is None:
                found = self._leaves[host] = self._leaf(host)
            return found

    def _leaf(self, host: str) -> ssl.SSLContext:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
                .issuer_name(self._cert.subject)  # type: ignore[attr-defined]
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    self._key.public_key()), critical=False)  # type: ignore[attr-defined]
                .sign(self._key, hashes.SHA256()))  # type: ignore[arg-type]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])  # the inner requests are HTTP/1.1, read by h11
        # load_cert_chain reads files only: written to a private temporary folder and removed at once
        with tempfile.TemporaryDirectory(prefix="rt-leaf-") as tmp:
            chain, private = Path(tmp) / "chain.pem", Path(tmp) / "key.pem"
            chain.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + self.certificate_pem)
            private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
            context.load_cert_chain(chain, private)
        return context

    def trust_bundle(self) -> bytes:
        """What the sandbox's clients trust: the system's roots and this CA."""
        roots = system_roots()
        return roots + (b"" if roots.endswith(b"\n") or not roots else b"\n") + self.certificate_pem
