"""Calls real agents make that the gate used to refuse for its own reading, not for what they do."""

import os

import pytest

from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.shell import analyze
from runtime.lang.shell_types import ShellDeny


def _bash(policy, command, cwd):
    return decide(policy, "Bash", {"command": command}, str(cwd))


# -- `@` starts a word, not an argument file, for programs that read none ---------------------


@pytest.mark.parametrize("command", ['grep -rn "@pytest.fixture" src', "grep -rn @dataclass src",
                                     "rg -n '@property' src", "sed -n '/@app.route/p' src/pkg/mod.py"])
def test_at_words_of_programs_without_argument_files_are_allowed(policy_for, worktree, command):
    assert _bash(policy_for("explorer"), command, worktree).verdict == ALLOW


@pytest.mark.parametrize("command", ["pytest @args.txt", "python -m pytest @args.txt", "mypy @flags"])
def test_at_words_of_programs_that_read_argument_files_stay_refused(policy_for, worktree, command):
    d = _bash(policy_for("explorer"), command, worktree)
    # No rule declares `arg-files`: undecided, so asked, saying the key that would allow it.
    assert d.verdict == ASK and "file of more arguments" in d.reason and "`arg-files = true`" in d.reason


# -- a `-` operand just before a redirection -------------------------------------------------


@pytest.mark.parametrize("command,args", [
    ("cat - 2>&1", ["-"]),
    ("cat - - 2>/dev/null", ["-", "-"]),
    ("echo x | diff src/pkg/mod.py - 2>&1", ["src/pkg/mod.py", "-"]),  # tree-sitter hangs it on the pipeline
    ("echo x | grep -n x - 2>&1 | head", ["-n", "x", "-"]),
])
def test_a_dash_before_a_redirection_is_an_operand(command, args):
    script = analyze(command, "/w")
    assert [c.args for c in script.commands if c.name in ("cat", "diff", "grep")] == [args]


def test_a_dash_tree_sitter_leaves_out_is_still_judged(policy_for, worktree):
    assert _bash(policy_for(), "echo x | diff src/pkg/mod.py - 2>&1", worktree).verdict == ALLOW
    d = _bash(policy_for(), "python - <<'EOF'\nimport os\nEOF", worktree)  # the `-` is python's: a stdin script
    assert d.verdict == ASK and "`python -`" in d.reason
    with pytest.raises(ShellDeny, match="`bash -`"):
        analyze("echo id | bash - 2>&1", "/w")


# -- a literal `$` -----------------------------------------------------------------------------


@pytest.mark.parametrize("command,value", [
    ('grep -n "foo$" f', "foo$"),
    ('grep -En "^def .*\\)$" f', "^def .*\\)$"),  # inside double quotes `\)` keeps its backslash
    ('grep "a$/b" f', "a$/b"),
    ("grep foo$ f", "foo$"),
    ("grep 'a'$ f", "a$"),
])
def test_a_dollar_that_starts_no_expansion_is_literal(command, value):
    assert analyze(command, "/w").commands[0].args[-2] == value


@pytest.mark.parametrize("command", ['grep "a$HOME" f', 'grep "a${x}" f', 'grep "a$(id)" f', 'grep "a$1" f',
                                     'grep "a$[1+2]" f', "grep a$'x' f", 'grep a$"x" f', 'grep "$$" f',
                                     'grep "a$ b" f'])
def test_a_dollar_that_expands_stays_refused(command):
    with pytest.raises(ShellDeny):
        analyze(command, "/w")


# -- globs that cannot become options ----------------------------------------------------------


@pytest.mark.parametrize("command", ["ls *.md", "ls -la *.py src", "cat *.txt", "wc -l *.py", "grep -n TODO *.py",
                                     "head -5 *.md", "echo *", "diff *.orig", "timeout 5 ls *.md", "xargs ls * < list"])
def test_a_leading_glob_for_a_program_whose_options_are_harmless_is_allowed(policy_for, worktree, command):
    assert _bash(policy_for("explorer"), command, worktree).verdict == ALLOW


@pytest.mark.parametrize("command,why", [
    ("rm *.pyc", "could expand into option names of `rm`"),
    ("sort *.txt", "option names of `sort`"),  # `sort -ofile` would write
    ("find * -name x", "option names of `find`"),
    ("timeout * ls", "option names of `timeout`"),
    ("timeout 5 rm *.md", "option names of `rm`"),
    ("sed -n p *.py", "option names of `sed`"),
])
def test_a_leading_glob_for_anything_else_is_refused_with_the_fix(policy_for, worktree, command, why):
    d = _bash(policy_for(), command, worktree)
    assert d.verdict == DENY and why in d.reason and "start it with `./`" in d.reason


def test_a_glob_of_test_paths_is_checked_match_by_match(policy_for, worktree):
    (worktree / "tests/test_a.py").write_text("")
    (worktree / "tests/test_b.py").write_text("")
    policy = policy_for()
    for command in ("pytest tests/test_*.py", "pytest -q tests/test_?.py", "python -m pytest tests/*",
                    "pytest tests/nothing_*.py"):
        assert _bash(policy, command, worktree).verdict == ALLOW, command
    os.symlink("/tmp", worktree / "tests/test_out")
    d = _bash(policy, "pytest tests/test_*", worktree)
    assert d.verdict == DENY and "outside the worktree" in d.reason
    d = _bash(policy, "pytest tests/.*", worktree)  # hidden names too (bash's dotglob)
    assert d.verdict == ALLOW
    os.symlink("/etc", worktree / "tests/.hidden")
    assert _bash(policy, "pytest tests/*", worktree).verdict == DENY
    for command in ("pytest tests/test_[ab].py", "pytest tests/**/test_a.py"):
        d = _bash(policy, command, worktree)
        assert d.verdict == DENY and "`*` and `?` only" in d.reason
    assert _bash(policy, "pytest src/*/test_?.py", worktree).verdict == ALLOW  # wildcards in the last two parts
    d = _bash(policy, "pytest tests/*/*/test_a.py", worktree)
    assert d.verdict == DENY and "last two parts" in d.reason


