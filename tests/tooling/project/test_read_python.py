"""runtime.tooling.project.read_python: tox (ini and TOML), nox, pyproject (hatch, pdm, tool sections), setup.cfg and
the tools' own files, read as data into a Scan."""

import pytest

from runtime.errors import ManifestError
from runtime.tooling.project import read_python
from runtime.tooling.project.scan import Scan


def _scan(root, files, *readers):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out = Scan(root)
    for reader in readers:
        reader(out)
    return out


def _texts(raws):
    return [r.text for r in raws]


# -- tox.ini -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "names"), [
    ("py{38,39}-lint", ["py38-lint", "py39-lint"]),
    ("py{38, 39}-{unit,integ}", ["py38-unit", "py38-integ", "py39-unit", "py39-integ"]),
    ("lint", ["lint"]),
    ("{a,b}", ["a", "b"]),
])
def test_expand_braces_gives_tox_s_generative_names(name, names):
    assert read_python.expand_braces(name) == names


TOX_INI = """\
[tox]
# a comment
envlist =
    py{311,312}
    lint, typing
    # a commented-out env
    docs

[base]
commands = pytest -x src

[testenv]
deps = pytest
commands =
    # run the tests
    py311: pytest --cov {posargs}
    !py311: pytest {posargs}
    - coverage report
    {[base]commands}

[testenv:lint]
commands = flake8 \\
    src \\
    tests
    ruff check .

[testenv:{typing,mypy}]
commands = mypy src

[testenv:docs]
deps = sphinx
"""


@pytest.fixture
def tox_ini(tmp_path):
    return _scan(tmp_path, {"tox.ini": TOX_INI}, read_python.read_tox)


def test_tox_ini_envlist_spans_lines_skips_comments_and_expands_names(tox_ini):
    assert tox_ini.read == ["tox.ini"]
    assert tox_ini.tox_envlist == ["py311", "py312", "lint", "typing", "docs"]


def test_tox_ini_testenv_is_every_environment_factors_and_ignored_exit_codes_dropped(tox_ini):
    raws = tox_ini.tox_envs["*"]
    assert _texts(raws) == ["pytest --cov {posargs}", "pytest {posargs}", "coverage report", "pytest -x src"]
    assert {(r.origin.what, r.hint, r.dialect) for r in raws} == {("tox: every environment", "test", "tox")}
    assert [r.origin.line for r in raws[:3]] == [16, 17, 18]


def test_tox_ini_continuation_lines_are_one_command_at_its_first_line(tox_ini):
    lint = tox_ini.tox_envs["lint"]
    assert [(r.text.split(), r.origin.line) for r in lint] == [(["flake8", "src", "tests"], 22), (["ruff", "check", "."], 25)]
    assert {(r.origin.what, r.hint) for r in lint} == {("tox env lint", "lint")}


def test_tox_ini_generative_section_is_each_environment(tox_ini):
    assert tox_ini.tox_envs["typing"] == tox_ini.tox_envs["mypy"]
    (raw,) = tox_ini.tox_envs["typing"]
    assert (raw.text, raw.hint, raw.origin.line) == ("mypy src", "type", 28)


def test_tox_ini_environment_without_commands_has_none(tox_ini):
    assert "docs" not in tox_ini.tox_envs
    assert len(tox_ini.entries) == sum(len(v) for k, v in tox_ini.tox_envs.items() if k != "mypy")


def test_tox_ini_is_read_rather_than_tox_toml(tmp_path):
    out = _scan(tmp_path, {"tox.ini": "[testenv]\ncommands = pytest ini\n",
                           "tox.toml": 'env_list = ["x"]\n[env_run_base]\ncommands = [["pytest", "toml"]]\n'},
                read_python.read_tox)
    assert out.read == ["tox.ini"] and _texts(out.entries) == ["pytest ini"] and out.tox_envlist == []


def test_tox_ini_without_section_headers_is_an_error_at_its_line(tmp_path):
    with pytest.raises(ManifestError) as exc:
        _scan(tmp_path, {"tox.ini": "commands = pytest\n"}, read_python.read_tox)
    assert (exc.value.path, exc.value.line) == ("tox.ini", 1)
    assert exc.value.message.startswith("not an ini file tox can read: File contains no section headers")


