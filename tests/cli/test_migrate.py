import json

from tests.conftest import run_cli, snapshot

OLD = '''#:schema ../schemas/role.schema.json
# keeps tools::read-only in this comment
[role]
name = "legacy"
display-name = 'legacy'
description = "uses old names"
use-cases = ["x"]

[capabilities]
required = [
    "tools::read-only",   # the old name
    'tools::cargo-only-bash',
    "policy::no-git-ops",
]

[tools]
shown = ["Read", "Bash"]

[escalation]
policy = "ask-via-return"

[params."tools::cargo-only-bash"]
rules = [{ program = "ls" }]
'''


def test_check_lists_each_use_and_changes_nothing(catalog_copy):
    (catalog_copy / "roles/legacy.toml").write_text(OLD)
    before = snapshot(catalog_copy)
    proc = run_cli("migrate", "--check", cwd=catalog_copy)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "roles/legacy.toml:11: `tools::read-only` is deprecated, use `tools::deny-tools`",
        "roles/legacy.toml:12: `tools::cargo-only-bash` is deprecated, use `tools::bash-allowlist`",
        "roles/legacy.toml:22: `tools::cargo-only-bash` is deprecated, use `tools::bash-allowlist`",
        "roles/legacy.toml:23: the shell rule for `ls` has the old form; it now uses the catalog's grammar `ls`",
    ]
    assert snapshot(catalog_copy) == before


def test_rewrite_keeps_everything_else_and_is_idempotent(catalog_copy):
    path = catalog_copy / "roles/legacy.toml"
    path.write_text(OLD)
    others = {k: v for k, v in snapshot(catalog_copy).items() if k != "roles/legacy.toml"}
    diff = run_cli("migrate", "--diff", cwd=catalog_copy)
    assert diff.returncode == 0 and '-    "tools::read-only",   # the old name' in diff.stdout
    assert path.read_text() == OLD
    assert run_cli("migrate", cwd=catalog_copy).returncode == 0
    expected = (OLD.replace('"tools::read-only",', '"tools::deny-tools",')
                .replace("'tools::cargo-only-bash'", "'tools::bash-allowlist'")
                .replace('[params."tools::cargo-only-bash"]', '[params."tools::bash-allowlist"]')
                .replace('rules = [{ program = "ls" }]', 'rules = [{ program = "ls", grammar = "ls"}]'))
    assert path.read_text() == expected
    assert "# keeps tools::read-only in this comment" in path.read_text()
    assert {k: v for k, v in snapshot(catalog_copy).items() if k != "roles/legacy.toml"} == others
    again = run_cli("migrate", cwd=catalog_copy)
    assert again.returncode == 0 and ("no deprecated names, old shell rules, old size examples or old grammar file names "
                                      "found") in again.stdout
    assert path.read_text() == expected
    assert run_cli("migrate", "--check", cwd=catalog_copy).returncode == 0
    assert run_cli("lint", cwd=catalog_copy).returncode == 0


def test_a_rewrite_that_would_collide_is_refused(catalog_copy):
    path = catalog_copy / "roles/legacy.toml"
    path.write_text(OLD + '\n[params."tools::bash-allowlist"]\nrules = []\n')
    before = path.read_bytes()
    proc = run_cli("migrate", str(path), cwd=catalog_copy)
    assert proc.returncode == 1 and "error: roles/legacy.toml:" in proc.stderr
    assert path.read_bytes() == before


DENYLIST_ROLE = """[role]
name = "denylist"
display-name = "old shell rules"
description = "rules of the denylist form"
use-cases = ["x"]

[capabilities]
extends = "explorer"

[[params."tools::bash-allowlist".rules]]
program = "python3"
subcommands = ["-m pytest"]
deny-flags = ["-p"]  # plugins
scope-path-flags = ["--junitxml"]

[[params."tools::bash-allowlist".rules]]
program = "make"
deny-flags = ["-f"]
root-path-flags = ["-C"]
scope-path-flags = ["-o"]
option-style = "exact"

[[params."tools::bash-allowlist".rules]]
program = "shred"
positional-writes = true
"""


def test_denylist_rules_become_grammars_and_say_what_is_now_denied(catalog_copy):
    path = catalog_copy / "roles/denylist.toml"
    path.write_text(DENYLIST_ROLE)
    lint = run_cli("lint", cwd=catalog_copy)
    assert lint.returncode == 1 and "`deny-flags` is gone" in lint.stderr and "runtime migrate" in lint.stderr
    check = run_cli("migrate", "--check", cwd=catalog_copy)
    assert check.returncode == 1
    assert check.stdout.splitlines() == [
        "roles/denylist.toml:11: the shell rule for `python3` has the old form; it now uses the catalog's grammar `pytest`",
        "roles/denylist.toml:17: the shell rule for `make` has the old form; it now takes only -C, -o: "
        "declare each other option it needs in `options`",
        "roles/denylist.toml:24: the shell rule for `shred` has the old form; it now takes no options: "
        "declare each other option it needs in `options`",
    ]
    assert path.read_text() == DENYLIST_ROLE
    assert run_cli("migrate", cwd=catalog_copy).returncode == 0
    text = path.read_text()
    assert "deny-flags" not in text and "# plugins" not in text.split("make")[1]
    assert 'grammar = "pytest"' in text and 'positionals = ["path-in-scope..."]' in text
    assert run_cli("lint", cwd=catalog_copy).returncode == 0
    assert run_cli("migrate", "--check", cwd=catalog_copy).returncode == 0
    # what the migrated rules decide, through the real hook
    root = catalog_copy / "work"
    (root / "sub").mkdir(parents=True)
    # what no rule declares is undecided: asked (Claude Code's prompt, exit 0)
    for command, verdict in (("make -C sub", "allow"), ("make -f evil.mk", "ask"), ("make -C /tmp", "deny"),
                             ("python3 -m pytest -q sub", "allow"), ("python3 -m pytest -p evil", "ask")):
        proc = run_cli("check", "--role", "denylist", "--catalog", str(catalog_copy), "--root", str(root),
                       input=json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                         "tool_input": {"command": command}, "cwd": str(root)}))
        assert proc.returncode == (2 if verdict == "deny" else 0), (command, proc.stdout, proc.stderr)
        assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == verdict, (command, proc.stdout)


