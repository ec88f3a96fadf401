"""The gate's models of bash, GNU xargs, GNU find and cp, held against the real programs.

Each test runs the real binary in a temporary folder and checks that what it
did is what the gate's reading says it does: the word xargs runs, where find's
`-exec` ends, which folders the commands of a list run in, what a `..` names,
which names `cp`/`mv` write. Fast (no sandbox): the programs only ever touch the
temporary folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.gate.kinds.bash_allowlist import into_folder
from runtime.gate.paths import PathError, resolve
from runtime.gate.shell import ShellDeny, analyze
from runtime.gate.wrappers import unwrap
from runtime.lang.shell_types import Word
from tests.conftest import require

PROBES = ("first", "second", "third")


def _need(*programs: str) -> None:
    for program in programs:
        require(shutil.which(program) is not None, f"`{program}` is not installed")


@pytest.fixture
def probes(tmp_path) -> dict[str, str]:
    """A PATH whose `first`, `second` and `third` log their name and arguments, a line per run."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in PROBES:
        script = folder / name
        script.write_text(f'#!/bin/sh\n{{ printf "%s\\037" {name} "$@"; echo; }} >> "$PROBE_LOG"\n')
        script.chmod(0o755)
    log = tmp_path / "probe.log"
    return {"PATH": f"{folder}:/usr/bin:/bin", "PROBE_LOG": str(log), "HOME": str(tmp_path), "LANG": "C"}


def _runs(env: dict[str, str]) -> list[list[str]]:
    """Each run of a probe: its name and arguments."""
    log = Path(env["PROBE_LOG"])
    if not log.exists():
        return []
    runs = [line.split("\037")[:-1] for line in log.read_text().splitlines()]
    log.unlink()
    return runs


# -- GNU xargs ---------------------------------------------------------------------------

XARGS_OPTIONS = [
    [], ["-i"], ["-e"], ["-l"], ["-I", "X"], ["-IX"], ["--replace"], ["--replace=X"], ["--eof"], ["--eof=_"],
    ["--max-lines"], ["--max-lines=1"], ["-L", "1"], ["-n", "1"], ["-n1"], ["-0"], ["-r"], ["-t"], ["-x"],
    ["-d", "x"], ["-E", "_"], ["-e_"], ["-l1"], ["-i{}"], ["-P", "1"], ["-s", "4096"], ["-0r"], ["-rn1"],
    ["--null"], ["--verbose"], ["--no-run-if-empty"], ["--max-args", "1"], ["--delimiter=x"], ["-e", "-i"],
    ["--", ], ["-r", "--"],
]


@pytest.mark.parametrize("options", XARGS_OPTIONS, ids=lambda o: " ".join(o) or "none")
def test_xargs_runs_the_word_the_gate_reads_as_its_command(options, probes, tmp_path):
    _need("xargs")
    words = [*options, *PROBES]
    inner = unwrap("xargs", [Word(w) for w in words])
    assert inner is not None and inner.open_args
    judged = [w.value for w in inner.commands[0]]
    subprocess.run(["xargs", *words], input="item\n", env=probes, cwd=tmp_path, capture_output=True, text=True,
                   timeout=10)
    runs = _runs(probes)
    assert runs, f"xargs {' '.join(words)} ran nothing"
    ran = runs[0]
    assert ran[0] == judged[0], f"xargs ran `{ran[0]}`, the gate judged `{judged[0]}`"
    # Every literal word the gate judged reaches the command, in order (the input adds more, or replaces `X`/`{}`).
    literal = [w for w in judged[1:] if w not in ("X", "{}")]
    assert [w for w in ran[1:] if w in literal] == literal


def test_xargs_options_the_gate_cannot_read_are_refused():
    for words in (["--repl", "first"], ["-Z", "first"], ["--eof", "_", "first"][:1] + ["--bogus"], ["-I"], ["-I", ""]):
        with pytest.raises(ShellDeny):
            unwrap("xargs", [Word(w) for w in words])


def test_xargs_process_slot_var_sets_a_variable_in_the_command(probes, tmp_path):
    _need("xargs")
    inner = unwrap("xargs", [Word(w) for w in ["--process-slot-var=SLOT", "env"]])
    assert inner is not None and [n for n, _ in inner.assigns] == ["SLOT"]
    out = subprocess.run(["xargs", "--process-slot-var=SLOT", "env"], input="", env=probes, capture_output=True,
                         text=True, timeout=10).stdout
    assert "SLOT=0" in out.splitlines()


# -- GNU find -exec ------------------------------------------------------------------------