@pytest.mark.parametrize(("text", "line"), [
    ("[tox]\nenvlist = a\n\nfoo bar\n", 4),  # configparser keeps the line in the error's list, not in lineno
    ("[tox]\nenvlist = a\n[testenv]\n  commands = x\nbad line\n", 5),
])
def test_tox_ini_line_that_is_no_option_is_an_error_at_that_line(tmp_path, text, line):
    with pytest.raises(ManifestError) as exc:
        _scan(tmp_path, {"tox.ini": text}, read_python.read_tox)
    assert (exc.value.path, exc.value.line) == ("tox.ini", line)
    bad = text.splitlines()[line - 1]
    assert exc.value.message == f"not an ini file tox can read: a line that is no section, `key = value` or continuation: `{bad}`"


def test_legacy_tox_ini_error_is_at_the_pyproject_s_line(tmp_path):
    text = '[project]\nname = "x"\n\n[tool.tox]\nlegacy_tox_ini = """\n[tox]\nenvlist = a\nfoo bar\n"""\n'
    with pytest.raises(ManifestError) as exc:
        _scan(tmp_path, {"pyproject.toml": text}, read_python.read_pyproject)
    assert (exc.value.path, exc.value.line) == ("pyproject.toml", 8)


# -- tox.toml ------------------------------------------------------------------------------------------

TOX_TOML = """\
env_list = ["3.12", "lint"]

[env_run_base]
commands = [["pytest", { replace = "posargs", default = ["tests"] }], ["coverage", "report"]]

[env.lint]
commands = [
  ["ruff", "check", { replace = "posargs", default = ["src", "tests"] }],
  ["flake8", "--count"],
  "not a list of words",
  [],
]

[env.docs]
deps = ["sphinx"]
"""


def test_tox_toml_posargs_take_their_defaults_and_env_run_base_is_every_environment(tmp_path):
    out = _scan(tmp_path, {"tox.toml": TOX_TOML}, read_python.read_tox)
    assert out.read == ["tox.toml"] and out.tox_envlist == ["3.12", "lint"]
    assert _texts(out.tox_envs["*"]) == ["pytest tests", "coverage report"]
    assert _texts(out.tox_envs["lint"]) == ["ruff check src tests", "flake8 --count"]  # what is no list of words: nothing
    assert [(r.origin.line, r.origin.what, r.hint, r.dialect) for r in out.tox_envs["lint"]] == [
        (8, "tox env lint", "lint", "shell"), (9, "tox env lint", "lint", "shell")]
    assert {(r.origin.what, r.hint) for r in out.tox_envs["*"]} == {("tox: every environment", "test")}
    assert "docs" not in out.tox_envs


@pytest.mark.parametrize(("word", "text"), [
    ('{ replace = "posargs" }', "flake8"),  # no default: nothing, as tox gives nothing without arguments
    ('{ replace = "posargs", default = [] }', "flake8"),
    ('{ replace = "env", name = "FLAKE8_ARGS", default = "--count" }', "flake8 --count"),  # the default, one word
    ('{ replace = "env", name = "SRC", default = "src dir" }', "flake8 'src dir'"),
    ('{ replace = "env", name = "ARGS", default = "", extend = true }', "flake8"),  # spread: an empty one is none
])
def test_tox_toml_replacements_of_no_words_or_with_a_default_are_read(tmp_path, word, text):
    out = _scan(tmp_path, {"tox.toml": f'[env.lint]\ncommands = [["flake8", {word}]]\n'}, read_python.read_tox)
    (raw,) = out.tox_envs["lint"]
    assert (raw.text, raw.why, raw.origin.line) == (text, "", 2)


@pytest.mark.parametrize(("word", "why"), [
    ('{ replace = "env", name = "FLAKE8_ARGS" }',
     "takes a word from the environment variable `FLAKE8_ARGS`, which has no default: give the command its arguments"),
    ('{ replace = "ref", of = ["env", "x", "commands"] }', "holds a tox replacement init does not follow (`ref`)"),
    ('{ replace = "posargs", default = [{ replace = "env", name = "X" }] }',
     "takes a word from the environment variable `X`, which has no default: give the command its arguments"),
    ("3", "holds a word that is no string (`3`)"),
])
def test_tox_toml_replacement_init_cannot_resolve_leaves_the_command_out_saying_why(tmp_path, word, why):
    out = _scan(tmp_path, {"tox.toml": f'[env.lint]\ncommands = [["flake8", {word}]]\n'}, read_python.read_tox)
    (raw,) = out.tox_envs["lint"]
    assert raw.why == why and raw.text.startswith("flake8 ") and "{unresolved}" not in raw.text
    assert (raw.origin.line, raw.hint) == (2, "lint")


