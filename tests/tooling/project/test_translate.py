"""runtime.tooling.project.translate: a repository's command, as its file writes it, into the command the agent and
verify run: placeholders filled, runners replaced by what they run, formatters in their checking form."""

import pytest

from runtime.tooling.project.found import Found, Origin, Raw, Skipped
from runtime.tooling.project.scan import Scan
from runtime.tooling.project.translate import (
    MAX_DEPTH,
    Context,
    Translator,
    Untranslatable,
    _placeholders,
    _program,
    _segments,
    checking_form,
    layout_form,
    translate,
)

ORIGIN = Origin("tox.ini", 3, "tox env lint")


def _raw(text, hint=None, dialect="shell", group="", origin=ORIGIN):
    return Raw(text, origin, hint, dialect, group)


def _run(text, scan, hint=None, dialect="shell", uv=True, group=""):
    return Translator(Context(scan, uv)).run(_raw(text, hint, dialect, group))


def _commands(items):
    return [i.command if isinstance(i, Found) else ("left out", i.why) for i in items]


# -- placeholders, shell, programs ---------------------------------------------------------------------

@pytest.mark.parametrize(("text", "dialect", "expected"), [
    ("pytest {posargs:tests}", "tox", "pytest tests"),
    ("pytest {posargs:-q tests}", "tox", "pytest -q tests"),
    ("pytest -q {posargs}", "tox", "pytest -q "),
    ("pytest [] -q", "tox", "pytest   -q"),  # tox 3's posargs
    ("pytest {toxinidir}/tests", "tox", "pytest ./tests"),
    ("pytest {tox_root}/tests", "tox", "pytest ./tests"),
    ("{envpython} -m pytest", "tox", "python -m pytest"),
    ("{envbindir}/flake8 src", "tox", ".venv/bin/flake8 src"),
    ("{env_bin_dir}/flake8 src", "tox", ".venv/bin/flake8 src"),
    ("pytest {env:PYTEST_ADDOPTS:-x}", "tox", "pytest -x"),
    ("pytest --basetemp={envtmpdir} -q", "tox", "pytest   -q"),  # tox's scratch folders go, with their option
    ("pytest --junitxml {envlogdir}/junit.xml", "tox", "pytest --junitxml  "),
    ("pytest {args:tests}", "hatch", "pytest tests"),
    ("pytest {root}/tests", "hatch", "pytest ./tests"),
    ("pytest {args}", "pdm", "pytest "),
    ("pytest -k {x} {posargs}", "shell", "pytest -k {x} {posargs}"),  # a shell's braces are its own
    ("pytest {posargs}", "nox", "pytest {posargs}"),
    # a placeholder in a default: the inner one first, then the default it is part of
    ("pytest {posargs:{toxinidir}/tests}", "tox", "pytest ./tests"),
    ("pytest {posargs:-p {env:PLUGIN:xdist} {tox_root}}", "tox", "pytest -p xdist ."),
    ("pytest {args:{root}/tests}", "hatch", "pytest ./tests"),
])
def test_placeholders_of_the_file_s_tool_are_filled_in(text, dialect, expected):
    assert _placeholders(text, dialect).split() == expected.split()


@pytest.mark.parametrize(("text", "dialect", "why"), [
    ("pytest {distdir}", "tox", "holds `{distdir}`, which only tox fills in when it runs"),
    ("pytest {envsitepackagesdir}", "tox", "holds `{envsitepackagesdir}`, which only tox fills in when it runs"),
    ("pytest {env_name}", "hatch", "holds `{env_name}`, which only hatch fills in when it runs"),
    ("pytest {[]}", "pdm", "holds `{[]}`, which only pdm fills in when it runs"),
    ("pytest --basetemp {computed}", "nox", "an argument is computed when the session runs"),
    ("pytest -k ${{ matrix.k }}", "shell", "uses the workflow's `${{ }}` expressions"),
    ("pytest {posargs:{distdir}}", "tox", "holds `{distdir}`, which only tox fills in when it runs"),
])
def test_a_placeholder_only_its_tool_fills_in_is_untranslatable(text, dialect, why):
    with pytest.raises(Untranslatable) as exc:
        _placeholders(text, dialect)
    assert str(exc.value) == why


