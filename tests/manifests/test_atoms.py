"""Atoms load only when every key is enforced: kinds, params and examples checked."""

import tomllib
from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.manifests.atom import Alias, Atom, AtomFile, load_atom_folder
from runtime.manifests.catalog import Catalog
from runtime.manifests.kinds import GATE_KINDS
from runtime.verify.kinds.registry import KINDS
from tests.conftest import REPO

SHIPPED = [
    "tools::deny-tools", "tools::bash-allowlist", "scope::files-whitelist", "scope::files-denylist",
    "scope::read-only", "policy::no-git-ops", "safety::no-dep-bump", "quality::tests-green",
    "quality::check-green", "quality::constructor-pattern", "output::report-format",
    "output::severity-grade", "net::no-network", "net::egress-allowlist", "safety::no-secrets", "scope::change-size",
    "quality::tests-protected", "quality::runner-config", "quality::no-blanket-suppressions", "quality::no-test-detection",
    "tools::mcp-allowlist", "quality::review",
]


def test_every_shipped_atom_loads_and_enforces_something():
    atoms, aliases = Catalog(REPO).load_entries()
    assert sorted(atoms) == sorted(SHIPPED)
    for atom in atoms.values():
        assert atom.gate or atom.verify or atom.sandbox
        assert atom.examples
    assert {a.name: a.target for a in aliases.values()} == {
        "tools::read-only": "tools::deny-tools",
        "tools::cargo-only-bash": "tools::bash-allowlist",
        "quality::cargo-check-green": "quality::check-green",
    }


def test_gate_and_verify_kinds_match_the_implementations():
    from runtime.gate.kinds import all_gates

    assert set(all_gates()) == set(GATE_KINDS)
    assert set(AtomFile.model_json_schema()["properties"]["verify"]["enum"]) == set(KINDS)


def test_every_verify_kind_a_shipped_atom_names_is_registered():
    named = {atom["verify"] for path in REPO.glob("capabilities/*/*/capability.toml")
             if "verify" in (atom := tomllib.loads(path.read_text()))}
    assert named and named <= set(KINDS)


def write_atom(root: Path, name: str, body: str, text: str | None = "Do the thing.\n") -> Path:
    cat, slug = name.split("::")
    folder = root / cat / slug
    folder.mkdir(parents=True)
    (folder / "capability.toml").write_text(body)
    if text is not None:
        (folder / "text.md").write_text(text)
    return folder


GOOD = '''name = "x::y"
summary = "A rule."
gate = "no-git"

[params.programs]
type = "str-list"
default = ["git"]

[[examples]]
tool = "Bash"
input = { command = "git status" }
expect = "deny"
'''


def test_a_well_formed_atom_loads(tmp_path):
    atom = load_atom_folder(write_atom(tmp_path, "x::y", GOOD), "x.toml")
    assert isinstance(atom, Atom) and atom.gate == "no-git" and atom.params["programs"].default == ["git"]


@pytest.mark.parametrize("change,line,words", [
    (("gate = \"no-git\"", "gate = \"no-such-kind\""), 3, "gate"),
    (("summary = \"A rule.\"", "summary = \"A rule.\"\ncolour = \"red\""), 3, "unknown key `colour`"),
    (("type = \"str-list\"", "type = \"list\""), 6, "type"),
    (("default = [\"git\"]", "default = \"git\""), 7, "default of `programs`"),
    (("[[examples]]", "[params.extra]\ntype = \"int\"\ndefault = 1\n\n[[examples]]"), 9, "not used by the atom's kinds"),
    (("name = \"x::y\"", "name = \"x::z\""), 1, "does not match its folder"),
    (("expect = \"deny\"", "expect = \"maybe\""), 12, "expect"),
])
def test_bad_atoms_name_the_line(tmp_path, change, line, words):
    folder = write_atom(tmp_path, "x::y", GOOD.replace(*change))
    with pytest.raises(ManifestError) as info:
        load_atom_folder(folder, "x.toml")
    assert info.value.line == line
    assert words in info.value.message


def test_an_atom_that_enforces_nothing_is_rejected(tmp_path):
    body = 'name = "x::y"\nsummary = "Prompt only."\n\n[[examples]]\ntool = "Read"\ninput = {file_path = "a"}\nexpect = "allow"\n'
    with pytest.raises(ManifestError, match="enforces nothing"):
        load_atom_folder(write_atom(tmp_path, "x::y", body), "x.toml")


def test_a_kind_parameter_must_be_declared(tmp_path):
    body = GOOD.replace('[params.programs]\ntype = "str-list"\ndefault = ["git"]\n', "")
    with pytest.raises(ManifestError, match="need parameter `programs`"):
        load_atom_folder(write_atom(tmp_path, "x::y", body), "x.toml")


def test_an_example_may_not_set_an_undeclared_parameter(tmp_path):
    body = GOOD.replace('expect = "deny"', 'expect = "deny"\nparams = { colour = "red" }')
    with pytest.raises(ManifestError, match="undeclared parameter `colour`"):
        load_atom_folder(write_atom(tmp_path, "x::y", body), "x.toml")


def test_a_gate_atom_needs_a_tool_call_example(tmp_path):
    body = GOOD.replace('tool = "Bash"\ninput = { command = "git status" }\nexpect = "deny"', 'evidence = {}\nexpect = "passed"')
    with pytest.raises(ManifestError, match="verify kind"):
        load_atom_folder(write_atom(tmp_path, "x::y", body), "x.toml")


def test_alias_stub_holds_alias_and_deprecated_only(tmp_path):
    folder = write_atom(tmp_path, "x::old", 'alias = "x::y"\ndeprecated = "renamed"\n', text=None)
    stub = load_atom_folder(folder, "x.toml")
    assert isinstance(stub, Alias) and stub.target == "x::y"
    bad = write_atom(tmp_path, "x::older", 'alias = "x::y"\ndeprecated = "renamed"\nname = "x::older"\n', text=None)
    with pytest.raises(ManifestError, match="unknown key `name`"):
        load_atom_folder(bad, "x.toml")


def test_alias_stub_with_text_is_rejected(tmp_path):
    folder = write_atom(tmp_path, "x::old", 'alias = "x::y"\ndeprecated = "renamed"\n')
    with pytest.raises(ManifestError, match="no text.md"):
        load_atom_folder(folder, "x.toml")


def test_alias_chains_and_dangling_aliases_are_errors(catalog_copy):
    write_atom(catalog_copy / "capabilities", "tools::older-name", 'alias = "tools::read-only"\ndeprecated = "x"\n', text=None)
    write_atom(catalog_copy / "capabilities", "tools::gone", 'alias = "tools::nothing"\ndeprecated = "x"\n', text=None)
    errors: list[ManifestError] = []
    Catalog(catalog_copy).load_entries(collect=errors)
    messages = {e.message for e in errors}
    assert messages == {
        "alias `tools::older-name` points to another alias `tools::read-only`; alias chains are not allowed",
        "alias `tools::gone` points to `tools::nothing`, which does not exist",
    }
