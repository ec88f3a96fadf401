"""The lenient reading of the sandboxed mode (`runtime.gate.effects`): what it sees a command run and write."""

import os

import pytest

from runtime.gate import effects
from runtime.gate.effects import MAX_DEPTH, Seen, _ansi_c, _bare, is_static, read_effects
from runtime.lang.shell_types import ShellDeny, Word


def names(source, cwd="/w"):
    return [c.name for c in read_effects(source, cwd).commands]


def only(source, name, cwd="/w"):
    """The one command called ``name`` that ``source`` runs."""
    (cmd,) = [c for c in read_effects(source, cwd).commands if c.name == name]
    return cmd


def writes(source, cwd="/w"):
    return [(t.word.value, is_static(t.word)) for t in read_effects(source, cwd).writes]


# -- the pure helpers ------------------------------------------------------------------------------

@pytest.mark.parametrize("text,value", [
    ("\\x67it", "git"),
    ("\\x6", "\x06"),
    ("\\147it", "git"),
    ("\\0", "\x00"),
    ("\\777", chr(0o777 & 0xFF)),  # three octal digits at most, one byte
    ("\\1478", "g8"),
    ("a\\nb\\tc", "a\nb\tc"),
    ("\\e\\E", "\x1b\x1b"),
    ("\\'\\\"\\\\\\?", "'\"\\?"),
    ("plain", "plain"),
    ("end\\", "end\\"),  # a trailing backslash is itself
    ("", ""),
])
def test_ansi_c_strings_decode_the_common_escapes(text, value):
    assert _ansi_c(text) == value


@pytest.mark.parametrize("text", ["\\x", "\\xg", "\\u0067", "\\U00000067", "\\cA", "a\\zb"])
def test_ansi_c_escapes_it_does_not_model_leave_the_word_unknown(text):
    assert _ansi_c(text) is None


@pytest.mark.parametrize("text,value,glob,tilde", [
    ("abc", "abc", False, False),
    ("*.py", "*.py", True, False),
    ("a?", "a?", True, False),
    ("[ab]", "[ab]", True, False),
    ("{a,b}", "{a,b}", True, False),
    ("a\\*b", "a*b", False, False),  # an escaped wildcard is a plain character
    ("\\[x", "[x", False, False),
    ("a\\*b*", "a*b*", True, False),
    ("~/x", "~/x", False, True),
    ("~", "~", False, True),
    ("\\~/x", "~/x", False, False),  # an escaped tilde does not expand
    ("a~b", "a~b", False, False),
    ("g\\it", "git", False, False),
    ("end\\", "end\\", False, False),
    ("gi\\\nt", "git", False, False),  # a backslash-newline joins the lines: bash keeps neither
])
def test_bare_words_lose_their_backslashes_and_note_globs_and_tildes(text, value, glob, tilde):
    word = _bare(text)
    assert (word.value, word.static, word.glob, word.tilde) == (value, True, glob, tilde)


def test_is_static_reads_the_flag_of_a_seen_word_and_trusts_any_other_word():
    assert is_static(Seen("x")) is True
    assert is_static(Seen("$X", False)) is False
    assert is_static(Word("x")) is True


# -- what it sees run ------------------------------------------------------------------------------

@pytest.mark.parametrize("source,expected", [
    ("X=git; $X push", ["git"]),
    ('X=git; "$X" push', ["git"]),
    ("X=git; ${X} push", ["git"]),
    ("declare X=git; $X push", ["git"]),
    ("export X=git; $X push", ["git"]),
    ("for p in git; do $p push; done", ["git"]),
    ("A=1 B=git; $B", ["git"]),
    ("$'\\x67it' push", ["git"]),
    ("\"g\"'i't push", ["git"]),
    ("/usr/bin/git push", ["git"]),
    ("gi\\\nt push", ["gi", "git"]),  # bash joins the lines; tree-sitter splits the word: both are read
])
def test_programs_named_by_literal_values_and_followed_variables_are_seen(source, expected):
    assert names(source) == expected


