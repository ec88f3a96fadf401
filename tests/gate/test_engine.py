"""The decision: default deny, grants, ask, reasons that say what to do, fail closed."""

import json
import shutil

import pytest

from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.policy.document import content_hash


def test_tools_the_role_does_not_show_are_denied_with_the_list(policy_for, worktree):
    policy = policy_for("edit-local")
    for tool in ("Agent", "Task", "NotebookEdit", "WebFetch", "PowerShell", "FutureTool"):
        d = decide(policy, tool, {}, str(worktree))
        assert d.verdict == DENY and d.rule == "tools"
        assert "do the work yourself with the tools you may use: Bash, BashOutput, Edit, Glob, Grep" in d.reason
    # an MCP tool no rule names: refused with the rule that would allow it (tests/gate/test_mcp.py)
    d = decide(policy, "mcp__fs__write_file", {}, str(worktree))
    assert d.verdict == DENY and d.rule == "mcp" and 'server = "fs"' in d.reason


def test_write_inside_scope_is_granted_by_the_whitelist_atom(policy_for, worktree):
    d = decide(policy_for(), "Write", {"file_path": f"{worktree}/src/pkg/new.py", "content": "x"}, str(worktree))
    assert d.verdict == ALLOW and d.atom == "scope::files-whitelist"


def test_denylist_beats_whitelist_and_names_its_atom(policy_for, worktree):
    d = decide(policy_for(), "Write", {"file_path": "src/pkg/generated/t.py", "content": "x"}, str(worktree))
    assert d.verdict == DENY and d.atom == "scope::files-denylist"
    assert "denylist" in d.reason


def test_a_role_without_a_write_scope_writes_nothing(policy_for, worktree):
    d = decide(policy_for("explorer"), "Bash", {"command": "echo x > src/out.txt"}, str(worktree))
    assert d.verdict == DENY and d.atom == "scope::read-only"


def test_reasons_tell_the_model_what_it_may_do(policy_for, worktree):
    d = decide(policy_for(), "Edit", {"file_path": "docs/x.md", "old_string": "a", "new_string": "b"}, str(worktree))
    assert d.verdict == DENY and "you may write only inside: src/**, tests/**" in d.reason
    d = decide(policy_for(), "Bash", {"command": "make all"}, str(worktree))
    assert d.verdict == ASK and "no rule of role `edit-local` runs `make`" in d.reason and "pytest" in d.reason
    assert "`runtime allow 'make all' --role edit-local`" in d.reason
    d = decide(policy_for(), "Bash", {"command": "cargo -q test"}, str(worktree))
    assert d.verdict == ASK and "options after the subcommand" in d.reason


def test_bash_redirect_and_scope_flags_are_write_checked(policy_for, worktree):
    policy = policy_for()
    assert decide(policy, "Bash", {"command": "pytest --junitxml=tests/r.xml"}, str(worktree)).verdict == ALLOW
    d = decide(policy, "Bash", {"command": "pytest --junitxml=/tmp/r.xml"}, str(worktree))
    assert d.verdict == DENY and "/tmp/r.xml" in d.reason
    d = decide(policy, "Bash", {"command": "mkdir -p docs/new"}, str(worktree))
    assert d.verdict == DENY and "docs/new" in d.reason


def test_symlinks_planted_in_scope_do_not_lead_out(policy_for, worktree):
    policy = policy_for()
    for path in ("src/pkg/escape/passwd", "src/pkg/gitlink/config", "src/pkg/gitlink/hooks/pre-commit"):
        d = decide(policy, "Write", {"file_path": path, "content": "x"}, str(worktree))
        assert d.verdict == DENY, path


def _policy_with_ask(worktree):
    doc = {
        "format": "agent-runtime-policy", "version": 1, "role": "r", "root": str(worktree), "tools": ["Bash"],
        "protected": [], "gates": [{"atom": "tools::bash-allowlist", "kind": "bash-allowlist", "params": {"rules": [
            {"program": p, "subcommands": [], "option-style": "gnu", "options": {}, "positionals": ["free..."],
             "trailing": None, "env": [], "cwd": "any", "xargs": False, "inline-code": False, "arg-files": False, "ask": p == "npm"} for p in ("npm", "ls")]}}],
    }
    doc["hash"] = content_hash(doc)
    return Policy(doc)


def test_ask_rules_ask_and_deny_beats_ask(worktree):
    policy = _policy_with_ask(worktree)
    assert decide(policy, "Bash", {"command": "npm test"}, str(worktree)).verdict == ASK
    assert decide(policy, "Bash", {"command": "ls && npm test"}, str(worktree)).verdict == ASK
    assert decide(policy, "Bash", {"command": "npm test && ls > out.txt"}, str(worktree)).verdict == DENY  # no scope
    d = decide(policy, "Bash", {"command": "npm test && curl x"}, str(worktree))
    assert d.verdict == ASK and "`npm` needs approval" in d.reason  # no rule decides curl: asked too, after npm
    assert decide(policy, "Bash", {"command": "ls"}, str(worktree)).verdict == ALLOW


