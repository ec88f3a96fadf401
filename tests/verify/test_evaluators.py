"""The pure verify evaluators: a verdict from parameters and gathered evidence."""

from __future__ import annotations

import dataclasses
import inspect
import json
import textwrap

import anyio
import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.kind import Evidence
from runtime.verify.kinds.registry import KINDS, evaluate
from runtime.verify.kinds.result import VerifyResult, passed


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# ---------------------------------------------------------------- registry and errors


def test_the_manifest_verify_kinds_are_the_registry_s_kinds_and_parameters():
    assert all(name == kind.name for name, kind in KINDS.items())
    from runtime.manifests.atom import AtomFile

    assert AtomFile.model_json_schema()["properties"]["verify"]["enum"] == list(KINDS)


def test_unknown_kind_is_an_error_naming_it():
    result = evaluate("tests-blue", {}, {})
    assert result.status == "error"
    assert "tests-blue" in result.feedback


def test_an_evaluator_that_raises_becomes_an_error(monkeypatch):
    def broken(params, evidence):
        raise KeyError("boom")

    monkeypatch.setitem(KINDS, "no-changes", dataclasses.replace(KINDS["no-changes"], judge=broken))
    result = evaluate("no-changes", {}, {"changed": []})
    assert result.status == "error"
    assert "KeyError" in result.feedback and "boom" in result.feedback


def test_an_evaluator_returning_something_else_is_an_error(monkeypatch):
    monkeypatch.setitem(KINDS, "no-changes", dataclasses.replace(KINDS["no-changes"], judge=lambda params, evidence: "passed"))
    assert evaluate("no-changes", {}, {"changed": []}).status == "error"


def test_evidence_that_is_not_a_table_is_an_error():
    assert evaluate("no-changes", {}, ["a.py"]).status == "error"
    assert evaluate("no-changes", None, {"changed": []}).status == "error"


def test_result_status_is_checked():
    with pytest.raises(ValueError):
        VerifyResult("maybe", "")
    assert passed("fine", {"n": 1}).ok


# One valid call per kind; each parameter and each evidence key is then removed in turn.
VALID_CALLS = {
    "review": ({"enabled": True}, {"asked": True, "verdict": "ok"}),
    "scope-whitelist": ({"globs": ["src/**"]}, {"changed": ["src/a.py"]}),
    "scope-denylist": ({"globs": ["secrets/**"]}, {"changed": ["src/a.py"]}),
    "no-changes": ({}, {"changed": []}),
    "dep-stable": ({"globs": ["pyproject.toml"]}, {"before": {}, "after": {}}),
    "tests-green": ({"command": "pytest -q", "min-count": 1}, {
        "plan": {"command": "pytest -q", "source": "the task's test command", "steps": ["pytest -q  [pytest]"]},
        "work": {"steps": [{"command": "pytest -q", "exit-code": 0, "output": "1 passed", "report": {
            "runner": "pytest", "command": "pytest -q", "exit-code": 0, "complete": True,
            "tests": [{"id": "tests/test_a.py::test_a", "outcome": "passed"}]}}]}}),
    "checks-green": ({"commands": ["ruff check ."]}, {"results": [{"command": "ruff check .", "exit-code": 0, "output": ""}]}),
    "size-limits": ({"max-file-lines": 10, "max-function-lines": 5},
                    {"files": {"a.py": "x = 1\n"}, "base-files": {"a.py": "x = 0\n"}}),
    "report-fields": ({"fields": ["Summary"]}, {"report": "Summary: done"}),
    "severity-grades": ({"grades": ["HIGH", "LOW"]}, {"report": "## Findings\n- [LOW] nit"}),
    "change-size": ({"max-file-bytes": 100, "max-change-bytes": 150},
                    {"sizes": {"a.py": 100, "b.py": 50}, "base-sizes": {"a.py": 90}}),
    "tests-protected": ({"globs": ["tests/**"], "may-change": []}, {"findings": []}),
    "runner-config": ({}, {"findings": []}),
    "no-blanket-suppressions": ({}, {"findings": []}),
    "no-test-detection": ({}, {"findings": []}),
}


def test_valid_calls_cover_every_kind_and_pass():
    assert set(VALID_CALLS) == set(KINDS)
    for kind, (params, evidence) in VALID_CALLS.items():
        assert evaluate(kind, params, evidence).status == "passed", kind


# Parameters a kind gained later, read as off when an older catalog's atom does not declare them; and
# the test folders of the static kinds, which default to the ecosystems' conventions.
OPTIONAL = {("tests-green", "baseline"), ("tests-green", "results"), ("tests-green", "tests-removed"),
            ("tests-green", "hidden-tests"), ("checks-green", "baseline"), ("runner-config", "test-globs"),
            ("no-test-detection", "test-globs"),
            # the test side: the atom's test folders, none of the base's files the task lets change
            ("tests-green", "test-globs"), ("tests-green", "test-edits"), ("no-test-detection", "test-edits"),
            # how the tests are judged: per test by default
            ("no-test-detection", "test-results"),
            # what the task allows: missing, nothing is (the strictest reading)
            ("runner-config", "may-change"), ("no-blanket-suppressions", "allowed"), ("no-test-detection", "allowed")}
# Parameters only the gatherer reads (which files to look at): the judge of the findings never needs them.
GATHERED = {("tests-protected", "globs")}


def test_the_optional_parameters_are_the_kinds_own():
    assert OPTIONAL == {(name, param) for name, kind in KINDS.items() for param in kind.optional}
    assert all(param in KINDS[name].params for name, param in OPTIONAL)


@pytest.mark.parametrize("kind,param", sorted(OPTIONAL))
def test_an_optional_parameter_left_out_is_off(kind, param):
    params, evidence = VALID_CALLS[kind]
    assert param not in params  # the valid call leaves it out, and passes
    assert evaluate(kind, params, evidence).status == "passed"


@pytest.mark.parametrize("kind,param", [
    (k, p) for k, kind in KINDS.items() for p in kind.params if (k, p) not in OPTIONAL | GATHERED])