@pytest.mark.parametrize(("text", "segments"), [
    ("pytest -q", [["pytest", "-q"]]),
    ("flake8 src && mypy src; black --check .", [["flake8", "src"], ["mypy", "src"], ["black", "--check", "."]]),
    ("flake8&&mypy;", [["flake8"], ["mypy"]]),
    ("pytest -k 'not slow && fast'", [["pytest", "-k", "not slow && fast"]]),
    ("pytest  # a comment", [["pytest"]]),
    ("", []),
])
def test_segments_are_the_simple_commands_of_a_list(text, segments):
    assert _segments(text) == segments


@pytest.mark.parametrize(("text", "why"), [
    ("pytest | tee log", "uses the shell's `|`: give the command alone"),
    ("pytest || true", "uses the shell's `||`: give the command alone"),
    ("pytest > log", "uses the shell's `>`: give the command alone"),
    ("pytest 2>&1", "uses the shell's `>&`: give the command alone"),
    ("pytest &", "uses the shell's `&`: give the command alone"),
    ("(cd src && pytest)", "uses the shell's `(`: give the command alone"),
    ("pytest $ARGS", "uses shell variables or substitutions"),
    ("pytest `cat args`", "uses shell variables or substitutions"),
    ("pytest -k 'unterminated", "cannot be read as a shell command (No closing quotation)"),
])
def test_what_the_gate_would_never_take_as_one_command_is_untranslatable(text, why):
    with pytest.raises(Untranslatable) as exc:
        _segments(text)
    assert str(exc.value) == why


@pytest.mark.parametrize(("word", "program"), [
    (".venv/bin/pytest", "pytest"), ("venv/bin/flake8", "flake8"), ("./node_modules/.bin/eslint", "eslint"),
    ("node_modules/.bin/tsc", "tsc"), ("bin/pytest", "pytest"), ("python3.12", "python3"), ("py.test", "pytest"),
    ("/usr/bin/pytest", "/usr/bin/pytest"), (".venv/bin/sub/tool", ".venv/bin/sub/tool"), ("python3.x", "python3.x"),
    ("pytest", "pytest"),
])
def test_program_is_the_name_a_toolchain_folder_s_path_stands_for(word, program):
    assert _program(word) == program


# -- checking forms and the layout -------------------------------------------------------------------

@pytest.mark.parametrize(("words", "expected", "checks"), [
    (["black", "."], ["black", "--check", "."], True),
    (["black", "--diff", "."], ["black", "--diff", "."], True),
    (["isort", "src"], ["isort", "--check-only", "src"], True),
    (["isort", "-c", "src"], ["isort", "-c", "src"], True),
    (["ruff", "check", "--fix", "--unsafe-fixes", "."], ["ruff", "check", "."], True),
    (["ruff", "check", "--exit-non-zero-on-fix", "--fix", "src"], ["ruff", "check", "src"], True),
    (["ruff", "check", "--fix-only", "."], ["ruff", "check", "--fix-only", "."], False),
    (["ruff", "src"], ["ruff", "check", "src"], True),  # ruff before its subcommands
    (["ruff"], ["ruff", "check"], True),
    # ruff's old command line, options before any subcommand, is `ruff check`: without its fixes
    (["ruff", "--fix", "."], ["ruff", "check", "."], True),
    (["ruff", "--select", "E", "."], ["ruff", "check", "--select", "E", "."], True),
    (["ruff", "--fix-only", "src"], ["ruff", "check", "--fix-only", "src"], False),
    (["ruff", "--quiet", "check", "--fix", "."], ["ruff", "--quiet", "check", "."], True),  # a global option
    (["ruff", "--config", "ruff.toml", "format"], ["ruff", "--config", "ruff.toml", "format", "--check"], True),
    (["ruff", "--version"], ["ruff", "--version"], True),  # not a check: classify leaves it out
    (["ruff", "rule", "E501"], ["ruff", "rule", "E501"], True),
    (["ruff", "format"], ["ruff", "format", "--check"], True),
    (["ruff", "format", "--diff", "."], ["ruff", "format", "--diff", "."], True),
    (["prettier", "--write", "src"], ["prettier", "--check", "src"], True),
    (["prettier", "-w", "."], ["prettier", "--check", "."], True),
    (["prettier", "."], ["prettier", "--check", "."], True),
    (["prettier", "-l", "."], ["prettier", "-l", "."], True),
    (["eslint", "--fix", "src"], ["eslint", "src"], True),
    (["tsc"], ["tsc", "--noEmit"], True),
    (["tsc", "--noEmit", "-p", "."], ["tsc", "--noEmit", "-p", "."], True),
    (["cargo", "fmt", "--all"], ["cargo", "fmt", "--all", "--check"], True),
    (["cargo", "fmt", "--check"], ["cargo", "fmt", "--check"], True),
    (["gofmt", "-l", "."], ["gofmt", "-l", "."], False),  # no form that fails on a difference
    (["go", "fmt", "./..."], ["go", "fmt", "./..."], False),
    (["autopep8", "-i", "x.py"], ["autopep8", "-i", "x.py"], False),
    (["yapf", "-i", "x.py"], ["yapf", "-i", "x.py"], False),
    (["pytest", "-q"], ["pytest", "-q"], True),
])
def test_a_formatter_or_fixer_takes_its_checking_form(words, expected, checks):
    assert checking_form(words) == (expected, checks)


