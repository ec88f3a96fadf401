"""The Claude Code plugin's files: the committed ones are what the code writes, its hook is the one `runtime hook
install` writes, and each command runs one real `runtime` verb. (tests/plugin/ installs it into the real CLI.)"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from runtime.tooling import claude_plugin
from tests.conftest import REPO, RUNTIME, run_cli

ON_PATH = {"PATH": f"{Path(RUNTIME).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
SCRIPT = REPO / "scripts/claude_plugin.py"


def test_the_committed_files_are_what_the_code_writes():
    assert claude_plugin.stale_files(REPO) == [], "run `python scripts/claude_plugin.py`"
    marketplace = json.loads((REPO / ".claude-plugin/marketplace.json").read_text())
    [entry] = marketplace["plugins"]
    assert entry["source"] == "./plugin" and entry["name"] == marketplace["name"] == "agent-runtime"


def test_the_plugin_hook_is_the_one_hook_install_writes(tmp_path):
    """One source of truth: the plugin gates a session exactly as `runtime hook install` without --role does."""
    proc = run_cli("hook", "install", "--catalog", str(REPO), "--json", cwd=tmp_path, env=ON_PATH)
    assert proc.returncode == 0, proc.stderr
    installed = json.loads((tmp_path / ".claude/settings.json").read_text())["hooks"]["PreToolUse"]
    plugin = json.loads((REPO / "plugin/hooks/hooks.json").read_text())
    assert plugin == {"hooks": {"PreToolUse": installed}}
    [entry] = installed
    [hook] = entry["hooks"]
    assert entry["matcher"] == "*" and hook["onFailure"] == "block"
    assert shlex.split(hook["command"])[:2] == ["runtime", "check"]  # by name: found on PATH, or exit 127 and blocked


def test_check_names_a_stale_file_and_writes_nothing(tmp_path):
    copy = tmp_path / "repo"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, copy / "scripts")
    for rel in claude_plugin.generated_files():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, copy / rel)
    hooks = copy / "plugin/hooks/hooks.json"
    edited = hooks.read_text().replace('"block"', '"ignore"')
    hooks.write_text(edited)
    check = subprocess.run([sys.executable, str(copy / "scripts/claude_plugin.py"), "--check"], capture_output=True, text=True)
    assert check.returncode == 1
    assert check.stderr.splitlines() == ["error: plugin/hooks/hooks.json: differs from what the code writes; run "
                                         "`python scripts/claude_plugin.py`"]
    assert '-            "onFailure": "ignore"' in check.stdout and '+            "onFailure": "block"' in check.stdout
    assert hooks.read_text() == edited
    write = subprocess.run([sys.executable, str(copy / "scripts/claude_plugin.py")], capture_output=True, text=True)
    assert write.returncode == 0 and write.stdout == "wrote plugin/hooks/hooks.json\n", write.stderr
    assert hooks.read_text() == (REPO / "plugin/hooks/hooks.json").read_text()


def _front_matter(path: Path) -> tuple[dict[str, str], str]:
    text = path.read_text()
    assert text.startswith("---\n"), path
    head, body = text[4:].split("\n---\n", 1)
    return dict(line.split(": ", 1) for line in head.splitlines()), body


def test_each_command_runs_one_runtime_verb_and_only_a_person_invokes_it():
    commands = sorted((REPO / "plugin/commands").glob("*.md"))
    assert [p.stem for p in commands] == ["runtime-explain", "runtime-init", "runtime-status"]
    verbs = run_cli("--help").stdout
    for path in commands:
        meta, body = _front_matter(path)
        assert meta["disable-model-invocation"] == "true", path  # the model may not run it as a tool
        [line] = re.findall(r"!`([^`]*)`", body)
        words = shlex.split(line.replace("$ARGUMENTS", "ARG"))
        verb = path.stem.removeprefix("runtime-")
        assert words[:2] == ["runtime", verb] and re.search(rf"\b{verb}\b", verbs), path
        # The `!` line runs under the command's allowed-tools alone: exactly its verb (and `true`,
        # which keeps a deny's exit 2 from hiding explain's answer).
        allowed = {"Bash(runtime explain:*)", "Bash(true)"} if verb == "explain" else {f"Bash(runtime {verb}:*)"}
        assert set(meta["allowed-tools"].split(", ")) == allowed, path