@pytest.mark.parametrize("source", [
    "$X push",  # never assigned
    "X=$(pick); $X push",  # assigned at run time
    "for p in git gh; do $p push; done",  # one of several values
    "for p in *; do $p; done",  # a glob
    "a=(git); $a",  # an array
    "./*.sh",
])
def test_a_program_named_at_run_time_is_left_to_the_sandbox(source):
    assert all(c.name not in ("git", "gh") for c in read_effects(source, "/w").commands)
    assert not any(c.name.startswith("$") or "*" in c.name for c in read_effects(source, "/w").commands)


@pytest.mark.parametrize("source,name,via", [
    ("bash -c 'git push'", "git", "bash -c "),
    ("sh -ec 'git push'", "git", "sh -c "),
    ("bash -x --norc -c 'git push'", "git", "bash -c "),
    ("bash <<EOF\ngit push\nEOF", "git", "bash << "),
    ("bash -s <<'EOF'\ngit push\nEOF", "git", "bash << "),
    ("eval git push", "git", "eval "),
    ("eval 'git push'", "git", "eval "),
    ("watch 'git status'", "git", "watch "),
    ("bash -c \"sh -c 'git push'\"", "git", "bash -c sh -c "),
])
def test_nested_scripts_are_read_and_say_what_ran_them(source, name, via):
    assert only(source, name).via == via


@pytest.mark.parametrize("source,via", [
    # bash(1): -o/+o and -O/+O take the next word, never an attached value; --rcfile and --init-file take
    # the next word, with one dash or two; -c anywhere in a cluster, or as +c; the script is the first operand.
    ("bash -o pipefail -c 'git push'", "bash -c "),
    ("bash +o pipefail -c 'git push'", "bash -c "),
    ("bash -O extglob -c 'git push'", "bash -c "),
    ("bash +O extglob -c 'git push'", "bash -c "),
    ("bash -euo pipefail -c 'git push'", "bash -c "),
    ("bash -oo pipefail errexit -c 'git push'", "bash -c "),
    ("bash -co pipefail 'git push'", "bash -c "),
    ("bash -c -o pipefail 'git push'", "bash -c "),
    ("bash -c -e 'git push'", "bash -c "),
    ("bash -c -- 'git push'", "bash -c "),
    ("bash +c 'git push'", "bash -c "),
    ("bash -xc 'git push'", "bash -c "),
    ("bash -ec 'git push'", "bash -c "),
    ("bash --rcfile x -c 'git push'", "bash -c "),
    ("bash --init-file x -c 'git push'", "bash -c "),
    ("bash -rcfile x -c 'git push'", "bash -c "),  # a long option with one dash: not -r -c ...
    ("bash --norc --noprofile -c 'git push'", "bash -c "),
    ("bash -login -c 'git push'", "bash -c "),
    ("bash -verbose -c 'git push'", "bash -c "),  # not -v -e -r -b -o ... (whose -o would take `-c`)
    ("sh -o errexit -c 'git push'", "sh -c "),
    ("bash -o pipefail <<'EOF'\ngit push\nEOF", "bash << "),
    ("bash -s -o pipefail x y <<'EOF'\ngit push\nEOF", "bash << "),  # -s: operands are arguments
    ("fish -c 'git push'", "fish -c "),
    ("fish --command='git push'", "fish -c "),
    ("fish -l --command 'git push'", "fish -c "),
    ("fish -C 'git push' script.fish", "fish -c "),  # the init command runs too
    ("fish -d x -c 'git push'", "fish -c "),
    ("csh -fc 'git push'", "csh -c "),
])
def test_shell_options_that_take_a_value_do_not_hide_the_script(source, via):
    assert only(source, "git").via == via


@pytest.mark.parametrize("source", [
    "bash -o pipefail script.sh git",  # `pipefail` is the option's: the script is script.sh
    "bash -O extglob script.sh git",
    "bash --rcfile x script.sh git",
    "bash -c 'echo ok' git",  # $0 of the script
    "bash -o pipefail -c",
])
def test_a_value_of_a_shell_option_is_not_the_script_and_the_script_is_found(source):
    assert "git" not in names(source)


def test_busybox_runs_its_applet():
    assert only("busybox sh -c 'git push'", "git").via == "sh -c "
    assert "wget" in names("busybox wget http://x")
    assert names("busybox --list") == ["busybox"]


