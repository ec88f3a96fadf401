"""Secret redaction: every encoded form, short values ignored, nested objects, env names."""

from __future__ import annotations

import base64
import json
import random
import re
import string
import time
from urllib.parse import quote, quote_plus

import pytest

from runtime.audit.redact import MIN_SECRET_LENGTH, Redactor, secrets_from_env

SECRET = "s3/cr+et=&Key"  # has every character URL and base64 encodings treat specially
LABEL = "[REDACTED:API_KEY]"


@pytest.fixture
def redactor():
    return Redactor({"API_KEY": SECRET})


def _b64(data: str, urlsafe: bool = False) -> str:
    raw = data.encode()
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


def test_plain(redactor):
    assert redactor.redact(f"token is {SECRET}, again {SECRET}.") == f"token is {LABEL}, again {LABEL}."


def test_unnamed_secret_label():
    assert Redactor([SECRET]).redact(f"x{SECRET}y") == "x[REDACTED:secret]y"


@pytest.mark.parametrize("urlsafe", [False, True])
@pytest.mark.parametrize("padded", [True, False])
def test_base64_whole(redactor, urlsafe, padded):
    encoded = _b64(SECRET, urlsafe)
    assert encoded.endswith("=")  # 13 bytes: padding present to strip
    if not padded:
        encoded = encoded.rstrip("=")
    assert redactor.redact(f"value: {encoded} end") == f"value: {LABEL} end"


