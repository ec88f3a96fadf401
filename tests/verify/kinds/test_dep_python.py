"""dep_python: PEP 508 requirements written canonically, and the views of Python dependency files."""

from __future__ import annotations

import tomllib

import pytest

from runtime.verify.kinds.dep_python import pep503, poetry_lock, pyproject, requirement, requirements_txt, uv_lock


@pytest.mark.parametrize("name,normal", [
    ("Requests", "requests"), ("typing_extensions", "typing-extensions"), ("zope.interface", "zope-interface"),
    ("A__B--C..d", "a-b-c-d"), ("x", "x"),
])
def test_pep503_normalises_names(name, normal):
    assert pep503(name) == normal


@pytest.mark.parametrize("text,expected", [
    ("requests", ("requests", "")),
    ("requests>=2.31,<3", ("requests", "<3,>=2.31")),
    ("Requests < 3 , >= 2.31", ("requests", "<3,>=2.31")),
    ("Pydantic[Email, dotenv] >= 2.7", ("pydantic", "[dotenv,email]>=2.7")),
    ("pkg (>=1.0, <2)", ("pkg", "<2,>=1.0")),
    ("pkg @ https://example.org/a.whl", ("pkg", "@ https://example.org/a.whl")),
    ('tomli>=2; python_version < "3.11"', ("tomli", ">=2; python_version<'3.11'")),
    ("x ;  sys_platform  ==  'linux'", ("x", "; sys_platform=='linux'")),
    ("Foo.Bar_baz==1", ("foo-bar-baz", "==1")),
])
def test_requirement_is_canonical(text, expected):
    assert requirement(text) == expected


@pytest.mark.parametrize("a,b", [
    ("requests>=2.31,<3", "requests <3, >=2.31"),
    ("pydantic[email,dotenv]>=2", "Pydantic [ dotenv , email ] >= 2"),
    ('tomli; python_version < "3.11"', "tomli ;python_version<'3.11'"),
])
def test_requirement_formatting_does_not_matter(a, b):
    assert requirement(a) == requirement(b)


@pytest.mark.parametrize("a,b", [
    ("requests>=2.31", "requests>=2.32"),
    ("pydantic[email]", "pydantic"),
    ('tomli; python_version < "3.11"', 'tomli; python_version < "3.12"'),
])
def test_requirement_changes_show(a, b):
    assert requirement(a) != requirement(b)


@pytest.mark.parametrize("text", ["(weird", "foo[bar", "-e ."])
def test_a_requirement_not_understood_is_kept_whole_as_its_name(text):
    assert requirement(text) == (text, "")


# ---------------------------------------------------------------- pyproject


def test_pyproject_without_dependencies_is_empty():
    assert pyproject('[project]\nname = "x"\nversion = "1"\n') == {}


def test_pyproject_sections():
    view = pyproject('''
[project]
dependencies = ["a>=1"]
[project.optional-dependencies]
dev = ["b"]
[build-system]
requires = ["hatchling"]
[dependency-groups]
test = ["c==1", {include-group = "dev"}]
[tool.uv]
constraint-dependencies = ["d<2"]
override-dependencies = ["e==1"]
[tool.uv.sources]
My_Lib = { path = "../lib" }
''')
    assert view == {
        "project.dependencies `a`": ">=1",
        "project.optional-dependencies.dev `b`": "",
        "build-system.requires `hatchling`": "",
        "dependency-groups.test `c`": "==1",
        'dependency-groups.test `{"include-group":"dev"}`': "",
        "tool.uv.constraint-dependencies `d`": "<2",
        "tool.uv.override-dependencies `e`": "==1",
        "tool.uv.sources `my-lib`": '{"path":"../lib"}',
    }


def test_pyproject_the_same_name_twice_holds_both_specs():
    view = pyproject('[project]\ndependencies = ["a>=2; python_version>=\'3.12\'", "a<2; python_version<\'3.12\'"]\n')
    assert view == {"project.dependencies `a`": "<2; python_version<'3.12' | >=2; python_version>='3.12'"}


def test_pyproject_poetry_dependency_tables_and_groups():
    view = pyproject('''
[tool.poetry.dependencies]
Django = "^5"
[tool.poetry.dev-dependencies]
pytest = "^8"
[tool.poetry.group.docs.dependencies]
Sphinx = "*"
''')
    assert view == {
        "tool.poetry.dependencies `django`": "^5",
        "tool.poetry.dev-dependencies `pytest`": "^8",
        "tool.poetry.group.docs.dependencies `sphinx`": "*",
    }


@pytest.mark.parametrize("text,message", [
    ('[project]\ndependencies = "a"\n', "`project.dependencies` should be a list of requirements"),
    ('project = "x"\n', "`project` should be a table, not str"),
    ('[project]\noptional-dependencies = ["a"]\n', "`optional-dependencies` should be a table, not list"),
    ('[tool.uv]\ndev-dependencies = {a = "1"}\n', "`tool.uv.dev-dependencies` should be a list of requirements"),
])
def test_pyproject_of_the_wrong_shape_is_a_value_error_naming_the_key(text, message):
    with pytest.raises(ValueError) as exc:
        pyproject(text)
    assert str(exc.value) == message


def test_pyproject_that_is_not_toml_is_a_value_error():
    with pytest.raises(tomllib.TOMLDecodeError):
        pyproject("[project\n")
    assert issubclass(tomllib.TOMLDecodeError, ValueError)


# ---------------------------------------------------------------- requirements files


def test_requirements_options_are_entries_of_their_own():
    view = requirements_txt("-r base.txt\n--index-url https://pypi.org/simple\n-e .\n")
    assert view == {"option `-r base.txt`": "", "option `--index-url https://pypi.org/simple`": "", "option `-e .`": ""}


def test_requirements_join_continuations_and_sort_hashes():
    view = requirements_txt("requests==2 \\\n    --hash=sha256:bb \\\n    --hash=sha256:aa\n")
    assert view == {"requirement `requests`": "==2 --hash=sha256:aa --hash=sha256:bb"}


def test_requirements_drop_comments_but_not_a_hash_inside_a_word():
    view = requirements_txt("# heading\nfoo>=1  # why\nbar#egg\n\n   \n")
    assert view == {"requirement `foo`": ">=1", "requirement `bar#egg`": ""}


def test_requirements_with_windows_line_endings():
    assert requirements_txt("a==1 \\\r\n  --hash=sha256:x\r\nb\r\n") == {
        "requirement `a`": "==1 --hash=sha256:x", "requirement `b`": ""}


def test_requirements_empty_file_is_empty():
    assert requirements_txt("") == {}


# ---------------------------------------------------------------- lock files


def test_uv_lock_ignores_version_and_revision_and_normalises_names():
    view = uv_lock('version = 1\nrevision = 3\nrequires-python = ">=3.11"\n[[package]]\nname = "My_Pkg"\nversion = "1.0"\n')
    assert view == {"package `my-pkg@1.0`": "{}", "requires-python": ">=3.11"}


def test_poetry_lock_ignores_content_hash_lock_version_and_descriptions():
    text = ('[[package]]\nname = "click"\nversion = "8.1.7"\ndescription = "CLI"\noptional = false\n'
            '[metadata]\nlock-version = "2.0"\ncontent-hash = "aaaa"\npython-versions = "^3.11"\n')
    assert poetry_lock(text) == {
        "package `click@8.1.7`": '{"optional":false}',
        "metadata `python-versions`": "^3.11",
    }
