"""Text an agent would write to take over the operator's terminal, and checks that none of it did.

The outside review's string: a window title (OSC), clear-screen, a fake green "ok … merged" line, CR
and backspace to overwrite, a C1 CSI, a bidi override, rich markup, a NUL and a byte that is not
UTF-8. `run_cli` runs the real CLI with or without a pseudo-terminal and returns every byte it
wrote; `assert_inert` checks them.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
import unicodedata
from pathlib import Path

MARKUP = ("[/bold]", "[link=file:///etc/passwd]x[/link]", "[red]")
HOSTILE = ("\x1b]0;pwned\x07" "\x1b[2J" "\x1b[32m ok … merged\x1b[0m" "\r" "\b" "\x9b" "\u202e" + "".join(MARKUP)
           + "\x00" "\udcff")
# A file name holds neither NUL nor `/` (so no closing tags and no link=file:///...).
HOSTILE_NAME = "x\x1b]0;pwned\x07\x1b[2J\r\b\x9b\u202e[red][bold]\udcff.txt"
# How the first sequence shows up once escaped: whole, as text.
SHOWN = "\\x1b]0;pwned\\x07"

# The sequences rich writes itself on a terminal: styles (SGR), erasing a line, moving the cursor,
# hiding and showing it. Never an OSC, never clear-screen.
_RICH_OWN = re.compile(r"\x1b\[(?:[0-9;]*[mKABCDG]|\?25[hl])")


def sh_bytes(text: str) -> str:
    """A printf format for /bin/sh that writes ``text``'s bytes (UTF-8, surrogateescape): every byte
    but letters and digits in octal, so nothing needs quoting."""
    return "".join(chr(b) if chr(b).isalnum() and b < 128 else f"\\{b:03o}"
                   for b in text.encode("utf-8", "surrogateescape"))


def run_cli(argv: list[str], *, tty: bool, cwd: Path, env: dict[str, str], timeout: float = 150) -> tuple[int, bytes]:
    """Run ``argv``; return its exit code and every byte it wrote to stdout and stderr.

    With ``tty``, both go to a pseudo-terminal 400 columns wide (rich's terminal path: styles, the
    live view redrawn in place); without, to pipes.
    """
    env = {**env, "TERM": "xterm-256color", "COLUMNS": "400", "LINES": "50"}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    if not tty:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout + proc.stderr
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"{argv} did not finish in {timeout} s: {b''.join(chunks)[-2000:]!r}")
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the last holder of the terminal closed it
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
    return proc.wait(timeout=30), b"".join(chunks)


def assert_inert(data: bytes, *, tty: bool) -> str:
    """No byte the agent sent acts on the terminal; returns the output as text.

    Without a terminal the output holds no control character but newline and tab at all. On a
    terminal, the only escape sequences are rich's own (styles, cursor, erase-line), every CR ends
    a line (the terminal's CRLF) or starts one of rich's redraws, and nothing else is a control,
    format, surrogate or separator character: no BEL, backspace, NUL, C1, bidi override.

    Returns the text as a reader sees it: without rich's own sequences, lines ending in newlines.
    """
    text = data.decode("utf-8")  # strict: a lone surrogate would have been refused by the encoder anyway
    rest = text
    if tty:
        assert "\x1b]" not in text and "\x1b[2J" not in text, _around(text, "\x1b]" if "\x1b]" in text else "\x1b[2J")
        rest = _RICH_OWN.sub("", text)
        assert "\x1b" not in rest, _around(rest, "\x1b")
        stray_cr = re.search(r"\r(?!\n|\x1b\[)", text)
        assert stray_cr is None, _around(text, "\r", stray_cr.start() if stray_cr else 0)
        rest = rest.replace("\r", "")
    bad = [(i, c) for i, c in enumerate(rest) if c not in "\n\t"
           and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
    assert not bad, [(hex(ord(c)), _around(rest, c, i)) for i, c in bad[:5]]
    return rest


def _around(text: str, needle: str, at: int | None = None) -> str:
    at = text.find(needle) if at is None else at
    return repr(text[max(0, at - 120): at + 120])
