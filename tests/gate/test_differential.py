"""Differential testing: what the gate allows, run for real, must touch only what the role allows.

A hypothesis generator builds Bash commands from the shipped edit-local
role's grammars (every option spelling, clusters with attached values,
quoting, globs, `~`, redirections and descriptor paths, `cd` chains,
`find -exec`, `xargs`, wrappers, variables) over a scratch repository with
planted symlinks and a hard link to `.git/config`. A second one builds the
families an outside corpus found: xargs's options (values taken only when
attached), `find -exec ... +` with stray `+`, list operators and groups after
`cd`, `bash -o`, variables given to a shell with nothing to run,
`{NAME}>file`, `..` after a symlink or a name that does not exist,
copies into folders holding a planted hard link, and unquoted globs (in a
free word, a fixed operand, a wrapper's own word, the files a program
writes; a planted file is named like a sed script that runs a program),
and GNU patch given diffs inline or from files the agent cannot change
(targets after -p, renames, creations, backups and rejects beside a hard
link, context, normal and ed diffs, indented and nested headers, symlinks),
and finds that remove what they find (starting points through symlinks, with
and without a trailing slash, tests the gate reads and tests it refuses); the repository also holds a
script named `cat` (and `10/cat`...) that runs a program no role allows, so a
command the gate reads unlike bash runs it. Every command the gate allows is
executed in a throwaway sandbox (``tests/gate/reality.py``) and judged by
what it actually wrote and executed. A failure is a gate bug: add the
command to ``REGRESSIONS`` so it runs for real on every `make test`.

`make test` runs a fixed, derandomised budget; a long random run:
``RUNTIME_DIFF_EXAMPLES=5000 RUNTIME_DIFF_RANDOM=1 pytest tests/gate/test_differential.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.lang.shell_programs import SHELLS
from runtime.policy.build import build_policy
from tests.conftest import REPO, require
from tests.gate import reality

pytestmark = pytest.mark.differential

EXAMPLES = int(os.environ.get("RUNTIME_DIFF_EXAMPLES", "200"))
FAMILY_EXAMPLES = int(os.environ.get("RUNTIME_DIFF_FAMILY_EXAMPLES", str(max(EXAMPLES // 2, 1))))
RANDOM = bool(os.environ.get("RUNTIME_DIFF_RANDOM"))
VENV_BIN = os.path.dirname(sys.executable)  # the runtime's own venv: pytest for the generated commands
SANDBOX_PATH = f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"

TASK = """\
[task]
role = "edit-local"
agent-id = "ag-differential"
goal = "Differential testing of the gate."

[scope]
files-whitelist = ["src/**", "tests/**"]
files-denylist = ["src/pkg/generated/**"]

[verification]
test-command = "pytest -q tests"
check-commands = ["true"]

