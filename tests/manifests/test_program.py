"""Program grammars: `programs/<name>.program.toml`, named after its file, with examples, compiled."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.manifests.program import EXAMPLE_SCOPE, ProgramGrammar, load_program
from tests.conftest import REPO

GRAMMAR = '''\
name = "tool"
summary = "tool: does things"
positionals = ["free..."]

[options]
"-v|--verbose" = "flag"
"-o|--output" = "free"

[[examples]]
command = "tool -v a"
expect = "allow"

[[examples]]
command = "tool --nope"
expect = "deny"
subcommands = ["run"]
program = "python"
'''


def write(tmp_path: Path, text: str, filename: str = "tool.program.toml") -> Path:
    path = tmp_path / filename
    path.write_text(text)
    return path


def failure(tmp_path: Path, text: str, filename: str = "tool.program.toml") -> ManifestError:
    with pytest.raises(ManifestError) as exc:
        load_program(write(tmp_path, text, filename), f"programs/{filename}")
    return exc.value


def test_a_grammar_loads_with_its_options_split_by_spelling(tmp_path):
    path = write(tmp_path, GRAMMAR)
    grammar = load_program(path, "programs/tool.program.toml")
    assert isinstance(grammar, ProgramGrammar)
    assert (grammar.name, grammar.summary, grammar.path) == ("tool", "tool: does things", path)
    assert grammar.grammar.options == {"-v": "flag", "--verbose": "flag", "-o": "free", "--output": "free"}
    assert grammar.grammar.positionals == ["free..."]
    assert grammar.grammar.option_style == "gnu" and grammar.grammar.cwd == "in-root"
    assert [(e.command, e.expect) for e in grammar.examples] == [("tool -v a", "allow"), ("tool --nope", "deny")]
    assert grammar.examples[0].subcommands == [] and grammar.examples[0].program is None
    assert grammar.examples[1].subcommands == ["run"] and grammar.examples[1].program == "python"
    assert grammar.src.path == "programs/tool.program.toml"


def test_examples_write_only_under_out():
    assert EXAMPLE_SCOPE == "out/**"


def test_every_shipped_grammar_loads():
    paths = sorted((REPO / "programs").glob("*.program.toml"))
    assert paths
    for path in paths:
        grammar = load_program(path, path.name)
        assert grammar.name == path.name[: -len(".program.toml")] and grammar.examples


def test_a_file_not_named_as_a_grammar_is_refused_with_the_right_name(tmp_path):
    err = failure(tmp_path, GRAMMAR, filename="tool.toml")
    assert err.message == "a grammar's file name ends in `.program.toml` (`tool.program.toml`)"
    assert (err.path, err.line) == ("programs/tool.toml", 1)


def test_a_name_other_than_the_files_is_refused(tmp_path):
    err = failure(tmp_path, GRAMMAR, filename="other.program.toml")
    assert err.message == "name `tool` does not match the file name (expected `other`)"
    assert err.line == 1


def test_a_name_that_is_no_grammar_name_is_refused(tmp_path):
    err = failure(tmp_path, GRAMMAR.replace('name = "tool"', 'name = "Tool"'), filename="Tool.program.toml")
    assert err.message == "`Tool` is not a grammar name (lower case, digits, `_.+-`)"


def test_a_grammar_without_examples_is_refused(tmp_path):
    text = GRAMMAR[: GRAMMAR.index("[[examples]]")]
    assert failure(tmp_path, text).message == "a grammar needs at least one example command"


def test_an_option_declared_twice_is_refused_at_the_options(tmp_path):
    text = GRAMMAR.replace('"-o|--output" = "free"', '"-o|--output" = "free"\n"-v" = "flag"')
    err = failure(tmp_path, text)
    assert err.message == "option `-v` is declared twice"
    assert err.line == 5  # the [options] table


@pytest.mark.parametrize("old,new,line,named", [
    ('program = "python"', 'program = "/usr/bin/python"', 17, "`/usr/bin/python` is not a program name"),
    ('expect = "deny"', 'expect = "refuse"', 15, "`examples[1].expect`"),
    ('summary = "tool: does things"', 'summary = "x"\nsumary = "y"', 3, "unknown key `sumary` (did you mean `summary`?)"),
    ('[options]', 'colour = "auto"\n[options]', 5, "unknown key `colour`"),
])
def test_schema_errors_name_the_key_and_its_line(tmp_path, old, new, line, named):
    assert old in GRAMMAR
    err = failure(tmp_path, GRAMMAR.replace(old, new))
    assert named in err.message
    assert err.line == line


def test_a_missing_summary_is_refused(tmp_path):
    err = failure(tmp_path, GRAMMAR.replace('summary = "tool: does things"\n', ""))
    assert err.message == "missing required key `summary`"


def test_broken_toml_is_a_manifest_error_with_its_line(tmp_path):
    err = failure(tmp_path, GRAMMAR.replace("[options]", "[options"))
    assert err.message.startswith("invalid TOML") and err.line == 5
