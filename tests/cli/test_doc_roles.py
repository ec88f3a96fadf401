from tests.conftest import REPO, run_cli


def test_committed_doc_is_current():
    proc = run_cli("doc-roles", "--check", cwd=REPO)
    assert proc.returncode == 0, proc.stdout


def test_doc_covers_every_role_and_matrix():
    text = (REPO / "docs/AGENT-ROLES.md").read_text()
    for role in ("read-only", "explorer", "edit-local", "edit-shared", "git-ops"):
        assert f". {role}" in text
    assert "## 5. git-ops — not spawnable (orchestrator only)" in text and "**Non-spawnable.**" in text
    for section in ("## Cross-role capability matrix", "## Tool allowlist matrix", "## Escalation policy matrix", "## Deprecated aliases"):
        assert section in text
    assert "| `tools::read-only` | `tools::deny-tools` |" in text
    assert "[`scope::files-whitelist`](../capabilities/scope/files-whitelist/text.md)" in text


def test_stale_doc_is_reported_with_a_diff_and_regenerated(catalog_copy):
    role = catalog_copy / "roles/explorer.toml"
    role.write_text(role.read_text().replace("Reproducing a failing test without any risk of edits", "Bisecting a flaky test"))
    check = run_cli("doc-roles", "--check", cwd=catalog_copy)
    assert check.returncode == 1 and "+- Bisecting a flaky test" in check.stdout and "stale" in check.stderr
    assert run_cli("doc-roles", cwd=catalog_copy).returncode == 0
    assert run_cli("doc-roles", "--check", cwd=catalog_copy).returncode == 0
    first = (catalog_copy / "docs/AGENT-ROLES.md").read_bytes()
    run_cli("doc-roles", cwd=catalog_copy)
    assert (catalog_copy / "docs/AGENT-ROLES.md").read_bytes() == first


def test_aliases_resolve_in_docs(catalog_copy):
    role = catalog_copy / "roles/read-only.toml"
    role.write_text(role.read_text().replace('"tools::deny-tools"', '"tools::read-only"'))
    proc = run_cli("doc-roles", "--check", cwd=catalog_copy)
    assert proc.returncode == 0
    assert "`tools::read-only` is deprecated" in proc.stderr