def test_tox_toml_words_are_quoted_as_one_argument_each(tmp_path):
    out = _scan(tmp_path, {"tox.toml": '[env.t]\ncommands = [["pytest", "-k", "not slow"]]\n'}, read_python.read_tox)
    assert _texts(out.entries) == ["pytest -k 'not slow'"]


# -- pyproject.toml ------------------------------------------------------------------------------------

LEGACY = '''\
[project]
name = "x"

[tool.tox]
legacy_tox_ini = """
[tox]
envlist = py311, lint

[testenv:lint]
commands = flake8 src
"""
'''


def test_pyproject_legacy_tox_ini_is_read_at_the_pyproject_s_lines(tmp_path):
    out = _scan(tmp_path, {"pyproject.toml": LEGACY}, read_python.read_pyproject)
    assert out.tox_envlist == ["py311", "lint"]
    (raw,) = out.tox_envs["lint"]
    assert (raw.text, str(raw.origin), raw.dialect) == ("flake8 src", "pyproject.toml:10", "tox")


def test_pyproject_tool_tox_tables_are_tox_toml_at_their_lines(tmp_path):
    text = '[tool.tox]\nenv_list = ["lint"]\n\n[tool.tox.env.lint]\ncommands = [["flake8", "src"]]\n'
    out = _scan(tmp_path, {"pyproject.toml": text}, read_python.read_pyproject)
    (raw,) = out.tox_envs["lint"]
    assert (raw.text, str(raw.origin), raw.origin.what) == ("flake8 src", "pyproject.toml:5", "tox env lint")


def test_pyproject_tool_tox_is_ignored_when_a_tox_file_was_read(tmp_path):
    out = _scan(tmp_path, {"tox.ini": "[testenv:py]\ncommands = pytest\n", "pyproject.toml": LEGACY},
                read_python.read_tox, read_python.read_pyproject)
    assert list(out.tox_envs) == ["py"] and out.tox_envlist == []


HATCH = """\
[tool.hatch.envs.default.scripts]
test = "pytest {args:tests}"
cov = ["test", "coverage report"]

[tool.hatch.envs.lint]
scripts = { style = "ruff check .", typing = ["mypy src", 3] }
"""


def test_hatch_scripts_of_the_default_environment_are_also_found_by_name_alone(tmp_path):
    out = _scan(tmp_path, {"pyproject.toml": HATCH}, read_python.read_pyproject)
    assert out.scripts["hatch:test"] is out.scripts["hatch:default:test"]
    assert _texts(out.scripts["hatch:cov"]) == ["test", "coverage report"]
    assert "hatch:style" not in out.scripts and _texts(out.scripts["hatch:lint:style"]) == ["ruff check ."]
    assert _texts(out.scripts["hatch:lint:typing"]) == ["mypy src"]  # what is no string: nothing
    raw = out.scripts["hatch:lint:typing"][0]
    assert (raw.dialect, raw.group, raw.hint, raw.origin.what) == ("hatch", "lint", "type", "hatch script lint:typing")
    assert str(out.scripts["hatch:test"][0].origin) == "pyproject.toml:2"


def test_hatch_toml_scripts_are_read_beside_pyproject(tmp_path):
    out = _scan(tmp_path, {"hatch.toml": '[envs.default.scripts]\ntest = "pytest -x"\n'}, read_python.read_pyproject)
    assert out.read == ["hatch.toml"]
    assert [(r.text, str(r.origin)) for r in out.scripts["hatch:test"]] == [("pytest -x", "hatch.toml:2")]


PDM = """\
[tool.pdm.scripts]
_.env_file = ".env"
lint = "flake8 src"
test = { cmd = "pytest -q" }
types = { cmd = ["mypy", "src dir"] }
fmt = { shell = "black . && isort ." }
all = { composite = ["lint", "test"] }
broken = { cmd = 3 }
"""


def test_pdm_scripts_of_every_form(tmp_path):
    out = _scan(tmp_path, {"pyproject.toml": PDM}, read_python.read_pyproject)
    assert {k: _texts(v) for k, v in out.scripts.items()} == {
        "pdm:lint": ["flake8 src"], "pdm:test": ["pytest -q"], "pdm:types": ["mypy 'src dir'"],
        "pdm:fmt": ["black . && isort ."], "pdm:all": ["lint", "test"], "pdm:broken": []}
    assert [(str(r.origin), r.hint, r.dialect) for r in out.scripts["pdm:types"]] == [("pyproject.toml:5", "type", "pdm")]