[body]
text = "x"
"""

# Commands found to be allowed wrongly, kept as regressions: each runs for real every time.
REGRESSIONS: list[str] = [
    "cp -r src/pkg/sub src/pkg/into", "cp -a src/pkg/sub/ src/pkg/into/sub", "cp -rT src/pkg/sub src/pkg/into/sub",
    "cd src/pkg/sub && go test -outputdir=.. -cpuprofile=../../.git/hooks/pre-commit ./...",
    "sort -no.git/config src/pkg/mod.py",
    "cp -ft.git/hooks src/pkg/mod.py",
    "sed -Ei.bak s/a/b/ .git/config",
    "printf x 3<.git/config >/dev/fd/3",
    "printf x 1<.git/config >/dev/stdout",
    "cd src && find . -name mod.py -exec cp pkg/a.py {} ;",
    "cd -P src/pkg/gitlink && touch x",
    "pytest --basetemp src/pkg/esc?pe/x tests",
    "echo x > src/pkg/hardlink.py",
    "rm -rf src/pkg/gitlink/",
    "mkdir -p src/pkg/escape/evil",
    "touch src/pkg/outside_file",
    "mv src/pkg/a.py src/pkg/gitlink/config",
    # found by this test: pytest collected /etc (and wrote /etc/.pytest_cache) from a planted symlink
    "cd src/pkg/escape && timeout 5 pytest --",
    "pytest -o=x tests",
    # found by this test: ruff, run from .git through a planted symlink, wrote .git/.ruff_cache
    "cd -P src/pkg/gitlink && timeout 5 ruff check src/pkg/mod.py",
    # the families of an outside corpus, each as the gate once read it wrongly
    "cd src/pkg && printf x | xargs -e sh cat",  # -e takes no separate value: sh runs ./cat
    "cd src/pkg && printf x | xargs -i bash cat",
    "cd src/pkg && printf x | xargs -l sh cat",
    "cd src/pkg && printf x | xargs --replace sh cat",
    "find src/pkg -name mod.py -exec rm -f + .git/config {} +",  # `+` ends -exec only after {}
    "cd src/pkg/mod.py && true; mkdir -p x",  # the cd fails (a file): mkdir runs in the worktree
    "cd src && true & touch docs/new.md",
    "! cd src/pkg/mod.py && mkdir -p x",
    "bash -o keyword -c '/usr/bin/find src/pkg -maxdepth 0 PATH=src/pkg -exec cat {} +'",
    "BASH_ENV=src/pkg/cat bash -c ''",
    "cd src/pkg && echo {PATH}>/dev/null; /usr/bin/find . -maxdepth 0 -exec cat {} +",
    "mkdir -p .git/index.lock/../../src/pkg/x",
    "timeout 5 pytest -q --basetemp=tests/deep/../.. tests",  # pytest empties the worktree it reads lexically
    "cp src/pkg/a.py src/pkg/into",
    "mv src/pkg/mod.py src/pkg/into/",
    "pytest --rootdir=.git tests",
    # an unquoted glob in a word the gate judged by its text: bash passed a planted file's name
    "cd src/pkg && sed -n s*d*e* mod.py",  # sed ran the script `s|def|id;|e`, which runs id
    "uniq src/pkg/*a*.py",  # the second match, a hard link to .git/config, was uniq's output
]

# Wrappers the gate unwraps and programs the allowed ones run themselves.
WRAPPERS = frozenset({"env", "timeout", "nice", "nohup", "stdbuf", "setsid", "time", "xargs", "find", *SHELLS})
CHILDREN = frozenset({"python3", "python", "python3.11", "python3.12", "python3.13"})


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    why = reality.available()
    require(why is None, f"differential runs: {why}")
    root = Path(os.path.realpath(tmp_path_factory.mktemp("scratch"))) / "repo"
    (root / "src/pkg/generated").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "docs").mkdir()
    (root / ".claude").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = {
        "src/pkg/__init__.py": "",
        "src/pkg/mod.py": "def f():\n    return 1\n",
        "src/pkg/a.py": "A = 1\n",
        "src/pkg/generated/schema.py": "# generated\n",
        "tests/test_mod.py": "def test_f(tmp_path):  # pytest makes (and first empties) its --basetemp\n    assert tmp_path.is_dir()\n",
        "tests/conftest.py": "",
        "docs/index.md": "# docs\n",
        "README.md": "# pkg\nTODO\n",
        "pyproject.toml": "[project]\nname = 'pkg'\nversion = '0.1.0'\n",
        ".claude/settings.json": "{}\n",
        # diffs the agent cannot change, for `patch < FILE`: the gate reads them
        ".claude/good.diff": "--- a/src/pkg/mod.py\n+++ b/src/pkg/mod.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n",
        ".claude/evil.diff": "--- a/src/pkg/mod.py\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+id\n",
        ".claude/ed.diff": "--- a/src/pkg/mod.py\n+++ b/src/pkg/mod.py\n1c1\n< def f():\n---\n> def g():\n",
    }
    for rel, text in files.items():
        (root / rel).write_text(text)
    os.symlink("/etc", root / "src/pkg/escape")
    os.symlink("../../.git", root / "src/pkg/gitlink")
    os.symlink("/etc/hostname", root / "src/pkg/outside_file")
    os.link(root / ".git/config", root / "src/pkg/hardlink.py")
    # A benign symlink inside the scope, two levels deep: `deep/../..` is src lexically, src/pkg physically.
    (root / "src/pkg/sub/inner").mkdir(parents=True)
    os.symlink("sub/inner", root / "src/pkg/deep")
    (root / "tests/sub/inner/leaf").mkdir(parents=True)
    os.symlink("sub/inner/leaf", root / "tests/deep")
    # A folder with a file of the same name as a source, hard-linked to .git/config: `cp mod.py into` writes it.
    (root / "src/pkg/into").mkdir()
    os.link(root / ".git/config", root / "src/pkg/into/mod.py")
    os.link(root / ".git/config", root / "src/pkg/into/a.py")
    # Below it, where a recursive copy of src/pkg/sub writes: `cp -r src/pkg/sub src/pkg/into` writes through it.
    (root / "src/pkg/sub/inner/h.py").write_text("h = 1\n")
    (root / "src/pkg/into/sub/inner").mkdir(parents=True)
    os.link(root / ".git/config", root / "src/pkg/into/sub/inner/h.py")
    # Scripts named like an allowed program, which run one no role allows: executed only when a
    # command runs something other than what the gate saw (`xargs -e sh cat` runs ./cat).
    # A file whose name is a sed script that runs a program: `sed s*e` in its folder would run it.
    (root / "src/pkg/s|def|id;|e").write_text("")
    (root / "docs/z ..").write_text("")  # `for f in docs/*; do rm -rf $f` would split it into `..`
    for folder in ("src/pkg", "src/pkg/10", "src/pkg/11", "src/pkg/12"):
        (root / folder).mkdir(exist_ok=True)
        script = root / folder / "cat"
        script.write_text("#!/bin/sh\n/usr/bin/id >/dev/null\n")
        script.chmod(0o755)
    return root


@pytest.fixture(scope="module")
def policy(scratch, tmp_path_factory) -> Policy:
    task = tmp_path_factory.mktemp("task") / "task.toml"
    task.write_text(TASK)
    return Policy(build_policy(REPO, None, task, scratch))


@pytest.fixture(scope="module")
def oracle(scratch, policy) -> reality.Oracle:
    rules = _rules(policy)
    return reality.Oracle(
        root=scratch, scope=("src/", "tests/"), out_of_scope=("src/pkg/generated/",),
        programs=frozenset(r["program"] for r in rules) | WRAPPERS | CHILDREN,
    )


def _rules(policy: Policy) -> list[dict]:
    gate = next(g for g in policy.doc["gates"] if g["kind"] == "bash-allowlist")
    return [r for r in gate["params"]["rules"]
            if shutil.which(r["program"], path=SANDBOX_PATH) is not None]  # programs this machine has


# -- the generator ---------------------------------------------------------------------

PATHS = [
    "src/pkg/mod.py", "src/pkg/new.txt", "src/pkg", "src", "tests", "tests/out.xml", "tests/test_mod.py",
    "src/pkg/generated/schema.py", ".git/config", ".git/hooks/pre-commit", ".claude/settings.json",
    "../outside.txt", "/tmp/x", "/etc/hostname", "src/pkg/escape/x", "src/pkg/gitlink/config",
    "src/pkg/hardlink.py", "src/pkg/outside_file", "~/.bashrc", "src/pkg/*.py", "src/pk?/mod.py",
    "docs/index.md", "README.md", "/dev/fd/3", "/dev/stdout", "-", ".",
]
FREE = ["x", "1", "TODO", "f", "-x", "not slow", "s/a/b/", "p", "1,2p", "*.py", "%s\\n", "w /tmp/w"]
HOSTILE = ["-o", "-i", "-t", "--output=src/x", "--in-place", "-f", "-e", "--pre=x", "-o.git/config", "-T",
           "--config", "-p", "-c", "--basetemp=/tmp/b", "-S", "--target-directory=.."]


def _quote(word: str) -> str:
    if word and all(c.isalnum() or c in "/._-+=:,@%" for c in word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


# Values for the typed words that are neither paths nor numbers, hostile ones among them.
TYPED = {
    "mode": ["+x", "go-w", "644", "u+s", "4755", "+t"],
    "format": ["+%s", "+%Y-%m-%d", "010100002030"],
    "warning-filter": ["error::DeprecationWarning", "ignore", "ignore::evil.Warning", "error:::evil"],
}


@st.composite
def _value(draw, vtype) -> str:
    if isinstance(vtype, list):
        return draw(st.sampled_from(vtype))
    if isinstance(vtype, dict):  # `{ assignments = { KEY = TYPE } }`: a declared key, or one that is not
        keys = sorted(vtype["assignments"])
        key = draw(st.sampled_from([*keys, "addopts", "cache_dir"]))
        sub = vtype["assignments"].get(key, "path")
        return f"{key}={draw(_value(sub))}"
    name = vtype.rstrip("?")
    if name in ("path", "path-in-root", "path-in-scope", "file-in-scope", "folder-in-scope", "copy-in-scope",
                "copy-to-scope", "diff"):
        return draw(st.sampled_from(PATHS))
    if name == "int":
        return draw(st.sampled_from(["1", "2", "5", "-1", "+3"]))
    if name in TYPED:
        return draw(st.sampled_from(TYPED[name]))
    return draw(st.sampled_from(FREE))


@st.composite
def _option_words(draw, grammar: dict) -> list[str]:
    options = grammar["options"]
    style = grammar["option-style"]
    choice = draw(st.integers(0, 9))
    if choice == 0 or not options:
        return [draw(st.sampled_from(HOSTILE))]
    shorts = [o for o in options if len(o) == 2 and o[0] == "-" and style == "gnu"]
    if choice == 1 and len(shorts) >= 2:  # a cluster, maybe ending in an option with an attached value
        picked = draw(st.lists(st.sampled_from(shorts), min_size=2, max_size=3, unique=True))
        flags = [o for o in picked if options[o] == "flag"]
        valued = [o for o in picked if options[o] != "flag"]
        word = "-" + "".join(o[1] for o in flags)
        if valued:
            word += valued[0][1] + draw(_value(options[valued[0]]))
        return [word] if len(word) > 1 else []
    spelling = draw(st.sampled_from(sorted(options)))
    vtype = options[spelling]
    shown = ("-" + spelling if style == "go" else spelling)
    if vtype == "flag":
        return [shown]
    value = draw(_value(vtype))
    if isinstance(vtype, str) and vtype.endswith("?"):
        return [f"{shown}={value}"]
    form = draw(st.integers(0, 2))
    if form == 0:
        return [shown, value]
    if form == 1:  # also `-o=x`, which parsers read differently
        return [f"{shown}={value}"]
    if len(shown) == 2:
        return [shown + value]
    return [shown, value]


@st.composite
def _simple(draw, rules: list[dict]) -> str:
    rule = draw(st.sampled_from(rules))
    words = [rule["program"]]
    if rule["subcommands"]:
        words += draw(st.sampled_from(rule["subcommands"])).split()
    args: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        args += draw(_option_words(rule))
    for _ in range(draw(st.integers(0, 2))):
        kinds = rule["positionals"] or ["free"]
        args.append(draw(_value(draw(st.sampled_from(kinds)).removesuffix("..."))))
    if draw(st.integers(0, 7)) == 0:
        args.insert(draw(st.integers(0, len(args))), "--")
    rendered = " ".join(w if draw(st.booleans()) and not any(c in w for c in "*?~") else _quote(w) for w in words + args)
    if draw(st.integers(0, 5)) == 0 and rule["env"]:
        rendered = f"{draw(st.sampled_from(rule['env']))}=1 {rendered}"
    wrap = draw(st.integers(0, 11))
    if wrap == 0:
        return f"timeout 5 {rendered}"
    if wrap == 1:
        return f"env LANG=C {rendered}"
    if wrap == 2:
        return f"find src -name '*.py' -exec {rendered} {{}} +"
    if wrap == 3:
        return f"printf '%s\\n' src/pkg/mod.py | xargs {rendered}"
    if wrap == 4:
        return f"bash -c {_quote(rendered)}"
    return rendered


_REDIRECTS = ["", "", "", " > {p}", " >> {p}", " 2>&1", " 2>/dev/null", " 3<{p} >/dev/fd/3", " 1<{p} >/dev/stdout", " > /dev/null"]
_PREFIXES = ["", "", "", "cd src && ", "cd tests && ", "cd -P src/pkg/gitlink && ", "cd src/pkg/escape && ", "cd .. && "]


# -- the families ------------------------------------------------------------------------

XARGS_OPTIONS = ["-i", "-e", "-l", "-I X", "-IX", "--replace", "--replace=X", "--eof", "--eof=_", "--max-lines",
                 "--max-lines=1", "-L 1", "-n 1", "-n1", "-0", "-r", "-t", "-x", "-d x", "-E _", "-e_", "-l1", "-P 2",
                 "-s 4096", "--process-slot-var=PATH", "-a src/pkg/a.py", "--null", "--verbose", "-0r", "-rn1"]
INTERPRETERS = ["", "", "sh", "bash", "env", "timeout 5"]
SHELL_OPTIONS = ["-o errexit", "-o keyword", "-o physical", "-o allexport", "-o posix", "+o braceexpand", "-o xtrace",
                 "-e", "-x", "-k", "-P", "-o pipefail", "-o noglob", "+o interactive-comments", "-o", "-u"]
DOTDOT_PATHS = ["src/pkg/deep/../../../docs/x", "src/pkg/deep/..", "src/pkg/deep/../..", "src/pkg/deep/../x",
                "tests/deep/../..", "tests/deep/../../x", "tests/deep/../../../src/x",
                "src/new/../x", ".git/index.lock/../../src/pkg/x", "src/pkg/escape/../x", "src/pkg/sub/inner/../../x",
                "src/pkg/gitlink/../src/x", "src/pkg/sub/../sub/y", "tests/../src/pkg/z"]
CD_TARGETS = ["src", "src/pkg", "tests", "src/pkg/deep", "src/pkg/deep/..", "src/pkg/deep/../..", "missing",
              "src/pkg/mod.py", "tests/deep/../..", "src/pkg/mod.py", "tests/sub",
              "src/pkg/escape", "src/pkg/gitlink", "-P src/pkg/deep", "..", "src/pkg/sub/inner/../.."]
RELATIVE_WRITES = ["touch pkg/new.txt", "touch docs/new.md", "mkdir -p pkg/d", "rm -f pkg/a.py", "echo x > pkg/y.txt",
                   "touch ../../docs/new.md", "touch new.txt", "rm -f README.md", "cp pkg/a.py pkg/b.py",
                   "echo x >> ../README.md", "mkdir -p x", "mkdir -p x/y", "echo x > z.txt"]
COPY_SOURCES = ["src/pkg/mod.py", "src/pkg/a.py", "tests/test_mod.py", "src/pkg/gitlink", "src/pkg/hardlink.py",
                "src/pkg/sub", ".claude", "src/pkg/deep", "/etc/hostname", "/etc/default", "/etc/alternatives/awk",
                "/nonexistent/x", ".claude/settings.json", "/proc/self/cwd"]
COPY_DESTS = ["src/pkg/into", "src/pkg/into/", "src/pkg/sub", "src/pkg/sub/inner", "tests", "src/pkg/new",
              "src/pkg/deep", "src/pkg/deep/..", "src/pkg"]


@st.composite
def _xargs_family(draw, names: list[str]) -> str:
    options = " ".join(draw(st.lists(st.sampled_from(XARGS_OPTIONS), min_size=1, max_size=2)))
    inner = " ".join(w for w in (draw(st.sampled_from(INTERPRETERS)), draw(st.sampled_from(names)),
                                 draw(st.sampled_from(["", "", "{}", "X", "mod.py", "-n", "cat"]))) if w)
    prefix = draw(st.sampled_from(["cd src/pkg && ", "cd src/pkg && ", ""]))
    return f"{prefix}printf '%s\\n' mod.py | xargs {options} {inner}"


@st.composite
def _find_family(draw, names: list[str]) -> str:
    cmd = draw(st.sampled_from(names + ["rm -f", "cp src/pkg/a.py", "sh", "touch"]))
    start = draw(st.sampled_from(["src/pkg", ".", "tests"]))
    shape = draw(st.integers(0, 3))
    if shape == 0:  # a `+` that does not end the command, then what find would then take for its own
        extra = draw(st.sampled_from(PATHS[:12] + ["-name", "-print"]))
        return f"find {start} -name mod.py -exec {cmd} + {extra} -name {{}} +"
    if shape == 1:
        return f"find {start} -name mod.py -exec {cmd} {{}} + -exec {cmd} + {{}} \\;"
    if shape == 2:
        return f"find {start} -maxdepth 1 -ok {cmd} {{}} + \\;"
    return f"find {start} -name '*.py' -exec {cmd} {{}} +"


@st.composite
def _cd_family(draw, names: list[str]) -> str:
    target = draw(st.sampled_from(CD_TARGETS))
    first = draw(st.sampled_from(["true", "ls", "cat mod.py", "echo x"]))
    then = draw(st.sampled_from(RELATIVE_WRITES))
    shape = draw(st.integers(0, 9))
    ops = ["; ", " & ", " || ", "\n", " && "]
    if shape == 0:
        return f"cd {target} && {first}{draw(st.sampled_from(ops))}{then}"
    if shape == 1:
        return f"{{ cd {target}; }} && {then}"
    if shape == 2:
        return f"( cd {target} ) && {then}"
    if shape == 3:
        return f"! cd {target} && {then}"
    if shape == 4:
        return f"cd {target} || {then}"
    if shape == 5:
        return f"cd {target} | true && {then}"
    if shape == 6:
        return f"builtin cd {target} && {then}"
    if shape == 7:
        return f"cd {target}; cd {draw(st.sampled_from(CD_TARGETS))} && {then}"
    if shape == 8:
        return f"cd {target} && {{ {first}; }}{draw(st.sampled_from(ops))}{then}"
    return f"cd {target}{draw(st.sampled_from(ops))}{then}"


@st.composite
def _shell_family(draw, names: list[str]) -> str:
    options = " ".join(draw(st.lists(st.sampled_from(SHELL_OPTIONS), max_size=2)))
    shell = draw(st.sampled_from(["bash", "sh"]))
    inner = draw(st.sampled_from([
        "/usr/bin/find src/pkg -maxdepth 0 PATH=src/pkg -exec cat {} +", "ls A=1", "cd src/pkg/deep/.. && touch x",
        "cat src/pkg/mod.py", "", " ", "echo x > src/pkg/out.txt",
    ]))
    env = draw(st.sampled_from(["", "", "BASH_ENV=src/pkg/cat ", "ENV=src/pkg/cat ", "env BASH_ENV=src/pkg/cat ",
                                "LANG=C ", "SHELLOPTS=xtrace ", "PS4=x "]))
    return f"{env}{shell} {options} -c {_quote(inner) if inner.strip() else repr(inner)}".replace("  ", " ")


@st.composite
def _descriptor_family(draw, names: list[str]) -> str:
    name = draw(st.sampled_from(["PATH", "fd", "HOME", "IFS"]))
    op = draw(st.sampled_from([">", "<", ">>", "<>", ">&"]))
    target = draw(st.sampled_from(["/dev/null", "mod.py", "2", "new.txt"]))  # `{NAME}>&2` too
    after = draw(st.sampled_from(["/usr/bin/find . -maxdepth 0 -exec cat {} +", "ls", "/usr/bin/xargs cat < mod.py"]))
    return f"cd src/pkg && echo x {{{name}}}{op}{target}; {after}"


@st.composite
def _dotdot_family(draw, names: list[str]) -> str:
    path = draw(st.sampled_from(DOTDOT_PATHS))
    form = draw(st.sampled_from(["mkdir -p {p}", "touch {p}", "rm -rf {p}", "echo x > {p}", "cp src/pkg/a.py {p}",
                                 "timeout 5 pytest -q --basetemp={p} tests", "timeout 5 pytest -q --basetemp {p} tests",
                                 "pytest -q {p}", "cd {p} && touch q"]))
    return form.format(p=path)


@st.composite
def _copy_family(draw, names: list[str]) -> str:
    program = draw(st.sampled_from(["cp", "mv", "cp -r", "cp -a", "mv -f", "cp -T", "cp -rL", "cp -P"]))
    sources = " ".join(draw(st.lists(st.sampled_from(COPY_SOURCES), min_size=1, max_size=2)))
    return f"{program} {sources} {draw(st.sampled_from(COPY_DESTS))}"


# Unquoted globs where bash's expansion lands: a free word (sed's script, taken from a planted file's name), a
# fixed operand (uniq's input, whose second match becomes its output), a wrapper's own word, and the files
# of programs that take a glob for what they write (each match checked: a hard link, the denylist, a folder).
GLOB_COMMANDS = [
    "cd src/pkg && sed -n s*e mod.py", "cd src/pkg && sed -i s*e a.py", "sed -n src/pkg/s*e src/pkg/mod.py",
    "cd src/pkg && sed s*d*e* mod.py", "uniq src/pkg/*a*.py", "uniq src/pkg/*.py", "cd src/pkg && uniq a*", "cd src/pkg && tr a* b < a.py",
    "timeout 5* ls", "env A=* ls", "find src -name *.py", "grep -e d* src/pkg/mod.py",
]
GLOB_WRITES = ["rm -f {d}/*.txt", "sed -i 's/a/b/' {d}/*.py", "touch {d}/*.py", "chmod +x {d}/*.py", "rm -rf {d}/g*",
               "rm -rf {d}/*", "black -q {d}/*.py", "rm -f ./{d}/*", "sed -i 's/a/b/' {d}/?.py", "touch {d}/*.md",
               "rm -rf {d}/*.egg-info", "rm -f {d}/*/x", "chmod -x {d}/*"]
GLOB_FOLDERS = ["src/pkg", "src/pkg/sub", "tests", "src", "src/pkg/deep", "src/pkg/into", "docs", "src/pkg/gitlink"]


@st.composite
def _glob_family(draw, names: list[str]) -> str:
    if draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(GLOB_COMMANDS))
    return draw(st.sampled_from(GLOB_WRITES)).format(d=draw(st.sampled_from(GLOB_FOLDERS)))


# GNU patch applying a diff given inline (or from a file the agent cannot change): the files its headers name,
# after -p, with the backups and rejects beside them; diffs patch would read otherwise than as unified ones.
DIFF_NAMES = ["src/pkg/mod.py", "src/pkg/new.txt", "tests/test_new.py", ".git/config", ".git/hooks/pre-commit",
              "src/pkg/hardlink.py", "src/pkg/escape/x", "src/pkg/gitlink/config", "docs/x.md", "../outside.txt",
              "src/pkg/generated/schema.py", "src/pkg/deep/../x.py", ".claude/settings.json", "pyproject.toml",
              "src/pkg/into/a.py", "src/pkg/sub/new.py"]
DIFF_SHAPES = [
    "--- a/{old}\n+++ b/{new}\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n",
    "--- /dev/null\n+++ b/{new}\n@@ -0,0 +1 @@\n+x = 1\n",
    "--- a/{old}\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def f():\n-    return 1\n",
    "diff --git a/{old} b/{new}\nsimilarity index 100%\nrename from {old}\nrename to {new}\n",
    "diff --git a/{old} b/{new}\nindex 1111111..2222222 100644\n--- a/{old}\n+++ b/{new}\n@@ -1 +1 @@\n-def f():\n+def g():\n",
    "Index: {new}\n--- {old}\n+++ {new}\n@@ -0,0 +1 @@\n+x = 1\n",
    "--- a/{old}\n+++ b/{old}\n1c1\n< def f():\n---\n> def g():\n",
    " --- a/{new}\n +++ b/{new}\n @@ -0,0 +1 @@\n +x = 1\n",
    "- --- a/{new}\n- +++ b/{new}\n@@ -0,0 +1 @@\n+x = 1\n",
    "diff --git a/{new} b/{new}\nnew file mode 120000\n--- /dev/null\n+++ b/{new}\n@@ -0,0 +1 @@\n+/etc\n",
    "text before\n--- a/{old}\t2024-01-01 00:00:00\n+++ b/{new}\t2024-01-01 00:00:00\n@@ -1 +1 @@\n-def f():\n+def g():\n",
]
PATCH_OPTIONS = ["-p1", "-p1", "-p0", "", "-p1 --no-backup-if-mismatch", "-p1 -r src/pkg/r.rej", "-p1 --dry-run",
                 "-p1 -R", "-p1 -N -t", "-p2", "-p1 -f", "--strip=1 -E"]


@st.composite
def _patch_family(draw, names: list[str]) -> str:
    old, new = draw(st.sampled_from(DIFF_NAMES)), draw(st.sampled_from(DIFF_NAMES))
    text = draw(st.sampled_from(DIFF_SHAPES)).format(old=old, new=new)
    options = draw(st.sampled_from(PATCH_OPTIONS))
    form = draw(st.integers(0, 5))
    if form == 0:  # diffs planted where the agent cannot write, read by the gate
        return f"patch {options} < .claude/{draw(st.sampled_from(['good', 'evil', 'ed']))}.diff"
    if form == 1:
        return f"cd src && patch {options} <<'EOF'\n{text}EOF"
    return f"patch {options} <<'EOF'\n{text}EOF"


# find removing what it finds: the gate walks the starting points and checks every path removed.
FIND_STARTS = [".", "src", "src/pkg", "tests", "src/pkg/gitlink", "src/pkg/gitlink/", "src/pkg/escape/", "src/pkg/deep",
               "src/pkg/deep/", "src/pkg/into", "docs", "src/pkg/sub"]
FIND_TESTS = ["-name '*.pyc'", "-name '*.py'", "-name config", "-name 'hard*'", "-name generated -type d", "-type l",
              "-name '*'", "-iname MOD.PY", "-maxdepth 1 -name '*.py'", "-mindepth 2 -type f", "-name x -o -name y",
              "-name '*.md'", "-name inner -type d", "-name 'a[.]py'", "-empty", "-name cat"]
FIND_ACTIONS = ["-delete", "-exec rm -f {} +", "-exec rm -rf {} +", "-prune -exec rm -rf {} +", "-exec rm {} \\;",
                "-exec rm -f {} + -delete"]


@st.composite
def _find_delete_family(draw, names: list[str]) -> str:
    options = draw(st.sampled_from(["", "", "-L ", "-H "]))
    start = " ".join(draw(st.lists(st.sampled_from(FIND_STARTS), min_size=1, max_size=2)))
    cd = draw(st.sampled_from(["", "", "cd src && "]))
    return f"{cd}find {options}{start} {draw(st.sampled_from(FIND_TESTS))} {draw(st.sampled_from(FIND_ACTIONS))}"


# Loops over literal values, read once per value: globs (a planted name holding a blank would split into other
# arguments unquoted), symlinks, hard links, `~`, the variable as a program's name, nested loops, `cd` in a body.
LOOP_VALUES = ["src/pkg/a.py src/pkg/mod.py", "src/pkg/*.py", "src/pkg/*", "docs/*", ".git/config", "src/pkg/into/*",
               "src/pkg/gitlink/*", "src/pkg/escape src", "'docs/z ..'", "~", "src/pkg/hardlink.py", '"src/pkg/a.py" docs',
               "cat ls", "src/pkg/deep/..", "a b"]
LOOP_BODIES = ['touch "$f"', 'rm -rf "$f"', "rm -rf $f", 'echo x > "$f"', "echo x > $f.txt", 'cp src/pkg/a.py "$f"',
               'cd "$f" && touch q', 'sed -i s/a/b/ "$f"', "$f", 'cat "$f"', 'mkdir -p "$f/new"',
               'for g in a b; do touch "$f/$g"; done', 'cd src/pkg && touch "${f}x"', 'cd src/pkg; $f mod.py',
               'touch "src/pkg/$f"', "ls ${f}"]


@st.composite
def _loop_family(draw, names: list[str]) -> str:
    values = draw(st.sampled_from(LOOP_VALUES))
    body = draw(st.sampled_from(LOOP_BODIES))
    after = draw(st.sampled_from(["", "", "; touch q", " && ls"]))
    return f"for f in {values}; do {body}; done{after}"


FAMILIES = [_xargs_family, _find_family, _cd_family, _shell_family, _descriptor_family, _dotdot_family, _copy_family,
            _glob_family, _patch_family, _find_delete_family, _loop_family]


@st.composite
def family_commands(draw, rules: list[dict]) -> str:
    names = sorted({r["program"] for r in rules} - {"python3", "python"})
    return draw(draw(st.sampled_from(FAMILIES))(names))


@st.composite
def commands(draw, rules: list[dict]) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 2))):
        redirect = draw(st.sampled_from(_REDIRECTS)).format(p=draw(st.sampled_from(PATHS)))
        parts.append(draw(_simple(rules)) + redirect)
    joiner = draw(st.sampled_from([" && ", "; ", " | "]))
    return draw(st.sampled_from(_PREFIXES)) + joiner.join(parts)


# -- the tests -------------------------------------------------------------------------


def _judge(command: str, policy: Policy, oracle: reality.Oracle, scratch: Path) -> str:
    decision = decide(policy, "Bash", {"command": command}, str(scratch))
    if decision.verdict != "allow":
        return decision.verdict
    touched = reality.run_for_real(command, scratch, SANDBOX_PATH)
    bad = oracle.violations(touched, reality.hard_linked_files(scratch))
    assert not bad, f"the gate allowed `{command}`, which {'; '.join(bad)}"
    return "allow"


def test_the_oracle_sees_writes_execs_and_hard_links(scratch, oracle):
    """The harness itself: an unchecked command's real effects are reported (and the host is untouched)."""
    before = (scratch / ".git/config").read_bytes()
    touched = reality.run_for_real("echo x >> src/pkg/hardlink.py; touch src/pkg/escape/x; /usr/bin/id >/dev/null; "
                                   "mkdir -p docs/new; echo y > src/pkg/ok.py; ls | /usr/bin/whoami >/dev/null; "
                                   "python3 -c 'import subprocess; subprocess.run([\"/usr/bin/true\"])'", scratch, SANDBOX_PATH)
    bad = oracle.violations(touched, reality.hard_linked_files(scratch))
    assert f"wrote a file with other hard links: {scratch}/src/pkg/hardlink.py" in bad
    assert "wrote outside the worktree: /etc/x" in bad
    assert "executed a program the role does not allow: /usr/bin/id" in bad
    assert "executed a program the role does not allow: /usr/bin/whoami" in bad  # in a pipeline
    assert not any("/usr/bin/true" in b for b in bad)  # below a code runner: the sandbox's to contain
    assert "wrote outside the write scope: docs/new" in bad
    assert not any("src/pkg/ok.py" in b for b in bad)
    assert (scratch / ".git/config").read_bytes() == before and not Path("/etc/x").exists()
    assert not (scratch / "src/pkg/ok.py").exists()