def test_a_missing_parameter_is_an_error_naming_it(kind, param):
    params, evidence = VALID_CALLS[kind]
    result = evaluate(kind, {k: v for k, v in params.items() if k != param}, evidence)
    assert result.status == "error"
    assert f"`{param}`" in result.feedback


@pytest.mark.parametrize("kind,param", sorted(GATHERED))
def test_a_missing_parameter_only_the_gatherer_reads_stops_the_gatherer_naming_it(kind, param):
    params, evidence = VALID_CALLS[kind]
    assert evaluate(kind, {k: v for k, v in params.items() if k != param}, evidence).status == "passed"
    with pytest.raises(MalformedInput, match=f"`{param}`"):  # verify turns it into an error result
        anyio.run(KINDS[kind].gather, KINDS[kind].read_params({k: v for k, v in params.items() if k != param}), None)


@pytest.mark.parametrize("kind", sorted(VALID_CALLS))
def test_missing_evidence_is_an_error(kind):
    params, evidence = VALID_CALLS[kind]
    for key in evidence:
        result = evaluate(kind, params, {k: v for k, v in evidence.items() if k != key})
        assert result.status == "error", (kind, key)
        assert f"`{key}`" in result.feedback


@pytest.mark.parametrize("kind,evidence", [
    ("scope-whitelist", {"changed": "src/a.py"}),
    ("no-changes", {"changed": [1, 2]}),
    ("dep-stable", {"before": {"pyproject.toml": None}, "after": {}}),
    ("tests-green", {"plan": {"command": "pytest", "source": "", "steps": []}, "work": {"steps": "pytest"}}),
    ("tests-green", {"plan": {"command": "pytest", "source": "", "steps": []}, "work": {"steps": [
        {"command": "pytest", "exit-code": True, "output": ""}]}}),
    ("tests-green", {"plan": {"command": "pytest", "source": "", "steps": []}, "work": {"steps": [
        {"command": "pytest", "exit-code": 0, "output": "", "report": {
            "runner": "pytest", "command": "pytest", "exit-code": 0, "complete": True,
            "tests": [{"id": "a", "outcome": "ok"}]}}]}}),  # no such outcome
    ("tests-protected", {"findings": [{"path": "tests/test_a.py"}]}),
    ("runner-config", {"findings": "pytest.ini"}),
    ("no-blanket-suppressions", {"findings": [{"path": "a.py", "line": "3", "what": "noqa"}]}),
    ("no-test-detection", {"findings": [{"path": "a.py", "what": "x", "extra": 1}]}),
    ("checks-green", {"results": [{"command": "ruff check .", "exit-code": 0}]}),
    ("checks-green", {"results": ["ruff check ."]}),
    ("size-limits", {"files": ["a.py"], "base-files": {}}),
    ("size-limits", {"files": {"a.py": "x\n"}, "base-files": {"b.py": "x\n"}}),
    ("change-size", {"sizes": {"a": 1}, "base-sizes": {"a": -1}}),
    ("change-size", {"sizes": {"a": 1}, "base-sizes": {"b": 1}}),
    ("report-fields", {"report": {"summary": "x"}}),
])
def test_malformed_evidence_is_an_error(kind, evidence):
    assert evaluate(kind, VALID_CALLS[kind][0], evidence).status == "error"


# ---------------------------------------------------------------- scope kinds


def test_scope_whitelist_passes_changes_inside_the_globs():
    result = evaluate("scope-whitelist", {"globs": ["src/**", "README.md", "tests/*.py"]},
                      {"changed": ["src/pkg/mod.py", "README.md", "tests/test_mod.py"]})
    assert result.status == "passed"


def test_scope_whitelist_rejects_and_names_a_path_outside():
    result = evaluate("scope-whitelist", {"globs": ["src/**"]}, {"changed": ["src/a.py", "setup.cfg"]})
    assert result.status == "rejected"
    assert "`setup.cfg`" in result.feedback and "`src/a.py`" not in result.feedback
    assert result.evidence["offending"] == 1


def test_scope_whitelist_star_does_not_cross_directories():
    result = evaluate("scope-whitelist", {"globs": ["tests/*.py"]}, {"changed": ["tests/sub/test_x.py"]})
    assert result.status == "rejected"


def test_scope_whitelist_with_no_globs_rejects_any_change():
    assert evaluate("scope-whitelist", {"globs": []}, {"changed": ["a.py"]}).status == "rejected"
    assert evaluate("scope-whitelist", {"globs": []}, {"changed": []}).status == "passed"


@pytest.mark.parametrize("path,reason", [
    ("src/../etc/passwd", ".."),
    ("/etc/passwd", "absolute"),
    (".git/hooks/pre-commit", ".git"),
    ("src/.GIT/config", ".git"),
    (".Git/HEAD", ".git"),
])
def test_scope_whitelist_rejects_unsafe_paths_even_inside_the_globs(path, reason):
    result = evaluate("scope-whitelist", {"globs": ["**"]}, {"changed": [path]})
    assert result.status == "rejected"
    assert reason in result.feedback


def test_scope_whitelist_does_not_mistake_similar_names_for_git():
    assert evaluate("scope-whitelist", {"globs": ["**"]}, {"changed": [".github/workflows/ci.yml", ".gitignore"]}).status == "passed"


def test_scope_whitelist_bounds_a_long_listing():
    changed = [f"other/file{n}.py" for n in range(100)]
    result = evaluate("scope-whitelist", {"globs": ["src/**"]}, {"changed": changed})
    assert result.status == "rejected"
    assert "and 80 more" in result.feedback
    assert len(result.feedback.splitlines()) < 30


def test_scope_whitelist_bad_glob_is_an_error():
    assert evaluate("scope-whitelist", {"globs": ["/abs/**"]}, {"changed": ["a"]}).status == "error"


def test_scope_denylist_rejects_a_denied_path():
    result = evaluate("scope-denylist", {"globs": ["migrations/**", "*.lock"]},
                      {"changed": ["src/app.py", "migrations/0002_add.py"]})
    assert result.status == "rejected"
    assert "`migrations/0002_add.py`" in result.feedback and "src/app.py" not in result.feedback