@pytest.mark.parametrize("source,words", [
    ("bash -Z -c 'git push'", "`bash -Z`"),
    ("bash --nosuch -c 'git push'", "`bash --nosuch`"),
    ("zsh --emulate sh -c 'git push'", "`zsh --emulate`"),
    ("ksh -R x -c 'git push'", "`ksh -R`"),
    ("fish --nosuch -c 'git push'", "`fish --nosuch`"),
    ("csh -D x -c 'git push'", "`csh -D`"),
    ("bash \"$F\" -c 'git push'", "`bash \"$F\"`"),  # a word only the run knows, before others
    ("bash -o \"$O\" -c 'git push'", "`bash -o \"$O\"`"),
])
def test_a_shell_option_the_gate_cannot_read_is_refused(source, words):
    with pytest.raises(ShellDeny) as info:
        read_effects(source, "/w")
    assert words in str(info.value)


def test_a_shell_given_only_a_word_the_run_knows_reads_nothing_visible():
    assert names('bash "$F"') == ["bash"]
    assert names("bash \"$F\" <<'EOF'\ngit push\nEOF") == ["bash", "git"]  # it may be -s


@pytest.mark.parametrize("source", [
    "bash script.sh git",  # a script file: its words are its arguments
    "bash -c \"$CMD\"",  # a script only the run knows
    "eval \"$CMD\"",
    "bash -c",
    "cat <<EOF\ngit push\nEOF",  # text for cat, not a script
])
def test_what_is_not_a_script_the_gate_can_read_runs_nothing_more(source):
    assert "git" not in names(source)


@pytest.mark.parametrize("source,expected", [
    ("echo $(git rev-parse HEAD)", ["git", "echo"]),
    ("echo `git rev-parse HEAD`", ["git", "echo"]),
    ("echo ${X:-$(git push)}", ["git", "echo"]),
    ("f() { git push; }", ["git"]),
    ("if true; then git push; fi", ["true", "git"]),
    ("while false; do git push; done", ["false", "git"]),
    ("(git push) | cat", ["git", "cat"]),
    ("cat <<EOF\n$(git push)\nEOF", ["git", "cat"]),
    ("cat <(git log)", ["git", "cat"]),
])
def test_commands_inside_substitutions_bodies_and_heredocs_are_seen(source, expected):
    assert names(source) == expected


@pytest.mark.parametrize("source,expected", [
    ("timeout 5 git push", ["timeout", "5", "git", "push"]),  # every non-option word is a candidate
    ("nohup nice -n 5 git push", ["nohup", "nice", "5", "git", "push"]),
    ("env -i git status", ["env", "git", "status"]),
    ("sudo -u root git push", ["sudo", "root", "git", "push"]),
    ("xargs -0 rm", ["xargs", "rm"]),
    ("uv run pytest -q", ["uv", "run", "pytest"]),
])
def test_wrappers_are_read_generously(source, expected):
    assert names(source) == expected


def test_a_wrong_guess_after_a_wrapper_only_adds_a_command():
    assert "git" in names("timeout 5 echo git")


def test_env_assignments_go_with_the_commands_env_runs():
    assert only("env GIT_DIR=x LANG=C git status", "git").assigns == [("GIT_DIR", "x"), ("LANG", "C")]
    assert only("TZ=UTC env GIT_DIR=x git status", "git").assigns == [("TZ", "UTC"), ("GIT_DIR", "x")]
    assert only("GIT_DIR=x git status", "git").assigns == [("GIT_DIR", "x")]


def test_a_wrapper_reads_a_word_holding_a_script_as_one():
    assert only("flock /tmp/l -c 'git push'", "git").via == "flock "
    assert "git" in names("su -c 'git push; ls'")


def test_command_v_only_looks_a_program_up():
    assert names("command -v git") == ["command"]
    assert names("command -V git") == ["command"]
    assert names("command -p git push") == ["command", "git", "push"]


def test_the_words_after_a_wrapper_taken_as_programs_are_bounded():
    assert "git" in names("nice 1 2 3 4 5 6 7 git")  # the eighth candidate