@pytest.mark.parametrize("tool,tool_input,cwd", [
    (None, {}, "/w"),
    ("Read", "not a dict", "/w"),
    ("Read", {"file_path": "x"}, "relative/cwd"),
    ("Read", {"file_path": "x"}, None),
    ("Read", {"file_path": 3}, "/w"),
    ("Read", {"file_path": "a\x00b"}, "/w"),
    ("Read", {"file_path": "x", "surprise": 1}, "/w"),
    ("Write", {"file_path": ["src/x"], "content": "x"}, "/w"),
    ("MultiEdit", {"file_path": "src/x", "edits": "nope"}, "/w"),
    ("Bash", {"command": 42}, "/w"),
    ("Bash", {"command": "ls", "dangerouslyDisableSandbox": True}, "/w"),
    ("Grep", {"path": "src"}, "/w"),
])
def test_malformed_calls_are_denied(policy_for, tool, tool_input, cwd):
    assert decide(policy_for(), tool, tool_input, cwd).verdict == DENY


def test_an_exception_inside_the_gate_is_a_deny(policy_for, worktree):
    policy = policy_for()

    class Boom:
        kind = "boom"
        atom = "test::boom"
        grants = False

        def on_write(self, *args):
            raise RuntimeError("kaboom")

    policy.write_gates.insert(0, Boom())
    d = decide(policy, "Write", {"file_path": "src/pkg/x.py", "content": "x"}, str(worktree))
    assert d.verdict == DENY and "kaboom" in d.reason and d.rule == "gate-error"


def test_policy_documents_that_were_edited_or_are_unknown_are_refused(policy_for):
    doc = policy_for().doc
    edited = json.loads(json.dumps(doc))
    edited["tools"].append("WebFetch")
    with pytest.raises(ValueError, match="content hash"):
        Policy(edited)
    unknown = json.loads(json.dumps(doc))
    unknown["gates"][0]["kind"] = "no-such-kind"
    unknown["hash"] = content_hash(unknown)
    with pytest.raises(ValueError, match="unknown gate kind"):
        Policy(unknown)
    extra = json.loads(json.dumps(doc))
    extra["gates"][0]["params"]["surprise"] = 1
    extra["hash"] = content_hash(extra)
    with pytest.raises(ValueError, match="unexpected parameters"):
        Policy(extra)


def test_the_catalog_and_the_worktree_are_never_removed_or_moved_whole(tmp_path):
    """A catalog inside the worktree (a repository that ships its own): its parts are protected, and so
    are the folder holding them and the worktree itself, even where the write scope covers everything."""
    from runtime.policy.build import build_policy
    from tests.conftest import REPO

    root = tmp_path / "wt"
    (root / "src").mkdir(parents=True)
    (root / "src/a.py").write_text("x")
    for name in ("capabilities", "roles", "programs"):
        shutil.copytree(REPO / name, root / "tools/catalog" / name)
    task = tmp_path / "task.toml"
    task.write_text('[task]\nrole = "edit-local"\ngoal = "x"\n[scope]\nfiles-whitelist = ["**"]\n'
                    '[verification]\ntest-command = "pytest -q"\ncheck-commands = ["true"]\n[body]\ntext = "x"\n')
    policy = Policy(build_policy(root / "tools/catalog", None, task, root.resolve()))
    cwd = str(root.resolve())
    for command in ("rm -rf tools/catalog", "mv tools/catalog tools/old", "rm -rf tools", "rm -rf tools/catalog/roles",
                    "rm -rf .", "mv src/a.py tools/catalog/roles/x.toml", "rm -rf src/.."):
        d = decide(policy, "Bash", {"command": command}, cwd)
        assert d.verdict == DENY and d.rule == "protected", (command, d)
    assert "holds the runtime's own policy or catalog files" in decide(
        policy, "Bash", {"command": "rm -rf tools"}, cwd).reason
    for command in ("rm -rf src", "mv src/a.py src/b.py", "mkdir -p tools/catalog/../x", "mkdir -p ."):
        d = decide(policy, "Bash", {"command": command}, cwd)
        assert d.verdict == ALLOW, (command, d)


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
def test_file_tools_refuse_a_path_claude_code_would_expand_to_the_home_folder(policy_for, worktree, tool):
    inputs = {"Write": {"content": "x"}, "Edit": {"old_string": "a", "new_string": "b"},
              "MultiEdit": {"edits": [{"old_string": "a", "new_string": "b"}]}}[tool]
    for path in ("~/.bashrc", "~", "~root/x"):
        d = decide(policy_for(), tool, {"file_path": path, **inputs}, str(worktree))
        assert d.verdict == DENY and "home folder" in d.reason, d