def test_scope_denylist_passes_other_paths():
    assert evaluate("scope-denylist", {"globs": ["migrations/**"]}, {"changed": ["src/app.py"]}).status == "passed"
    assert evaluate("scope-denylist", {"globs": []}, {"changed": ["src/app.py"]}).status == "passed"


def test_scope_denylist_rejects_git_internals():
    assert evaluate("scope-denylist", {"globs": []}, {"changed": [".git/config"]}).status == "rejected"


def test_no_changes_passes_an_untouched_tree():
    assert evaluate("no-changes", {}, {"changed": []}).status == "passed"


def test_no_changes_rejects_any_change():
    result = evaluate("no-changes", {}, {"changed": ["notes.md"]})
    assert result.status == "rejected"
    assert "`notes.md`" in result.feedback and "read-only" in result.feedback


# ---------------------------------------------------------------- dep-stable


def dep_check(path: str, before: str | None, after: str | None, globs: list[str] | None = None):
    return evaluate(
        "dep-stable",
        {"globs": globs or [path]},
        {"before": {} if before is None else {path: before}, "after": {} if after is None else {path: after}},
    )


PYPROJECT = dedent('''
    [build-system]
    requires = ["hatchling>=1.25"]
    build-backend = "hatchling.build"

    [project]
    name = "app"
    version = "0.1.0"
    dependencies = [
        "requests>=2.31,<3",
        "pydantic[email]>=2.7",
        'tomli>=2; python_version < "3.11"',
    ]

    [project.optional-dependencies]
    dev = ["pytest>=8"]

    [dependency-groups]
    lint = ["ruff==0.5.0"]
    test = ["pytest-cov", {include-group = "lint"}]

    [tool.uv]
    dev-dependencies = ["mypy>=1.10"]
''')


def test_pyproject_reformatted_and_reordered_passes():
    after = dedent('''
        # Project metadata.
        [project]
        version = "0.2.0"   # not a dependency
        name = "app"
        dependencies = ["tomli >= 2 ; python_version<'3.11'", "Pydantic[Email] >= 2.7", "requests<3, >=2.31"]
        description = "now described"

        [project.optional-dependencies]
        dev = [ "pytest >= 8" ]

        [dependency-groups]
        test = [{include-group = "lint"}, "pytest_cov"]
        lint = ["ruff == 0.5.0"]

        [build-system]
        build-backend = "hatchling.build"
        requires = ["hatchling >= 1.25"]

        [tool.uv]
        dev-dependencies = ["mypy >=1.10"]
    ''')
    result = dep_check("pyproject.toml", PYPROJECT, after)
    assert result.status == "passed", result.feedback


@pytest.mark.parametrize("old,new,named", [
    ('"requests>=2.31,<3"', '"requests>=2.32,<3"', "project.dependencies `requests`"),
    ('"requests>=2.31,<3",', '"requests>=2.31,<3",\n    "httpx",', "project.dependencies `httpx` was added"),
    ('dev = ["pytest>=8"]', 'dev = ["pytest>=8", "hypothesis"]', "project.optional-dependencies.dev `hypothesis`"),
    ('requires = ["hatchling>=1.25"]', 'requires = ["hatchling>=1.26"]', "build-system.requires `hatchling`"),
    ('lint = ["ruff==0.5.0"]', 'lint = ["ruff==0.6.0"]', "dependency-groups.lint `ruff`"),
    ('dev-dependencies = ["mypy>=1.10"]', 'dev-dependencies = []', "tool.uv.dev-dependencies `mypy` was removed"),
    ("'tomli>=2; python_version < \"3.11\"'", "'tomli>=2; python_version < \"3.12\"'", "`tomli`"),
])
def test_pyproject_dependency_change_is_rejected_naming_it(old, new, named):
    assert old in PYPROJECT
    result = dep_check("pyproject.toml", PYPROJECT, PYPROJECT.replace(old, new))
    assert result.status == "rejected"
    assert "`pyproject.toml`" in result.feedback and named in result.feedback


def test_pyproject_poetry_dependencies_are_compared():
    before = dedent('''
        [tool.poetry.dependencies]
        python = "^3.11"
        Django = {version = "^5.0", extras = ["argon2"]}

        [tool.poetry.group.dev.dependencies]
        pytest = "^8.0"
    ''')
    reformatted = dedent('''
        [tool.poetry.dependencies]
        django = { extras = ["argon2"], version = "^5.0" }
        python = "^3.11"

        [tool.poetry.group.dev.dependencies]
        pytest = "^8.0"
    ''')
    assert dep_check("pyproject.toml", before, reformatted).status == "passed"
    bumped = dep_check("pyproject.toml", before, before.replace('pytest = "^8.0"', 'pytest = "^8.2"'))
    assert bumped.status == "rejected"
    assert "tool.poetry.group.dev.dependencies `pytest`" in bumped.feedback


REQUIREMENTS = dedent('''
    # Runtime dependencies
    --index-url https://pypi.org/simple
    Django>=5.0,<5.1
    requests==2.31.0 \\
        --hash=sha256:58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f
    typing_extensions ; python_version < "3.12"
''')


def test_requirements_reformatted_passes():
    after = dedent('''
        --index-url https://pypi.org/simple
        requests == 2.31.0 --hash=sha256:58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f

        typing-extensions; python_version<'3.12'   # backport
        django <5.1, >=5.0
    ''')
    assert dep_check("requirements.txt", REQUIREMENTS, after).status == "passed"


def test_requirements_version_change_is_rejected():
    result = dep_check("requirements-dev.txt", REQUIREMENTS, REQUIREMENTS.replace("requests==2.31.0", "requests==2.32.3"))
    assert result.status == "rejected"
    assert "requirement `requests`" in result.feedback and "2.32.3" in result.feedback


def test_requirements_in_and_requirements_dir_are_read_as_requirements():
    for path in ("dev.in", "requirements/base.txt"):
        assert dep_check(path, "flask>=3\n", "Flask >= 3  # web\n").status == "passed"
        assert dep_check(path, "flask>=3\n", "flask>=3\nrich\n").status == "rejected"


PACKAGE_JSON = json.dumps({
    "name": "web", "version": "1.0.0", "scripts": {"test": "vitest"},
    "dependencies": {"react": "^18.2.0", "zod": "3.23.8"},
    "devDependencies": {"vitest": "^1.6.0"},
    "engines": {"node": ">=20"},
    "packageManager": "pnpm@9.1.0",
}, indent=2)


