from runtime.manifests.tomlsrc import TomlSource

TEXT = '''# comment
[role]
name = "x"
use-cases = ["a", "b"]

[capabilities]
required = [
    "one::a",
    "two::b",
    "three::c",
]

[params."tools::bash-allowlist"]
rules = []

[[examples]]
tool = "Read"

[[examples]]
tool = "Write"
body = """
[fake]
name = 1
"""
expect = "deny"
'''


def test_keys_map_to_their_lines():
    src = TomlSource("f.toml", TEXT)
    assert src.line_of(("role", "name")) == 3
    assert src.line_of(("capabilities",)) == 6
    assert src.line_of(("params", "tools::bash-allowlist", "rules")) == 14
    assert src.line_of(("examples", 1, "tool")) == 20


def test_array_items_map_to_their_lines():
    src = TomlSource("f.toml", TEXT)
    assert src.line_of(("capabilities", "required", 0)) == 8
    assert src.line_of(("capabilities", "required", 2)) == 10


def test_multiline_strings_are_not_read_as_tables():
    src = TomlSource("f.toml", TEXT)
    assert src.line_of(("examples", 1, "expect")) == 25
    assert ("fake",) not in src._index


def test_unknown_locations_fall_back_to_the_deepest_known_parent():
    src = TomlSource("f.toml", TEXT)
    assert src.line_of(("role", "nope")) == 2
    assert src.line_of(("nothing",)) == 1
