"""What git's own documentation says runs a program: configuration keys and hooks.

Read from the installed git's manual pages (`git-config(1)`, `githooks(5)`), so a
git that learns a new key that runs a command is planted by the tests without
anyone writing it down. A built-in list of the keys known in 2026 is always
added, so a machine without the manual pages still tests those.
"""

from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path

# The keys known to run a program, whatever the manual says (git 2.39 to 2.47).
KNOWN_KEYS = (
    "core.fsmonitor", "core.hooksPath", "core.sshCommand", "core.pager", "core.editor", "core.askPass",
    "core.gitProxy", "core.alternateRefsCommand", "credential.helper", "diff.external",
    "diff.<driver>.command", "diff.<driver>.textconv", "filter.<driver>.clean", "filter.<driver>.smudge",
    "filter.<driver>.process", "merge.<driver>.driver", "gpg.program", "gpg.ssh.program",
    "gpg.ssh.defaultKeyCommand", "gpg.x509.program", "sequence.editor", "pager.<cmd>", "alias.*",
    "uploadpack.packObjectsHook", "remote.<name>.uploadpack", "remote.<name>.receivepack",
    "interactive.diffFilter", "imap.tunnel", "include.path", "includeIf.<condition>.path", "ssh.variant",
)
KNOWN_HOOKS = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
    "pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction",
    "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman",
    "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit", "post-index-change",
)
# A description that names one of these is about a value git runs.
_RUNS = re.compile(r"(?i)\b(command|program|script|hook|helper|executable|editor|pager|viewer|driver|shell)s?\b")
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9.<>*_-]*$")


def _manual(name: str) -> str | None:
    for section in ("1", "5", "7"):
        path = Path(f"/usr/share/man/man{section}/{name}.{section}.gz")
        if path.is_file():
            return gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
    return None


def _plain(troff: str) -> str:
    return re.sub(r"\\f[BIRP]|\\&|\\(?=-)", "", troff).strip()


def documented_keys() -> list[str] | None:
    """Keys whose description in `git-config(1)` says they name a program; None without the manual."""
    text = _manual("git-config")
    if text is None:
        return None
    lines = text.splitlines()
    keys: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i] != ".PP":
            i += 1
            continue
        names, j = [], i + 1
        while j < len(lines) and lines[j] != ".RS 4" and lines[j] != ".PP":
            if not lines[j].startswith("."):
                names.append(_plain(lines[j]))
            j += 1
        if j >= len(lines) or lines[j] != ".RS 4":
            i = j
            continue
        depth, k, description = 1, j + 1, []
        while k < len(lines) and depth:
            depth += lines[k].startswith(".RS") - lines[k].startswith(".RE")
            description.append(lines[k])
            k += 1
        if _RUNS.search(_plain(" ".join(description))):
            keys += [n for n in names if _KEY.match(n) and "." in n]
        i = k
    return keys


def documented_hooks() -> list[str] | None:
    text = _manual("githooks")
    if text is None:
        return None
    return [_plain(m) for m in re.findall(r'^\.SS "([^"]+)"', text, re.M)]


def concrete(key: str) -> list[str]:
    """A documented key with its placeholders filled: `filter.<driver>.clean` is `filter.evil.clean`,
    which the planted attributes select; `pager.<cmd>` is every command the orchestrator runs."""
    if key == "alias.*":
        return ["alias.evil"]
    if key.startswith("pager.<"):
        return [f"pager.{c}" for c in ("add", "commit", "diff", "status", "log", "merge", "worktree", "bundle")]
    if key.startswith("includeIf.<"):
        return ["includeIf.gitdir:/.path", "includeIf.onbranch:*.path"]
    return [re.sub(r"<[^>]+>|\*", "evil", key)]


def accepted(keys: list[str], value: str, scratch: Path) -> list[str]:
    """The ``keys`` git still works with when each is set to ``value`` (a program's path): a key of an
    enum, a boolean or a path of another meaning (`core.worktree`) makes `git status` die, which would
    hide every other key of the same file, so it is left out."""
    if not (scratch / ".git").exists():
        scratch.mkdir(parents=True, exist_ok=True)
        env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(scratch), "PATH": "/usr/bin:/bin"}
        subprocess.run(["git", "init", "-q", str(scratch)], check=True, env=env)
        (scratch / "a").write_text("a\n")
        subprocess.run(["git", "-C", str(scratch), "add", "a"], check=True, env=env)
    out = []
    for key in keys:
        proc = subprocess.run(["git", "-C", str(scratch), "-c", f"{key}={value}", "status", "--porcelain"],
                              capture_output=True, env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(scratch),
                                                        "PATH": "/usr/bin:/bin"})
        if proc.returncode == 0:
            out.append(key)
    return out
