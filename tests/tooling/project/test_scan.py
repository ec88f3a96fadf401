"""runtime.tooling.project.scan: reading a repository's files safely, and the order its readers run in."""

import json

import pytest

from runtime.errors import ManifestError
from runtime.tooling.project.readers import scan
from runtime.tooling.project.scan import MAX_BYTES, line_of, parse_toml, python_targets, read_text


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_read_text_is_none_for_a_file_that_is_not_there_or_a_folder(tmp_path):
    (tmp_path / "tox.ini").mkdir()
    assert read_text(tmp_path, "Makefile") is None
    assert read_text(tmp_path, "tox.ini") is None


def test_read_text_follows_a_link_inside_the_repository(tmp_path):
    (tmp_path / "real.ini").write_text("[tox]\n")
    (tmp_path / "tox.ini").symlink_to(tmp_path / "real.ini")
    assert read_text(tmp_path, "tox.ini") == "[tox]\n"


def test_read_text_refuses_a_link_out_of_the_repository(tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("token\n")
    (repo / "Makefile").symlink_to(outside / "secret")
    with pytest.raises(ManifestError) as exc:
        read_text(repo, "Makefile")
    assert (exc.value.path, exc.value.line) == ("Makefile", 1)
    assert "outside the repository" in exc.value.message and str(outside / "secret") in exc.value.message


def test_read_text_refuses_a_file_larger_than_any_declaration(tmp_path):
    (tmp_path / "package.json").write_bytes(b" " * (MAX_BYTES + 1))
    with pytest.raises(ManifestError, match="larger than 2 MiB"):
        read_text(tmp_path, "package.json")
    (tmp_path / "package.json").write_bytes(b" " * MAX_BYTES)
    assert read_text(tmp_path, "package.json") == " " * MAX_BYTES


def test_read_text_refuses_what_is_not_utf8_naming_the_byte(tmp_path):
    (tmp_path / "setup.cfg").write_bytes(b"[metadata]\n\xff")
    with pytest.raises(ManifestError, match=r"setup.cfg:1: is not UTF-8 text \(.* at byte 11\)"):
        read_text(tmp_path, "setup.cfg")


@pytest.mark.parametrize(("text", "line"), [
    ('[project]\nname = "x"\n\n[tool.pytest.ini_options\n', 4),
    ('a = 1\nb =\n', 2),
    ('a = "unterminated\n', 1),
])
def test_parse_toml_names_the_line_toml_cannot_read(text, line):
    with pytest.raises(ManifestError) as exc:
        parse_toml(text, "pyproject.toml")
    assert (exc.value.path, exc.value.line) == ("pyproject.toml", line)
    assert exc.value.message.startswith("not TOML this runtime can read: ") and "(at" not in exc.value.message


def test_parse_toml_gives_the_document():
    assert parse_toml('[tool.ruff]\nline-length = 100\n', "pyproject.toml") == {"tool": {"ruff": {"line-length": 100}}}


@pytest.mark.parametrize(("needle", "start", "line"), [
    ("bb", 1, 2),
    ("bb", 3, 4),  # at or after start
    ("absent", 2, 2),  # else start itself
    ("  ", 3, 3),  # nothing to look for
    ("   ccc  ", 1, 3),  # the needle's spaces do not count
    ("x" * 40 + " and what follows", 1, 5),  # only the first 40 characters are looked for
])
def test_line_of_finds_the_first_line_at_or_after_start(needle, start, line):
    text = "a\nbb\nccc\nbb\n" + "x" * 40 + "\n"
    assert line_of(text, needle, start) == line


def test_python_targets_prefers_src(tmp_path):
    _write(tmp_path, {"src/pkg/__init__.py": "", "other/__init__.py": ""})
    assert python_targets(tmp_path) == ["src"]


def test_python_targets_are_the_packages_at_the_root_and_nothing_else(tmp_path):
    _write(tmp_path, {"zeta/__init__.py": "", "alpha/__init__.py": "", "tests/__init__.py": "", "docs/__init__.py": "",
                      "build/__init__.py": "", ".hidden/__init__.py": "", "scripts/run.py": "", "setup.py": ""})
    assert python_targets(tmp_path) == ["alpha", "zeta"]


def test_python_targets_are_the_root_when_there_is_no_package(tmp_path):
    _write(tmp_path, {"tool.py": "", "tests/__init__.py": ""})
    assert python_targets(tmp_path) == ["."]


def test_scan_of_a_folder_that_declares_nothing_reads_nothing(tmp_path):
    _write(tmp_path, {"README.md": "# x\n", "src/main.py": ""})
    result = scan(tmp_path)
    assert result.root == tmp_path and result.read == [] and result.entries == []


def test_scan_reads_the_files_in_their_order_of_preference(tmp_path):
    """The order the readers run in is the order a task's test command is preferred in."""
    _write(tmp_path, {
        ".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - run: pytest -q ci\n",
        ".pre-commit-config.yaml": "repos:\n  - repo: https://github.com/psf/black\n    hooks:\n      - id: black\n",
        "go.mod": "module example.com/x\n",
        "Cargo.toml": '[package]\nname = "x"\n',
        "package.json": json.dumps({"scripts": {"test": "jest"}}),
        "Makefile": "test:\n\tpytest -q make\n",
        ".flake8": "[flake8]\n",
        "setup.cfg": "[tool:pytest]\n",
        "pyproject.toml": "[tool.mypy]\nfiles = ['x']\n",
        "noxfile.py": "import nox\n\n@nox.session\ndef tests(session):\n    session.run('pytest', 'nox')\n",
        "tox.ini": "[testenv]\ncommands = pytest tox\n",
    })
    result = scan(tmp_path)
    assert result.read == ["tox.ini", "noxfile.py", "pyproject.toml", "setup.cfg", ".flake8", "Makefile", "package.json",
                           "Cargo.toml", "go.mod", ".pre-commit-config.yaml", ".github/workflows/ci.yml"]
    files = list(dict.fromkeys(raw.origin.file for raw in result.entries))
    assert files == result.read
    assert [r.text for r in result.entries if r.text.startswith("pytest")] == [
        "pytest tox", "pytest nox", "pytest", "pytest -q make", "pytest -q ci"]
    assert result.tox_envs and result.nox_sessions and result.make_targets and result.npm_scripts and result.hooks


def test_scan_stops_at_a_file_it_cannot_read(tmp_path):
    _write(tmp_path, {"tox.ini": "[testenv]\ncommands = pytest\n", "package.json": "{\n  \"scripts\": {,}\n}\n"})
    with pytest.raises(ManifestError) as exc:
        scan(tmp_path)
    assert (exc.value.path, exc.value.line) == ("package.json", 2)
