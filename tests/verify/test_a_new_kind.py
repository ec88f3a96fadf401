"""A new verify kind is one module and one registry entry (the CONTRIBUTING recipe, end to end)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from runtime.manifests.catalog import Catalog
from runtime.manifests.task import load_task
from runtime.tooling.examples import run_examples
from runtime.verify.kinds.registry import KINDS
from runtime.verify.tree import verify_tree

TOY_KIND = '''
from dataclasses import dataclass

from runtime.verify.kinds.base import take_str_list
from runtime.verify.kinds.kind import Evidence, Kind
from runtime.verify.kinds.result import passed, rejected


@dataclass(frozen=True)
class WordsParams:
    words: tuple[str, ...]

    @classmethod
    def read(cls, data):
        return cls(tuple(take_str_list(data, "words", "parameter")))


class Report(Evidence):
    """toy-no-words: the agent's final report."""

    report: str


async def gather(params, gathering):
    return Report(report=gathering.report)


def judge(params, evidence):
    said = [w for w in params.words if w in evidence.report]
    if said:
        return rejected(f"Your report says {', '.join(said)}: say what you did instead.", {"said": said})
    return passed("the report says none of the words", {})


KIND = Kind("toy-no-words", {"words": "str-list"}, WordsParams.read, Report, gather, judge)
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_a_verify_kind_is_one_module_and_one_registry_entry(tmp_path, monkeypatch, catalog_copy):
    """Its module in a package of its own and its entry in the registry; then an atom names it (its examples
    judged by it), a role lists the atom, and a verify pass gathers and judges with it."""
    package = tmp_path / "toy_checks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "no_words.py").write_text(TOY_KIND)
    monkeypatch.syspath_prepend(str(tmp_path))
    from toy_checks.no_words import KIND

    monkeypatch.setitem(KINDS, "toy-no-words", KIND)

    atom = catalog_copy / "capabilities" / "toy" / "no-words"
    atom.mkdir(parents=True)
    (atom / "capability.toml").write_text(
        'name = "toy::no-words"\nsummary = "The report says what was done, not that it was tried."\n'
        'verify = "toy-no-words"\n\n[params.words]\ntype = "str-list"\ndefault = ["I tried"]\n\n'
        '[[examples]]\nevidence = { report = "Summary: fixed it" }\nexpect = "passed"\n\n'
        '[[examples]]\nevidence = { report = "Summary: I tried" }\nexpect = "rejected"\n')
    (atom / "text.md").write_text("Say what you did, not what you tried.\n")
    (catalog_copy / "roles" / "toy.toml").write_text(
        '[role]\nname = "toy"\ndisplay-name = "toy"\ndescription = "read-only, and a report without excuses"\n'
        'use-cases = ["a test"]\n\n[capabilities]\nextends = "read-only"\nrequired = ["toy::no-words"]\n\n'
        '[tools]\nshown = ["Read", "Glob", "Grep", "WebFetch"]\n\n[escalation]\npolicy = "ask-via-return"\n\n'
        '[params."output::report-format"]\nfields = ["summary", "findings"]\n')
    catalog = Catalog(catalog_copy)
    assert run_examples(catalog.atoms["toy::no-words"], str(tmp_path)) == []  # each example judged as it expects

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n")
    _git(repo, "add", "README.md")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    task_file = tmp_path / "task.toml"
    task_file.write_text('[task]\nrole = "toy"\nagent-id = "ag-toy"\nparent-agent = "orchestrator"\n'
                         'goal = "Read the README."\n\n[body]\ntext = "Read the README and report."\n')
    task = load_task(catalog, str(task_file))

    def judged(report: str) -> str:
        records = verify_tree(catalog, task, repo, "HEAD", report, sandboxed=False)
        return next(r.status for r in records if r.atom == "toy::no-words")

    assert judged("Summary: read it\nFindings: none\n") == "passed"
    assert judged("Summary: I tried to read it\nFindings: none\n") == "rejected"