@pytest.mark.parametrize(("venv", "words", "expected"), [
    (True, ["flake8"], ["flake8", "--extend-exclude", ".venv"]),
    (True, ["flake8", "."], ["flake8", "--extend-exclude", ".venv", "."]),
    (True, ["flake8", "-j", "2"], ["flake8", "-j", "2"]),  # `2` reads as a path: given paths, flake8 lints only those
    (True, ["flake8", "src"], ["flake8", "src"]),
    (True, ["flake8", "--exclude=build"], ["flake8", "--exclude=build"]),
    (True, ["flake8", "--extend-exclude", "docs"], ["flake8", "--extend-exclude", "docs"]),
    (False, ["flake8"], ["flake8"]),
    (False, ["go", "test", "./..."], ["go", "test", "-v", "./..."]),
    (False, ["go", "test", "-json", "./..."], ["go", "test", "-json", "./..."]),
    (False, ["go", "test", "-v"], ["go", "test", "-v"]),
    (False, ["go", "vet", "./..."], ["go", "vet", "./..."]),
    (False, [], []),
])
def test_layout_form_fits_the_command_to_the_checkout(tmp_path, venv, words, expected):
    if venv:
        (tmp_path / ".venv").mkdir()
    assert layout_form(words, tmp_path) == expected


# -- one command -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "uv", "command"), [
    ("uv run pytest -q", True, "uv run --no-sync pytest -q"),
    ("uv run pytest -q", False, "pytest -q"),
    ("uv run --extra test --frozen --with pytest-cov pytest -q", True, "uv run --no-sync pytest -q"),
    ("FOO=1 uv run pytest", True, "FOO=1 uv run --no-sync pytest"),
    ("PYTHONPATH=src DEBUG=1 pytest", True, "PYTHONPATH=src DEBUG=1 pytest"),
    ("poetry run pytest -x", True, "pytest -x"),
    ("pipenv run flake8", True, "flake8"),
    ("npx eslint .", True, "eslint ."),
    ("npx -p typescript tsc", True, "tsc --noEmit"),
    ("pnpm exec prettier --write .", True, "prettier --check ."),
    ("bunx eslint --fix .", True, "eslint ."),
    ("bun x eslint --fix .", True, "eslint ."),
    (".venv/bin/python -m pytest", True, "python -m pytest"),
    ("python3.11 -m pytest tests", True, "python3 -m pytest tests"),
    ("python -m coverage run -m pytest", True, "coverage run -m pytest"),
    ("py.test -x", True, "pytest -x"),
    ("venv/bin/black src", True, "black --check src"),
])
def test_runners_become_what_they_run(tmp_path, text, uv, command):
    (found,) = _run(text, Scan(tmp_path), uv=uv)
    assert found.command == command and found.written == text and found.origin == ORIGIN


def test_a_found_command_says_its_kind_family_and_whether_it_is_a_check(tmp_path):
    (found,) = _run("python3 -m pytest -q", Scan(tmp_path))
    assert (found.kind, found.family, found.check) == ("test", "pytest", True)
    (writes,) = _run("autopep8 -i x.py", Scan(tmp_path))
    assert (writes.kind, writes.check) == ("format", False)


