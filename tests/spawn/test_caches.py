"""The toolchain's build caches (`runtime.sandbox.caches`, `runtime.spawn.caches`), with the real go and cargo in
the real sandbox: filled from the base by a build that runs none of the project's code, sealed read-only, warm
in every later sandbox, and never changed by what a run writes to its own layer."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import anyio
import pytest

from runtime.manifests.toolchain import PRESETS, Toolchain
from runtime.sandbox.caches import store
from runtime.sandbox.caches.cargo import CARGO, Unsafe
from runtime.sandbox.caches.kind import CacheSlot, FillSite
from runtime.sandbox.identity import agent_user
from runtime.sandbox.toolchain import ToolchainMounts, toolchain_mounts
from runtime.spawn.caches import warm
from runtime.verify.commands import tree_runner
from runtime.workspace.git import Git
from tests.conftest import require
from tests.support import git, have_bwrap

GO_MOD = "module example.com/words\n\ngo 1.18\n"
WORDS = """package words

import (
	"fmt"
	"net"
	"strings"
)

// Shout says a word louder.
func Shout(w string) string { return fmt.Sprintf("%s!", strings.ToUpper(w)) }

// Local says whether an address is the loopback's.
func Local(a string) bool { return net.ParseIP(a).IsLoopback() }
"""
WORDS_TEST = """package words

import "testing"

func TestShout(t *testing.T) {
	if Shout("hi") != "HI!" {
		t.Fatal(Shout("hi"))
	}
}
"""


def _preset(name: str) -> Toolchain:
    preset = PRESETS[name]
    return Toolchain(programs=preset.programs, env=preset.env, probes=(preset.probe,) if preset.probe else (), source="t")


def _repo(tmp_path: Path, files: dict[str, str]) -> tuple[Git, str]:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return Git(root), git(root, "rev-parse", "HEAD")


def _run(g: Git, tree: str, mounts: ToolchainMounts | None, command: str, home: Path) -> tuple[int, str]:
    home.mkdir(exist_ok=True)

    async def go() -> tuple[int, str]:
        with tree_runner(g, tree, home, True, toolchain=mounts) as run:
            return await run(command, 300)

    return anyio.run(go)


def _digests(folder: Path) -> dict[str, str]:
    out = {}
    for here, _, files in os.walk(folder):
        for name in files:
            path = Path(here) / name
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def go_repo(tmp_path):
    have_bwrap()
    require(shutil.which("go") is not None, "go is not installed")
    require(agent_user() is not None, "a shared cache is used only by a root orchestrator (its agents run as another uid)")
    g, base = _repo(tmp_path, {"go.mod": GO_MOD, "words.go": WORDS, "words_test.go": WORDS_TEST})
    mounts = toolchain_mounts(_preset("go"), g.root, tmp_path / "state" / "caches")
    assert [s.kind for s in mounts.caches] == ["go"]
    return g, base, mounts


def test_a_go_cache_is_filled_from_the_base_sealed_and_warm_in_the_next_sandbox(go_repo, tmp_path):
    g, base, mounts = go_repo
    slot = mounts.caches[0]
    # `net` is built with cgo: its C parts are compiled once, by the first build on a cold cache
    cold = _run(g, base, ToolchainMounts(**{**mounts.__dict__, "caches": ()}), "go test -x ./... 2>&1", tmp_path / "h0")

    anyio.run(warm, g, base, mounts)

    sealed = store.newest(slot.folder)
    assert sealed is not None and sealed.name.endswith(base[:12])
    assert (slot.folder / "bases" / base).read_text().startswith("sealed: `go test -count=1 -run '^$' -exec /bin/true")
    for here, dirs, files in os.walk(sealed):
        for name in dirs + files:
            st = os.lstat(Path(here) / name)
            assert (st.st_uid, st.st_gid) == (0, 0)
            assert stat.S_IMODE(st.st_mode) == (0o555 if stat.S_ISDIR(st.st_mode) else 0o444), name
    # the next sandbox compiles what the fill compiled no more: the standard library's C parts come from the cache
    warm_run = _run(g, base, mounts, "go test -x ./... 2>&1", tmp_path / "h1")
    assert cold[0] == 0 and warm_run[0] == 0, (cold, warm_run)
    assert cold[1].count("gcc -I") >= 5 and warm_run[1].count("gcc -I") == 0, warm_run[1][-2000:]
    assert _run(g, base, mounts, "go test ./...", tmp_path / "h2")[0] == 0
    # a filled base is not filled again, and no layer or fill is left behind
    anyio.run(warm, g, base, mounts)
    assert len(os.listdir(slot.folder / "sealed")) == 1
    store.AHEAD.settle()  # the layers removed in their threads, and the one made ahead
    assert os.listdir(slot.folder / "layers") == [] and os.listdir(slot.folder / "fills") == []


# What an agent's command does to the cache it is shown: every file written in place, renamed over, replaced and
# made writable where it can. Prints how many of each it managed.
POISON = r"""
cd "$GOCACHE"
inplace=0; replaced=0; chmodded=0
for f in $(find . -type f); do
  (echo poison >> "$f") 2>/dev/null && inplace=$((inplace+1))
  chmod 666 "$f" 2>/dev/null && chmodded=$((chmodded+1))
  (rm -f "$f" && echo poison > "$f") 2>/dev/null && replaced=$((replaced+1))
