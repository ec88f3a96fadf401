"""Which files a known program writes, read from its arguments (`runtime.gate.file_writes`)."""

import shlex
from types import SimpleNamespace

import pytest

from runtime.gate.effects import Seen
from runtime.gate.file_writes import WRITERS, _options, written_by
from runtime.lang.grammar import Grammar
from runtime.lang.shell_types import Command


def cmd(line, cwds=("/w",)):
    name, *args = shlex.split(line)
    return Command(name, [Seen(a) for a in args], [], cwds, "", False)


def targets(line, rule_sets=()):
    """(name, kind, into) of each target ``line`` writes."""
    return [(t.word.value, t.kind, t.into) for t in written_by(cmd(line), list(rule_sets))]


def values(found):
    return {k: [w.value for w in v] for k, v in found.items()}


# -- GNU getopt ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,short,long,operands,options", [
    ("a b", "", (), ["a", "b"], {}),
    ("-ab x", "", (), ["x"], {"-a": [""], "-b": [""]}),
    ("-ab x y", "b", (), ["y"], {"-a": [""], "-b": ["x"]}),
    ("-abx y", "b", (), ["y"], {"-a": [""], "-b": ["x"]}),  # the rest of the cluster is the value
    ("--name=v x", "", (), ["x"], {"--name": ["v"]}),
    ("--name v x", "", ("--name",), ["x"], {"--name": ["v"]}),
    ("--name v x", "", (), ["v", "x"], {"--name": [""]}),  # a long option not declared takes no value
    ("--name", "", ("--name",), [], {"--name": [""]}),
    ("-- -a --b", "a", ("--b",), ["-a", "--b"], {}),
    ("- -a", "", (), ["-"], {"-a": [""]}),  # `-` alone is an operand (stdin)
    ("-t d -t e", "t", (), [], {"-t": ["d", "e"]}),
])
def test_options_read_like_getopt(args, short, long, operands, options):
    found_operands, found = _options([Seen(a) for a in shlex.split(args)], short, frozenset(long))
    assert [w.value for w in found_operands] == operands
    assert values(found) == options


def test_a_word_only_the_run_knows_is_an_operand_even_when_it_looks_like_an_option():
    unknown = Seen("-$X", False)
    operands, found = _options([unknown, Seen("-v")], "", frozenset())
    assert operands == [unknown] and list(found) == ["-v"]


@pytest.mark.parametrize("args,operands,options", [
    # GNU getopt_long takes any unambiguous prefix of a long option: `--target` is `--target-directory`.
    ("--target d a", ["a"], {"--target-directory": ["d"]}),
    ("--t=d a", ["a"], {"--target-directory": ["d"]}),
    ("--suf .b a", ["a"], {"--suffix": [".b"]}),
    ("--strip a b", ["a", "b"], {"--strip": [""]}),  # a whole name is that option, though longer ones start so
    ("--s a b", ["a", "b"], {"--s": [""]}),  # ambiguous: getopt refuses it, and nothing runs
    ("--nosuch a b", ["a", "b"], {"--nosuch": [""]}),
])
def test_long_options_are_read_by_any_unambiguous_prefix(args, operands, options):
    valued = frozenset({"--target-directory", "--suffix", "--strip-program"})
    others = frozenset({"--strip", "--verbose", "--no-target-directory"})
    found_operands, found = _options([Seen(a) for a in shlex.split(args)], "tS", valued, others)
    assert [w.value for w in found_operands] == operands
    assert values(found) == options


# -- the programs whose job is to write ------------------------------------------------------------

