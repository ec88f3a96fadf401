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
                .replace('[params."tools::cargo-only-bash"]', '[params."tools::bash-allowlist"]'))
    assert path.read_text() == expected
    assert "# keeps tools::read-only in this comment" in path.read_text()
    assert {k: v for k, v in snapshot(catalog_copy).items() if k != "roles/legacy.toml"} == others
    again = run_cli("migrate", cwd=catalog_copy)
    assert again.returncode == 0 and "no deprecated names found" in again.stdout
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