def test_a_tox_default_holding_a_placeholder_becomes_the_plain_command(tmp_path):
    (found,) = _run("pytest {posargs:{toxinidir}/tests}", Scan(tmp_path), hint="test", dialect="tox")
    assert found.command == "pytest ./tests"


def test_a_list_of_commands_is_each_of_them(tmp_path):
    assert _commands(_run("flake8 src && mypy src; echo done", Scan(tmp_path))) == ["flake8 src", "mypy src"]


def test_an_unknown_tool_takes_the_kind_its_holder_s_name_suggests(tmp_path):
    (found,) = _run("interrogate -v src", Scan(tmp_path), hint="lint")
    assert (found.command, found.kind, found.family) == ("interrogate -v src", "lint", "interrogate")
    assert _run("interrogate -v src", Scan(tmp_path)) == []  # nothing suggests a kind: not one of the four


@pytest.mark.parametrize("text", ["pip install -e .[test]", "echo ok", "rm -rf build", "git diff --exit-code",
                                  "uv sync", "npm ci", "sphinx-build docs out", "uv run", "FOO=1"])
def test_utilities_are_never_a_check_whatever_holds_them(tmp_path, text):
    assert _run(text, Scan(tmp_path), hint="lint") == []


@pytest.mark.parametrize("text", ["sh scripts/test.sh", "bash -c 'pytest -q'", "zsh ci.sh"])
def test_a_script_run_through_a_shell_is_left_out_saying_why(tmp_path, text):
    (skipped,) = _run(text, Scan(tmp_path), hint="test")
    program = text.split()[0]
    assert isinstance(skipped, Skipped) and skipped.why == f"runs a script through `{program}`: give the commands it runs"
    assert (skipped.written, skipped.origin) == (text, ORIGIN)


def test_a_command_list_that_changes_folder_is_left_out_whole_saying_why(tmp_path):
    (skipped,) = _run("pytest -q && cd docs && make html", Scan(tmp_path))
    assert isinstance(skipped, Skipped) and skipped.why.startswith("runs in another folder (`cd`)")


@pytest.mark.parametrize(("text", "hint"), [
    ("cd src && pytest -q", None),  # a check after the `cd`, though `cd` itself is no check
    ("cd tests; python -m pytest", None),
    ("cd src && uv run mypy .", None),
    ("cd sub && make test", None),  # a runner whose target's name says a kind
    ("cd sub && ./run-checks", "lint"),  # by its holder's name
])
def test_a_check_run_in_another_folder_is_left_out_saying_why(tmp_path, text, hint):
    (skipped,) = _run(text, Scan(tmp_path), hint=hint)
    # a task has no working directory for its commands: the command cannot be moved to the root as it is
    assert isinstance(skipped, Skipped) and skipped.why.startswith("runs in another folder (`cd`)")
    assert "task" in skipped.why


@pytest.mark.parametrize("text", ["cd docs && make html", "cd build && rm -rf out", "cd web && npm ci"])
def test_what_runs_in_another_folder_and_is_no_check_is_dropped_without_a_word(tmp_path, text):
    assert _run(text, Scan(tmp_path)) == []


@pytest.mark.parametrize(("text", "hint", "reported"), [
    ("pytest | tee log", None, True),  # a test command by its words
    ("PYTHONPATH=. pytest > log", None, True),
    ("uv run --extra x mypy $SRC", None, True),
    ("tox -e $ENV", None, True),  # a runner
    ("make $(TARGET)", None, True),
    ("mytool --check > log", "lint", True),  # by its holder's name
    ("pip install $PKG", "lint", False),
    ("pip install $PKG", None, False),
    ("docker build . | tee log", None, False),
])
def test_an_untranslatable_command_is_reported_only_when_it_looks_like_a_check(tmp_path, text, hint, reported):
    items = _run(text, Scan(tmp_path), hint=hint)
    assert bool(items) == reported and all(isinstance(i, Skipped) for i in items)


