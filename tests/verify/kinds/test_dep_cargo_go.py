"""dep_cargo_go: the views of Cargo.toml, Cargo.lock, go.mod and go.sum."""

from __future__ import annotations

import pytest

from runtime.verify.kinds.dep_cargo_go import cargo_lock, cargo_toml, go_mod, go_sum


def test_cargo_toml_reads_every_dependency_table():
    view = cargo_toml('''
[package]
name = "tool"
version = "0.1.0"

[dependencies]
serde = { version = "1", features = ["derive"] }

[dev-dependencies]
proptest = "1"

[build_dependencies]
cc = "1"

[target.'cfg(unix)'.dependencies]
libc = "0.2"

[target.'cfg(unix)'.lints]
x = 1

[workspace.dependencies]
tokio = "1.38"

[patch.crates-io]
serde = { path = "../serde" }

[replace]
"foo:0.1.0" = { git = "https://example.org/foo" }
''')
    assert view == {
        "dependencies `serde`": '{"features":["derive"],"version":"1"}',
        "dev-dependencies `proptest`": "1",
        "build_dependencies `cc`": "1",
        "target.cfg(unix).dependencies `libc`": "0.2",
        "workspace.dependencies `tokio`": "1.38",
        "patch.crates-io `serde`": '{"path":"../serde"}',
        "replace `foo:0.1.0`": '{"git":"https://example.org/foo"}',
    }


def test_cargo_toml_ignores_the_package_table():
    assert cargo_toml('[package]\nname = "a"\nversion = "1.0.0"\n') == {}


@pytest.mark.parametrize("text,message", [
    ('dependencies = "serde"\n', "`dependencies` should be a table, not str"),
    ('target = { unix = "x" }\n', "`target.unix` should be a table"),
    ('workspace = 1\n', "`workspace` should be a table, not int"),
])
def test_cargo_toml_of_the_wrong_shape_is_a_value_error(text, message):
    with pytest.raises(ValueError) as exc:
        cargo_toml(text)
    assert str(exc.value) == message


def test_cargo_lock_ignores_the_lock_version():
    text = '[[package]]\nname = "anyhow"\nversion = "1.0.86"\nchecksum = "b3"\n'
    assert cargo_lock("version = 3\n" + text) == cargo_lock("version = 4\n" + text) == {
        "package `anyhow@1.0.86`": '{"checksum":"b3"}'}


# ---------------------------------------------------------------- go.mod


def test_go_mod_directives_blocks_and_comments():
    view = go_mod('''
module example.com/app // the module

go 1.22
toolchain go1.22.5

require (
\tgithub.com/a/b v1.0.0
\tgolang.org/x/text v0.16.0 // indirect
)
require github.com/c/d v2.0.0

replace golang.org/x/net v0.1.0 => ../net
exclude golang.org/x/crypto v0.0.1
retract (
\tv1.0.1
)
''')
    assert view == {
        "module": "example.com/app",
        "go": "1.22",
        "toolchain": "go1.22.5",
        "require `github.com/a/b`": "v1.0.0",
        "require `golang.org/x/text`": "v0.16.0",
        "require `github.com/c/d`": "v2.0.0",
        "replace `golang.org/x/net v0.1.0`": "../net",
        "exclude `golang.org/x/crypto v0.0.1`": "",
        "retract `v1.0.1`": "",
    }


def test_go_mod_quoted_paths_are_unquoted():
    assert go_mod('module "example.com/app"\nrequire `a/b` v1\n') == {"module": "example.com/app", "require `a/b`": "v1"}


def test_go_mod_indirect_markers_do_not_matter():
    assert go_mod("require a/b v1.0.0 // indirect\n") == go_mod("require a/b v1.0.0\n")


@pytest.mark.parametrize("text,message", [
    ("require (\n\ta/b v1\n", "the `require (` block is never closed"),
    ("module x\ngo\n", "line 2: `go` needs arguments"),
    ("module x\n\nreplace a/b ../b\n", "line 3: `replace` needs `=>`"),
    ("module x\nreplace (\n\n\ta/b v1\n)\n", "line 4: `replace` needs `=>`"),
])
def test_go_mod_errors_name_the_line(text, message):
    with pytest.raises(ValueError) as exc:
        go_mod(text)
    assert str(exc.value) == message


# ---------------------------------------------------------------- go.sum


def test_go_sum_one_entry_per_module_version():
    text = "a/b v1.0.0 h1:AAA=\na/b v1.0.0/go.mod h1:BBB=\n\n"
    assert go_sum(text) == {"sum `a/b v1.0.0`": "h1:AAA=", "sum `a/b v1.0.0/go.mod`": "h1:BBB="}


def test_go_sum_a_line_of_the_wrong_shape_is_a_value_error_naming_it():
    with pytest.raises(ValueError) as exc:
        go_sum("a/b v1 h1:x\n\na/b v2\n")
    assert str(exc.value) == "line 3 is not `module version hash`"
