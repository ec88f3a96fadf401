"""Names of atoms, roles and agents: what each accepts and what each refusal says."""

from __future__ import annotations

import pytest

from runtime.manifests.names import check_agent_id, check_atom_name, check_role_name, generated_agent_id


@pytest.mark.parametrize("name", ["policy::no-git-ops", "tools::bash-allowlist", "a::b", "x1::y-2", "a" * 64 + "::b"])
def test_atom_names_that_pass(name):
    assert check_atom_name(name) == name


@pytest.mark.parametrize("name", [
    "policy", "policy::", "::slug", "a::b::c", "Policy::x", "policy::No", "1a::b", "a:b", "a::b c", "a::_b",
    "a" * 65 + "::b", "a::" + "b" * 65, "",
])
def test_atom_names_that_fail_say_the_expected_form(name):
    with pytest.raises(ValueError) as exc:
        check_atom_name(name)
    assert f"`{name}` is not an atom name: expected `<category>::<slug>`" in str(exc.value)


@pytest.mark.parametrize("name", ["edit-local", "r", "read-only", "a1", "a" * 64])
def test_role_names_that_pass(name):
    assert check_role_name(name) == name


@pytest.mark.parametrize("name", ["", "Edit", "1role", "-x", "edit_local", "a" * 65, "edit local"])
def test_role_names_that_fail_name_the_role(name):
    with pytest.raises(ValueError) as exc:
        check_role_name(name)
    assert str(exc.value).startswith(f"`{name}` is not a role name")


@pytest.mark.parametrize("agent_id", ["ag-1", "A.b_c-9", "x", "a" * 64, "release.v2", "con-x", "comx", "a.lockfile"])
def test_agent_ids_that_pass(agent_id):
    assert check_agent_id(agent_id) == agent_id


@pytest.mark.parametrize("agent_id,why", [
    ("agé", "must be ASCII"),
    ("a" * 65, "is longer than 64 bytes"),
    ("", "must match"),
    ("-a", "must match"),
    (".hidden", "must match"),
    ("a/b", "must match"),
    ("a b", "must match"),
    ("ag-1\n", "must match"),
    ("a..b", "must not contain `..`"),
    ("a.", "must not end with `.` or `.lock`"),
    ("a.lock", "must not end with `.` or `.lock`"),
    ("con", "Windows-reserved name"),
    ("NUL.txt", "Windows-reserved name"),
    ("Com1", "Windows-reserved name"),
    ("lpt9.x", "Windows-reserved name"),
])
def test_agent_ids_that_fail_say_why(agent_id, why):
    with pytest.raises(ValueError) as exc:
        check_agent_id(agent_id)
    assert why in str(exc.value)


def test_a_long_agent_id_is_shown_shortened():
    with pytest.raises(ValueError) as exc:
        check_agent_id("b" * 100)
    assert str(exc.value) == f"agent id `{'b' * 20}…` is longer than 64 bytes"


def test_generated_agent_id_takes_ten_digits_of_the_digest():
    agent_id = generated_agent_id("edit-local", "0123456789abcdef")
    assert agent_id == "ag-edit-local-0123456789"
    assert check_agent_id(agent_id) == agent_id


@pytest.mark.parametrize("check,name", [(check_atom_name, "policy::no-git-ops\n"), (check_role_name, "edit-local\n")])
def test_a_trailing_newline_is_not_part_of_a_valid_name(check, name):
    with pytest.raises(ValueError):
        check(name)