@pytest.mark.parametrize("command", REGRESSIONS)
def test_regressions_stay_fixed(command, scratch, policy, oracle):
    _judge(command, policy, oracle, scratch)


def test_generated_commands_allowed_by_the_gate_touch_only_what_the_role_allows(scratch, policy, oracle):
    rules = _rules(policy)
    assert {"pytest", "sed", "sort", "cp", "find"} <= {r["program"] for r in rules}, "the generator needs real programs"
    seen = {"allow": 0}

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
              suppress_health_check=list(HealthCheck))
    @given(commands(rules))
    def check(command):
        verdict = _judge(command, policy, oracle, scratch)
        seen[verdict] = seen.get(verdict, 0) + 1
        event(verdict)

    check()
    print(f"differential: {seen}")
    # The generator must reach the interesting part: commands the gate allows, run for real.
    assert seen["allow"] >= EXAMPLES // 10, seen


def test_the_families_of_an_outside_corpus_allowed_by_the_gate_touch_only_what_the_role_allows(scratch, policy, oracle):
    rules = _rules(policy)
    seen = {"allow": 0}

    @settings(max_examples=FAMILY_EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
              suppress_health_check=list(HealthCheck))
    @given(family_commands(rules))
    def check(command):
        verdict = _judge(command, policy, oracle, scratch)
        seen[verdict] = seen.get(verdict, 0) + 1
        event(verdict)

    check()
    print(f"differential families: {seen}")
    assert seen["allow"] >= FAMILY_EXAMPLES // 10, seen


def test_the_planted_scripts_are_seen_when_run(scratch, oracle):
    """The families' bait works: running the planted `cat` (as `xargs -e sh cat` does) is reported."""
    touched = reality.run_for_real("cd src/pkg && printf x | xargs -e sh cat", scratch, SANDBOX_PATH)
    assert "executed a program the role does not allow: /usr/bin/id" in oracle.violations(touched, frozenset())


def test_every_loop_the_gate_allows_touches_only_what_the_role_allows(scratch, policy, oracle):
    """Every pairing of the loop family's values and bodies, exhaustively: each allowed one is run for real."""
    seen: dict[str, int] = {}
    for values in LOOP_VALUES:
        for body in LOOP_BODIES:
            verdict = _judge(f"for f in {values}; do {body}; done", policy, oracle, scratch)
            seen[verdict] = seen.get(verdict, 0) + 1
    print(f"differential loops: {seen}")
    assert seen.get("allow", 0) >= 40 and seen.get("deny", 0) >= 20 and seen.get("ask", 0) >= 10, seen