def test_package_json_reformatted_with_other_changes_passes():
    data = json.loads(PACKAGE_JSON)
    data["version"] = "1.1.0"
    data["scripts"]["lint"] = "eslint ."
    data["dependencies"] = {"zod": "3.23.8", "react": "^18.2.0"}
    assert dep_check("package.json", PACKAGE_JSON, json.dumps(data, indent=4)).status == "passed"


@pytest.mark.parametrize("section,value,named", [
    ("devDependencies", {"vitest": "^2.0.0"}, "devDependencies `vitest`"),
    ("dependencies", {"react": "^18.2.0", "zod": "3.23.8", "lodash": "^4.17.21"}, "dependencies `lodash` was added"),
    ("engines", {"node": ">=18"}, "engines `node`"),
    ("packageManager", "pnpm@9.4.0", "packageManager changed"),
    ("overrides", {"semver": "7.6.2"}, "overrides `semver` was added"),
])
def test_package_json_dependency_change_is_rejected(section, value, named):
    data = json.loads(PACKAGE_JSON)
    data[section] = value
    result = dep_check("package.json", PACKAGE_JSON, json.dumps(data, indent=2))
    assert result.status == "rejected"
    assert named in result.feedback


CARGO_TOML = dedent('''
    [package]
    name = "tool"
    version = "0.1.0"
    edition = "2021"

    [dependencies]
    serde = { version = "1.0", features = ["derive"] }
    anyhow = "1"

    [target.'cfg(unix)'.dependencies]
    libc = "0.2"

    [workspace.dependencies]
    tokio = "1.38"
''')


def test_cargo_toml_inline_table_rewritten_as_table_passes():
    after = dedent('''
        [package]
        name = "tool"
        version = "0.2.0"
        edition = "2021"

        [dependencies]
        anyhow = "1"

        [dependencies.serde]
        features = ["derive"]
        version = "1.0"

        [target.'cfg(unix)'.dependencies]
        libc = "0.2"

        [workspace.dependencies]
        tokio = "1.38"
    ''')
    assert dep_check("Cargo.toml", CARGO_TOML, after).status == "passed"


@pytest.mark.parametrize("old,new,named", [
    ('anyhow = "1"', 'anyhow = "1.0.86"', "dependencies `anyhow`"),
    ('libc = "0.2"', 'libc = "0.2.155"', "target.cfg(unix).dependencies `libc`"),
    ('tokio = "1.38"', 'tokio = "1.39"', "workspace.dependencies `tokio`"),
    ('tokio = "1.38"\n', 'tokio = "1.38"\n\n[dev-dependencies]\nproptest = "1"\n', "dev-dependencies `proptest`"),
    ('tokio = "1.38"\n', 'tokio = "1.38"\n\n[patch.crates-io]\nserde = { path = "../serde" }\n', "patch.crates-io `serde`"),
])
def test_cargo_toml_dependency_change_is_rejected(old, new, named):
    result = dep_check("Cargo.toml", CARGO_TOML, CARGO_TOML.replace(old, new))
    assert result.status == "rejected"
    assert named in result.feedback


GO_MOD = dedent('''
    module example.com/app

    go 1.22

    require (
    \tgithub.com/google/uuid v1.6.0
    \tgolang.org/x/text v0.16.0 // indirect
    )

    require github.com/stretchr/testify v1.9.0
''')


def test_go_mod_block_and_single_forms_are_equivalent():
    after = dedent('''
        module example.com/app

        go 1.22

        require github.com/google/uuid v1.6.0
        require (
        \tgithub.com/stretchr/testify v1.9.0
        \tgolang.org/x/text v0.16.0
        )
    ''')
    assert dep_check("go.mod", GO_MOD, after).status == "passed"


@pytest.mark.parametrize("old,new,named", [
    ("uuid v1.6.0", "uuid v1.7.0", "require `github.com/google/uuid`"),
    ("go 1.22", "go 1.23", "go changed"),
    ("go 1.22", "go 1.22\ntoolchain go1.22.5", "toolchain was added"),
    ("go 1.22", "go 1.22\nreplace golang.org/x/text => ../text", "replace `golang.org/x/text`"),
    ("go 1.22", "go 1.22\nexclude golang.org/x/net v0.1.0", "exclude `golang.org/x/net v0.1.0`"),
])
def test_go_mod_change_is_rejected(old, new, named):
    result = dep_check("go.mod", GO_MOD, GO_MOD.replace(old, new))
    assert result.status == "rejected"
    assert named in result.feedback


def test_go_mod_with_an_unclosed_block_no_longer_parses():
    result = dep_check("go.mod", GO_MOD, GO_MOD.replace(")\n", ""))
    assert result.status == "rejected"
    assert "no longer parses" in result.feedback


GO_SUM = dedent('''
    github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=
    github.com/google/uuid v1.6.0/go.mod h1:TIyPZe4MgqvfeYDBFedMoGGpEw/LqOeaOT+nhxU+yHo=
''')


def test_go_sum_reordered_passes_and_changed_hash_rejects():
    lines = GO_SUM.splitlines()
    assert dep_check("go.sum", GO_SUM, "\n".join(reversed(lines)) + "\n").status == "passed"
    result = dep_check("go.sum", GO_SUM, GO_SUM.replace("NIvaJ", "XXvaJ"))
    assert result.status == "rejected"
    assert "sum `github.com/google/uuid v1.6.0`" in result.feedback


UV_LOCK = dedent('''
    version = 1
    revision = 1
    requires-python = ">=3.11"

    [[package]]
    name = "certifi"
    version = "2024.7.4"
    source = { registry = "https://pypi.org/simple" }
    sdist = { url = "https://files.pythonhosted.org/certifi-2024.7.4.tar.gz", hash = "sha256:5a1e" }

    [[package]]
    name = "requests"
    version = "2.32.3"
    source = { registry = "https://pypi.org/simple" }
    dependencies = [
        { name = "certifi" },
        { name = "idna" },
    ]
''')