@pytest.mark.parametrize("source,ran", [
    ("find . -exec git add {} \\;", [["git", "add", "{}"]]),
    ("find . -execdir git add {} +", [["git", "add", "{}"]]),
    ("find . -ok rm {} \\; -exec git add {} \\;", [["rm", "{}"], ["git", "add", "{}"]]),
    ("find . -exec echo + git {} +", [["echo", "+", "git", "{}"]]),  # `+` ends it only after `{}`
    ("find . -exec \\;", []),
])
def test_find_runs_what_its_exec_actions_name(source, ran):
    cmds = read_effects(source, "/w").commands
    assert cmds[0].name == "find"
    assert [[c.name, *c.args] for c in cmds[1:]] == ran


# -- where commands run ----------------------------------------------------------------------------

@pytest.mark.parametrize("source,name,cwds", [
    ("cd src && rm x", "rm", ("/w/src",)),
    ("cd src; rm x", "rm", ("/w", "/w/src")),
    ("cd src || rm x", "rm", ("/w", "/w/src")),
    ("cd /abs && rm x", "rm", ("/abs",)),
    ("cd .. && rm x", "rm", ("/",)),
    ("cd -P src && rm x", "rm", ("/w/src",)),
    ("cd -- src && rm x", "rm", ("/w/src",)),
    ("pushd src && rm x", "rm", ("/w/src",)),
    ("D=src; cd $D && rm x", "rm", ("/w/src",)),
    ("cd 'my dir' && rm x", "rm", ("/w/my dir",)),
])
def test_cd_leads_later_commands_to_the_folders_it_may_leave(source, name, cwds):
    assert only(source, name).cwds == cwds


@pytest.mark.parametrize("source", ["cd ~ && rm x", "cd $D && rm x", "cd - && rm x", "cd a b && rm x", "cd src* && rm x",
                                    "cd '' && rm x"])
def test_a_cd_the_gate_cannot_follow_does_not_narrow(source):
    assert only(source, "rm").cwds == ("/w",)


@pytest.mark.parametrize("source", ["(cd src) && rm x", "{ cd src; } | cat && rm x", "true | cd src && rm x"])
def test_a_cd_inside_a_subshell_or_pipeline_does_not_narrow_what_follows(source):
    assert "/w" in only(source, "rm").cwds


def test_cd_goes_both_where_bash_takes_dotdot_and_where_the_link_leads(tmp_path):
    (tmp_path / "real/sub").mkdir(parents=True)
    os.symlink(tmp_path / "real/sub", tmp_path / "link")
    cwd = str(tmp_path.resolve())
    assert only("cd link/.. && rm x", "rm", cwd).cwds == (cwd, f"{cwd}/real")


def test_pwd_names_the_folder_when_there_is_one():
    assert only("rm -rf $(pwd)", "rm").args == ["-rf", "/w"]
    assert only("rm -rf `pwd`", "rm").args == ["-rf", "/w"]
    assert only("rm -rf $PWD/x", "rm").args == ["-rf", "/w/x"]
    rm = only("cd src; rm -rf $(pwd)", "rm")  # two folders: no one value
    assert not is_static(rm.words[1])
    assert only("PWD=/elsewhere; rm $PWD", "rm").args == ["/elsewhere"]


# -- words -----------------------------------------------------------------------------------------

def test_word_values_and_what_is_known_of_them():
    cmd = only("ls 'a b' \"c\\\"d\" e\\ f $'g\\th' \"$HOME\" *.py ~/x", "ls")
    assert cmd.args[:4] == ["a b", 'c"d', "e f", "g\th"]
    assert [is_static(w) for w in cmd.words] == [True, True, True, True, False, True, True]
    assert [w.glob for w in cmd.words[5:]] == [True, False]
    assert [w.tilde for w in cmd.words[5:]] == [False, True]


@pytest.mark.parametrize("text,value", [
    ('"src\n/evil.py"', "src\n/evil.py"),  # tree-sitter leaves the newline in no node of the string
    ('"a\n\n\nb"', "a\n\n\nb"),
    ('"a\r\nb"', "a\r\nb"),
    ('" \n "', " \n "),
    ('"a\n#c\nb"', "a\n#c\nb"),
    ('"a$"', "a$"),  # a `$` that starts no expansion is itself
    ('"a\n$"', "a\n$"),
    ("a$", "a$"),
    ('x"a\nb"y', "xa\nby"),
    ("$'a\nb'", "a\nb"),
    ("$'a\\nb'", "a\nb"),
    ("'a\nb'", "a\nb"),
    ('x$"a\nb"', "xa\nb"),
])
def test_quoted_words_keep_every_character_bash_keeps(text, value):
    (target,) = read_effects(f"echo x > {text}", "/w").writes
    assert (target.word.value, is_static(target.word)) == (value, True)
    assert only(f"ls {text}", "ls").args == [value]


