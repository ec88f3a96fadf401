"""What the shell analysis sees: commands after unwrapping, writes, and refusals."""

import pytest

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
    assert [(w.target, w.cwds) for w in script.writes] == [("out.txt", ("/w", "/w/src"))]


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
    ("for x in a; do id; done", "loops"),
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
    ("timeout 5 pytest *", "could expand to option names of `timeout`"),
    ("ls -*", "could expand to option names"),
    ("cat <<EOF\n$(id)\nEOF", "command substitution"),
    ("cat < /dev/tcp/h/80", "network redirections"),
    ("exec 3<>/dev/tcp/h/80", "could not be parsed"),
    ("ls &&", "could not be parsed"),
    ("cd", "`cd` needs exactly one"),
    ("cd -", "`cd` needs exactly one"),
    ("cd ~", "`cd` needs exactly one"),
    ("find . -delete", "writes or deletes"),
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