MODULES_ROLE = """#:schema ../schemas/role.schema.json
[role]
name = "modules"
display-name = "modules"
description = "runs two test modules"
use-cases = ["x"]

[capabilities]
required = ["tools::bash-allowlist", "policy::no-git-ops"]

[tools]
shown = ["Read", "Bash"]

[escalation]
policy = "ask-via-return"

[[params."tools::bash-allowlist".rules]]
program = "python3"
subcommands = ["-m pytest", "--version", "-m unittest"]
deny-flags = ["-p"]

[[params."tools::bash-allowlist".rules]]
program = "ls"
"""


def test_a_python_rule_for_two_modules_becomes_a_rule_per_grammar(catalog_copy):
    path = catalog_copy / "roles/modules.toml"
    path.write_text(MODULES_ROLE)
    check = run_cli("migrate", "--check", cwd=catalog_copy)
    assert check.returncode == 1
    assert check.stdout.splitlines() == [
        "roles/modules.toml:18: the shell rule for `python3` has the old form; it now uses the catalog's grammar "
        "`pytest` for `python3 -m pytest`, `python3 --version`",
        "roles/modules.toml:18: the shell rule for `python3` has the old form; it now uses the catalog's grammar "
        "`unittest` for `python3 -m unittest`",
        "roles/modules.toml:23: the shell rule for `ls` has the old form; it now uses the catalog's grammar `ls`",
    ]
    assert run_cli("migrate", cwd=catalog_copy).returncode == 0
    text = path.read_text()
    assert text.count('program = "python3"') == 2 and "deny-flags" not in text
    assert 'subcommands = ["-m pytest", "--version"]\ngrammar = "pytest"\n\n' in text
    assert 'subcommands = ["-m unittest"]\ngrammar = "unittest"\n\n' in text
    assert run_cli("lint", cwd=catalog_copy).returncode == 0
    assert run_cli("migrate", "--check", cwd=catalog_copy).returncode == 0  # idempotent
    root = catalog_copy / "work"
    root.mkdir()
    for command, verdict in (("python3 -m unittest -v", "allow"), ("python3 -m pytest -q", "allow"),
                             ("python3 -m unittest -p evil", "allow"), ("python3 -m pytest -p evil", "ask")):
        proc = run_cli("check", "--role", "modules", "--catalog", str(catalog_copy), "--root", str(root),
                       input=json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                         "tool_input": {"command": command}, "cwd": str(root)}))
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
        assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == verdict, (command, proc.stdout)


OLD_SIZE_ATOM = '''#:schema ../../../schemas/capability.schema.json
name = "team::small-files"
summary = "Small files."
verify = "size-limits"

[params.max-file-lines]
type = "int"
default = 3

[params.max-function-lines]
type = "int"
default = 0

[[examples]]
evidence = { files = { "a.md" = "1\\n2\\n3\\n4\\n" } }   # judged whole, as every size example was
expect = "rejected"

[[examples]]
expect = "passed"
[examples.evidence.files]
"b.md" = "1\\n"
'''


def test_size_examples_written_before_the_base_get_an_empty_one(catalog_copy):
    folder = catalog_copy / "capabilities/team/small-files"
    folder.mkdir(parents=True)
    (folder / "capability.toml").write_text(OLD_SIZE_ATOM)
    (folder / "text.md").write_text("Keep files small.\n")
    lint = run_cli("lint", cwd=catalog_copy)
    assert lint.returncode == 1
    assert ("capabilities/team/small-files/capability.toml:15: missing required key `base-files` in `examples[0].evidence`"
            in lint.stderr and "runtime migrate" in lint.stderr)
    before = snapshot(catalog_copy)
    check = run_cli("migrate", "--check", cwd=catalog_copy)
    assert check.returncode == 1 and check.stdout.splitlines() == [
        "capabilities/team/small-files/capability.toml:15: the example gives no `base-files`; "
        "it gets `base-files = {}` (every file new, as before)",
        "capabilities/team/small-files/capability.toml:18: the example gives no `base-files`; "
        "it gets `base-files = {}` (every file new, as before)",
    ]
    assert snapshot(catalog_copy) == before
    assert run_cli("migrate", cwd=catalog_copy).returncode == 0
    text = (folder / "capability.toml").read_text()
    assert '"a.md" = "1\\n2\\n3\\n4\\n" }, base-files = {}}   # judged whole, as every size example was' in text
    assert text.count("base-files = {}") == 2
    assert run_cli("lint", cwd=catalog_copy).returncode == 0  # each example decides as it did
    assert run_cli("migrate", "--check", cwd=catalog_copy).returncode == 0