def test_a_quoted_newline_after_an_expansion_is_kept():
    assert writes('X=a; echo x > "$X\ny"') == [("a\ny", True)]
    assert writes('echo x > "$Y\ny"') == [('"$Y\ny"', False)]
    assert sorted(names('echo "a\n$(git push)"')) == ["echo", "git"]


def test_a_variable_holding_a_glob_is_a_glob():
    assert only("P='*.py'; ls $P", "ls").words[0].glob is True


# -- writes, network, streams ----------------------------------------------------------------------

@pytest.mark.parametrize("source,expected", [
    ("echo x > out", [("out", True)]),
    ("echo x >> out", [("out", True)]),
    ("echo x &> out", [("out", True)]),
    ("echo x &>> out", [("out", True)]),
    ("echo x >| out", [("out", True)]),
    ("echo x 2> err", [("err", True)]),
    ("echo x > 'a b'", [("a b", True)]),
    ("F=out; echo x > $F", [("out", True)]),
    ("echo x > $F", [("$F", False)]),
    ("echo x > out 2>&1", [("out", True)]),
    ("cat < in", []),
    ("echo x >&2", []),
    ("echo x >&-", []),
    ("{ echo x; } > out", [("out", True)]),
    ("cat <<EOF > out\nx\nEOF", [("out", True)]),
])
def test_redirections_that_write_are_targets(source, expected):
    assert writes(source) == expected


@pytest.mark.parametrize("source,expected", [
    # tree-sitter reads `<>` as `<` and a parse error: it opens the file for reading and writing.
    ("echo x 1<> docs/notes.md", [("docs/notes.md", True)]),
    ("echo x <> out", [("out", True)]),
    ("echo x <>out", [("out", True)]),
    ("echo x 2<>out", [("out", True)]),
    ("exec 3<> out", [("out", True)]),
    ("cat <>out", [("out", True)]),
    ("{ echo x; } 1<> out", [("out", True)]),
    ("echo x 1<>out; git push", [("out", True)]),
])
def test_read_write_redirections_are_targets(source, expected):
    assert writes(source) == expected


@pytest.mark.parametrize("source,expected", [
    ("echo x >&\u0661", [("\u0661", True)]),  # not ASCII digits: bash writes a file of that name
    ("echo x >&\u00b2", [("\u00b2", True)]),
    ("echo x >&2", []),
])
def test_only_ascii_digits_duplicate_a_descriptor(source, expected):
    assert writes(source) == expected


def test_read_write_redirection_keeps_its_stray_words_and_puts_a_file_on_stdout():
    found = read_effects("echo x 1<>out y", "/w")
    assert [c.args for c in found.commands] == [["x", "y"]]
    assert found.streams_redirected is True
    assert read_effects("echo x 0<>out", "/w").streams_redirected is False


def test_a_read_write_redirection_outside_the_scope_is_denied_in_both_modes(worktree, tmp_path):
    from runtime.gate.decision import ALLOW, DENY
    from runtime.gate.engine import decide
    from runtime.gate.policy import Policy
    from runtime.policy.build import build_policy
    from runtime.policy.document import SANDBOXED, STRICT
    from tests.conftest import REPO
    from tests.gate.conftest import EDIT_SCOPE, TASK

    task = tmp_path / "edit-local.toml"
    task.write_text(TASK.format(role="edit-local", scope=EDIT_SCOPE))
    strict = Policy(build_policy(REPO, None, task, worktree, mode=STRICT))
    sandboxed = Policy(build_policy(REPO, None, task, worktree, mode=SANDBOXED), assume_sandbox=True)
    for command in ("echo x 1<> docs/notes.md", "echo x <> docs/notes.md", "echo x 1<> src/pkg/notes.md"):
        d = decide(strict, "Bash", {"command": command}, str(worktree))
        assert d.verdict == DENY and "could not be parsed" in d.reason, command  # strict: a parse error is a deny
    for command in ("echo x 1<> docs/notes.md", "echo x <> docs/notes.md", "cat <>docs/notes.md"):
        d = decide(sandboxed, "Bash", {"command": command}, str(worktree))
        assert d.verdict == DENY and "docs/notes.md" in d.reason and "outside your write scope" in d.reason, command
    assert decide(sandboxed, "Bash", {"command": "echo x 1<> src/pkg/notes.md"}, str(worktree)).verdict == ALLOW