def test_uv_lock_reordered_with_new_revision_passes():
    blocks = UV_LOCK.split("\n[[package]]\n")
    after = blocks[0].replace("revision = 1", "revision = 2") + "\n[[package]]\n" + blocks[2] + "\n[[package]]\n" + blocks[1]
    after = after.replace('{ name = "certifi" },\n    { name = "idna" },', '{ name = "idna" },\n    { name = "certifi" },')
    assert dep_check("uv.lock", UV_LOCK, after).status == "passed"


def test_uv_lock_version_change_is_rejected_naming_the_package():
    result = dep_check("uv.lock", UV_LOCK, UV_LOCK.replace('"2.32.3"', '"2.32.4"'))
    assert result.status == "rejected"
    assert "package `requests@2.32.3` was removed" in result.feedback
    assert "package `requests@2.32.4` was added" in result.feedback


def test_poetry_lock_content_hash_is_noise():
    before = dedent('''
        [[package]]
        name = "click"
        version = "8.1.7"
        description = "Composable command line interface toolkit"
        optional = false
        python-versions = ">=3.7"

        [metadata]
        lock-version = "2.0"
        python-versions = "^3.11"
        content-hash = "aaaa"
    ''')
    rehashed = before.replace('"aaaa"', '"bbbb"').replace('lock-version = "2.0"', 'lock-version = "2.1"')
    assert dep_check("poetry.lock", before, rehashed).status == "passed"
    assert dep_check("poetry.lock", before, before.replace("8.1.7", "8.1.8")).status == "rejected"


def test_cargo_lock_version_change_is_rejected():
    before = dedent('''
        version = 3

        [[package]]
        name = "anyhow"
        version = "1.0.86"
        source = "registry+https://github.com/rust-lang/crates.io-index"
        checksum = "b3d1d046238990b9cf5bcde22a3fb3584ee5cf65fb2765f454ed428c7a0063da"
    ''')
    assert dep_check("Cargo.lock", before, before.replace("version = 3", "version = 4")).status == "passed"
    result = dep_check("Cargo.lock", before, before.replace('"1.0.86"', '"1.0.87"'))
    assert result.status == "rejected"
    assert "anyhow@1.0.87" in result.feedback


PACKAGE_LOCK = json.dumps({
    "name": "web", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
    "packages": {
        "": {"name": "web", "version": "1.0.0", "dependencies": {"zod": "3.23.8"}},
        "node_modules/zod": {"version": "3.23.8", "resolved": "https://registry.npmjs.org/zod/-/zod-3.23.8.tgz",
                             "integrity": "sha512-XBx9AXhXktjUqnepgTiE5flcKIYWi/rme0Eaj+5Y0lftuGBq+jyRu/md4WnuxqgP1ubdpNCsYEYPxrzVHD8d6g=="},
    },
}, indent=2)


def test_package_lock_root_version_is_noise_but_a_package_version_is_not():
    data = json.loads(PACKAGE_LOCK)
    data["version"] = data["packages"][""]["version"] = "1.1.0"
    assert dep_check("package-lock.json", PACKAGE_LOCK, json.dumps(data)).status == "passed"
    data["packages"]["node_modules/zod"]["version"] = "3.23.9"
    result = dep_check("package-lock.json", PACKAGE_LOCK, json.dumps(data))
    assert result.status == "rejected"
    assert "package `zod@3.23.9` was added" in result.feedback


YARN_LOCK = dedent('''
    # THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.
    # yarn lockfile v1


    react@^18.2.0:
      version "18.3.1"
      resolved "https://registry.yarnpkg.com/react/-/react-18.3.1.tgz#49ab892009c53933625bd16b2533fc754cab2891"

    zod@3.23.8:
      version "3.23.8"
      resolved "https://registry.yarnpkg.com/zod/-/zod-3.23.8.tgz#e37b957b5d52079769fb8097099b592f0ef4067d"
''')


def test_yarn_lock_is_compared_as_a_set_of_lines():
    header, react, zod = YARN_LOCK.split("\n\n\n")[0], *YARN_LOCK.split("\n\n\n")[1].split("\n\n")
    reordered = "\n\n".join([header.replace("# yarn lockfile v1", "# regenerated"), zod, react])
    assert dep_check("yarn.lock", YARN_LOCK, reordered).status == "passed"
    result = dep_check("yarn.lock", YARN_LOCK, YARN_LOCK.replace('version "18.3.1"', 'version "18.3.2"'))
    assert result.status == "rejected"
    assert 'version "18.3.2"' in result.feedback


def test_pnpm_lock_comment_change_passes():
    before = "lockfileVersion: '9.0'\n\nimporters:\n  .:\n    dependencies:\n      zod:\n        specifier: 3.23.8\n"
    assert dep_check("pnpm-lock.yaml", before, "# generated\n" + before).status == "passed"
    assert dep_check("pnpm-lock.yaml", before, before.replace("3.23.8", "3.23.9")).status == "rejected"


def test_unknown_dependency_file_falls_back_to_lines():
    assert dep_check("Gemfile", "gem 'rails', '7.1'\n", "\ngem 'rails', '7.1'\n").status == "passed"
    assert dep_check("Gemfile", "gem 'rails', '7.1'\n", "gem 'rails', '7.2'\n").status == "rejected"


def test_added_and_deleted_dependency_files_are_changes():
    added = dep_check("requirements.txt", None, "rich\n")
    assert added.status == "rejected" and "`requirements.txt` was created" in added.feedback
    deleted = dep_check("requirements.txt", "rich\n", None)
    assert deleted.status == "rejected" and "`requirements.txt` was deleted" in deleted.feedback


def test_files_outside_the_dependency_globs_are_ignored():
    result = evaluate("dep-stable", {"globs": ["pyproject.toml"]},
                      {"before": {"pyproject.toml": PYPROJECT, "notes.txt": "a"}, "after": {"pyproject.toml": PYPROJECT, "notes.txt": "b"}})
    assert result.status == "passed"


def test_a_dependency_file_the_agent_broke_is_rejected():
    result = dep_check("pyproject.toml", PYPROJECT, PYPROJECT.replace("[project]", "[project"))
    assert result.status == "rejected"
    assert "`pyproject.toml` no longer parses" in result.feedback


