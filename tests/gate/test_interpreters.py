"""Interpreter one-liners (`runtime.gate.interpreters`): which command lines run code given inline."""

import pytest

from runtime.gate.interpreters import _sed_address, _sed_options, _sed_safe, inline_code


def why(line):
    name, *args = line.split(" ") if line else [""]
    return inline_code(name, args)


@pytest.mark.parametrize("line,flag", [
    ("python -c x", "-c"),
    ("python3 -c x", "-c"),
    ("python3.11 -c x", "-c"),
    ("pypy3 -c x", "-c"),
    ("python -Bc x", "-c"),  # inside a cluster
    ("python -qc x", "-c"),
    ("python -E -s -c x", "-c"),
    ("python -W ignore -c x", "-c"),  # -W takes the next word: the -c after it is still seen
    ("python -Wignore -c x", "-c"),
    ("python -X dev -c x", "-c"),
    ("perl -e x", "-e"),
    ("perl -E x", "-E"),
    ("perl -ne x f", "-e"),
    ("perl -Ilib -e x", "-e"),
    ("perl -I lib -e x", "-e"),
    ("perl -Mstrict -e 1", "-e"),
    ("ruby -e x", "-e"),
    ("ruby -rjson -e x", "-e"),
    ("ruby -r json -e x", "-e"),
    ("node -e x", "-e"),
    ("node -p x", "-p"),
    ("node -r mod -e x", "-e"),
    ("nodejs -e x", "-e"),
    ("bun -e x", "-e"),
    ("php -r x", "-r"),
    ("php -R x", "-R"),
    ("php -B x", "-B"),
    ("php -E x", "-E"),
    ("php -d a=b -r x", "-r"),
    ("lua -e x", "-e"),
    ("luajit -e x", "-e"),
    ("Rscript -e x", "-e"),
])
def test_inline_code_options_are_flagged(line, flag):
    reason = why(line)
    assert reason is not None and f"{line.split()[0]} {flag}`" in reason and "runs inline code" in reason


@pytest.mark.parametrize("line,flag", [
    # perlrun: -l[octnum], -0[digits], -C[number/list], -D[flags] take only an attached value, and the cluster
    # goes on after it; -d[t][:MOD], -x[dir], -i[ext], -M/-m[module] take the rest of the word, never the next.
    ("perl -lne print", "-e"),
    ("perl -lpe s/a/b/ f", "-e"),
    ("perl -l -e x", "-e"),
    ("perl -l0 -e x", "-e"),
    ("perl -l012ne x", "-e"),
    ("perl -0 -e x", "-e"),
    ("perl -0777 -ne x f", "-e"),
    ("perl -00ne x", "-e"),
    ("perl -0x1F -e x", "-e"),
    ("perl -d -e x", "-e"),
    ("perl -dt -e x", "-e"),
    ("perl -d:Trace -e x", "-e"),
    ("perl -de x", "-e"),
    ("perl -x -e x", "-e"),
    ("perl -xdir -e x", "-e"),
    ("perl -i -pe x f", "-e"),
    ("perl -i.bak -pe x f", "-e"),
    ("perl -M -e x", "-e"),
    ("perl -C -e x", "-e"),
    ("perl -CSD -e x", "-e"),
    ("perl -D -e x", "-e"),
    ("php -r x -f y.php", "-r"),
    ("php --run x", "--run"),
    ("php --run=x", "--run"),
    ("php --process-code x", "--process-code"),
    ("php --process-begin x", "--process-begin"),
    ("php --process-end x", "--process-end"),
    ("php --define a=b -r x", "-r"),
    ("python --check-hash-based-pycs always -c x", "-c"),
])
def test_inline_code_is_found_past_options_with_attached_or_separate_values(line, flag):
    reason = why(line)
    assert reason is not None and f"{line.split()[0]} {flag}`" in reason and "runs inline code" in reason


@pytest.mark.parametrize("line", [
    "php -f x.php", "php -fx.php", "php -d a=b -f x.php", "php --file x.php", "php --file=x.php", "php -F x.php",
    "perl -Mstrict x.pl", "perl -Mfeature=say x.pl", "perl -d:Devel x.pl", "perl -ibackup x.pl", "perl -l x.pl",
    "perl -0777 x.pl", "perl -x x.pl", "perl -I lib x.pl",
])
def test_a_script_file_named_by_an_option_or_after_attached_values_is_left_to_the_rules(line):
    assert why(line) is None


@pytest.mark.parametrize("line,option", [
    ("node --eval x", "--eval"),
    ("node --eval=x", "--eval"),
    ("node --print x", "--print"),
    ("node --print=x", "--print"),
    ("nodejs --eval x", "--eval"),
    ("bun --eval x", "--eval"),
    ("bun --print=x", "--print"),
])
def test_inline_code_long_options_are_flagged(line, option):
    assert why(line) == f"`{line.split()[0]} {option}` runs inline code"


