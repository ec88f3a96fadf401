"""The DSSE envelope an attestation travels in (what in-toto, SLSA and sigstore bundles carry): the statement's
bytes base64-encoded, and signatures over DSSE's pre-authentication encoding (PAE) of its type and bytes.

A signature here is OpenSSH's SSHSIG (``ssh-keygen -Y sign``, as git's SSH signing makes), base64 of its binary
form (the armour taken off); ``keyid`` is the signing key's SHA256 fingerprint, as ``ssh-keygen -l`` prints it.
"""

from __future__ import annotations

import base64
import binascii
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PAYLOAD_TYPE = "application/vnd.in-toto+json"


class EnvelopeError(ValueError):
    """A note that is not a DSSE envelope of ours: one line saying why."""


class Signature(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    keyid: str
    sig: str


class Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    payloadType: str  # noqa: N815 (DSSE's names)
    payload: str
    signatures: list[Signature] = Field(min_length=1)

    @property
    def body(self) -> bytes:
        try:
            return base64.b64decode(self.payload, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise EnvelopeError(f"the payload is not base64 ({exc})") from None

    def signed_bytes(self) -> bytes:
        return pae(self.payloadType, self.body)

    def to_text(self) -> str:
        return self.model_dump_json() + "\n"

    @classmethod
    def parse(cls, text: str | bytes) -> Envelope:
        try:
            json.loads(text)
        except ValueError as exc:
            raise EnvelopeError(f"not JSON ({exc})") from None
        try:
            envelope = cls.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "the envelope"
            raise EnvelopeError(f"not a DSSE envelope: {where}: {first['msg']}") from None
        if envelope.payloadType != PAYLOAD_TYPE:
            raise EnvelopeError(f"payload type {envelope.payloadType!r}, not {PAYLOAD_TYPE}")
        return envelope


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE v1's pre-authentication encoding: what is signed, so that the type is bound with the bytes."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def envelope(body: bytes, keyid: str, signature: bytes) -> Envelope:
    return Envelope(payloadType=PAYLOAD_TYPE, payload=base64.b64encode(body).decode("ascii"),
                    signatures=[Signature(keyid=keyid, sig=base64.b64encode(signature).decode("ascii"))])


def signature_bytes(signature: Signature) -> bytes:
    try:
        return base64.b64decode(signature.sig, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EnvelopeError(f"a signature is not base64 ({exc})") from None