def test_a_command_its_reader_could_not_read_is_left_out_with_the_reader_s_reason(tmp_path):
    raw = Raw("flake8 {env:FLAKE8_ARGS}", ORIGIN, "lint", why="takes a word from the environment variable FLAKE8_ARGS")
    (skipped,) = Translator(Context(Scan(tmp_path), True)).run(raw)
    assert (skipped.written, skipped.origin, skipped.why) == (raw.text, ORIGIN, raw.why)
    assert Translator(Context(Scan(tmp_path), True)).run(Raw("echo {env:X}", ORIGIN, why="w")) == []  # no check


# -- runners and the names they refer to ---------------------------------------------------------------

@pytest.fixture
def tox(tmp_path):
    scan = Scan(tmp_path)
    scan.tox_envs = {"*": [_raw("pytest {posargs:tests}", "test", "tox")],
                     "lint": [_raw("flake8 src", "lint", "tox"), _raw("black .", "lint", "tox")],
                     "py311": [_raw("pytest -x", "test", "tox")]}
    scan.tox_envlist = ["py311", "lint"]
    return scan


@pytest.mark.parametrize(("text", "commands"), [
    ("tox", ["pytest -x", "flake8 src", "black --check ."]),  # the envlist
    ("tox -e lint", ["flake8 src", "black --check ."]),
    ("tox -elint", ["flake8 src", "black --check ."]),
    ("tox -e=lint", ["flake8 src", "black --check ."]),
    ("tox --env lint", ["flake8 src", "black --check ."]),
    ("tox -e lint,py311", ["flake8 src", "black --check .", "pytest -x"]),
    ("tox -e lint -e lint", ["flake8 src", "black --check ."]),  # each environment once
    ("tox -p auto -e py311", ["pytest -x"]),
    ("tox -- -e lint", ["pytest -x", "flake8 src", "black --check ."]),  # after `--`: tox's posargs
    ("tox -e py312", ["pytest tests"]),  # an environment without a section of its own: [testenv]
    ("python -m tox -e py311", ["pytest -x"]),
])
def test_tox_becomes_what_its_environments_run(tox, text, commands):
    assert _commands(_run(text, tox)) == commands


def test_tox_without_an_envlist_runs_every_environment_but_the_base(tmp_path):
    scan = Scan(tmp_path)
    scan.tox_envs = {"*": [_raw("pytest", "test", "tox")], "lint": [_raw("flake8", "lint", "tox")]}
    assert _commands(_run("tox", scan)) == ["flake8"]


def test_tox_environment_that_is_not_there_is_left_out(tmp_path):
    scan = Scan(tmp_path)
    scan.tox_envs = {"lint": [_raw("flake8", "lint", "tox")]}
    assert _commands(_run("tox -e docs", scan)) == [("left out", "tox has no environment `docs` with commands")]


@pytest.fixture
def nox(tmp_path):
    scan = Scan(tmp_path)
    scan.nox_sessions = {"tests": [_raw("pytest -q", "test", "nox")], "lint": [_raw("flake8 src", "lint", "nox")]}
    return scan


@pytest.mark.parametrize(("text", "commands"), [
    ("nox", ["pytest -q", "flake8 src"]),
    ("nox -s lint", ["flake8 src"]),
    ("nox -s tests-3.12", ["pytest -q"]),  # a parametrized session's name
    ("nox -s 'tests(python=\"3.12\")'", ["pytest -q"]),
    ("nox -s lint tests", ["flake8 src", "pytest -q"]),
    ("nox -s docs", [("left out", "noxfile.py has no session `docs`")]),
])
def test_nox_becomes_what_its_sessions_run(nox, text, commands):
    assert _commands(_run(text, nox)) == commands


@pytest.mark.parametrize(("text", "commands"), [
    ("nox -s type-check-3.11", ["mypy src"]),  # the session's own name holds a `-`
    ("nox -s type-check", ["mypy src"]),
    ("nox -s type-check-pypy3.10", ["mypy src"]),
    ("nox -s 'type-check-3.11(django=\"4\")'", ["mypy src"]),
    ("nox -s type-3.12", ["pytest -q"]),  # the longest name that matches
    ("nox -s type-check-extra", [("left out", "noxfile.py has no session `type-check-extra`")]),  # no version
    ("nox -s type-check-3.11-x", [("left out", "noxfile.py has no session `type-check-3.11-x`")]),
])
def test_nox_finds_a_parametrized_session_whose_name_holds_a_hyphen(tmp_path, text, commands):
    scan = Scan(tmp_path)
    scan.nox_sessions = {"type": [_raw("pytest -q", "test", "nox")], "type-check": [_raw("mypy src", "type", "nox")]}
    assert _commands(_run(text, scan)) == commands