def test_a_broken_base_dependency_file_is_an_error():
    result = dep_check("package.json", "{not json", '{"dependencies": {}}')
    assert result.status == "error"
    assert "package.json" in result.feedback


def test_a_structurally_wrong_dependency_file_no_longer_parses():
    result = dep_check("pyproject.toml", PYPROJECT, PYPROJECT.replace('dev = ["pytest>=8"]', 'dev = "pytest>=8"'))
    assert result.status == "rejected"
    assert "no longer parses" in result.feedback


# ---------------------------------------------------------------- tests-green

# tests-green's evidence as plain data (an atom's example): the plan, the work's run, the base's run.
PLAN = {"command": "pytest -q", "source": "the task's test command", "steps": ["pytest -q  [pytest]"]}


def pytest_run(*tests: tuple[str, str], exit_code: int | None = None, complete: bool = True) -> dict:
    """One pytest step whose report holds ``tests`` as (id, outcome)."""
    code = exit_code if exit_code is not None else int(any(o in ("failed", "error") for _, o in tests))
    report = {"runner": "pytest", "command": "pytest -q -p x", "exit-code": code, "complete": complete,
              "tests": [{"id": i, "outcome": o, "message": f"{i} broke" if o == "failed" else ""} for i, o in tests]}
    return {"steps": [{"command": "pytest -q", "exit-code": code, "output": "", "report": report}]}


def green(work: dict, base: dict | None = None, min_count: int = 1, **params) -> VerifyResult:
    evidence = {"plan": PLAN, "work": work, **({"base": base} if base is not None else {})}
    return evaluate("tests-green", {"command": "pytest -q", "min-count": min_count, **params}, evidence)


def test_tests_green_passes_when_every_base_test_still_passes():
    result = green(pytest_run(("t.py::a", "passed"), ("t.py::b", "passed"), ("t.py::c", "passed")),
                   pytest_run(("t.py::a", "passed"), ("t.py::b", "failed")), min_count=3)
    assert result.status == "passed", result.feedback
    assert result.evidence == {"passed": 3, "base-tests": 2, "runners": ["pytest"]}
    assert result.tests is not None and result.tests.fixed == ["t.py::b"] and result.tests.new == 1


def test_tests_green_rejects_a_failing_test_naming_it():
    result = green(pytest_run(("t.py::a", "passed"), ("t.py::b", "failed")))
    assert result.status == "rejected"
    assert "`t.py::b` (failed)" in result.feedback and "t.py::b broke" in result.feedback


def test_tests_green_rejects_a_base_test_that_no_longer_runs():
    result = green(pytest_run(("t.py::a", "passed")), pytest_run(("t.py::a", "passed"), ("t.py::b", "passed")))
    assert result.status == "rejected" and "`t.py::b`" in result.feedback and "no longer run" in result.feedback


def test_tests_green_rejects_a_run_that_did_not_end():
    result = green(pytest_run(("t.py::a", "passed"), complete=False))
    assert result.status == "rejected" and "did not run to their end" in result.feedback


def test_tests_green_rejects_too_few_tests():
    result = green(pytest_run(("t.py::a", "passed")), min_count=10)
    assert result.status == "rejected"
    assert "only 1 test(s) passed, but at least 10 must run and pass" in result.feedback


def test_tests_green_judges_an_opaque_command_by_its_exit_code_only_where_the_task_says_so():
    plan = {"command": "make test", "source": "the task's test command", "steps": ["make test"], "opaque": "no runner"}
    work = {"steps": [{"command": "make test", "exit-code": 0, "output": "ok"}]}
    params = {"command": "make test", "min-count": 1}
    per_test = evaluate("tests-green", params, {"plan": plan, "work": work})
    assert per_test.status == "error" and "per-test results cannot be read" in per_test.feedback
    by_exit = evaluate("tests-green", {**params, "results": "exit-code"}, {"plan": plan, "work": work})
    assert by_exit.status == "passed" and "exit code only" in by_exit.feedback
    work["steps"][0]["exit-code"] = 2
    failed = evaluate("tests-green", {**params, "results": "exit-code"}, {"plan": plan, "work": work})
    assert failed.status == "rejected" and "exited with code 2" in failed.feedback


# ---------------------------------------------------------------- checks-green

RUFF_RED = dedent('''
    src/app.py:3:8: F401 [*] `os` imported but unused
    src/app.py:10:5: E722 Do not use bare `except`
    Found 2 errors.
    [*] 1 fixable with the `--fix` option.
''')


def checks(commands, results):
    return evaluate("checks-green", {"commands": commands}, {"results": results})


def test_checks_green_passes_when_every_check_exits_zero():
    result = checks(["ruff check .", "mypy src"], [
        {"command": "ruff check .", "exit-code": 0, "output": "All checks passed!\n"},
        {"command": "mypy src", "exit-code": 0, "output": "Success: no issues found in 5 source files\n"},
    ])
    assert result.status == "passed"


def test_checks_green_rejects_a_failing_check_with_its_output():
    result = checks(["ruff check .", "mypy src"], [
        {"command": "ruff check .", "exit-code": 1, "output": RUFF_RED},
        {"command": "mypy src", "exit-code": 0, "output": "Success: no issues found in 5 source files\n"},
    ])
    assert result.status == "rejected"
    assert "`ruff check .` exited with code 1" in result.feedback
    assert "E722 Do not use bare `except`" in result.feedback
    assert "mypy" not in result.feedback
    assert result.evidence["failing"] == ["ruff check ."]


def test_checks_green_a_missing_result_is_an_error():
    result = checks(["ruff check .", "mypy src"], [{"command": "ruff check .", "exit-code": 0, "output": ""}])
    assert result.status == "error"
    assert "`mypy src`" in result.feedback


def test_checks_green_bounds_the_quoted_output():
    noisy = "\n".join(f"src/m{n}.py:1:1: E501 Line too long" for n in range(500))
    result = checks(["ruff check .", "mypy src"], [
        {"command": "ruff check .", "exit-code": 1, "output": noisy},
        {"command": "mypy src", "exit-code": 1, "output": 'src/app.py:12: error: Incompatible return value type (got "int", expected "str")'},
    ])
    assert result.status == "rejected"
    assert "Incompatible return value type" in result.feedback
    assert len(result.feedback.splitlines()) <= 45