@pytest.mark.parametrize("line", ["python -", "python -B -", "perl -", "ruby -", "php -", "node -", "lua -"])
def test_a_script_read_from_stdin_is_flagged(line):
    assert why(line) == f"`{line.split()[0]} -` runs a script read from stdin"


@pytest.mark.parametrize("line", ["python", "python -B", "python -W ignore", "perl", "ruby", "node", "nodejs", "php", "lua",
                                  "Rscript", "tclsh", "python -- -c"])
def test_no_script_at_all_reads_code_from_stdin(line):
    assert why(line) == f"`{line.split()[0]}` with no script reads code from stdin"


@pytest.mark.parametrize("line", [
    "python script.py", "python script.py -c x",  # words after the script are the script's
    "python -m pytest", "python -mpytest -c x", "python -B -m pytest",  # a module: the rule's subcommands decide
    "python -I script.py", "python -OO x.py", "python -Xdev x.py", "python -W ignore x.py",
    "python --version", "python -V", "python -h", "python --help", "node --version",
    "perl script.pl", "perl -I lib script.pl", "perl -M strict x.pl",
    "ruby x.rb", "ruby -r json x.rb", "node x.js", "node --inspect x.js", "node -r ts-node/register x.ts",
    "php -c php.ini x.php", "lua -l mod x.lua", "Rscript x.R", "tclsh x.tcl",
    "bun run x", "bun", "deno", "deno run x.ts",  # bun and deno with no script do not read stdin
    "python3x -c x", "ls -c", "grep -e x", "make -e",  # not interpreters
])
def test_a_script_file_or_a_plain_program_runs_no_inline_code(line):
    assert why(line) is None


def test_deno_eval_is_inline_code():
    assert why("deno eval x") == "`deno eval` runs inline code"
    assert why("deno run eval") is None


@pytest.mark.parametrize("line", ["awk {print}", "awk -F: {print $1} f", "gawk BEGIN{system(x)}", "mawk 1", "nawk -v a=1 {print}",
                                  "awk"])
def test_awk_programs_on_the_command_line_are_flagged(line):
    reason = why(line)
    assert reason is not None and reason.startswith(f"`{line.split()[0]}` programs given on the command line")


@pytest.mark.parametrize("line", ["awk -f x.awk f", "gawk --file=x.awk", "mawk --file x.awk", "nawk -F: -f x.awk"])
def test_awk_running_a_program_file_is_left_to_the_rules(line):
    assert why(line) is None


# -- sed -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["s/a/b/", "f"], ["-n", "/x/p", "f"], ["-e", "s/a/b/", "-e", "1d", "f"], ["-ne", "p", "f"], ["-es/a/b/", "f"],
    ["--expression=s/a/b/", "f"], ["--expr=s/a/b/", "f"], ["--e=p"], ["--expression", "p", "f"],
    ["-i", "s/a/b/", "f"], ["--in-place", "s/a/b/", "f"], ["--in", "s/a/b/", "f"],
    ["-l", "5", "p"], ["-l5", "p"], ["--line-length=5", "p"], ["--line-length", "5", "p"],
    ["-z", "p"], ["-s", "-u", "-r", "-E", "p"], ["--posix", "p"], ["--debug", "p"], ["--null-data", "p"],
    ["--", "p", "f"], ["p;d;q"], ["p\nd"], ["1,/x/d"], ["$p"], ["10q"], ["="], ["   "],
    ["s|a|b|g"], ["s.a.b."], ["s/a\\/b/c/2"], ["/a/,/b/s/x/y/gI"], ["/a\\/b/p"], ["s/x/\\n/"], ["s/a/b/ip"],
])
def test_sed_scripts_that_only_print_delete_quit_or_substitute_are_allowed(args):
    assert inline_code("sed", args) is None


@pytest.mark.parametrize("args", [
    ["s/a/b/w out", "f"], ["s/a/b/e", "f"], ["e ls"], ["1e ls"], ["r /etc/passwd"], ["R /etc/passwd"], ["w out"],
    ["W out"], ["s/a/b/;w f"], ["p\nw f"], ["y/ab/cd/"], ["1!d"], ["/x/{p}"], ["a text"], ["i text"], ["c text"],
    ["s/a/b/m"], ["s/a/b"], ["s/a\\"], ["sxaxbx"], ["s a b "], ["s\\a\\b\\"], ["s_a_b_"], ["1,d"], ["/abc"],
    ["0~2p"], ["s/a/b/ p"], ["l"], ["n"], ["F"], ["z"],
    ["-e", "p", "-e", "w out"],  # every script given is read
    ["--expression", "w x", "f"], ["--sandbox", "s/a/b/e"],
])
def test_sed_scripts_that_could_write_files_or_run_commands_are_flagged(args):
    reason = inline_code("sed", args)
    assert reason is not None and reason.startswith("the sed script") and "may write files or run commands" in reason