FIND_ACTIONS = [
    ["-exec", "first", "{}", "+"],
    ["-exec", "first", "+", "second", "{}", "+"],
    ["-exec", "first", "+", ";"],
    ["-exec", "first", "{}", ";", "-exec", "second", "+", "{}", "+"],
    ["-exec", "first", "x{}", "+", ";"],
    ["-ok", "first", "{}", "+", ";"],
    ["-exec", "first", "{}", "+", "-exec", "second", "{}", ";"],
]


@pytest.mark.parametrize("action", FIND_ACTIONS, ids=lambda a: " ".join(a))
def test_find_exec_ends_where_findutils_ends_it(action, probes, tmp_path):
    _need("find")
    (tmp_path / "d").mkdir()
    words = ["d", "-maxdepth", "0", *action]
    try:
        inner = unwrap("find", [Word(w) for w in words])
    except ShellDeny:
        return  # refused (`x{}` is replaced inside the word): nothing runs
    proc = subprocess.run(["find", *words], input="y\n", env=probes, cwd=tmp_path, capture_output=True, text=True,
                          timeout=10)
    judged = [[w.value for w in cmd] for cmd in inner.commands]
    # Each command find ran is one the gate judged, with `{}` standing for the found path.
    runs = _runs(probes)
    assert runs, proc.stderr
    for run in runs:
        assert [("{}" if w == "d" else w) for w in run] in judged, (run, judged)


# -- bash: options, named descriptors, and the folders of a list ----------------------------------


@pytest.mark.parametrize("option", ["errexit", "nounset", "xtrace", "verbose", "pipefail", "noclobber", "noglob", "noexec"])
def test_the_shell_options_allowed_leave_assignment_words_as_arguments(option, tmp_path):
    """`bash -o keyword` would make `A=1` an assignment; the options the gate allows never do."""
    _need("bash")
    analyze(f"bash -o {option} -c 'echo A=1'", str(tmp_path))
    out = subprocess.run(["bash", "-o", option, "-c", "echo A=1"], capture_output=True, text=True, timeout=10).stdout
    assert out in ("A=1\n", "")  # noexec runs nothing


def test_keyword_turns_arguments_into_variables_and_is_refused(tmp_path):
    _need("bash")
    out = subprocess.run(["bash", "-o", "keyword", "-c", "env A=1 | grep -c '^A=1$'; echo B=2"],
                         capture_output=True, text=True, timeout=10).stdout
    assert out.splitlines() == ["1", ""]  # `echo B=2` printed an empty line: B=2 went to the environment
    with pytest.raises(ShellDeny, match="only options that make the shell stricter"):
        analyze("bash -o keyword -c 'echo B=2'", str(tmp_path))


@pytest.mark.parametrize("redirect", [">", "<", ">>", "<>", ">&"])
def test_a_named_descriptor_sets_a_variable_and_is_refused(redirect, tmp_path):
    _need("bash")
    target = "2" if redirect == ">&" else "/dev/null"
    out = subprocess.run(["bash", "-c", f'true {{PATH}}{redirect}{target}; printf %s "$PATH"'],
                         capture_output=True, text=True, timeout=10).stdout
    assert out.rstrip().isdigit()  # PATH now holds a descriptor number
    with pytest.raises(ShellDeny):  # `<>` there does not even parse
        analyze(f"echo x {{PATH}}{redirect}{target}; ls", str(tmp_path))
    if redirect != "<>":
        analyze(f"echo x {{PATH}} {redirect}{target}", str(tmp_path))  # a word, then a redirection: allowed


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = Path(os.path.realpath(tmp_path_factory.mktemp("tree")))
    for folder in ("a/b/c", "d", "e/f"):
        (root / folder).mkdir(parents=True)
    (root / "file").write_text("x")
    os.symlink("a/b/c", root / "link")  # benign, inside: `link/..` is `.` lexically, `a/b` physically
    os.symlink("e/f", root / "elink")
    return root


CD = ["a", "a/b", "d", "file", "missing", "link", "elink", "a/b/c", "..", "a/..", "link/..", "-P link", "e/f/..",
      "a/b/../..", "/"]
JOIN = ["; ", " && ", " || ", " & ", "\n"]