@pytest.mark.parametrize("line,expected", [
    ("rm -rf a b", [("a", "remove", None), ("b", "remove", None)]),
    ("rm -- -f", [("-f", "remove", None)]),
    ("rmdir -p d", [("d", "remove", None)]),
    ("unlink f", [("f", "remove", None)]),
    ("rm", []),
    ("touch -d '1 day ago' f", [("f", "write", None)]),
    ("touch -r ref f", [("f", "write", None)]),
    ("touch -t 202401010000 f", [("f", "write", None)]),
    ("touch --reference ref f", [("f", "write", None)]),
    ("touch --date=yesterday f", [("f", "write", None)]),
    ("mkdir -p a/b c", [("a/b", "folder", None), ("c", "folder", None)]),
    ("mkdir -m 755 d", [("d", "folder", None)]),
    ("mkdir -pm755 d", [("d", "folder", None)]),
    ("mkdir --mode 755 d", [("d", "folder", None)]),
    ("tee -a f g", [("f", "write", None), ("g", "write", None)]),
    ("truncate -s 0 f", [("f", "write", None)]),
    ("truncate -r ref f", [("f", "write", None)]),
    ("shred -n 3 -u f", [("f", "write", None)]),
    ("shred --iterations 3 f", [("f", "write", None)]),
])
def test_programs_that_write_their_operands(line, expected):
    assert targets(line) == expected


@pytest.mark.parametrize("line,expected", [
    ("chmod 755 f g", ["f", "g"]),  # the first operand is the mode
    ("chmod -R u+x d", ["d"]),
    ("chmod --reference=r f", ["f"]),  # no mode: every operand is a file
    ("chown u:g f", ["f"]),
    ("chgrp -R g d", ["d"]),
    ("chmod 755", []),
])
def test_chmod_and_chown_write_the_files_after_the_mode(line, expected):
    assert [t[0] for t in targets(line)] == expected


@pytest.mark.parametrize("line,expected", [
    ("cp a b", [("b", "write", "a")]),
    ("cp a b dir/", [("dir/", "write", "a"), ("dir/", "write", "b")]),
    ("cp -r src/ dir", [("dir", "write", "src")]),
    ("cp -t dir a b", [("dir", "write", "a"), ("dir", "write", "b")]),
    ("cp -rt dir a", [("dir", "write", "a")]),
    ("cp --target-directory dir a", [("dir", "write", "a")]),
    ("cp --target-directory=dir a", [("dir", "write", "a")]),
    ("cp -T a b", [("b", "write", None)]),  # never into a folder
    ("cp --no-target-directory a b", [("b", "write", None)]),
    ("cp -S .bak a b", [("b", "write", "a")]),
    ("cp --backup=numbered a b", [("b", "write", "a")]),
    ("cp a", []),
    ("mv a b", [("b", "write", "a"), ("a", "remove", None)]),
    ("mv -t d a b", [("d", "write", "a"), ("d", "write", "b"), ("a", "remove", None), ("b", "remove", None)]),
    ("mv a", []),
    ("ln -s t l", [("l", "write", "t")]),
    ("ln -s dir/t", [("t", "write", None)]),  # a link named like its target, where ln runs
    ("ln -s dir/t/", [("t", "write", None)]),
    ("install -m 644 a d", [("d", "write", "a")]),
    ("install -o root -g root a d", [("d", "write", "a")]),
    ("install -d a b", [("a", "folder", None), ("b", "folder", None)]),
    ("install -dm 755 a", [("a", "folder", None)]),
])
def test_copies_write_their_destination_and_moves_remove_their_sources(line, expected):
    assert targets(line) == expected


