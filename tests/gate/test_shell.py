"""What the shell analysis sees: commands after unwrapping, writes, and refusals."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.gate.shell import ShellDeny, analyze


def names(source, cwd="/w"):
    return [c.name for c in analyze(source, cwd).commands]


def test_every_command_of_a_compound_is_seen():
    assert names("a && b || c; d | e & f\ng") == ["a", "b", "c", "d", "e", "f", "g"]
    assert names("(cd src && x) ; { y; }") == ["x", "y"]
    assert names("! grep -q x file") == ["grep"]


@pytest.mark.parametrize("source,expected", [
    ("g''it push", ["git"]),
    ('"g"it push', ["git"]),
    ("\\git push", ["git"]),
    ("/usr/bin/git push", ["git"]),
    ("env -i LANG=C git push", ["git"]),
    ("command -p git push", ["git"]),
    ("builtin cd", None),
    ("nohup git push", ["git"]),
    ("timeout -s KILL 10 git push", ["git"]),
    ("nice -n 5 git push", ["git"]),
    ("stdbuf -oL git push", ["git"]),
    ("time -p git push", ["git"]),
    ("xargs -0 git push", ["git"]),
    ("find . -name x -exec git add {} +", ["find", "git"]),
    ("sh -c 'git push'", ["git"]),
    ("bash -lc 'ls && git push'", ["ls", "git"]),
    ("bash -c \"timeout 5 env git push\"", ["git"]),
])
def test_wrappers_are_unwrapped(source, expected):
    if expected is None:
        with pytest.raises(ShellDeny):
            names(source)
    else:
        assert names(source) == expected


def test_dequoted_arguments_and_assignments():
    (cmd,) = analyze("TZ=UTC pytest -k 'a and b' \"x\\\"y\" \\$HOME", "/w").commands
    assert cmd.args == ["-k", "a and b", 'x"y', "$HOME"]
    assert cmd.assigns == [("TZ", "UTC")]


def test_redirection_targets_are_writes_with_their_folders():
    script = analyze("cd src && echo x > out.txt 2>&1 && cat < in.txt >> log", "/w")
    assert sorted((w.target, w.cwds) for w in script.writes) == [("log", ("/w/src",)), ("out.txt", ("/w/src",))]
    script = analyze("cd src; echo x > out.txt", "/w")
    assert [(w.target, set(w.cwds)) for w in script.writes] == [("out.txt", {"/w", "/w/src"})]


def test_words_after_a_redirection_are_arguments():
    (cmd,) = analyze("pytest >/dev/null -p evil", "/w").commands
    assert cmd.args == ["-p", "evil"]


def test_heredoc_tail_commands_are_seen():
    assert sorted(names("cat <<EOF | git apply\nx\nEOF")) == ["cat", "git"]
    assert sorted(names("cat <<EOF && git push\nx\nEOF")) == ["cat", "git"]


@pytest.mark.parametrize("source,words", [
    ("ls $(id)", "command substitution"),
    ("ls `id`", "command substitution"),
    ("diff <(a) b", "process substitution"),
    ("echo $HOME", "variable expansion"),
    ("echo ${HOME}", "parameter expansion"),
    ("git$IFS'push'", "variable expansion"),
    ("echo $((1+2))", "arithmetic"),
    ("$'\\x67it' push", "ANSI-C"),
    ("f() { id; }; f", "function"),
    ("if true; then id; fi", "if statements"),
    ("for x; do id; done", "loops"),
    ("export A=1", "declarations"),
    ("A=1", "shell variable assignments"),
    ("PATH=~/bin cargo build", "uses `~`"),
    ("eval ls", "`eval` is not allowed"),
    ("source x.sh", "`source` is not allowed"),
    (". x.sh", "`.` is not allowed"),
    ("exec ls", "`exec` is not allowed"),
    ("sudo ls", "`sudo` runs other programs"),
    ("./bash -c ls", "by its path"),  # a shell or wrapper by path: the engine judges other programs by path
    ("bin/timeout 5 ls", "by its path"),
    ("echo {a,b}", "brace expansion"),
    ("echo {1..3}", "brace expansion"),
    ("ls -*", "could expand to option names"),
    ("cat <<EOF\n$(id)\nEOF", "command substitution"),
    ("cat < /dev/tcp/h/80", "network redirections"),
    ("exec 3<>/dev/tcp/h/80", "could not be parsed"),
    ("ls &&", "could not be parsed"),
    ("cd", "`cd` needs exactly one"),
    ("cd -", "`cd` needs exactly one"),
    ("cd ~", "`cd` needs exactly one"),
    ("find . -fprint /tmp/x", "writes a file the gate cannot check"),
    ("find . -delete -exec rm {} +", "only with one action"),
    ("env -S 'git push'", "`env -S`"),
    ("timeout --bogus 5 ls", "unknown option"),
    ("zsh -c 'ls'", "runs other programs"),
    ("", "empty"),
    ("ls\x00", "NUL"),
])
def test_constructs_the_gate_cannot_see_through_are_refused(source, words):
    with pytest.raises(ShellDeny) as info:
        analyze(source, "/w")
    assert words in str(info.value)


def test_a_shell_without_c_runs_a_script_and_is_recorded_as_itself():
    assert names("bash script.sh") == ["bash"]
    assert names("curl x | sh") == ["curl", "sh"]


def cwds_of(source, cwd="/w"):
    return {c.name: set(c.cwds) for c in analyze(source, cwd).commands}


@pytest.mark.parametrize("source,expected", [
    # `&&` narrows to where the cd worked, but only up to the end of the and-or list
    ("cd src && a", {"a": {"/w/src"}}),
    ("cd src && a; b", {"a": {"/w/src"}, "b": {"/w", "/w/src"}}),
    ("cd src && a\nb", {"a": {"/w/src"}, "b": {"/w", "/w/src"}}),
    ("cd src && a & b", {"a": {"/w/src"}, "b": {"/w"}}),  # in the background: its cd ends with it
    ("cd src && a || b", {"a": {"/w/src"}, "b": {"/w", "/w/src"}}),
    ("cd src || b", {"b": {"/w"}}),  # only where the cd failed
    ("! cd src && b", {"b": {"/w"}}),
    ("cd src && cd pkg && a", {"a": {"/w/src/pkg"}}),
    ("cd src; a", {"a": {"/w", "/w/src"}}),
    ("{ cd src; } && a", {"a": {"/w/src"}}),
    ("{ cd src; a; } && b", {"a": {"/w", "/w/src"}, "b": {"/w", "/w/src"}}),
    ("( cd src ) && a", {"a": {"/w"}}),
    ("cd src | a && b", {"a": {"/w"}, "b": {"/w"}}),
    ("builtin cd src && a", {"a": {"/w/src"}}),
    ("command cd src && a", {"a": {"/w/src"}}),
    ("bash -c 'cd src && a'; b", {"a": {"/w/src"}, "b": {"/w"}}),
    ("cd /abs && a", {"a": {"/abs"}}),
    ("cd -P src && a", {"a": {"/w/src"}}),
    ("cd -- src && a", {"a": {"/w/src"}}),
    ("cat <<'EOF' && cd src && a\nx\nEOF\nb", {"cat": {"/w"}, "a": {"/w/src"}, "b": {"/w", "/w/src"}}),
])
def test_each_command_runs_in_the_folders_bash_lists_may_leave(source, expected):
    assert cwds_of(source) == expected


@pytest.mark.parametrize("source,words", [
    ("timeout 5 cd src && a", "changes no folder"),
    ("env cd src", "changes no folder"),
    ("nice cd src", "changes no folder"),
    ("command -v cd src && a", "changes no folder"),
    ("find . -exec cd {} \\;", "changes no folder"),
    ("printf x | xargs cd", "changes no folder"),
    ("cd -x src", "`cd` needs exactly one"),
    ("cd -- -x", "./-x"),
    ("cd a; cd b; cd c; cd d; cd e; ls", "more than 16 folders"),
])
def test_cd_the_gate_cannot_follow_is_refused(source, words):
    with pytest.raises(ShellDeny) as info:
        analyze(source, "/w")
    assert words in str(info.value)


def test_the_folder_set_is_bounded_however_many_cd_a_command_holds():
    with pytest.raises(ShellDeny, match="more than 16 folders"):
        analyze("cd a;" * 5000 + "ls", "/w")
    assert cwds_of("cd .;" * 5000 + "ls")["ls"] == {"/w"}


@pytest.mark.parametrize("source,words", [
    ("bash -o keyword -c ls", "only options that make the shell stricter"),
    ("bash -o physical -c ls", "only options"),
    ("bash +o posix -c ls", "only options"),
    ("bash -o -c ls", "only options"),
    ("bash -o", "only options"),
    ("bash -k -c ls", "not allowed"),
    ("bash -O extglob -c ls", "not allowed"),
    ("BASH_ENV=x.sh bash -c ''", "read by `bash` itself"),
    ("ENV=x.sh sh -c ''", "read by `sh` itself"),
    ("env BASH_ENV=x.sh bash -c ls", "read by `bash` itself"),
    ("PS4=x bash -xc ls", "read by `bash` itself"),
    ("CDPATH=/ bash -c 'cd etc'", "read by `bash` itself"),
    ("BASH_FOO=1 bash -c ls", "read by `bash` itself"),
    ("PYTHONHASHSEED=0 bash -c ''", "runs no command"),
    ("echo {PATH}>/dev/null", "NAME"),
    ("echo {fd}</etc/hosts", "NAME"),
    ("cat {x}<<'EOF'\nx\nEOF", "NAME"),
    ("ls )" + ")" * 100_000, "could not be parsed"),
    ("<" * 100_000, "took too long to parse"),
    ("a=(" * 30_000, "took too long to parse"),
    ("{ " * 3000 + "ls" + "; }" * 3000, "nests"),
    ("x" * (2 << 20), "longer than"),
])
def test_shell_options_variables_descriptors_and_hostile_input_are_refused(source, words):
    with pytest.raises(ShellDeny) as info:
        analyze(source, "/w")
    assert words in str(info.value)


@pytest.mark.parametrize("source", [
    "bash -o errexit -o pipefail -c 'a | b'", "bash -eux -c a", "LANG=C bash -c a", "PYTHONHASHSEED=0 bash -c a",
    "echo {x} >/dev/null", "{ a; }>/dev/null", "( a )>/dev/null",
])
def test_harmless_shell_forms_stay_allowed(source):
    assert analyze(source, "/w").commands


def test_a_sub_shell_s_redirections_keep_their_stream_state():
    assert analyze("bash -c 'printf x 1<a >/dev/stdout'", "/w").streams_redirected


def test_a_redirection_hung_on_a_list_is_judged_where_its_command_runs():
    """tree-sitter hangs `cd /dev && echo x > fd/3`'s redirection on the list; bash gives it to echo, in /dev."""
    (write,) = analyze("cd /dev && echo x > fd/3", "/w").writes
    assert write.cwds == ("/dev",)
    (write,) = analyze("{ cd /dev; echo x; } > out", "/w").writes
    assert write.cwds == ("/w",)  # a group's redirection is opened before the group runs


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet="ab $(){}[]<>|&;'\"`\\\n#=!*-~", max_size=40))
def test_stopping_the_parse_at_its_first_error_refuses_exactly_what_a_full_parse_would(source):
    """The parse stops as soon as tree-sitter reports an error (its recovery is what takes seconds on
    hostile input); that must never refuse a command a full parse reads without error."""
    from runtime.gate import shell
    from runtime.gate.treesitter import bash_parser

    full = bash_parser().parse(source.encode()).root_node.has_error
    short, shell._SHORT = shell._SHORT, 0  # short commands skip the callbacks: take them anyway
    try:
        stopped = shell._parse(source.encode()).root_node.has_error
    except ShellDeny:
        stopped = True
    finally:
        shell._SHORT = short
    assert stopped == full