@pytest.fixture
def make(tmp_path):
    scan = Scan(tmp_path)
    scan.make_targets = {"test": [_raw("pytest", "test")], "lint": [_raw("flake8", "lint"), _raw("make test", "lint")],
                         "check": [_raw("make lint", "lint")]}
    return scan


@pytest.mark.parametrize(("text", "commands"), [
    ("make test", ["pytest"]),
    ("make", ["pytest"]),  # the first target
    ("make check", ["flake8", "pytest"]),  # targets running targets
    ("make lint test", ["flake8", "pytest", "pytest"]),
])
def test_make_becomes_its_targets_recipes(make, text, commands):
    assert _commands(_run(text, make)) == commands


@pytest.mark.parametrize(("text", "commands"), [
    ("make -s test", ["pytest"]),  # options that only change what make prints or whether it stops
    ("make --silent test", ["pytest"]),
    ("make -k test", ["pytest"]),
    ("make -s", ["pytest"]),  # the first target
    ("make -s lint test", ["flake8", "pytest", "pytest"]),
])
def test_make_options_that_change_no_recipe_are_not_targets(make, text, commands):
    assert _commands(_run(text, make)) == commands


@pytest.mark.parametrize("text", ["make -j4 test", "make -C sub test", "make PYTHON=python3 test"])
def test_make_with_options_or_variables_is_left_out(make, text):
    assert _commands(_run(text, make)) == [("left out", "make with options or variables: name the targets alone")]


def test_make_target_init_did_not_read_is_left_out_pointing_at_make_targets(make):
    ((_left, why),) = _commands(_run("make docs", make))
    assert why.startswith("the Makefile's target `docs` is not one init reads") and "make-targets" in why


def test_runners_calling_runners_stop_at_the_depth_limit(tmp_path):
    scan = Scan(tmp_path)
    names = [f"t{n}" for n in range(MAX_DEPTH + 1)]
    scan.make_targets = {name: [_raw(f"make {after}")] for name, after in zip(names, names[1:], strict=False)}
    scan.make_targets[names[-1]] = [_raw("pytest")]
    assert _commands(_run(f"make {names[1]}", scan)) == ["pytest"]
    assert _commands(_run(f"make {names[0]}", scan)) == [("left out", f"make {names[-1]} runs runners {MAX_DEPTH} deep")]
    scan.make_targets["test"] = [_raw("make test")]
    assert _commands(_run("make test", scan)) == [("left out", f"make test runs runners {MAX_DEPTH} deep")]


def test_pre_commit_run_becomes_its_hooks_tools(tmp_path):
    scan = Scan(tmp_path)
    scan.hooks = {"ruff": [_raw("ruff check .", "lint")], "mypy": [_raw("mypy pkg", "type")]}
    assert _commands(_run("pre-commit run --all-files", scan)) == ["ruff check .", "mypy pkg"]
    assert _commands(_run("pre-commit run mypy --all-files", scan)) == ["mypy pkg"]
    assert _run("pre-commit run black", scan) == [] and _run("pre-commit install", scan) == []


@pytest.fixture
def npm(tmp_path):
    scan = Scan(tmp_path)
    scan.npm_scripts = {"test": "jest", "lint": "eslint .", "format": "prettier --write .", "fmt": "prettier -w src",
                        "fix": "eslint --fix .", "typecheck": "tsc"}
    return scan


@pytest.mark.parametrize(("text", "command", "checks"), [
    ("npm test", "npm test", True),
    ("npm t", "npm t", True),
    ("npm run lint", "npm run lint", True),
    ("npm run-script lint", "npm run lint", True),
    ("yarn lint", "npm run lint", True),
    ("yarn test", "npm test", True),
    ("yarn run typecheck", "npm run typecheck", True),
    ("pnpm run lint", "npm run lint", True),
    ("bun run lint", "npm run lint", True),
    ("npm run format", "npm run format", False),  # its script rewrites files
    ("pnpm fmt", "npm run fmt", False),
])
def test_package_managers_run_package_json_s_scripts_as_npm_does(npm, text, command, checks):
    (found,) = _run(text, npm)
    assert (found.command, found.check) == (command, checks)