def test_checks_green_with_no_commands_passes():
    assert checks([], []).status == "passed"


# ---------------------------------------------------------------- size-limits


def sizes(files, max_file=100, max_function=20):
    return evaluate("size-limits", {"max-file-lines": max_file, "max-function-lines": max_function},
                    {"files": files, "base-files": {}})


def python_function(name: str, body_lines: int, decorators: int = 0, indent: str = "") -> str:
    lines = [f"{indent}@decorator{n}" for n in range(decorators)]
    lines.append(f"{indent}def {name}(x):")
    lines += [f"{indent}    x += {n}" for n in range(body_lines - 1)]
    lines.append(f"{indent}    return x")
    return "\n".join(lines) + "\n"


def test_size_limits_passes_small_files_and_functions():
    result = sizes({"src/a.py": python_function("small", 10), "README.md": "# App\n"})
    assert result.status == "passed"


def test_size_limits_rejects_a_long_file():
    result = sizes({"docs/guide.md": "line\n" * 120}, max_file=100)
    assert result.status == "rejected"
    assert "`docs/guide.md` is a new file of 120 lines (limit 100)" in result.feedback


def test_size_limits_rejects_a_long_method_naming_it():
    source = "class Parser:\n" + python_function("parse", 30, indent="    ")
    result = sizes({"src/parser.py": source}, max_function=20)
    assert result.status == "rejected"
    assert "the new function `Parser.parse` has 31 lines (limit 20)" in result.feedback


def test_size_limits_excludes_decorators():
    # def line + 19 body lines = 20, under five decorator lines.
    assert sizes({"a.py": python_function("decorated", 19, decorators=5)}, max_function=20).status == "passed"
    assert sizes({"a.py": python_function("decorated", 20, decorators=5)}, max_function=20).status == "rejected"


def test_size_limits_measures_nested_functions_and_async_ones():
    source = "async def outer():\n" + python_function("inner", 25, indent="    ")
    result = sizes({"a.py": source}, max_function=20)
    assert result.status == "rejected"
    assert "`outer.inner`" in result.feedback and "`outer` has" in result.feedback


def test_size_limits_applies_only_the_file_limit_to_other_languages():
    js = "function big() {\n" + "  x++;\n" * 60 + "}\n"
    assert sizes({"app.js": js}, max_file=100, max_function=20).status == "passed"


def test_size_limits_rejects_python_that_does_not_parse():
    result = sizes({"src/a.py": "def broken(:\n    pass\n"})
    assert result.status == "rejected"
    assert "`src/a.py` does not parse" in result.feedback


def test_size_limits_zero_disables_a_limit():
    assert sizes({"a.py": "x = 1\n" * 500}, max_file=0).status == "passed"
    assert sizes({"a.py": python_function("long", 200)}, max_file=0, max_function=0).status == "passed"


# ---------------------------------------------------------------- report-fields


def fields(required, report):
    return evaluate("report-fields", {"fields": required}, {"report": report})


def test_report_fields_reads_a_json_report():
    report = json.dumps({"summary": "Added retries", "files_changed": ["src/http.py"], "risks": "none"})
    assert fields(["Summary", "Files changed", "risks"], report).status == "passed"


def test_report_fields_reads_a_fenced_json_block():
    report = "Done.\n\n```json\n{\"Summary\": \"Added retries\", \"tests-run\": 14}\n```\n"
    assert fields(["summary", "tests_run"], report).status == "passed"


def test_report_fields_rejects_empty_json_values():
    report = json.dumps({"summary": "Added retries", "risks": "", "files-changed": []})
    result = fields(["summary", "risks", "files-changed"], report)
    assert result.status == "rejected"
    assert result.evidence["missing"] == ["risks", "files-changed"]


def test_report_fields_reads_markdown_headings_and_labels():
    report = dedent('''
        ## Summary
        Added retry with backoff to the HTTP client.

        **Files changed:** `src/http.py`, `tests/test_http.py`
        - Tests run: 14

        Open questions:
          - Should the retry count be configurable?
    ''')
    assert fields(["summary", "files-changed", "TESTS_RUN", "open questions"], report).status == "passed"


def test_report_fields_rejects_a_missing_field_naming_it():
    result = fields(["Summary", "Risks"], "## Summary\nAdded retries.\n")
    assert result.status == "rejected"
    assert "`Risks`" in result.feedback and "`Summary`" not in result.feedback


def test_report_fields_a_mention_in_prose_is_not_a_field():
    result = fields(["summary"], "Here is a summary of what I did: I added retries.")
    assert result.status == "rejected"


def test_report_fields_an_empty_heading_or_label_is_missing():
    report = "## Summary\n\n## Risks\nNone known.\n\nTests: -\n"
    result = fields(["summary", "risks", "tests"], report)
    assert result.status == "rejected"
    assert result.evidence["missing"] == ["summary", "tests"]


def test_report_fields_subheadings_are_content_of_their_heading():
    assert fields(["changes"], "## Changes\n### HTTP client\nRetries added.\n").status == "passed"


def test_report_fields_ignores_fields_inside_code_blocks():
    report = "Done.\n```\nSummary: this is sample output\n# Risks\n```\n"
    result = fields(["summary", "risks"], report)
    assert result.status == "rejected"
    assert result.evidence["missing"] == ["summary", "risks"]


# ---------------------------------------------------------------- severity-grades

GRADES = ["HIGH", "MEDIUM", "LOW"]


def graded(report, grades=GRADES):
    return evaluate("severity-grades", {"grades": grades}, {"report": report})


def test_severity_grades_passes_graded_list_items():
    report = dedent('''
        ## Summary
        Reviewed the auth module.

        ## Findings
        - [HIGH] `login()` builds SQL from user input (src/auth.py:42).
          Use a parameterised query.
        - **Medium**: session tokens never expire.
        - LOW - inconsistent naming in `helpers.py`.
        - Missing rate limit on `/reset` (severity: high)
        - Debug flag left on — Low severity

        ## Notes
        - this list is not findings
    ''')
    result = graded(report)
    assert result.status == "passed", result.feedback
    assert result.evidence["findings"] == 5