@pytest.mark.parametrize(("pyproject", "expected"), [
    ("[tool.pytest.ini_options]\naddopts = '-q'\n", [("pytest", "pyproject.toml:1", "[tool.pytest.ini_options]", "test")]),
    ("[tool.pytest]\nminversion = '9'\n", [("pytest", "pyproject.toml:1", "[tool.pytest]", "test")]),
    ("[tool.ruff]\nline-length = 100\n", [("ruff check .", "pyproject.toml:1", "[tool.ruff]", "lint")]),
    ("[tool.ruff]\nline-length = 100\n\n[tool.ruff.format]\nquote-style = 'single'\n",
     [("ruff check .", "pyproject.toml:1", "[tool.ruff]", "lint"),
      ("ruff format --check .", "pyproject.toml:4", "[tool.ruff.format]", "format")]),
    ("[tool.mypy]\nfiles = ['pkg']\n", [("mypy", "pyproject.toml:1", "[tool.mypy]", "type")]),
    ("[tool.black]\n", [("black --check .", "pyproject.toml:1", "[tool.black]", "format")]),
    ("[tool.isort]\nprofile = 'black'\n", [("isort --check-only .", "pyproject.toml:1", "[tool.isort]", "format")]),
    ("[project]\nname = 'x'\n\n[project.scripts]\ntest = 'x:main'\n", []),
    ("[tool.coverage.run]\nbranch = true\n", []),
])
def test_pyproject_tool_sections_say_the_tool_checks_the_repository(tmp_path, pyproject, expected):
    out = _scan(tmp_path, {"pyproject.toml": pyproject}, read_python.read_pyproject)
    assert [(r.text, str(r.origin), r.origin.what, r.hint) for r in out.entries] == expected


@pytest.mark.parametrize(("files", "command"), [
    ({"src/pkg/__init__.py": ""}, "mypy src"),
    ({"b/__init__.py": "", "a/__init__.py": "", "tests/__init__.py": ""}, "mypy a b"),
    ({"tool.py": ""}, "mypy ."),
])
def test_mypy_without_files_is_given_the_repository_s_packages(tmp_path, files, command):
    out = _scan(tmp_path, {"pyproject.toml": "[tool.mypy]\nstrict = true\n", **files}, read_python.read_pyproject)
    assert _texts(out.entries) == [command]


# -- setup.cfg -----------------------------------------------------------------------------------------

SETUP_CFG = """\
[metadata]
name = pkg

[tox:tox]
envlist = py311

[testenv]
commands = pytest {posargs}

[tool:pytest]
testpaths = tests

[flake8]
max-line-length = 100

[isort]
profile = black

[mypy]
files = src
"""


def test_setup_cfg_sections_and_its_tox_configuration(tmp_path):
    out = _scan(tmp_path, {"setup.cfg": SETUP_CFG}, read_python.read_setup_cfg)
    assert out.tox_envlist == ["py311"] and _texts(out.tox_envs["*"]) == ["pytest {posargs}"]
    assert [(r.text, str(r.origin), r.origin.what, r.hint) for r in out.entries] == [
        ("pytest {posargs}", "setup.cfg:8", "tox: every environment", "test"),
        ("pytest", "setup.cfg:10", "[tool:pytest]", "test"),
        ("flake8", "setup.cfg:13", "[flake8]", "lint"),
        ("isort --check-only .", "setup.cfg:16", "[isort]", "format"),
        ("mypy", "setup.cfg:19", "[mypy]", "type"),
    ]


def test_setup_cfg_tox_configuration_is_ignored_after_tox_ini(tmp_path):
    out = _scan(tmp_path, {"tox.ini": "[testenv]\ncommands = pytest -x\n", "setup.cfg": SETUP_CFG},
                read_python.read_tox, read_python.read_setup_cfg)
    assert _texts(out.tox_envs["*"]) == ["pytest -x"] and out.tox_envlist == []


def test_setup_cfg_mypy_without_files_is_given_the_packages(tmp_path):
    out = _scan(tmp_path, {"setup.cfg": "[mypy]\nstrict = True\nfiles =\n", "pkg/__init__.py": ""},
                read_python.read_setup_cfg)
    assert _texts(out.entries) == ["mypy pkg"]