@st.composite
def _lists(draw) -> str:
    """Commands `pN` between `cd`s, joined every way bash joins them; each pN records where it ran."""
    parts, n = [], 0
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 5))
        n += 1
        probe = f"p{n}"
        if kind == 0:
            part = f"cd {draw(st.sampled_from(CD))}"
        elif kind == 1:
            part = f"{{ cd {draw(st.sampled_from(CD))}; {probe}; }}"
        elif kind == 2:
            part = f"( cd {draw(st.sampled_from(CD))} && {probe} )"
        elif kind == 3:
            part = f"! cd {draw(st.sampled_from(CD))}"
        elif kind == 4:
            part = f"cd {draw(st.sampled_from(CD))} | {probe}"
        else:
            part = probe
        parts.append(part)
        parts.append(draw(st.sampled_from(JOIN)))
    n += 1
    return "".join(parts) + f"p{n}"


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(_lists())
def test_every_command_of_a_list_runs_in_a_folder_the_gate_checked(tree, command):
    """bash itself runs the list; each probe logs the folder it ran in, which must be one the gate judged it in."""
    require(shutil.which("bash") is not None, "`bash` is not installed")
    try:
        script = analyze(command, str(tree))
    except ShellDeny:
        return  # refused: nothing runs
    judged = {c.name: {os.path.realpath(f) for f in c.cwds} for c in script.commands}
    log = tree / ".log"
    probes = "; ".join(f'{c}() {{ /bin/pwd -P >> {log}.{c}; }}' for c in judged)
    subprocess.run(["bash", "-c", f"{probes}\n{command}\nwait"], cwd=tree, capture_output=True, timeout=10)
    for name, folders in judged.items():
        ran = tree / f".log.{name}"
        if ran.exists():
            seen = set(ran.read_text().split())
            ran.unlink()
            assert seen <= folders, f"`{command}`: {name} ran in {seen - folders}, the gate judged {folders}"


def test_cd_into_a_file_fails_and_what_follows_a_semicolon_runs_where_the_shell_was(tree):
    script = analyze("cd file && x; y", str(tree))
    cwds = {c.name: set(c.cwds) for c in script.commands}
    assert cwds["x"] == {f"{tree}/file"} and cwds["y"] == {str(tree), f"{tree}/file"}


# -- paths: `..` ------------------------------------------------------------------------------------

PATH_PARTS = ["a", "b", "c", "..", ".", "link", "elink", "missing", "file", "d", "e", "f"]


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(PATH_PARTS), min_size=1, max_size=6))
def test_a_path_the_gate_resolves_names_one_file_lexically_and_physically(tree, parts):
    """Whatever the gate accepts, the kernel (realpath), Python and Node (lexical) read alike."""
    path = "/".join(parts)
    try:
        resolved = resolve(path, str(tree))
    except PathError:
        assert ".." in parts  # only a `..` after a symlink or a missing name is refused
        return
    physical = os.path.realpath(os.path.join(tree, path))
    lexical = os.path.realpath(os.path.normpath(os.path.join(tree, path)))
    assert resolved == physical == lexical, (path, resolved, physical, lexical)


def test_mkdir_p_creates_what_a_dotdot_leaves(tmp_path):
    """Why a `..` after a missing name is refused: mkdir -p makes it."""
    _need("mkdir")
    subprocess.run(["mkdir", "-p", "git/index.lock/../../x"], cwd=tmp_path, check=True, timeout=10)
    assert (tmp_path / "git/index.lock").is_dir()
    with pytest.raises(PathError, match="does not exist"):
        resolve("git2/index.lock/../../x", str(tmp_path))


# -- cp and mv into folders ----------------------------------------------------------------------


@pytest.mark.parametrize("program", ["cp", "mv"])
@pytest.mark.parametrize("sources,dest", [
    (["s/a.py"], "into"), (["s/a.py"], "into/"), (["s/a.py", "s/b.py"], "into"), (["s/a.py"], "new"),
    (["s/a.py"], "into/a.py"), (["s/"], "into"), (["s"], "new"), (["s/a.py"], "into/sub"),
])
def test_cp_and_mv_write_only_the_names_the_gate_checks(program, sources, dest, tmp_path):
    _need(program)
    (tmp_path / "s").mkdir()
    for name in ("a.py", "b.py"):
        (tmp_path / "s" / name).write_text(name)
    (tmp_path / "into/sub").mkdir(parents=True)
    before = {p.relative_to(tmp_path) for p in tmp_path.rglob("*")}
    flags = ["-r"] if program == "cp" else []
    subprocess.run([program, *flags, *sources, dest], cwd=tmp_path, capture_output=True, timeout=10)
    written = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
               if p.relative_to(tmp_path) not in before and not str(p.relative_to(tmp_path)).startswith("s/")}
    checked = {os.path.normpath(p) for p in [dest, *into_folder([*sources, dest])]}
    assert written, f"{program} wrote nothing"
    # Everything written is a name the gate checked, or inside one (a copied folder's contents).
    assert all(any(w == c or w.startswith(c + "/") for c in checked) for w in written), (written, checked)