def test_a_script_package_json_does_not_have_is_left_out(npm):
    assert _commands(_run("npm run deploy", npm)) == [("left out", "package.json has no `deploy` script")]
    assert _run("npm run fix", npm) == [] and _run("yarn --frozen-lockfile", npm) == []


@pytest.mark.parametrize("text", ["yarn install", "yarn install --frozen-lockfile", "pnpm install --frozen-lockfile",
                                  "pnpm i", "yarn add -D eslint", "bun install", "pnpm audit", "yarn upgrade"])
def test_a_package_manager_s_own_command_is_dropped_without_a_word_like_npm_ci(npm, text):
    assert _run(text, npm) == [] and _run("npm ci", npm) == []


@pytest.fixture
def scripts(tmp_path):
    scan = Scan(tmp_path)
    test = [_raw("pytest {args:tests}", "test", "hatch", "default")]
    scan.scripts = {
        "hatch:default:test": test, "hatch:test": test,
        "hatch:lint:style": [_raw("ruff check {args:.}", "lint", "hatch", "lint")],
        "hatch:lint:typing": [_raw("mypy src", "type", "hatch", "lint")],
        "hatch:lint:all": [_raw("style", "lint", "hatch", "lint"), _raw("typing", "lint", "hatch", "lint")],
        "pdm:lint": [_raw("flake8 src", "lint", "pdm")], "pdm:all": [_raw("lint", None, "pdm"), _raw("pytest", "test", "pdm")],
    }
    return scan


@pytest.mark.parametrize(("text", "commands"), [
    ("hatch run test", ["pytest tests"]),
    ("hatch run lint:style", ["ruff check ."]),
    ("hatch run lint:all", ["ruff check .", "mypy src"]),  # scripts naming scripts of their environment
    ("hatch run pytest -q", ["pytest -q"]),  # no script of that name: the command itself
    ("hatch run nothing", []),
    ("pdm run lint", ["flake8 src"]),
    ("pdm run -v lint", ["flake8 src"]),
    ("pdm run all", ["flake8 src", "pytest"]),
    ("pdm run mypy src", ["mypy src"]),
])
def test_hatch_and_pdm_run_become_their_scripts(scripts, text, commands):
    assert _commands(_run(text, scripts)) == commands


def test_a_hatch_script_naming_another_finds_it_in_its_own_environment(scripts):
    assert _commands(_run("typing", scripts, dialect="hatch", group="lint")) == ["mypy src"]
    assert _commands(_run("test", scripts, dialect="hatch", group="lint")) == ["pytest tests"]  # else the default's
    assert _commands(_run("lint", scripts, dialect="pdm")) == ["flake8 src"]


# -- translate -------------------------------------------------------------------------------------------

def test_translate_keeps_each_command_once_at_its_first_origin_and_each_left_out_once(tmp_path):
    scan = Scan(tmp_path)
    first, second = Origin("tox.ini", 3, "tox env lint"), Origin(".github/workflows/ci.yml", 9, "workflow step")
    scan.entries = [Raw("flake8 src", first, "lint", "tox"), Raw("uv run flake8 src", second),
                    Raw("pytest | tee log", second), Raw("pytest | tee log", second), Raw("pytest | tee log", first)]
    found, skipped = translate(scan, uv=False)
    assert [(f.command, f.origin, f.written) for f in found] == [("flake8 src", first, "flake8 src")]
    assert [(s.written, s.origin) for s in skipped] == [("pytest | tee log", second), ("pytest | tee log", first)]


def test_translate_through_uv_only_with_the_uv_preset(tmp_path):
    scan = Scan(tmp_path)
    scan.entries = [Raw("uv run pytest", ORIGIN)]
    assert [f.command for f in translate(scan, uv=True)[0]] == ["uv run --no-sync pytest"]
    assert [f.command for f in translate(scan, uv=False)[0]] == ["pytest"]
