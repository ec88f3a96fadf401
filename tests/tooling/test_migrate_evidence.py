"""runtime.tooling.migrate_evidence: size examples written before the base get an empty one (every file new)."""

import tomllib

import pytest

from runtime.errors import ManifestError
from runtime.tooling.migrate_evidence import EvidenceChange, migrate_evidence


def test_change_size_examples_get_an_empty_base_sizes_table_at_the_evidence_s_line():
    text = ('verify = "change-size"\n\n[[examples]]\nexpect = "passed"\n\n[examples.evidence]\nsizes = { "a.py" = 10 }  '
            '# new file\n')
    out, changes = migrate_evidence(text, "c.toml")
    assert changes == [EvidenceChange(6, "base-sizes")]
    assert tomllib.loads(out)["examples"][0]["evidence"] == {"sizes": {"a.py": 10}, "base-sizes": {}}
    assert "# new file" in out


def test_only_examples_without_their_base_change():
    text = ('verify = "size-limits"\n\n'
            '[[examples]]\nevidence = { files = { "a.md" = "1\\n" }, base-files = { "a.md" = "" } }\nexpect = "passed"\n\n'
            '[[examples]]\nexpect = "passed"\n\n'
            '[[examples]]\nevidence = { files = {} }\nexpect = "passed"\n')
    out, changes = migrate_evidence(text, "c.toml")
    assert changes == [EvidenceChange(11, "base-files")]
    examples = tomllib.loads(out)["examples"]
    assert examples[0]["evidence"]["base-files"] == {"a.md": ""} and "evidence" not in examples[1]
    assert examples[2]["evidence"] == {"files": {}, "base-files": {}}


@pytest.mark.parametrize("text", [
    'verify = "tests-green"\n\n[[examples]]\nevidence = { files = { "a" = "x" } }\nexpect = "passed"\n',
    'name = "team::x"\n',
    'verify = "size-limits"\nexamples = "none"\n',
    'verify = "size-limits"\n\n[[examples]]\nevidence = { sizes = { a = 1 } }\nexpect = "passed"\n',
    'verify = "size-limits"\nexamples = [{ evidence = "x" }, 3]\n',
    'verify = "change-size"\n\n[[examples]]\nevidence = { sizes = {}, base-sizes = {} }\nexpect = "passed"\n',
])
def test_a_document_with_nothing_to_migrate_is_given_back_as_it_is(text):
    assert migrate_evidence(text, "c.toml") == (text, [])


def test_a_file_that_is_not_toml_is_an_error():
    with pytest.raises(ManifestError, match=r"^capabilities/x/capability.toml:1: invalid TOML: "):
        migrate_evidence('verify = \n', "capabilities/x/capability.toml")