@pytest.mark.parametrize("line,expected", [
    # `--backup[=CONTROL]`, `--preserve[=ATTR_LIST]`, `--reflink[=WHEN]`, `--context[=CTX]` (cp --help): a
    # value only after `=`; the next word is an operand.
    ("cp --backup a b", [("b", "write", "a")]),
    ("cp --preserve a b", [("b", "write", "a")]),
    ("cp --reflink a b", [("b", "write", "a")]),
    ("cp --context a b", [("b", "write", "a")]),
    ("cp --backup --suffix .orig a b", [("b", "write", "a")]),
    ("cp --sparse always a b", [("b", "write", "a")]),  # `--sparse=WHEN`, `--no-preserve=ATTR_LIST`: required
    ("cp --no-preserve mode a b", [("b", "write", "a")]),
    ("cp --target docs a", [("docs", "write", "a")]),  # `--target` is `--target-directory`
    ("cp --no-target a b", [("b", "write", None)]),
    ("mv --backup a b", [("b", "write", "a"), ("a", "remove", None)]),
    ("mv --suffix .x a b", [("b", "write", "a"), ("a", "remove", None)]),
    ("mv --targ d a", [("d", "write", "a"), ("a", "remove", None)]),
    ("ln --backup -s t l", [("l", "write", "t")]),
    ("install --backup a d", [("d", "write", "a")]),
    ("install --context a d", [("d", "write", "a")]),
    ("install --strip-program strip a d", [("d", "write", "a")]),
    ("install --strip a d", [("d", "write", "a")]),
    ("install --mode 644 a d", [("d", "write", "a")]),
    ("mkdir --context d", [("d", "folder", None)]),  # `--context[=CTX]`
    ("mkdir --mo 755 d", [("d", "folder", None)]),
    ("touch --time atime f", [("f", "write", None)]),  # `--time=WORD`: required
    ("tee --output-error f", [("f", "write", None)]),  # `--output-error[=MODE]`
    ("shred --remove f", [("f", "write", None)]),  # `--remove[=HOW]`
    ("rm --interactive f", [("f", "remove", None)]),  # `--interactive[=WHEN]`
])
def test_long_options_take_a_separate_value_only_when_their_program_says_so(line, expected):
    assert targets(line) == expected


@pytest.mark.parametrize("line,expected", [
    ("chmod -w f", ["f"]),  # `-w` is a mode (chmod accepts `-rwxXst...` as one), not an option
    ("chmod -x,u+r f g", ["f", "g"]),
    ("chmod -R -w d", ["d"]),
    ("chmod -Rv 755 d", ["d"]),
    ("chmod --reference r f", ["f"]),  # `--reference=RFILE`: required
    ("chown --from root:root u f", ["f"]),
    ("chown --reference r f", ["f"]),
])
def test_chmod_modes_that_look_like_options_and_valued_long_options(line, expected):
    assert [t[0] for t in targets(line)] == expected


@pytest.mark.parametrize("line,expected", [
    ("sort --random-source r -o out in", ["out"]),
    ("sort --files0-from f -o out", ["out"]),
    ("sort --out out in", ["out"]),
    ("patch -g 1 -o out", ["out"]),
    ("patch --strip 1 --output out", ["out"]),
    ("patch --version-control never -o out", ["out"]),
])
def test_output_options_are_found_past_other_valued_options(line, expected):
    assert [t[0] for t in targets(line)] == expected


def test_a_copy_of_an_unknown_source_has_no_name_inside_the_folder():
    found = written_by(Command("cp", [Seen("$SRC", False), Seen("dest")], [], ("/w",), "", False), [])
    assert [(t.word.value, t.into) for t in found] == [("dest", None)]
    (link,) = written_by(Command("ln", [Seen("-s"), Seen("$T", False)], [], ("/w",), "", False), [])
    assert link.word.static is False


def test_dd_writes_what_of_names():
    assert targets("dd if=a of=b bs=1") == [("b", "write", None)]
    assert targets("dd if=a") == []
    (target,) = written_by(Command("dd", [Seen("of=$X", False)], [], ("/w",), "", False), [])
    assert target.word.static is False


