"""Every refusal the shipped catalog can give says what to do instead, in words an agent can act on.

The refusals walked: those of every atom's and every grammar's deny examples, of every call the
adversarial table denies, and of a list of legitimate calls real agents made that stay refused in
strict mode. Each reason must name an allowed form or a concrete next step (one of the phrasings
below, each of which does); "not allowed" alone is a dead end the agent can only retry.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from runtime.gate.engine import decide
from runtime.manifests.atom import GateExample
from runtime.manifests.catalog import Catalog
from runtime.tooling.examples import _program_policy, _values, example_policy
from tests.conftest import REPO
from tests.gate.test_adversarial import DENY, _decide, policies, worktree  # noqa: F401 - fixtures used below

# Phrasings that name what to do: an allowed form or value, the shape a field must have, or a step.
NEXT_STEP = re.compile("|".join([
    r"(?:; |\()allowed: ", r"allowed forms: ", r"its forms: ", r"`runtime allow '", r"so it is asked each time", r"it is asked each time, unless ", r"options unwrapped: ", r"only -i, -0 and -u are unwrapped",
    r"you may (?:use|write|run|reach)", r"may also be given", r"the tools you may use", r"may reach \(",
    r"must be (?:one of |a |an )", r"\bneeds `", r"\bneeds (?:a|at least|exactly|its) ", r"takes no (?:options|arguments|value)",
    r"takes at most", r"leave it", r"\bonly (?:ports |http|[^;]*`)", r"just edit files and report", r"say (?:in your report|what)",
    r"\b(?:use|run|write|name|call|pass|put|give|start|spell|list|keep|read|find|drop|remove|set|redirect|do the work)"
    r"\b[^;]*?(?:`|\binstead\b|\bout\b|\bfiles?\b|\bpaths?\b|\bfolder|\bname|\bcommand|\boperand|\bwords?\b"
    r"|\bglob|\bvalue|\bdirectly|\binside|\bworktree|\bfields?\b|\bone\b|\bit\b|\bthem\b|\bsuffix|\bliteral"
    r"|\bexplicitly|\bwithout\b|\byourself)",
]))


def _atom_and_grammar_refusals() -> list[tuple[str, str]]:
    catalog = Catalog(REPO)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        root = str(Path(tmp).resolve())
        for atom in catalog.atoms.values():
            for n, ex in enumerate(atom.examples):
                if isinstance(ex, GateExample) and ex.expect in ("deny", "ask"):
                    d = decide(example_policy(atom, _values(atom, ex.params), root), ex.tool, ex.input, root)
                    out.append((f"{atom.name} example {n + 1}", d.reason))
        for grammar in catalog.programs.values():
            for n, ex in enumerate(grammar.examples):
                if ex.expect in ("deny", "ask"):
                    policy = _program_policy(grammar, ex.program or grammar.name, ex.subcommands, root)
                    out.append((f"programs/{grammar.name} example {n + 1}", decide(policy, "Bash", {"command": ex.command},
                                                                                     root).reason))
    return out


# Legitimate calls that stay refused in strict mode (each is the sandboxed mode's, or needs a rule the
# shipped roles do not have): their refusals must say what works.
STILL_REFUSED = [
    "python reproduce.py", "python3 -c 'import sys; print(sys.version)'", "python - <<'EOF'\nprint(1)\nEOF",
    "for f in src/*.py; do echo $f; done", "echo $(pwd)", "X=1 pytest -q", "uv run pytest -q", "npx jest",
    "awk '{print $1}' src/pkg/mod.py", "./scripts/run.sh", "bash scripts/test.sh", "make test", "pip install -e .",
    "git status", "curl -s https://example.com", "cargo fmt", "cargo run", "node script.js", "pytest -p xdist",
    "pytest --cov-report=html", "npm install", "npm run dev", "sed -i.bak 's/a/b/' src/pkg/mod.py",
    "find . -name '*.pyc' -o -name '*.pyo' -delete", "find -L . -name '*.pyc' -exec rm {} +", "rm -rf *", "cd ~ && ls",
    "tee /tmp/log < src/pkg/mod.py", "black .", "chmod u+s src/pkg/mod.py", "patch -p1 < fix.diff",
    "patch -p1 < src/pkg/fix.diff", "cat fix.diff | patch -p1", "ruff format src tests", "ruff check --fix src",
    "sed -n s*a*b* src/pkg/mod.py", "uniq src/*.py", "rm -rf .pytest_cache *.egg-info", "cp -r /etc tests/",
    "uv pip list", "node scripts/gen.js", "pip install -r requirements.txt",
    "python -m pip install x", "pytest -W ignore::pkg.Warn", "pytest -o addopts=-x", "echo hi > /tmp/x",
    "ls | xargs rm", "sort -o /tmp/x src/pkg/mod.py", "timeout 60 ./run_tests.sh", "cat src/pkg/*.py | wc -l > /tmp/n",
    "source .venv/bin/activate && pytest", "export PYTHONPATH=src", "pytest --basetemp=/tmp/x",
]


# An ask where no rule decides says what would decide it: the rule `runtime allow` writes, or that none can.
UNDECIDED = re.compile(r"No rule decides it, so (?:you are asked|it waits for a person's approval).*(?:`runtime allow '.*"
                       r"` writes the rule|so it is asked each time|it is asked each time, unless a person may add)")


def _check(where: str, reason: str) -> None:
    assert reason.strip(), f"{where}: an empty refusal"
    assert NEXT_STEP.search(reason), f"{where}: the refusal names no allowed form or next step: {reason}"


@pytest.mark.parametrize("where,reason", _atom_and_grammar_refusals())
def test_example_refusals_say_what_to_do(where, reason):
    _check(where, reason)


@pytest.mark.parametrize(("role", "tool", "tool_input", "atom", "cwd"), DENY)
def test_refusals_of_attacks_say_what_to_do(policies, worktree, role, tool, tool_input, atom, cwd):  # noqa: F811
    d = _decide(policies, worktree, role, tool, tool_input, cwd)
    _check(f"{role} {tool} {tool_input}", d.reason)


@pytest.mark.parametrize("command", STILL_REFUSED)
def test_refusals_of_legitimate_calls_say_what_to_do(policies, worktree, command):  # noqa: F811
    d = _decide(policies, worktree, "edit", "Bash", {"command": command}, None)
    assert d.verdict in ("deny", "ask"), command
    _check(command, d.reason)
    if d.verdict == "ask":  # no rule decides: the reason says what would allow it for good, or that none can
        assert UNDECIDED.search(d.reason), d.reason


@pytest.mark.parametrize("reason", [
    "`git` is not allowed",
    "`source` is not allowed: it changes the shell",
    "the command could not be parsed as Bash",
    "`x` input has fields this gate does not know (y); it is denied",
])
def test_the_check_itself_catches_a_dead_end(reason):
    with pytest.raises(AssertionError):
        _check("a dead end", reason)