def test_a_redirection_target_records_its_folders_and_source():
    (target,) = read_effects("echo x > out", "/w").writes
    assert (target.cwds, target.kind, target.source, target.into) == (("/w",), "write", "redirection `> out`", None)
    (target,) = read_effects("cd src && echo x > out", "/w").writes
    assert "/w/src" in target.cwds  # where echo runs is always among them


@pytest.mark.parametrize("source,redirected", [
    ("echo x 1<f", True),
    ("echo x >&3", True),
    ("echo x 2<&0", True),
    ("echo x >&out", True),
    ("echo x >out 2>&1", False),
    ("echo x 2>&1 >&2", False),
    ("echo x >&-", False),
    ("cat < in", False),
])
def test_streams_redirected_notes_a_file_or_descriptor_put_on_stdout_or_stderr(source, redirected):
    assert read_effects(source, "/w").streams_redirected is redirected


def test_network_redirections_are_recorded_not_written():
    found = read_effects("cat < /dev/tcp/h/80; echo x > /dev/udp/h/53", "/w")
    assert found.network == ["< /dev/tcp/h/80", "> /dev/udp/h/53"]
    assert found.writes == []
    assert read_effects("echo x > /dev/tcpx", "/w").network == []


def test_what_does_not_parse_is_read_as_far_as_it_goes():
    found = read_effects("git push; echo 'unbalanced", "/w")
    assert found.unparsed is True and "git" in [c.name for c in found.commands]
    assert read_effects("git push", "/w").unparsed is False


# -- limits and the memo ---------------------------------------------------------------------------

def test_a_nul_byte_is_refused():
    with pytest.raises(ShellDeny, match="NUL"):
        read_effects("ls\x00", "/w")


def test_nesting_is_followed_to_its_limit_and_refused_past_it():
    assert names("eval " * MAX_DEPTH + "git")[-1] == "git"
    with pytest.raises(ShellDeny, match="too deep"):
        read_effects("eval " * (MAX_DEPTH + 1) + "git", "/w")


def test_the_number_of_commands_is_bounded(monkeypatch):
    monkeypatch.setattr(effects, "MAX_COMMANDS", 10)
    assert len(read_effects("true;" * 10, "/w/a").commands) == 10
    with pytest.raises(ShellDeny, match="more than 10 simple commands"):
        read_effects("true;" * 11, "/w/a")


def test_the_wrappers_around_one_command_are_bounded():
    limit = MAX_DEPTH * 4
    assert names("nohup " * limit + "git")[-1] == "git"
    with pytest.raises(ShellDeny, match="wrappers around one command"):
        read_effects("nohup " * (limit + 1) + "git", "/w")
    assert names("busybox " * limit + "git")[-1] == "git"
    with pytest.raises(ShellDeny, match="wrappers around one command"):
        read_effects("busybox " * (limit + 1) + "git", "/w")


def test_the_folders_a_cd_chain_may_leave_are_bounded():
    # Each `cd` after `;` doubles the folders: 2**5 = 32 is the most followed.
    assert len(only("cd a; cd b; cd c; cd d; cd e; rm x", "rm").cwds) == 32
    with pytest.raises(ShellDeny, match="more than 32 folders"):
        read_effects("cd a; cd b; cd c; cd d; cd e; cd f; rm x", "/w")


def test_results_and_refusals_are_remembered_per_source_and_folder():
    first = read_effects("ls src", "/w")
    assert read_effects("ls src", "/w") is first
    assert read_effects("ls src", "/v") is not first
    for _ in range(2):
        with pytest.raises(ShellDeny, match="NUL"):
            read_effects("x\x00", "/w")