@pytest.mark.parametrize("line,expected", [
    ("sed -i s/a/b/ f", ["f"]),
    ("sed -i s/a/b/ f g", ["f", "g"]),
    ("sed -i.bak s/a/b/ f", ["f"]),
    ("sed -ie s/a/b/ f", ["f"]),  # `-ie` is -i with the backup suffix `e`
    ("sed -n -i s/a/b/ f", ["f"]),
    ("sed -ni s/a/b/ f", ["f"]),
    ("sed -E -i s/a/b/ f", ["f"]),
    ("sed --in-place s/a/b/ f", ["f"]),
    ("sed --in-place=.bak s/a/b/ f", ["f"]),
    ("sed -e s/a/b/ -i f", ["f"]),  # the script came with -e: every operand is a file
    ("sed -i -e s/a/b/ -e s/c/d/ f", ["f"]),
    ("sed -es/a/b/ -i f", ["f"]),
    ("sed --expression=s/a/b/ -i f", ["f"]),
    ("sed --expression s/a/b/ -i f", ["f"]),
    ("sed -f x.sed -i f", ["f"]),
    ("sed --file x.sed -i f", ["f"]),
    ("sed -l 80 -i s/x/y/ f", ["f"]),
    ("sed -l80 -i s/x/y/ f", ["f"]),
    ("sed --line-length 80 -i s/x/y/ f", ["f"]),
    ("sed -i -- s/a/b/ -f", ["-f"]),
    ("sed s/a/b/ f", []),  # not in place: it prints
    ("sed -n p f", []),
    ("perl -pi -e s/a/b/ f", ["f"]),
    ("perl -i -pe s/a/b/ f", ["f"]),
    ("perl -i.bak -pe s/a/b/ f", ["f"]),
    ("perl -i -E say f", ["f"]),
    ("perl -I lib -i -pe x f", ["f"]),
    ("perl -Ilib -i -pe x f", ["f"]),
    ("perl -pe s/a/b/ f", []),
    # perl's -x, -M, -m take only an attached value: the next word is not theirs.
    ("perl -x -i -pe s/a/b/ f", ["f"]),
    ("perl -M -i -pe s/a/b/ f", ["f"]),
    ("perl -Mstrict -i -pe s/a/b/ f", ["f"]),
    ("perl -l -i -pe s/a/b/ f", ["f"]),
    ("perl -0777 -i -pe s/a/b/ f", ["f"]),
    # GNU sed takes any unambiguous prefix of a long option.
    ("sed --in s/a/b/ f", ["f"]),
    ("sed --in-pl=.bak s/a/b/ f", ["f"]),
    ("sed --expr s/a/b/ -i f", ["f"]),
    ("sed --fi x.sed -i f", ["f"]),
    ("sed --line 80 -i s/x/y/ f", ["f"]),
])
def test_in_place_editors_write_the_files_after_their_script(line, expected):
    found = written_by(cmd(line), [])
    assert [t.word.value for t in found] == expected
    assert all(t.kind == "write" and t.source == f"`{line.split()[0]} -i`" for t in found)


@pytest.mark.parametrize("line,expected", [
    ("find . -delete", [(".", "remove")]),
    ("find -delete", [(".", "remove")]),  # no start: the working folder
    ("find a b -maxdepth 1 -delete", [("a", "remove"), ("b", "remove")]),
    ("find . -depth -mindepth 2 -xdev -delete", [(".", "remove")]),
    ("find src -name x -delete", [("src", "inside")]),  # a filter: only what matches, below src
    ("find . -type f -delete", [(".", "inside")]),
    ("find ( -name x ) -delete", [(".", "inside")]),
    ("find ! -name x -delete", [(".", "inside")]),
    ("find . -name x", []),
])
def test_find_delete_removes_below_its_starting_points(line, expected):
    assert [(t[0], t[1]) for t in targets(line)] == expected


def test_find_print_options_write_the_file_they_name():
    assert targets("find . -fprint out") == [("out", "write", None)]
    assert targets("find src -fls l -fprint0 p -fprintf f %p") == [("l", "write", None), ("p", "write", None),
                                                                     ("f", "write", None)]
    assert targets("find . -fprint") == []


