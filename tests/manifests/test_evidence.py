"""A verify example's evidence is the table its kind reads: every key checked when the atom loads, in the
JSON schema too, and run by lint (with the words its feedback must hold)."""

from __future__ import annotations

import json
import tomllib

import pytest
from jsonschema import Draft202012Validator

from runtime.errors import ManifestError
from runtime.manifests.atom import Atom, load_atom_folder
from runtime.tooling.examples import run_examples
from runtime.verify.kinds.kind import Evidence
from runtime.verify.kinds.registry import KINDS
from tests.conftest import REPO
from tests.manifests.test_atoms import write_atom
from tests.verify.test_evaluators import VALID_CALLS

SIZES = '''name = "x::small"
summary = "Small."
verify = "size-limits"

[params.max-file-lines]
type = "int"
default = 3

[params.max-function-lines]
type = "int"
default = 2

[[examples]]
expect = "rejected"
says = "may be added to one file"
[examples.evidence.files]
"a.py" = "x = 1\\nx = 2\\nx = 3\\nx = 4\\nx = 5\\nx = 6\\nx = 7\\nx = 8\\n"
[examples.evidence.base-files]
"a.py" = "x = 1\\nx = 2\\nx = 3\\nx = 4\\n"
'''


def load(tmp_path, body: str) -> Atom:
    atom = load_atom_folder(write_atom(tmp_path, "x::small", body), "x.toml")
    assert isinstance(atom, Atom)
    return atom


def test_every_verify_kind_has_an_evidence_table_that_its_gathered_evidence_fits():
    assert set(VALID_CALLS) == set(KINDS)
    for kind, (_params, evidence) in VALID_CALLS.items():
        assert issubclass(KINDS[kind].evidence, Evidence)
        KINDS[kind].evidence.model_validate(evidence)


def test_an_example_with_a_base_loads_and_lint_runs_it(tmp_path):
    atom = load(tmp_path, SIZES)
    assert atom.examples[0].evidence["base-files"] == {"a.py": "x = 1\nx = 2\nx = 3\nx = 4\n"}
    assert run_examples(atom, str(tmp_path)) == []


@pytest.mark.parametrize("change,line,words", [
    (("[examples.evidence.base-files]", "[examples.evidence.base_files]"), 18,
     "unknown key `base_files` in `examples[0].evidence` (did you mean `base-files`?)"),
    (('"a.py" = "x = 1\\nx = 2\\nx = 3\\nx = 4\\n"\n', '"a.py" = 4\n'), 19, "examples[0].evidence.base-files.a.py"),
    (("[examples.evidence.base-files]\n", "[examples.evidence.old]\n"), 18, "unknown key `old`"),
])
def test_evidence_keys_and_types_are_checked_at_their_line(tmp_path, change, line, words):
    with pytest.raises(ManifestError) as info:
        load(tmp_path, SIZES.replace(*change))
    assert info.value.line == line and words in info.value.message, info.value


def test_an_example_written_before_the_base_points_to_migrate(tmp_path):
    body = SIZES[:SIZES.index("[examples.evidence.base-files]")]
    with pytest.raises(ManifestError) as info:
        load(tmp_path, body)
    assert info.value.line == 13
    assert "missing required key `base-files`" in info.value.message and "runtime migrate" in info.value.message


def test_lint_fails_an_example_whose_feedback_lacks_its_words(tmp_path):
    atom = load(tmp_path, SIZES.replace('says = "may be added to one file"', 'says = "is a new file"'))
    [error] = run_examples(atom, str(tmp_path))
    assert error.line == 13 and "does not say 'is a new file'" in error.message and "may be added to one file" in error.message


def test_lint_fails_an_example_with_the_wrong_verdict(tmp_path):
    atom = load(tmp_path, SIZES.replace('expect = "rejected"', 'expect = "passed"'))
    [error] = run_examples(atom, str(tmp_path))
    assert "expected passed, got rejected" in error.message


def test_the_schema_holds_every_shipped_atom_and_each_kinds_evidence():
    schema = json.loads((REPO / "schemas/capability.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    for path in sorted(REPO.glob("capabilities/*/*/capability.toml")):
        assert not list(validator.iter_errors(tomllib.loads(path.read_text()))), path
    atom = tomllib.loads((REPO / "capabilities/quality/constructor-pattern/capability.toml").read_text())
    atom["examples"][0]["evidence"]["base_files"] = atom["examples"][0]["evidence"].pop("base-files")
    assert list(validator.iter_errors(atom))
    atom["examples"][0]["evidence"] = {"changed": []}  # another kind's evidence
    assert list(validator.iter_errors(atom))
