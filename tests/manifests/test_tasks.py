"""Task manifests: ids, role checks, and no field the role would ignore."""

import pytest

from runtime.errors import ManifestError
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import load_task
from tests.conftest import REPO

EDIT = '''[task]
role = "edit-local"
agent-id = "{agent}"
goal = "Fix it."

[scope]
files-whitelist = ["src/**"]

[verification]
test-command = "pytest -q"
check-commands = ["ruff check src"]

[body]
text = "Do the work."
'''


def load(tmp_path, text, name="task.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load_task(Catalog(REPO), path)


def test_shipped_examples_load():
    for path in sorted((REPO / "manifests" / "examples").glob("*.toml")):
        task = load_task(Catalog(REPO), path)
        assert task.role.spawnable and task.agent_id


def test_fields_reach_the_atoms_that_bind_them(tmp_path):
    task = load(tmp_path, EDIT.format(agent="ag-1"))
    assert task.fields == {
        "scope.files-whitelist": ["src/**"],
        "verification.test-command": "pytest -q",
        "verification.check-commands": ["ruff check src"],
    }


def test_empty_agent_id_is_generated_from_the_content(tmp_path):
    a = load(tmp_path, EDIT.format(agent=""), "a.toml")
    b = load(tmp_path, EDIT.format(agent=""), "b.toml")
    assert a.agent_id == b.agent_id
    assert a.agent_id.startswith("ag-edit-local-") and len(a.agent_id) == len("ag-edit-local-") + 10
    c = load(tmp_path, EDIT.format(agent="").replace("Fix it.", "Fix that."), "c.toml")
    assert c.agent_id != a.agent_id


@pytest.mark.parametrize("agent", ["../x", "a..b", "-x", "con", "COM1.txt", "x" * 65, "é", "a/b", "a b", "x.lock", "x."])
def test_hostile_agent_ids_are_rejected_at_their_line(tmp_path, agent):
    with pytest.raises(ManifestError) as info:
        load(tmp_path, EDIT.format(agent=agent))
    assert info.value.line == 3 and "agent id" in info.value.message


def test_a_task_naming_git_ops_is_refused(tmp_path):
    text = '[task]\nrole = "git-ops"\ngoal = "merge"\n\n[body]\ntext = "x"\n'
    with pytest.raises(ManifestError, match="not spawnable") as info:
        load(tmp_path, text)
    assert info.value.line == 2


def test_a_field_no_atom_uses_is_an_error(tmp_path):
    text = '[task]\nrole = "explorer"\ngoal = "look"\n\n[scope]\nfiles-whitelist = ["src/**"]\n\n[body]\ntext = "x"\n'
    with pytest.raises(ManifestError, match="has no atom that uses it") as info:
        load(tmp_path, text)
    assert info.value.line == 6


def test_a_required_task_field_must_be_given(tmp_path):
    text = EDIT.format(agent="ag-1").replace('test-command = "pytest -q"\n', "")
    with pytest.raises(ManifestError, match="needs `verification.test-command`"):
        load(tmp_path, text)


@pytest.mark.parametrize("old,new,line,words", [
    ('files-whitelist = ["src/**"]', 'files-whitelist = ["../etc/**"]', 7, "`..` component"),
    ('files-whitelist = ["src/**"]', 'files-whitelist = ["/etc/**"]', 7, "absolute"),
    ('goal = "Fix it."', 'goal = "Fix it."\ncolour = "red"', 5, "unknown key `colour`"),
    ('role = "edit-local"', 'role = "nobody"', 2, "unknown role `nobody`"),
    ('test-command = "pytest -q"', "test-command = 3", 10, "test-command"),
])
def test_bad_fields_name_their_line(tmp_path, old, new, line, words):
    with pytest.raises(ManifestError) as info:
        load(tmp_path, EDIT.format(agent="ag-1").replace(old, new))
    assert info.value.line == line
    assert words in info.value.message


def test_control_files_a_task_may_change_are_named_exactly(tmp_path):
    text = EDIT.format(agent="ag-1").replace('files-whitelist = ["src/**"]',
                                             'files-whitelist = ["**"]\ncontrol-files = ["./.claude/settings.json"]')
    assert load(tmp_path, text).fields["scope.control-files"] == [".claude/settings.json"]


@pytest.mark.parametrize("value,words", [
    ('[".git/config"]', "never written by an agent"),
    ('[".claude/*.json"]', "no wildcards"),
    ('["src/app.py"]', "is not a control file"),
    ('["../.claude/settings.json"]', "relative path inside the worktree"),
    ('["/w/.mcp.json"]', "relative path inside the worktree"),
])
def test_bad_control_files_name_their_line(tmp_path, value, words):
    text = EDIT.format(agent="ag-1").replace('files-whitelist = ["src/**"]',
                                             f'files-whitelist = ["**"]\ncontrol-files = {value}')
    with pytest.raises(ManifestError) as info:
        load(tmp_path, text)
    assert info.value.line == 8 and words in info.value.message, info.value.message


@pytest.mark.parametrize("name", ["FOO\\n", "FOO BAR", "1FOO", ""])
def test_an_agent_env_name_with_a_trailing_newline_or_other_bad_shape_is_refused(tmp_path, name):
    text = EDIT.format(agent="ag-env").replace("[body]", f'[agent]\nbackend = "command"\ncommand = ["true"]\nenv = ["{name}"]\n\n[body]')
    with pytest.raises(ManifestError, match="is not an environment variable name"):
        load(tmp_path, text)
