"""Remove known secret values from text before it is written anywhere.

Transcripts, reports and audit records must never carry a secret, whatever
form it took on the way: an agent may echo a token, print it base64-encoded
inside an ``Authorization: Basic`` header, put it in a URL, or have it escaped
inside JSON. ``Redactor`` knows the secret *values* (not patterns that look
secret) and replaces each of these forms with ``[REDACTED:<name>]``:

- plain text;
- base64, standard and URL-safe alphabets, padded or not, on its own and
  embedded in a longer blob: base64 of a substring depends on where it starts
  within a 3-byte group, so for each of the 3 alignments the characters fully
  determined by the secret are matched (plus the partial character on each
  edge when it fits), which covers ``base64("user:" + secret)``;
- URL-encoded: ``quote`` (with and without ``/`` kept), ``quote_plus``, and
  the same with lower-case ``%xx`` escapes;
- JSON-escaped: ``json.dumps(secret)[1:-1]``, ASCII or not, ``/`` as ``\\/``.

Values shorter than ``MIN_SECRET_LENGTH`` (6) characters are ignored: a
redactor that replaces every ``true``, ``1234`` or ``admin`` would shred
ordinary text and, worse, tell a reader which common words are secrets.

All forms of all secrets are compiled into one regex alternation, longest
first (so a secret containing another is replaced whole), which keeps a 1 MB
transcript against 20 secrets well under a second.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus

MIN_SECRET_LENGTH = 6
"""Shorter values are not redacted (they would match ordinary text)."""

DEFAULT_LABEL = "secret"

_STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_URLSAFE = _STD[:62] + "-_"

# Substrings of a variable name that mark its value as a secret (compared upper-case).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|SESSION|_AUTH(?!ORS?(?:_|$))")
# Well-known variables that match the pattern above but hold no secret; redacting
# their values ("ubuntu", "wayland", a socket path) would shred ordinary text.
_NOT_SECRET = frozenset(
    {
        "DESKTOP_SESSION",
        "XDG_SESSION_CLASS",
        "XDG_SESSION_DESKTOP",
        "XDG_SESSION_ID",
        "XDG_SESSION_TYPE",
        "SSH_AUTH_SOCK",
    }
)


def secrets_from_env(env: Mapping[str, str], extra_names: Iterable[str] = ()) -> dict[str, str]:
    """The variables of ``env`` whose names look secret, as ``{name: value}``.

    A name looks secret when it contains (any case) KEY, TOKEN, SECRET,
    PASSWORD, PASSWD, CREDENTIAL, SESSION or ``_AUTH`` (but not the
    ``GIT_AUTHOR_*`` kind), or is one of ``extra_names`` (any case). Empty
    values are skipped; short ones are kept here and ignored by ``Redactor``.
    """
    extra = {name.upper() for name in extra_names}
    found: dict[str, str] = {}
    for name, value in env.items():
        upper = name.upper()
        if not value:
            continue
        if upper in extra or (upper not in _NOT_SECRET and _SECRET_NAME.search(upper)):
            found[name] = value
    return found


class Redactor:
    """Replaces every known form of every secret with ``[REDACTED:<name>]``.

    ``secrets`` is either a mapping ``{name: value}`` (the label is the
    variable's name) or an iterable of bare values (the label is ``secret``).
    """

    def __init__(self, secrets: Iterable[str] | Mapping[str, str] = ()) -> None:
        if isinstance(secrets, Mapping):
            pairs = [(str(name), value) for name, value in secrets.items()]
        else:
            pairs = [(DEFAULT_LABEL, value) for value in secrets]
        # form -> (label, characters that may extend the match to the left, to the right)
        self._forms: dict[str, tuple[str, str, str]] = {}
        for label, value in pairs:
            if not isinstance(value, str):
                raise TypeError(f"secret value for {label!r} must be str, not {type(value).__name__}")
            if len(value) < MIN_SECRET_LENGTH:
                continue
            for form, lead, trail in _forms(value):
                self._forms.setdefault(form, (label, lead, trail))
        ordered = sorted(self._forms, key=lambda form: (-len(form), form))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def redact(self, text: str) -> str:
        """``text`` with every occurrence of every form of a secret replaced."""
        if self._pattern is None or not text:
            return text
        out: list[str] = []
        last = 0
        for match in self._pattern.finditer(text):
            start, end = match.span()
            label, lead, trail = self._forms[match.group()]
            if lead and start > last and text[start - 1] in lead:
                start -= 1
            if trail and end < len(text) and text[end] in trail:
                end += 1
            start = max(start, last)
            out.append(text[last:start])
            out.append(f"[REDACTED:{label}]")
            last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def redact_obj(self, obj: object) -> object:
        """A copy of ``obj`` with every string redacted, dict keys included.

        Dicts, lists and tuples are walked recursively; other values are
        returned as they are. Two keys that redact to the same text are kept
        apart with a ``#2``, ``#3``... suffix rather than one overwriting the other.
        """
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, Mapping):
            result: dict[object, object] = {}
            for key, value in obj.items():
                new_key = self.redact(key) if isinstance(key, str) else key
                if new_key in result and isinstance(new_key, str):
                    new_key = next(f"{new_key}#{n}" for n in itertools.count(2) if f"{new_key}#{n}" not in result)
                result[new_key] = self.redact_obj(value)
            return result
        if isinstance(obj, list):
            return [self.redact_obj(item) for item in obj]
        if isinstance(obj, tuple):
            return tuple(self.redact_obj(item) for item in obj)
        return obj


def _forms(secret: str) -> Iterable[tuple[str, str, str]]:
    """Every encoded form of ``secret``: ``(text, lead_chars, trail_chars)``."""
    plain: set[str] = {secret}
    for url in (quote(secret, safe=""), quote(secret), quote_plus(secret), quote_plus(secret, safe="/")):
        plain.add(url)
        plain.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), url))
    for ensure_ascii in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ensure_ascii)[1:-1]
        plain.add(escaped)
        plain.add(escaped.replace("/", "\\/"))
    raw = secret.encode("utf-8", "surrogatepass")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        padded = encode(raw).decode("ascii")
        plain.update({padded, padded.rstrip("="), quote(padded, safe="")})
    for form in plain:
        yield form, "", ""
    for core, lead, trail in _base64_cores(raw):
        for alphabet in (_STD, _URLSAFE):
            yield (
                "".join(alphabet[i] for i in core),
                "".join(alphabet[i] for i in lead),
                "".join(alphabet[i] for i in trail),
            )


def _base64_cores(raw: bytes) -> Iterable[tuple[list[int], list[int], list[int]]]:
    """For each byte alignment (0, 1, 2) of ``raw`` inside a longer base64 blob:
    the sextets fully determined by ``raw``, and the possible values of the
    partial sextet before and after them (empty when there is none)."""
    bits = "".join(f"{byte:08b}" for byte in raw)
    for offset in range(3):
        skew = (8 * offset) % 6  # bits of the first sextet that belong to the bytes before
        lead: list[int] = []
        rest = bits
        if skew:
            known = bits[: 6 - skew]
            lead = sorted(int(free + known, 2) for free in _bit_strings(skew))
            rest = bits[6 - skew :]
        full = len(rest) // 6
        core = [int(rest[6 * i : 6 * i + 6], 2) for i in range(full)]
        tail = rest[6 * full :]
        trail = sorted(int(tail + free, 2) for free in _bit_strings(6 - len(tail))) if tail else []
        if core:
            yield core, lead, trail


def _bit_strings(width: int) -> list[str]:
    return [format(n, f"0{width}b") for n in range(2**width)]
