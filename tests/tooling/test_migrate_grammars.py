"""runtime.tooling.migrate_grammars: grammar files of the old naming (`programs/<name>.toml`) renamed."""

import pytest

from runtime.tooling.migrate_grammars import Rename, apply, grammar_renames


def test_a_folder_that_is_not_there_needs_nothing(tmp_path):
    assert grammar_renames(tmp_path / "programs") == ([], [])


def test_each_old_name_is_renamed_and_nothing_else(tmp_path):
    programs = tmp_path / "programs"
    programs.mkdir()
    for name in ("ruff.toml", "cargo.toml", "mypy.program.toml", "README", "notes.md"):
        (programs / name).write_text(name)
    renames, errors = grammar_renames(programs)
    assert errors == []
    assert renames == [Rename(programs / "cargo.toml", programs / "cargo.program.toml"),
                       Rename(programs / "ruff.toml", programs / "ruff.program.toml")]


def test_an_old_name_beside_its_new_name_is_an_error_and_no_rename(tmp_path):
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "ruff.toml").write_text("old")
    (programs / "ruff.program.toml").write_text("new")
    renames, (error,) = grammar_renames(programs)
    assert renames == [] and error.path == str(programs / "ruff.toml") and error.line == 1
    assert "`ruff.program.toml` exists too" in error.message


def test_a_dangling_link_of_the_new_name_counts_as_there(tmp_path):
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "ruff.toml").write_text("old")
    (programs / "ruff.program.toml").symlink_to(tmp_path / "nowhere")
    renames, (error,) = grammar_renames(programs)
    assert renames == [] and "exists too" in error.message


@pytest.mark.parametrize("kind", ["link", "folder"])
def test_an_old_name_that_is_no_regular_file_is_renamed_by_hand(tmp_path, kind):
    programs = tmp_path / "programs"
    programs.mkdir()
    if kind == "link":
        (tmp_path / "elsewhere.toml").write_text("x")
        (programs / "ruff.toml").symlink_to(tmp_path / "elsewhere.toml")
    else:
        (programs / "ruff.toml").mkdir()
    renames, (error,) = grammar_renames(programs)
    assert renames == [] and error.message == ("has a grammar's old name but is not a regular file: rename it to "
                                               "`ruff.program.toml` by hand")


def test_apply_renames_keeping_the_content(tmp_path):
    old, new = tmp_path / "ruff.toml", tmp_path / "ruff.program.toml"
    old.write_text("program = 'ruff'\n")
    apply([Rename(old, new)])
    assert not old.exists() and new.read_text() == "program = 'ruff'\n"


def test_apply_never_replaces_a_file_made_meanwhile(tmp_path):
    old, new = tmp_path / "ruff.toml", tmp_path / "ruff.program.toml"
    old.write_text("old")
    renames, _ = grammar_renames(tmp_path)
    new.write_text("made meanwhile")
    with pytest.raises(FileExistsError):
        apply(renames)
    assert old.read_text() == "old" and new.read_text() == "made meanwhile"
