"""Role resolution: extends, relaxes, cycles, depth, params and aliases."""

import pytest

from runtime.errors import ManifestError
from runtime.manifests.catalog import Catalog
from runtime.manifests.role import load_role
from tests.conftest import REPO


def role_file(name, extends=None, required=(), relaxes=(), extra=""):
    lines = ['[role]', f'name = "{name}"', 'display-name = "d"', 'description = "d"', 'use-cases = ["u"]', '', '[capabilities]']
    if extends:
        lines.append(f'extends = "{extends}"')
    lines.append("required = [" + ", ".join(f'"{r}"' for r in required) + "]")
    lines.append("relaxes = [" + ", ".join(f'"{r}"' for r in relaxes) + "]")
    if not extends:
        lines += ['', '[tools]', 'shown = ["Read"]', '', '[escalation]', 'policy = "ask-via-return"']
    return "\n".join(lines) + "\n" + extra


def test_shipped_roles_resolve_in_order():
    cat = Catalog(REPO)
    explorer = load_role(cat, "explorer")
    assert explorer.chain == ("read-only", "explorer")
    # the parent's atoms first (less the one explorer relaxes: it has no web tools), then its own
    parent = [a for a in load_role(cat, "read-only").atom_names() if a != "net::egress-allowlist"]
    assert list(explorer.atom_names()[:len(parent)]) == parent
    assert "net::egress-allowlist" not in explorer.atom_names()
    local = load_role(cat, "edit-local")
    assert "scope::read-only" not in local.atom_names() and "tools::deny-tools" not in local.atom_names()
    assert local.atom_names().index("policy::no-git-ops") == 0
    shared = load_role(cat, "edit-shared")
    assert shared.atom_names() == local.atom_names() and shared.tools == local.tools
    assert shared.escalation == "orchestrator-notify" and local.escalation == "ask-via-return"
    assert load_role(cat, "git-ops").spawnable is False


def test_extends_puts_parent_first_and_drops_duplicates(catalog_copy):
    (catalog_copy / "roles" / "base.toml").write_text(role_file("base", required=["policy::no-git-ops", "output::report-format"]))
    (catalog_copy / "roles" / "child.toml").write_text(role_file("child", "base", required=["output::report-format", "net::no-network"]))
    role = load_role(Catalog(catalog_copy), "child")
    assert role.atom_names() == ("policy::no-git-ops", "output::report-format", "net::no-network")


def test_relaxing_an_absent_atom_warns(catalog_copy, capsys):
    (catalog_copy / "roles" / "base.toml").write_text(role_file("base", required=["policy::no-git-ops"]))
    (catalog_copy / "roles" / "child.toml").write_text(role_file("child", "base", relaxes=["net::no-network"]))
    role = load_role(Catalog(catalog_copy), "child")
    assert role.atom_names() == ("policy::no-git-ops",)
    assert "relaxes `net::no-network`, which the role does not have" in capsys.readouterr().err


def test_cycles_are_errors(catalog_copy):
    (catalog_copy / "roles" / "a.toml").write_text(role_file("a", "b"))
    (catalog_copy / "roles" / "b.toml").write_text(role_file("b", "a"))
    with pytest.raises(ManifestError, match="cycle: a -> b -> a"):
        load_role(Catalog(catalog_copy), "a")


def test_depth_over_sixteen_is_an_error(catalog_copy):
    roles = catalog_copy / "roles"
    (roles / "r0.toml").write_text(role_file("r0", required=["policy::no-git-ops"]))
    for n in range(1, 17):
        (roles / f"r{n}.toml").write_text(role_file(f"r{n}", f"r{n - 1}"))
    assert len(load_role(Catalog(catalog_copy), "r15").chain) == 16
    with pytest.raises(ManifestError, match="17 levels deep; the limit is 16"):
        load_role(Catalog(catalog_copy), "r16")


def test_aliases_resolve_in_roles_with_one_warning(catalog_copy, capsys):
    extra = '\n[params."tools::read-only"]\ntools = ["Write"]\n'
    (catalog_copy / "roles" / "old.toml").write_text(role_file("old", required=["tools::read-only", "tools::cargo-only-bash"], extra=extra))
    role = load_role(Catalog(catalog_copy), "old")
    assert role.atom_names() == ("tools::deny-tools", "tools::bash-allowlist")
    assert role.params["tools::deny-tools"] == {"tools": ["Write"]}
    load_role(Catalog(catalog_copy), "old")
    err = capsys.readouterr().err
    assert err.count("`tools::read-only` is deprecated, use `tools::deny-tools`") == 1
    assert "roles/old.toml:8:" in err


@pytest.mark.parametrize("extra,message", [
    ('\n[params."net::no-network"]\nprograms = []\n', "not one of the role's atoms"),
    ('\n[params."policy::no-git-ops"]\ncolour = 1\n', "has no parameter `colour`"),
    ('\n[params."policy::no-git-ops"]\nprograms = "git"\n', "expected a list of strings"),
])
def test_role_params_are_checked(catalog_copy, extra, message):
    (catalog_copy / "roles" / "p.toml").write_text(role_file("p", required=["policy::no-git-ops"], extra=extra))
    with pytest.raises(ManifestError, match=message):
        load_role(Catalog(catalog_copy), "p")


def test_duplicates_unknown_atoms_and_name_mismatch(catalog_copy):
    roles = catalog_copy / "roles"
    (roles / "d.toml").write_text(role_file("d", required=["policy::no-git-ops", "policy::no-git-ops"]))
    with pytest.raises(ManifestError, match="listed twice") as info:
        load_role(Catalog(catalog_copy), "d")
    assert info.value.line == 8
    (roles / "u.toml").write_text(role_file("u", required=["policy::no-such"]))
    with pytest.raises(ManifestError, match="unknown atom `policy::no-such`"):
        load_role(Catalog(catalog_copy), "u")
    (roles / "m.toml").write_text(role_file("other"))
    with pytest.raises(ManifestError, match="does not match its file name"):
        load_role(Catalog(catalog_copy), "m")
