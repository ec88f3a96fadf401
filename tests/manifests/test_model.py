"""The base manifest model: kebab-case keys, strict types, unknown keys refused, one-line errors with a line."""

from __future__ import annotations

import tomllib

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from runtime.errors import ManifestError
from runtime.manifests.model import parse_model
from runtime.manifests.tomlsrc import TomlSource
from runtime.model import Model, describe, did_you_mean, key_names


class Inner(Model):
    max_lines: int
    label: str = "x"


class Leaf(Model):
    depth: int


class Doc(Model):
    name: str
    inner: Inner
    items: list[Inner] = []
    maybe: Leaf | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if v == "bad":
            raise ValueError("name must not be bad")
        return v


def parse(text: str) -> Doc:
    return parse_model(Doc, tomllib.loads(text), TomlSource("d.toml", text))


def error(text: str) -> ManifestError:
    with pytest.raises(ManifestError) as exc:
        parse(text)
    return exc.value


def test_kebab_case_keys_fill_snake_case_fields():
    doc = parse('name = "a"\n[inner]\nmax-lines = 3\n')
    assert doc.inner == Inner.model_validate({"max-lines": 3})
    assert doc.inner.max_lines == 3 and doc.items == []


def test_models_are_frozen():
    doc = parse('name = "a"\n[inner]\nmax-lines = 3\n')
    with pytest.raises(ValidationError):
        doc.name = "b"  # type: ignore[misc]


@pytest.mark.parametrize("text,line,message", [
    ('name = "a"\n[inner]\nmax-line = 1\n', 3, "unknown key `max-line` in `inner` (did you mean `max-lines`?)"),
    ('name = "a"\n[inner]\nmax_lines = 1\n', 3, "unknown key `max_lines` in `inner` (did you mean `max-lines`?)"),
    ('name = "a"\nzzz = 1\n[inner]\nmax-lines = 1\n', 2, "unknown key `zzz`"),
    ('[inner]\nmax-lines = 1\n', 1, "missing required key `name`"),
    ('name = "a"\n[inner]\nlabel = "y"\n', 2, "missing required key `max-lines` in `inner`"),
    ('name = "a"\n[inner]\nmax-lines = "1"\n', 3, "`inner.max-lines`: Input should be a valid integer"),
    ('name = "bad"\n[inner]\nmax-lines = 1\n', 1, "`name`: name must not be bad"),
    ('name = "a"\n[inner]\nmax-lines = 1\n\n[[items]]\nmax-lines = 1\n[[items]]\nmax-lines = "2"\n', 8,
     "`items[1].max-lines`: Input should be a valid integer"),
])
def test_the_first_error_is_one_line_with_its_line_number(text, line, message):
    err = error(text)
    assert (err.path, err.line, err.message) == ("d.toml", line, message)
    assert str(err) == f"d.toml:{line}: {message}"


def test_a_missing_key_beside_an_unknown_one_is_reported_as_the_misspelling():
    err = error('nmae = "a"\n[inner]\nmax-lines = 1\n')
    assert err.message == "unknown key `nmae` (did you mean `name`?)"
    assert err.line == 1


def test_strict_types_refuse_coercion():
    assert "Input should be a valid integer" in error('name = "a"\n[inner]\nmax-lines = 1.0\n').message
    assert "`name`" in error('name = 1\n[inner]\nmax-lines = 1\n').message


def test_a_prefix_is_added_to_the_reported_path():
    text = 'name = "a"\n[inner]\nmax-lines = "x"\n'
    with pytest.raises(ManifestError) as exc:
        parse_model(Inner, tomllib.loads(text)["inner"], TomlSource("d.toml", text), prefix=("inner",))
    assert exc.value.message == "`inner.max-lines`: Input should be a valid integer"
    assert exc.value.line == 3


# ---------------------------------------------------------------- describe


@pytest.mark.parametrize("err,sentence", [
    ({"loc": ("a", "b"), "type": "extra_forbidden", "msg": "x"}, "unknown key `b` in `a`"),
    ({"loc": ("b",), "type": "extra_forbidden", "msg": "x"}, "unknown key `b`"),
    ({"loc": ("items", 2, "k"), "type": "missing", "msg": "x"}, "missing required key `k` in `items[2]`"),
    ({"loc": ("a", 0, "b"), "type": "string_type", "msg": "Input should be a valid string"},
     "`a[0].b`: Input should be a valid string"),
    ({"loc": ("a", "function-after[_check(), str]", "b"), "type": "value_error", "msg": "Value error, too long"},
     "`a.b`: too long"),
    ({"loc": (), "type": "model_type", "msg": "Input should be a table"}, "Input should be a table"),
])
def test_describe(err, sentence):
    assert describe(err) == sentence


# ---------------------------------------------------------------- key_names, did_you_mean


def test_key_names_collect_aliases_of_nested_models_through_lists_and_unions():
    assert key_names(Doc) == {"name", "inner", "items", "maybe", "max-lines", "label", "depth"}


def test_key_names_of_a_plain_model_use_field_names():
    class Plain(BaseModel):
        some_field: int

    assert key_names(Plain) == {"some_field"}


@pytest.mark.parametrize("word,suggestion", [
    ("max-line", " (did you mean `max-lines`?)"),
    ("nmae", " (did you mean `name`?)"),
    ("zzz", ""),
    ("", ""),
])
def test_did_you_mean(word, suggestion):
    assert did_you_mean(word, {"max-lines", "name", "label"}) == suggestion