@pytest.mark.parametrize("line,expected", [
    ("sort -o out in", ["out"]),
    ("sort -oout in", ["out"]),
    ("sort --output=out in", ["out"]),
    ("sort --output out in", ["out"]),
    ("sort -ro out in", ["out"]),
    ("sort -k 2 -o out in", ["out"]),
    ("sort -t , -o out in", ["out"]),
    ("sort -T /tmp in", []),
    ("sort in", []),
    ("patch -o out", ["out"]),
    ("patch -r rej", ["rej"]),
    ("patch --reject-file=rej", ["rej"]),
    ("patch -p1 -i x.diff", []),  # patch without -o writes what the diff names: judged elsewhere
    ("patch -d sub -p 1", []),
])
def test_programs_that_write_only_what_an_option_names(line, expected):
    assert [t[0] for t in targets(line)] == expected


@pytest.mark.parametrize("line,expected", [
    ("uniq in out", ["out"]),
    ("uniq -c in out", ["out"]),
    ("uniq -f 1 in out", ["out"]),
    ("uniq --skip-chars 2 in out", ["out"]),
    ("uniq in", []),
    ("uniq", []),
])
def test_uniq_writes_its_second_operand(line, expected):
    assert [t[0] for t in targets(line)] == expected


def test_targets_keep_the_command_s_folders():
    found = written_by(cmd("cp a b", cwds=("/w", "/w/src")), [])
    assert [t.cwds for t in found] == [("/w", "/w/src")]


def test_every_writer_is_read_by_its_own_reader():
    assert {"rm", "cp", "mv", "ln", "install", "tee", "touch", "mkdir", "sed", "perl", "find", "dd"} <= set(WRITERS)


# -- other programs, through their grammars --------------------------------------------------------

def rule_set(program, grammar, subcommands=()):
    rule = SimpleNamespace(subcommands=[tuple(s.split()) for s in subcommands], grammar=Grammar(grammar, program))
    return SimpleNamespace(rules_for={program: [rule]}.get)


TOOL = {"options": {"--out": "path-in-scope", "--cache": "folder-in-scope", "-o": "path-in-scope", "-v": "flag",
                    "--in": "path"},
        "positionals": ["path..."]}


@pytest.mark.parametrize("line,expected", [
    ("tool --out o x", [("o", "write")]),
    ("tool --out=o x", [("o", "write")]),
    ("tool -vo o", [("o", "write")]),
    ("tool --cache c", [("c", "folder")]),
    ("tool --in i x", []),  # a path read
    ("tool x y", []),
    ("tool --bogus x", []),  # an option the grammar does not know: nothing read
    ("tool --out=o* x", []),  # a glob attached to its option: judged by its text elsewhere
])
def test_other_programs_write_the_path_options_their_grammar_types_as_writes(line, expected):
    assert [(t[0], t[1]) for t in targets(line, [rule_set("tool", TOOL)])] == expected


def test_a_grammar_write_names_the_option_in_its_source():
    (target,) = written_by(cmd("tool --out o"), [rule_set("tool", TOOL)])
    assert target.source == "`tool --out`"


def test_a_rule_with_subcommands_reads_only_its_subcommands_words():
    sets = [rule_set("tool", TOOL, ["build"])]
    assert targets("tool build --out o", sets) == [("o", "write", None)]
    assert targets("tool run --out o", sets) == []


def test_a_grammar_is_not_read_when_a_word_is_known_only_at_run_time():
    words = [Seen("--out"), Seen("o"), Seen("$X", False)]
    assert written_by(Command("tool", words, [], ("/w",), "", False), [rule_set("tool", TOOL)]) == []


def test_a_program_without_a_rule_or_reader_writes_nothing_the_gate_can_name():
    assert targets("tool --out o") == []
    assert targets("other --out o", [rule_set("tool", TOOL)]) == []
    assert targets("echo x") == []


def test_a_writer_s_own_reader_wins_over_its_grammar():
    sets = [rule_set("rm", {"options": {"-r": "flag"}, "positionals": ["path..."]})]
    assert targets("rm -r a", sets) == [("a", "remove", None)]