def test_setup_cfg_that_is_no_ini_file_is_an_error(tmp_path):
    with pytest.raises(ManifestError, match=r"^setup.cfg:1: not an ini file: File contains no section headers"):
        _scan(tmp_path, {"setup.cfg": "name = pkg\n"}, read_python.read_setup_cfg)


def test_setup_cfg_line_that_is_no_option_is_an_error_at_that_line(tmp_path):
    with pytest.raises(ManifestError) as exc:
        _scan(tmp_path, {"setup.cfg": "[metadata]\nname = pkg\n\nfoo bar\n"}, read_python.read_setup_cfg)
    assert (exc.value.path, exc.value.line) == ("setup.cfg", 4)
    assert exc.value.message.startswith("not an ini file: ")


# -- the tools' own files ------------------------------------------------------------------------------

@pytest.mark.parametrize(("file", "text", "command", "kind"), [
    (".flake8", "[flake8]\n", "flake8", "lint"),
    ("ruff.toml", "line-length = 100\n", "ruff check .", "lint"),
    (".ruff.toml", "", "ruff check .", "lint"),
    ("mypy.ini", "[mypy]\nfiles = pkg\n", "mypy", "type"),
    ("mypy.ini", "[mypy]\nstrict = True\n", "mypy src", "type"),
    (".mypy.ini", "[mypy]\n  files = pkg\n", "mypy", "type"),
    (".isort.cfg", "[settings]\n", "isort --check-only .", "format"),
    ("pytest.ini", "[pytest]\n", "pytest", "test"),
    (".pytest.ini", "[pytest]\n", "pytest", "test"),
])
def test_a_tool_s_own_file_says_the_repository_runs_it(tmp_path, file, text, command, kind):
    out = _scan(tmp_path, {file: text, "src/pkg/__init__.py": "", "README.md": ""}, read_python.read_tool_files)
    assert out.read == [file]
    assert [(r.text, str(r.origin), r.origin.what, r.hint) for r in out.entries] == [(command, f"{file}:1", file, kind)]


# -- noxfile.py ----------------------------------------------------------------------------------------

NOXFILE = """\
import nox
from nox import session

LINT = ["flake8", "src"]


@session
def tests(session):
    session.install("pytest")
    session.run("pytest", "-k", "not slow", *session.posargs)


@nox.session(reuse_venv=True)
def lint(s):
    other = s
    s.run(*LINT)
    other.run("black", ".")
    s.run("ruff", "check", ".")


def helper(session):
    session.run("rm", "-rf", "build")


@nox.session
def nothing():
    pass


@nox.session(name=("type" + "check"))
def types(session):
    session.run("mypy", "src")
"""


def test_noxfile_sessions_are_read_from_its_syntax_tree(tmp_path):
    out = _scan(tmp_path, {"noxfile.py": NOXFILE}, read_python.read_nox)
    assert list(out.nox_sessions) == ["tests", "lint", "types"]  # no helper, no session without its argument
    (tests,) = out.nox_sessions["tests"]
    assert (tests.text, str(tests.origin), tests.origin.what, tests.hint, tests.dialect) == (
        "pytest -k 'not slow'", "noxfile.py:10", "nox session tests", "test", "nox")
    # only the session argument's run, a starred value is computed; a name given by an expression is the function's
    assert _texts(out.nox_sessions["lint"]) == ["{computed}", "ruff check ."]
    assert [(r.text, r.origin.what, r.hint) for r in out.nox_sessions["types"]] == [("mypy src", "nox session types", "type")]


def test_noxfile_that_is_not_python_is_an_error_at_its_line(tmp_path):
    with pytest.raises(ManifestError) as exc:
        _scan(tmp_path, {"noxfile.py": "import nox\n\n\ndef tests(session:\n    pass\n"}, read_python.read_nox)
    assert exc.value.path == "noxfile.py" and exc.value.line == 4
    assert exc.value.message.startswith("not Python this runtime can read: ")


def test_a_repository_without_these_files_reads_none(tmp_path):
    out = _scan(tmp_path, {"README.md": ""}, read_python.read_tox, read_python.read_nox, read_python.read_pyproject,
                read_python.read_setup_cfg, read_python.read_tool_files)
    assert out.read == [] and out.entries == []