def test_a_write_takes_a_pattern_only_from_the_shell_and_for_a_program_that_expands_none(policy_for, worktree):
    # Quoted, the pattern reaches the program; prettier, eslint and cp's folder copies are not `glob-writes`.
    for command in ("rm -f 'src/*.pyc'", "touch 'src/a[1].py'", "prettier --write 'src/**/*.ts'",
                    "prettier --write src/*.ts", "cp src/pkg/*.py tests", "rm -f src/*/x.pyc", "rm -f src/[ab].pyc",
                    "sed -i 's/a/b/' src/**/*.py"):
        d = _bash(policy_for(), command, worktree)
        assert d.verdict == DENY, command


def test_a_glob_of_files_to_write_is_checked_match_by_match(policy_for, worktree):
    (worktree / "src/pkg/b.py").write_text("x = 1\n")
    policy = policy_for()
    for command in ("sed -i 's/a/b/' src/pkg/*.py", "rm -f ./src/pkg/*.pyc", "chmod +x src/pkg/*.py", "black src/pkg/*.py"):
        assert _bash(policy, command, worktree).verdict == ALLOW, command
    (worktree / ".git/config").write_text("[core]\n")
    os.link(worktree / ".git/config", worktree / "src/pkg/zz.py")  # a match with another name: .git/config
    try:
        d = _bash(policy, "sed -i 's/a/b/' src/pkg/*.py", worktree)
        assert d.verdict == DENY and "matches src/pkg/zz.py" in d.reason and "hard links" in d.reason
    finally:
        os.unlink(worktree / "src/pkg/zz.py")
    (worktree / "tests/.git").mkdir()  # a nested repository's: hidden names count, as with bash's dotglob
    d = _bash(policy, "rm -rf tests/*", worktree)
    assert d.verdict == DENY and "(matches tests/.git)" in d.reason
    d = _bash(policy, "black src/*", worktree)
    assert d.verdict == DENY and "matches the folder `src/pkg`" in d.reason


@pytest.mark.parametrize("command", ["black src", "ruff format src/pkg", "isort tests", "sed -i 's/a/b/' src",
                                     "gofmt -w src", "prettier --write src"])
def test_a_formatter_names_files_never_folders(policy_for, worktree, command):
    # Given a folder, it would rewrite whatever it finds inside, hard links to control files included.
    d = _bash(policy_for(), command, worktree)
    assert d.verdict == DENY and "is a folder; name the files to write" in d.reason


@pytest.mark.parametrize("command", ["black src/pkg/mod.py", "ruff format src/pkg/mod.py", "isort src/pkg/mod.py",
                                     "sed -i 's/a/b/' src/pkg/mod.py", "black --check src", "ruff format --check src"])
def test_a_formatter_given_files_or_checking_folders_is_allowed(policy_for, worktree, command):
    assert _bash(policy_for(), command, worktree).verdict == ALLOW


# -- a backslash-newline that bash keeps as text ------------------------------------------------


@pytest.mark.parametrize("command,value", [
    ("cat <<'EOF' > src/pkg/new.py\nx = 1 + \\\n    2\nEOF", None),  # Python's continuation in a quoted heredoc
    ("sed -i '3i\\\n    x = 1' src/pkg/mod.py", "3i\\\n    x = 1"),  # sed's own continuation in single quotes
    ("echo 'a\\\nb'", "a\\\nb"),
])
def test_a_backslash_newline_inside_single_quotes_or_a_quoted_heredoc_is_text(command, value):
    commands = analyze(command, "/w").commands
    if value is not None:
        assert value in commands[0].args


@pytest.mark.parametrize("command", ["gi\\\nt push", "bash -c 'gi\\\nt push'", 'echo "a\\\nb"',
                                     "cat <<EOF\nEO\\\nF\nEOF"])
def test_a_backslash_newline_that_joins_words_stays_refused(command):
    with pytest.raises(ShellDeny, match="line continuation"):
        analyze(command, "/w")


# -- refusals that say what works instead ---------------------------------------------------------


@pytest.mark.parametrize("command,step", [
    ("for f; do echo $f; done", "one command per value"),
    ("echo $(pwd)", "run the inner command first"),
    ("make test; echo $?", "cmd && echo ok || echo failed"),
    ("export DJANGO_SETTINGS_MODULE=app.settings && pytest", "`NAME=value program …`"),
    ("X=1", "`NAME=value program …`"),
    ("awk '{print $1}' src/pkg/mod.py", "cut -d, -f3"),
    ("sqlfluff lint x.sql", "`runtime allow 'sqlfluff lint x.sql' --role edit-local`"),
    ("tox -e py311", "run the tests directly"),
    ("yarn test", "`npm test`"),
    ("bash scripts/check.sh", "run them one by one"),
])
def test_a_refusal_of_what_agents_reach_for_names_what_works(policy_for, worktree, command, step):
    d = _bash(policy_for(), command, worktree)
    assert d.verdict == ASK and step in d.reason, d  # no rule decides, and nothing in them is forbidden