@pytest.mark.parametrize("args,words", [
    ([], "needs its script"),
    (["-n"], "needs its script"),
    (["-f", "x.sed", "f"], "`sed -f` runs a script file"),
    (["-nf", "x.sed"], "`sed -f` runs a script file"),
    (["--file=x.sed"], "`sed --file` runs a script file"),
    (["--fi", "x.sed"], "`sed --file` runs a script file"),  # getopt_long takes an unambiguous prefix
    (["-i.bak", "s/a/b/", "f"], "keeps a backup at FILE.bak"),
    (["-in", "s/a/b/", "f"], "keeps a backup at FILEn"),  # the rest of the cluster is the suffix
    (["--in-place=.bak", "s/a/b/"], "keeps a backup at FILE.bak"),
    (["--quiet=1", "p"], "`sed --quiet` takes no value"),
    (["--null=1", "p"], "`sed --null-data` takes no value"),
    (["-x", "p"], "`sed -x` is not an option"),
    (["-nx", "p"], "`sed -x` is not an option"),
    (["--bogus", "p"], "`sed --bogus` is not an option"),
    (["--s", "p"], "`sed --s` is not an option"),  # ambiguous: --separate, --silent, --sandbox
    (["--", "w x"], "may write files"),
])
def test_sed_options_the_gate_cannot_read_are_refused(args, words):
    reason = inline_code("sed", args)
    assert reason is not None and words in reason


def test_sed_options_are_split_from_scripts_and_operands():
    assert _sed_options(["-n", "-e", "p", "--expression=d", "-es/a/b/", "f", "g"]) == (["p", "d", "s/a/b/"], ["f", "g"])
    assert _sed_options(["-l", "5", "p", "f"]) == ([], ["p", "f"])
    assert _sed_options(["--", "-e", "f"]) == ([], ["-e", "f"])
    assert _sed_options(["-", "p"]) == ([], ["-", "p"])


def test_a_script_is_its_first_operand_only_without_e():
    assert inline_code("sed", ["-e", "p", "w out"]) is None  # `w out` is a file name here
    assert inline_code("sed", ["p", "w out"]) is None
    assert inline_code("sed", ["w out", "p"]) is not None


@pytest.mark.parametrize("part,safe", [
    ("p", True), ("d", True), ("q", True), ("=", True), ("", True), ("  p  ", True),
    ("5p", True), ("$d", True), ("/re/p", True), ("/re/,/end/d", True), ("1,$p", True), ("/a\\/b/p", True),
    ("s/a/b/", True), ("s/a/b/g", True), ("s/a/b/gI2", True), ("s/a/b/0", True), ("s#a/b#c#", True),
    ("s/a\\/b/c\\/d/", True),
    ("pp", False), ("pd", False), ("5", True), ("/re/", True),  # an address alone selects and does nothing
    ("w f", False), ("s/a/b/w f", False), ("s/a/b/e", False), ("s/a/b/M", False),
    ("s/a/b", False), ("s", False), ("s/", False), ("s/a\\", False), ("s/a\\\n/b/", False), ("sab", False),
    ("s a b ", False), ("s\ta\tb\t", False), ("s\\a\\b\\", False), ("s1a1b1", False), ("s_a_b_", False),
    ("1,p", False), ("/unclosed", False), ("/a\\", False), ("/a\\\n/p", False), ("1~2p", False), ("x", False),
])
def test_one_sed_command(part, safe):
    assert _sed_safe(part) is safe


def test_sed_scripts_of_many_blanks_are_scanned_once():
    """A regex once backtracked for minutes here; the scan is linear."""
    assert _sed_safe(" " * 100_000 + "p") is True
    assert _sed_safe("s" + " " * 100_000 + "x") is False
    assert _sed_safe("s/" + "\\ " * 50_000) is False
    assert _sed_safe("/" + "\\x" * 50_000) is False


@pytest.mark.parametrize("part,start,end", [
    ("$p", 0, 1), ("12p", 0, 2), ("/a/p", 0, 3), ("/a\\/b/p", 0, 6), ("p", 0, 0), ("", 0, 0), ("x,5p", 2, 3),
    ("/abc", 0, -1), ("/a\\", 0, -1), ("/a\\\nb/", 0, -1),
])
def test_sed_addresses_end_where_they_end(part, start, end):
    assert _sed_address(part, start) == end