@pytest.mark.parametrize("user", ["u", "us", "usr", "user", "admin"])  # "user:" prefix at every byte offset
@pytest.mark.parametrize("urlsafe", [False, True])
def test_basic_auth_header_at_every_offset(redactor, user, urlsafe):
    prefix = f"{user}:"
    blob = _b64(prefix + SECRET, urlsafe)
    out = redactor.redact(f"Authorization: Basic {blob}\n")
    # The characters of the blob fully determined by the secret's bytes:
    first = -(-8 * len(prefix) // 6)
    last = 8 * (len(prefix) + len(SECRET)) // 6
    core = blob[first:last]
    assert len(core) >= 16
    assert core not in out
    assert LABEL in out
    assert out.startswith("Authorization: Basic ")


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_secret_inside_a_longer_base64_blob(redactor, offset):
    payload = "p" * offset + f'{{"password": "{SECRET}", "more": "data after the secret"}}'
    blob = _b64(payload)
    out = redactor.redact(blob)
    start = payload.index(SECRET)
    core = blob[-(-8 * start // 6) : 8 * (start + len(SECRET)) // 6]
    assert core not in out and LABEL in out
    # Text around the secret survives.
    assert out.startswith(blob[: 8 * start // 6 - 1])


@pytest.mark.parametrize(
    "encoded",
    [
        quote(SECRET, safe=""),
        quote(SECRET),
        quote_plus(SECRET),
        re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(SECRET, safe="")),  # lower-case escapes
    ],
)
def test_url_encoded(redactor, encoded):
    assert encoded != SECRET
    out = redactor.redact(f"https://example.test/cb?token={encoded}&next=1")
    assert out == f"https://example.test/cb?token={LABEL}&next=1"


def test_url_encoded_forms_differ_from_plain():
    assert quote(SECRET, safe="") == "s3%2Fcr%2Bet%3D%26Key"
    assert quote_plus(SECRET) == "s3%2Fcr%2Bet%3D%26Key"
    assert quote(SECRET) == "s3/cr%2Bet%3D%26Key"


def test_json_escaped():
    secret = 'pa"ss\\wörd/1\t'
    redactor = Redactor({"DB_PASSWORD": secret})
    for text in (json.dumps({"p": secret}), json.dumps({"p": secret}, ensure_ascii=False)):
        assert json.dumps(secret)[1:-1] not in redactor.redact(text)
        assert json.loads(redactor.redact(text)) == {"p": "[REDACTED:DB_PASSWORD]"}
    escaped_slash = json.dumps(secret)[1:-1].replace("/", "\\/")
    assert redactor.redact(f'{{"p": "{escaped_slash}"}}') == '{"p": "[REDACTED:DB_PASSWORD]"}'


def test_short_values_are_ignored():
    assert MIN_SECRET_LENGTH == 6
    redactor = Redactor({"A_KEY": "true", "B_TOKEN": "12345", "C_SECRET": "abcdef"})
    text = "true 12345 abcdef"
    assert redactor.redact(text) == "true 12345 [REDACTED:C_SECRET]"
    assert not Redactor(["short", ""])
    assert Redactor(["short"]).redact("a short text") == "a short text"


def test_text_without_secrets_is_unchanged(redactor):
    text = "".join(random.Random(3).choice(string.printable) for _ in range(20_000))
    assert redactor.redact(text) == text
    assert redactor.redact("") == ""


def test_longest_secret_wins():
    redactor = Redactor({"SHORT_KEY": "abcdefgh", "LONG_KEY": "abcdefgh-and-more"})
    assert redactor.redact("x abcdefgh-and-more y abcdefgh z") == "x [REDACTED:LONG_KEY] y [REDACTED:SHORT_KEY] z"


def test_adjacent_secrets():
    redactor = Redactor({"ONE_KEY": "first-secret", "TWO_KEY": "second-secret"})
    assert redactor.redact("first-secretsecond-secret") == "[REDACTED:ONE_KEY][REDACTED:TWO_KEY]"


def test_redact_obj_nested(redactor):
    obj = {
        "cmd": f"echo {SECRET}",
        SECRET: {"list": [SECRET, 3, None, True, 2.5, (SECRET, "ok")]},
        "env": {"headers": [{"Authorization": "Basic " + _b64("me:" + SECRET)}]},
        7: "int key kept",
    }
    out = redactor.redact_obj(obj)
    assert out == {
        "cmd": f"echo {LABEL}",
        LABEL: {"list": [LABEL, 3, None, True, 2.5, (LABEL, "ok")]},
        "env": {"headers": [{"Authorization": out["env"]["headers"][0]["Authorization"]}]},
        7: "int key kept",
    }
    assert LABEL in out["env"]["headers"][0]["Authorization"]
    assert SECRET in obj["cmd"]  # the input is not modified


def test_redact_obj_keeps_keys_that_collide(redactor):
    out = redactor.redact_obj({SECRET: 1, quote_plus(SECRET): 2})
    assert out == {LABEL: 1, LABEL + "#2": 2}


def test_non_string_secret_is_refused():
    with pytest.raises(TypeError):
        Redactor({"X_KEY": 123456})


def test_secrets_from_env():
    env = {
        "OPENAI_API_KEY": "sk-abc",
        "github_token": "ghp_x",
        "AWS_SECRET_ACCESS_KEY": "s",
        "DB_PASSWORD": "p",
        "SMTP_PASSWD": "p",
        "GOOGLE_APPLICATION_CREDENTIALS": "/path",
        "NPM_AUTH": "a",
        "HTTP_AUTHORIZATION": "Bearer x",
        "SESSION_COOKIE": "c",
        "MY_SERVICE": "svc-value",
        "PATH": "/usr/bin",
        "HOME": "/root",
        "OAUTHLIB_INSECURE": "1",
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.test",
        "DESKTOP_SESSION": "ubuntu",
        "XDG_SESSION_TYPE": "wayland",
        "EMPTY_TOKEN": "",
    }
    found = secrets_from_env(env, extra_names=["my_service"])
    assert sorted(found) == [
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "HTTP_AUTHORIZATION",
        "MY_SERVICE",
        "NPM_AUTH",
        "OPENAI_API_KEY",
        "SESSION_COOKIE",
        "SMTP_PASSWD",
        "github_token",
    ]
    assert found["OPENAI_API_KEY"] == "sk-abc"


def test_secrets_from_env_feeds_the_redactor():
    env = {"ANTHROPIC_API_KEY": "sk-ant-0123456789", "LANG": "C.UTF-8"}
    redactor = Redactor(secrets_from_env(env))
    assert redactor.redact("key=sk-ant-0123456789 lang=C.UTF-8") == "key=[REDACTED:ANTHROPIC_API_KEY] lang=C.UTF-8"


def test_one_megabyte_against_twenty_secrets_is_fast():
    rnd = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "/+=&%-_"
    secrets = {f"S{i}_TOKEN": "".join(rnd.choice(alphabet) for _ in range(rnd.randint(8, 40))) for i in range(20)}
    redactor = Redactor(secrets)
    chunks = ["".join(rnd.choice(string.printable) for _ in range(1_000_000))]
    text = chunks[0][:400_000] + secrets["S5_TOKEN"] + chunks[0][400_000:] + _b64("u:" + secrets["S9_TOKEN"])
    started = time.perf_counter()
    out = redactor.redact(text)
    elapsed = time.perf_counter() - started
    assert "[REDACTED:S5_TOKEN]" in out and "[REDACTED:S9_TOKEN]" in out
    assert elapsed < 1.0, f"redaction took {elapsed:.2f}s"