def test_severity_grades_passes_graded_subheadings():
    report = dedent('''
        # Review
        ## Findings
        ### [HIGH] SQL injection in login
        Details here, mentioning a low-level driver.
        ### Token expiry
        Severity: MEDIUM
        #### Notes
        - a nested list item is not a finding
    ''')
    result = graded(report)
    assert result.status == "passed", result.feedback
    assert result.evidence["findings"] == 2


def test_severity_grades_rejects_an_ungraded_finding_naming_it():
    report = "## Findings\n- [HIGH] SQL injection in login\n- Tokens never expire\n"
    result = graded(report)
    assert result.status == "rejected"
    assert "`Tokens never expire`: no severity grade" in result.feedback
    assert "SQL injection" not in result.feedback


def test_severity_grades_a_grade_inside_a_word_does_not_count():
    report = "## Findings\n- Highlight color is off\n- Low-level socket errors are swallowed\n"
    result = graded(report)
    assert result.status == "rejected"
    assert result.evidence["ungraded"] == 2


def test_severity_grades_rejects_a_finding_with_two_grades():
    result = graded("## Findings\n- [HIGH] [LOW] unclear which\n")
    assert result.status == "rejected"
    assert "several grades (HIGH, LOW)" in result.feedback


def test_severity_grades_the_findings_own_line_decides():
    report = "## Findings\n- [HIGH] crash on empty input\n  Was rated [LOW] in the last review.\n"
    assert graded(report).status == "passed"


def test_severity_grades_ignores_list_lines_in_code_blocks():
    report = "## Findings\n- [HIGH] removes the check:\n  ```diff\n- if user.is_admin:\n  ```\n"
    assert graded(report).evidence["findings"] == 1


def test_severity_grades_without_findings_passes():
    assert graded("## Summary\nLooks good.\n").feedback == "no findings"
    assert graded("## Summary\nLooks good.\n").status == "passed"
    assert graded("## Findings\nNone.\n\n## Summary\nClean.\n").status == "passed"
    assert graded("Findings: none\n").status == "passed"


def test_severity_grades_reads_a_findings_label_with_a_list():
    report = "Findings:\n- [LOW] typo in README\n- unused import\n"
    result = graded(report)
    assert result.status == "rejected"
    assert "`unused import`" in result.feedback


def test_severity_grades_reads_json_findings():
    report = json.dumps({"summary": "x", "findings": [
        {"title": "SQL injection", "severity": "high"},
        {"title": "Typo", "severity": "LOW"},
    ]})
    assert graded(report).status == "passed"


def test_severity_grades_rejects_json_findings_without_a_valid_severity():
    report = "```json\n" + json.dumps({"findings": [
        {"title": "SQL injection", "severity": "critical"},
        {"title": "Typo"},
        {"title": "Fine", "severity": "Medium"},
    ]}) + "\n```"
    result = graded(report)
    assert result.status == "rejected"
    assert "`SQL injection`: severity `critical` is not one of the grades" in result.feedback
    assert "`Typo`: no `severity` value" in result.feedback
    assert "Fine" not in result.feedback


def test_severity_grades_custom_grades():
    assert graded("## Findings\n- [P0] outage\n", grades=["P0", "P1"]).status == "passed"
    assert graded("## Findings\n- [HIGH] outage\n", grades=["P0", "P1"]).status == "rejected"


def test_change_size_rejects_a_big_file_and_a_big_change():
    limits = {"max-file-bytes": 100, "max-change-bytes": 150}
    big_file = evaluate("change-size", limits, {"sizes": {"a.py": 10, "blob.bin": 101}, "base-sizes": {}})
    assert big_file.status == "rejected" and "`blob.bin` is a new file of 101 bytes" in big_file.feedback
    big_change = evaluate("change-size", limits, {"sizes": {"a": 100, "b": 51}, "base-sizes": {}})
    assert big_change.status == "rejected" and "151 bytes in all" in big_change.feedback
    assert evaluate("change-size", limits, {"sizes": {"a": -1}, "base-sizes": {}}).status == "error"


def test_change_size_judges_what_the_change_adds_to_each_file():
    limits = {"max-file-bytes": 100, "max-change-bytes": 150}
    # a fix in a file over the limit at the base: it did not grow, and the change adds 2 bytes in all
    fix = evaluate("change-size", limits, {"sizes": {"big.json": 500, "a.py": 12}, "base-sizes": {"big.json": 500, "a.py": 10}})
    assert fix.status == "passed" and "2 bytes added" in fix.feedback
    grown = evaluate("change-size", limits, {"sizes": {"big.json": 501}, "base-sizes": {"big.json": 500}})
    assert grown.status == "rejected"
    assert "`big.json` grew from 500 to 501 bytes; it was over the limit at the base, so it may not grow" in grown.feedback
    crossed = evaluate("change-size", limits, {"sizes": {"a.py": 101}, "base-sizes": {"a.py": 99}})
    assert crossed.status == "rejected" and "`a.py` grew from 99 to 101 bytes\n" in crossed.feedback + "\n"
    # the change adds what files grew by, not their whole size
    assert evaluate("change-size", limits, {"sizes": {"a": 100, "b": 100}, "base-sizes": {"a": 60, "b": 60}}).status == "passed"
    assert evaluate("change-size", limits, {"sizes": {"a": 100, "b": 100}, "base-sizes": {"a": 20, "b": 20}}).status == "rejected"


def test_every_verify_kind_has_a_judge_an_evidence_model_and_a_way_to_gather_it():
    assert KINDS
    for name, kind in KINDS.items():
        assert callable(kind.judge), name
        assert inspect.iscoroutinefunction(kind.gather), name
        assert isinstance(kind.evidence, type) and issubclass(kind.evidence, Evidence), name
        # the gathered evidence fits the judge: the valid call's table is the kind's model
        assert isinstance(kind.evidence_from(VALID_CALLS[name][1]), kind.evidence), name
    assert {name for name, kind in KINDS.items() if kind.runs_commands} == {"tests-green", "checks-green", "review"}