done
echo "inplace=$inplace chmod=$chmodded replaced=$replaced files=$(find . -type f | wc -l)"
"""


def test_what_one_run_writes_to_its_cache_is_not_seen_by_the_next(go_repo, tmp_path):
    g, base, mounts = go_repo
    anyio.run(warm, g, base, mounts)
    sealed = store.newest(mounts.caches[0].folder)
    assert sealed is not None
    before = _digests(sealed)
    assert before

    code, out = _run(g, base, mounts, POISON, tmp_path / "h1")
    assert code == 0, out
    counts = dict(pair.split("=") for pair in out.split())
    # the linked entries are root's and read-only: the run can neither write them nor make them writable;
    # it may replace every one in its own layer
    assert int(counts["replaced"]) == int(counts["files"]) == len(before)
    assert int(counts["chmod"]) <= 2 and int(counts["inplace"]) <= 2, out  # the copied top files are its own

    assert _digests(sealed) == before  # the snapshot on the host is as it was sealed
    # the next sandbox (a verify) sees the sealed bytes, and builds and tests as before
    code, shown = _run(g, base, mounts, 'cd "$GOCACHE" && find . -type f -exec sha256sum {} +', tmp_path / "h2")
    assert code == 0
    seen = {line.split(None, 1)[1].removeprefix("./"): line.split()[0] for line in shown.splitlines()}
    assert seen == before
    assert _run(g, base, mounts, "go test -count=1 ./...", tmp_path / "h3")[0] == 0


def test_without_an_agent_user_no_cache_is_shared(tmp_path, monkeypatch):
    require(shutil.which("go") is not None, "go is not installed")
    monkeypatch.setattr("runtime.sandbox.toolchain.agent_user", lambda: None)
    mounts = toolchain_mounts(_preset("go"), tmp_path, tmp_path / "caches")
    assert mounts.caches == ()  # the run would own the snapshot's files, and could write them through its links


def test_a_repositorys_own_cache_variable_is_its_own(tmp_path):
    require(shutil.which("go") is not None, "go is not installed")
    require(agent_user() is not None, "needs a root orchestrator")
    toolchain = _preset("go")
    toolchain = Toolchain(programs=toolchain.programs, env=(*toolchain.env, ("GOCACHE", "/home/me/go-cache")),
                          probes=toolchain.probes, source="t")
    assert toolchain_mounts(toolchain, tmp_path, tmp_path / "caches").caches == ()


# A registry crate, from a directory source in cargo's home (as a vendored or offline mirror gives it).
LEFTPAD = 'pub fn pad(s: &str, n: usize) -> String { format!("{:>width$}", s, width = n) }\n'
APP_TOML = '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nleftpad = "0.1"\n'
APP_LIB = 'pub fn p() -> String { leftpad::pad("a", 3) }\n\n#[test]\nfn pads() { assert_eq!(p(), "  a"); }\n'


@pytest.fixture
def cargo_repo(tmp_path, monkeypatch):
    have_bwrap()
    require(shutil.which("cargo") is not None, "cargo is not installed")
    require(agent_user() is not None, "needs a root orchestrator")
    home = tmp_path / "cargo-home"
    crate = home / "vendor" / "leftpad-0.1.0"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "leftpad"\nversion = "0.1.0"\nedition = "2021"\n')
    (crate / "src" / "lib.rs").write_text(LEFTPAD)
    (crate / ".cargo-checksum.json").write_text('{"files":{},"package":null}')
    (home / "config.toml").write_text(f'[source.crates-io]\nreplace-with = "vendored"\n[source.vendored]\n'
                                      f'directory = "{home / "vendor"}"\n')
    monkeypatch.setenv("CARGO_HOME", str(home))
    if "RUSTUP_HOME" not in os.environ and (Path.home() / ".rustup").is_dir():
        monkeypatch.setenv("RUSTUP_HOME", str(Path.home() / ".rustup"))
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text(APP_TOML)
    (root / "src" / "lib.rs").write_text(APP_LIB)
    subprocess.run(["cargo", "generate-lockfile", "--offline"], cwd=root, check=True, capture_output=True)
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    g = Git(root)
    mounts = toolchain_mounts(_preset("rust"), root, tmp_path / "state" / "caches")
    assert [s.kind for s in mounts.caches] == ["cargo"]
    return g, git(root, "rev-parse", "HEAD"), mounts


def test_a_cargo_cache_shares_the_registrys_crates_and_never_the_workspaces(cargo_repo, tmp_path):
    g, base, mounts = cargo_repo
    anyio.run(warm, g, base, mounts)
    sealed = store.newest(mounts.caches[0].folder)
    assert sealed is not None, (mounts.caches[0].folder / "bases" / base).read_text()
    names = {p.name for p in sealed.rglob("*")}
    assert any(n.startswith("libleftpad-") and n.endswith(".rlib") for n in names), sorted(names)
    assert not any("app" in n for n in names), sorted(names)  # the workspace's units build in each run
    assert not (sealed / "debug" / "incremental").exists()

    code, out = _run(g, base, mounts, "cargo test 2>&1", tmp_path / "h1")
    assert code == 0, out
    assert "Compiling app" in out and "Compiling leftpad" not in out, out
    assert "test pads ... ok" in out


def test_a_crate_built_from_older_files_is_never_taken_for_the_work(cargo_repo, tmp_path):
    # cargo judges the workspace by modification times, and a copy of the agent's work keeps the times it set:
    # were the base's build of the crate shared, work whose files claim to be older would be tested as the base.
    g, base, mounts = cargo_repo
    anyio.run(warm, g, base, mounts)
    root = g.root
    (root / "src" / "lib.rs").write_text(APP_LIB.replace('"  a"', '"   a"'))  # the work: a test that fails
    git(root, "commit", "-qam", "work")
    # every file of the tree backdated, as an agent can before verify copies its work
    code, out = _run(g, git(root, "rev-parse", "HEAD"), mounts,
                     "find . -path ./.git -prune -o -exec touch -h -d 2001-01-01 {} + ; cargo test 2>&1", tmp_path / "h1")
    assert code != 0 and "Compiling app" in out and "test pads ... FAILED" in out, out


def test_a_checkout_with_a_cargo_configuration_of_its_own_is_not_filled(tmp_path):
    (tmp_path / ".cargo").mkdir()
    (tmp_path / ".cargo" / "config.toml").write_text('[build]\nrustc-wrapper = "./steal.sh"\n')
    with pytest.raises(Unsafe):
        CARGO.prepare(tmp_path)


def test_the_cargo_fill_builds_over_empty_programs(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "build.rs").write_text('fn main() { std::fs::write("/tmp/x", "y").unwrap(); }\n')
    (tmp_path / "src" / "lib.rs").write_text("pub fn f() {}\n")
    CARGO.prepare(tmp_path)
    assert (tmp_path / "build.rs").read_text() == (tmp_path / "src" / "lib.rs").read_text() == "fn main() {}\n"


def test_a_unit_whose_sources_the_run_could_change_is_pruned(tmp_path):
    deps = tmp_path / "target" / "debug" / "deps"
    prints = tmp_path / "target" / "debug" / ".fingerprint"
    for unit, source in (("dep-aaaa", "/opt/cargo/registry/src/dep/lib.rs"), ("mine-bbbb", "/work/tree/src/lib.rs"),
                         ("gen-cccc", "/tmp/cargo-target/debug/build/gen-dddd/out/gen.rs"),
                         ("elsewhere-eeee", "/tmp/other/lib.rs"), ("relative-ffff", "src/lib.rs")):
        (prints / unit).mkdir(parents=True)
        deps.mkdir(parents=True, exist_ok=True)
        (deps / f"{unit}.d").write_text(f"/tmp/cargo-target/debug/deps/{unit}.d: {source}\n\n{source}:\n")
        (deps / f"lib{unit}.rlib").write_bytes(b"x")
    (tmp_path / "target" / "debug" / "incremental").mkdir()
    CARGO.prune(tmp_path / "target", FillSite(Path("/work/tree"), (Path("/tmp/cargo-target"),)))
    assert sorted(p.name for p in prints.iterdir()) == ["dep-aaaa", "gen-cccc"]
    assert sorted(p.name for p in deps.iterdir()) == ["dep-aaaa.d", "gen-cccc.d", "libdep-aaaa.rlib", "libgen-cccc.rlib"]
    assert not (tmp_path / "target" / "debug" / "incremental").exists()


def test_a_seal_follows_no_link_the_fill_left(tmp_path):
    # The fill's folder was written by a sandbox: a link in it to a folder of the host shaped like cargo's
    # target must not lead the kind's prune (which removes, as root) out of it.
    outside = tmp_path / "host"
    (outside / ".fingerprint" / "victim-0000").mkdir(parents=True)
    (outside / "keep.txt").write_text("the host's")
    folder = tmp_path / "caches" / "cargo"
    fill = folder / "fills" / "fill-x"
    (fill / "debug" / "deps").mkdir(parents=True)
    (fill / "debug" / "deps" / "libdep-aaaa.rlib").write_bytes(b"x")
    (fill / "evil").symlink_to(outside)
    slot = CacheSlot("cargo", folder, Path("/tmp/cargo-target"))
    sealed = store.seal(slot, CARGO, fill, "f" * 40, FillSite(tmp_path / "tree", ()), "sealed")
    assert (outside / "keep.txt").read_text() == "the host's" and (outside / ".fingerprint" / "victim-0000").is_dir()
    assert not (sealed / "evil").exists() and not (sealed / "evil").is_symlink()
    assert (folder / "bases" / ("f" * 40)).read_text() == "sealed\n"
