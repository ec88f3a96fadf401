"""The gate kinds (`runtime.gate.kinds`), each on its own: parameters read, and what each question is answered."""

from types import SimpleNamespace

import pytest

from runtime.gate.decision import ALLOW, DENY
from runtime.gate.kinds import Gate, PolicyError, all_gates
from runtime.gate.kinds.base import no_more, take_list
from runtime.gate.kinds.deny_tools import DenyTools
from runtime.gate.kinds.dep_files import DepFiles
from runtime.gate.kinds.egress import EgressAllowlist
from runtime.gate.kinds.no_git import NoGit
from runtime.gate.kinds.no_network import NoNetwork
from runtime.gate.kinds.read_only import ReadOnly
from runtime.gate.kinds.write_scope import GlobMatch, WriteDenylist, WriteWhitelist, holds_any, literal_prefixes
from runtime.lang.audience import AGENT, SESSION, phrase
from runtime.lang.shell_types import Command, Word
from runtime.manifests.kinds import GATE_KINDS


def ctx(folder=False, audience=AGENT, tools=()):
    return SimpleNamespace(policy=SimpleNamespace(audience=audience, tools=frozenset(tools)), folder=folder)


def command(line, assigns=(), via=""):
    name, *args = line.split()
    return Command(name, [Word(a) for a in args], list(assigns), ("/w",), via, False)


# -- base ------------------------------------------------------------------------------------------

def test_the_registry_holds_each_kind_under_its_name():
    gates = all_gates()
    assert set(gates) == set(GATE_KINDS) == {"deny-tools", "bash-allowlist", "write-whitelist", "write-denylist", "read-only", "no-git",
                          "dep-files", "no-network", "egress-allowlist", "mcp-allowlist", "secret-reads"}
    assert all(cls.kind == kind and issubclass(cls, Gate) for kind, cls in gates.items())


def test_only_the_kinds_that_grant_say_so():
    assert {kind for kind, cls in all_gates().items() if cls.grants} == {"bash-allowlist", "write-whitelist"}


@pytest.mark.parametrize("gate,answers", [
    (DenyTools("a", {"tools": []}), {"on_tool"}),
    (NoNetwork("a", {"programs": [], "tools": []}), {"on_tool", "on_command"}),
    (NoGit("a", {"programs": []}), {"on_command"}),
    (ReadOnly("a", {}), {"on_write", "on_command"}),
    (DepFiles("a", {"globs": [], "commands": []}), {"on_write", "on_command"}),
    (WriteWhitelist("a", {"globs": []}), {"on_write"}),
    (WriteDenylist("a", {"globs": []}), {"on_write"}),
    (EgressAllowlist("a", {"domains": [], "addresses": [], "ports": []}), set()),
])
def test_a_kind_answers_the_questions_it_overrides(gate, answers):
    assert {q for q in ("on_tool", "on_write", "on_command") if gate.answers(q)} == answers


def test_the_base_gate_has_no_opinion_and_takes_no_parameters():
    gate = Gate("atom", {})
    assert gate.atom == "atom"
    assert gate.on_tool("Bash", {}, ctx()) is None
    assert gate.on_write("/w/x", "x", ctx()) is None
    assert gate.on_command(command("ls"), ctx()) is None
    with pytest.raises(PolicyError, match=r"unexpected parameters \['x'\]"):
        Gate("atom", {"x": 1})


def test_a_gate_reads_a_copy_of_its_parameters():
    params = {"globs": ["src/**"]}
    WriteWhitelist("scope::files-whitelist", params)
    assert params == {"globs": ["src/**"]}


@pytest.mark.parametrize("value", [None, "src/**", ["a", 1], [None], {"a": 1}, 3, [["a"]]])
def test_take_list_wants_a_list_of_strings(value):
    params = {} if value is None else {"k": value}
    with pytest.raises(PolicyError, match="parameter `k` must be a list of strings"):
        take_list(params, "k")


def test_take_list_takes_the_key_out():
    params = {"k": ["a", "b"], "other": 1}
    assert take_list(params, "k") == ["a", "b"]
    assert params == {"other": 1}
    assert take_list({"k": []}, "k") == []


def test_no_more_refuses_leftover_parameters_by_name():
    no_more("kind", {})
    with pytest.raises(PolicyError, match=r"kind: unexpected parameters \['a', 'b'\]"):
        no_more("kind", {"b": 1, "a": 2})


@pytest.mark.parametrize("cls,params", [
    (DenyTools, {"tools": [], "extra": 1}),
    (NoNetwork, {"programs": [], "tools": [], "extra": 1}),
    (NoGit, {"programs": [], "extra": 1}),
    (DepFiles, {"globs": [], "commands": [], "extra": 1}),
    (WriteWhitelist, {"globs": [], "extra": 1}),
    (WriteDenylist, {"globs": [], "extra": 1}),
    (EgressAllowlist, {"domains": [], "addresses": [], "ports": [], "extra": 1}),
    (ReadOnly, {"extra": 1}),
])
def test_every_kind_refuses_parameters_it_does_not_know(cls, params):
    with pytest.raises(PolicyError, match="unexpected parameters"):
        cls("atom", params)


@pytest.mark.parametrize("cls,params", [
    (DenyTools, {}),
    (NoNetwork, {"programs": []}),
    (NoNetwork, {"tools": []}),
    (NoGit, {"programs": "git"}),
    (DepFiles, {"globs": []}),
    (DepFiles, {"commands": []}),
    (WriteWhitelist, {}),
    (WriteWhitelist, {"globs": ["src/**"], "control-files": "x"}),
    (WriteDenylist, {"globs": None}),
    (EgressAllowlist, {"addresses": [], "ports": []}),
])
def test_every_kind_refuses_a_missing_or_malformed_list(cls, params):
    with pytest.raises(PolicyError, match="must be a list of strings"):
        cls("atom", params)


# -- write scopes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("globs,rel,matches", [
    ([], "anything", False),
    ([], "", False),
    (["src/**"], "src/a/b.py", True),
    (["src/**"], "src", False),  # what is inside, not the folder itself
    (["src/**"], "srcx/a.py", False),
    (["src/**"], "lib/src/a.py", False),
    (["src"], "src/a.py", True),  # a folder's glob covers what is inside it
    (["*.py"], "a.py", True),
    (["*.py"], "d/a.py", False),  # `*` never crosses a `/`
    (["**/package.json"], "a/b/package.json", True),
    (["**/package.json"], "package.json", True),
    (["**/package.json"], "a/package.json.bak", False),
    (["docs/*.md", "tests/**"], "tests/x", True),
    (["docs/*.md", "tests/**"], "docs/a/b.md", False),
    (["src/a.py"], "src/a.py\n", False),  # a name with a newline is another file
])
def test_glob_match(globs, rel, matches):
    assert GlobMatch(globs).match(rel) is matches


def test_glob_match_matches_by_hand_and_leaves_classes_to_a_regex_compiled_when_first_used():
    plain = GlobMatch(["src/**"])
    assert plain.match("src/a") and not plain.match("srcx/a") and plain._regex is None
    classes = GlobMatch(["src/[ab].py"])
    assert classes._regex is None
    assert classes.match("src/a.py") and not classes.match("src/c.py")
    assert classes._regex is not None
    assert not GlobMatch([]).match("src/a")


@pytest.mark.parametrize("globs,prefixes", [
    (["src/gen/**"], ("src/gen",)),
    (["src/gen/*.py"], ("src/gen",)),
    (["docs/a.md"], ("docs/a.md",)),
    (["**/package.json"], ()),
    (["*.py", "a/b/**", "c"], ("a/b", "c")),
    ([], ()),
])
def test_literal_prefixes_are_the_folders_before_the_first_wildcard(globs, prefixes):
    assert literal_prefixes(globs) == prefixes


@pytest.mark.parametrize("rel,prefixes,holds", [
    ("", ("src",), True),  # the worktree holds everything
    ("", (), False),
    ("src", ("src/gen",), True),
    ("src/gen", ("src/gen",), True),
    ("src/gen/x", ("src/gen",), False),  # below it: inside, not holding it
    ("sr", ("src/gen",), False),
    ("src/ge", ("src/gen",), False),
    ("lib", ("src/gen", "lib/x"), True),
])
def test_holds_any_means_is_or_lies_above_a_prefix(rel, prefixes, holds):
    assert holds_any(rel, prefixes) is holds


def whitelist(globs, **more):
    return WriteWhitelist("scope::files-whitelist", {"globs": globs, **more})


@pytest.mark.parametrize("rel,folder,verdict", [
    ("src/a.py", False, ALLOW),
    ("src/a/b/c.py", False, ALLOW),
    ("docs/x/a.md", False, ALLOW),
    ("docs/x/a.txt", False, DENY),
    ("docs/a.md", False, DENY),
    ("srcx/a.py", False, DENY),
    ("src", False, DENY),  # a file named like the folder
    ("src", True, ALLOW),  # a folder above the scope may be made
    ("docs", True, ALLOW),
    ("docs/x", True, ALLOW),
    ("docs", False, DENY),
    ("", True, DENY),  # never the worktree itself
    ("other", True, DENY),
    ("docs/api", True, DENY),  # beside the scope's folder, not above it
])
def test_the_whitelist_allows_inside_the_scope_and_folders_above_it(rel, folder, verdict):
    d = whitelist(["src/**", "docs/x/*.md"]).on_write(f"/w/{rel}", rel, ctx(folder=folder))
    assert (d.verdict, d.rule, d.atom) == (verdict, "files-whitelist", "scope::files-whitelist")


def test_the_whitelist_denies_outside_the_worktree():
    d = whitelist(["**"]).on_write("/etc/passwd", None, ctx())
    assert d.verdict == DENY and d.rule == "outside-root" and "`/etc/passwd` is outside the worktree" in d.reason


def test_an_empty_whitelist_allows_no_writes_and_says_so():
    d = whitelist([]).on_write("/w/a", "a", ctx(folder=True))
    assert d.verdict == DENY and "(nothing: this task allows no writes)" in d.reason
    d = whitelist(["src/**", "tests/**"]).on_write("/w/a", "a", ctx())
    assert "you may write only inside: src/**, tests/**" in d.reason


def test_the_whitelist_keeps_the_control_files_a_task_names():
    assert whitelist(["**"], **{"control-files": [".claude/settings.json"]}).control_files == [".claude/settings.json"]
    assert whitelist(["**"]).control_files == []


@pytest.mark.parametrize("path", ["", "/etc/x", "../x", "a/../../x", "a/.."])
def test_a_control_file_must_be_a_relative_path_inside_the_worktree(path):
    with pytest.raises(PolicyError, match="must be a relative path inside the worktree"):
        whitelist(["**"], **{"control-files": [path]})


def test_a_control_file_may_hold_dots_that_are_not_a_parent():
    assert whitelist(["**"], **{"control-files": ["a/..b/c..", ".claude/x"]}).control_files == ["a/..b/c..", ".claude/x"]


@pytest.mark.parametrize("glob", ["/abs/**", "../x", "a/../b", "a\\b", "src/**x"])
def test_a_scope_glob_that_is_not_relative_and_clean_is_refused(glob):
    with pytest.raises(ValueError):
        whitelist([glob])


def denylist(globs):
    return WriteDenylist("scope::files-denylist", {"globs": globs})


@pytest.mark.parametrize("rel,folder,denied", [
    ("src/gen/a.py", False, True),
    ("src/gen", False, True),
    ("src", False, True),  # removing src removes src/gen
    ("", False, True),  # and the worktree holds it too
    ("src", True, False),  # making a folder above it changes nothing in it
    ("src/gen/sub", True, True),  # a folder inside the denied one
    ("src/other.py", False, False),
    ("src/generated", False, False),
    ("docs", False, False),
])
def test_the_denylist_denies_its_files_and_what_holds_them(rel, folder, denied):
    d = denylist(["src/gen/**"]).on_write(f"/w/{rel}", rel, ctx(folder=folder))
    if denied:
        assert d.verdict == DENY and d.rule == "files-denylist" and f"`{rel or '.'}` is in or holds" in d.reason
    else:
        assert d is None


def test_the_denylist_has_no_opinion_outside_the_worktree_or_without_globs():
    assert denylist(["**"]).on_write("/etc/x", None, ctx()) is None
    assert denylist([]).on_write("/w/a", "a", ctx()) is None
    assert denylist([]).on_write("/w", "", ctx()) is None


def test_the_denylist_never_grants():
    assert not WriteDenylist.grants
    assert all(denylist(["x/**"]).on_write(f"/w/{rel}", rel, ctx()) is None for rel in ("a", "y/x", "xx"))


# -- read-only -------------------------------------------------------------------------------------

def test_read_only_denies_every_write_naming_it():
    gate = ReadOnly("scope::read-only", {})
    d = gate.on_write("/w/src/a.py", "src/a.py", ctx())
    assert d.verdict == DENY and d.rule == "read-only" and "may not write `src/a.py`" in d.reason
    d = gate.on_write("/etc/x", None, ctx())
    assert d.verdict == DENY and "may not write `/etc/x`" in d.reason


@pytest.mark.parametrize("audience", [AGENT, SESSION])
def test_read_only_speaks_to_its_audience(audience):
    d = ReadOnly("scope::read-only", {}).on_write("/w/a", "a", ctx(audience=audience))
    assert d.reason.endswith(phrase(audience, "read-only"))


@pytest.mark.parametrize("line", ["rm -f x", "mv a b", "cp a b", "touch f", "mkdir d", "tee f", "ln -s a b", "chmod +x f",
                                  "truncate -s 0 f", "dd of=x", "tar xf a.tar", "unzip a.zip", "rsync a b", "patch -p1",
                                  "gzip f", "install a b", "shred f", "mkfifo p"])
def test_read_only_denies_programs_whose_job_is_to_write(line):
    d = ReadOnly("scope::read-only", {}).on_command(command(line), ctx())
    assert d.verdict == DENY and d.rule == line.split()[0] and "changes files" in d.reason


@pytest.mark.parametrize("line", ["sed -i s/a/b/ f", "sed -n -i s/a/b/ f", "sed -i.bak s/a/b/ f", "sed --in-place s/a/b/ f",
                                  "sed --in-place=.bak s/a/b/ f", "perl -i -pe s/a/b/ f", "ruby -i.orig -pe x f"])
def test_read_only_denies_in_place_editing(line):
    d = ReadOnly("scope::read-only", {}).on_command(command(line), ctx())
    assert d.verdict == DENY and "-i` edits files in place" in d.reason


@pytest.mark.parametrize("line", ["sed -n p f", "sed s/a/b/ f", "cat f", "grep -i x f", "ls -i", "perl x.pl -v", "python -i"])
def test_read_only_lets_readers_through(line):
    assert ReadOnly("scope::read-only", {}).on_command(command(line), ctx()) is None


# -- network, git, tools ---------------------------------------------------------------------------

def no_network():
    return NoNetwork("net::no-network", {"programs": ["curl", "wget", "ssh"], "tools": ["WebFetch", "WebSearch"]})


def test_no_network_denies_its_tools_and_programs():
    gate = no_network()
    d = gate.on_tool("WebFetch", {"url": "https://x"}, ctx())
    assert (d.verdict, d.rule, d.atom) == (DENY, "WebFetch", "net::no-network") and "needs the network" in d.reason
    d = gate.on_command(command("curl -s https://x"), ctx())
    assert (d.verdict, d.rule) == (DENY, "curl") and "uses the network" in d.reason
    assert d.reason.endswith(phrase(AGENT, "network"))
    assert gate.on_command(command("curl x"), ctx(audience=SESSION)).reason.endswith(phrase(SESSION, "network"))


@pytest.mark.parametrize("tool,line", [("Read", "cat curl"), ("Bash", "curly"), ("webfetch", "Curl"), ("Grep", "ls wget")])
def test_no_network_judges_names_exactly(tool, line):
    gate = no_network()
    assert gate.on_tool(tool, {}, ctx()) is None
    assert gate.on_command(command(line), ctx()) is None


def no_git():
    return NoGit("policy::no-git-ops", {"programs": ["git", "GH", "tig"]})


@pytest.mark.parametrize("line", ["git status", "GIT push", "Git log", "gh pr create", "tig", "git-upload-pack x",
                                  "git-receive-pack x", "GIT-lfs pull"])
def test_no_git_denies_git_in_any_case_and_its_helper_programs(line):
    d = no_git().on_command(command(line), ctx())
    assert d.verdict == DENY and d.rule == line.split()[0] and d.atom == "policy::no-git-ops"


@pytest.mark.parametrize("line", ["gitk", "legit", "github-cli x", "ls .git", "echo git"])
def test_no_git_lets_other_programs_through(line):
    assert no_git().on_command(command(line), ctx()) is None


def test_no_git_says_what_ran_git():
    d = no_git().on_command(command("git push", via="sh -c "), ctx())
    assert "(run through `sh -c`)" in d.reason
    d = no_git().on_command(command("git push"), ctx())
    assert "run through" not in d.reason and d.reason.endswith(phrase(AGENT, "git"))
    assert no_git().on_command(command("git push"), ctx(audience=SESSION)).reason.endswith(phrase(SESSION, "git"))


@pytest.mark.parametrize("key", ["GIT_DIR", "GIT_CONFIG_GLOBAL", "git_dir", "Git_Work_Tree", "GIT_"])
def test_no_git_denies_variables_that_configure_git(key):
    d = no_git().on_command(command("make", [("LANG", "C"), (key, "x")]), ctx())
    assert d.verdict == DENY and d.rule == key and f"`{key}` configures git" in d.reason


@pytest.mark.parametrize("key", ["GITHUB_TOKEN", "LEGIT_X", "GIT", "MY_GIT_DIR"])
def test_no_git_lets_other_variables_through(key):
    assert no_git().on_command(command("make", [(key, "x")]), ctx()) is None


def test_deny_tools_denies_its_tools_and_lists_the_ones_left():
    gate = DenyTools("tools::deny-tools", {"tools": ["Write", "Edit"]})
    d = gate.on_tool("Edit", {}, ctx(tools=("Read", "Grep", "Edit", "Write")))
    assert (d.verdict, d.rule) == (DENY, "Edit")
    assert "it may not use Edit, Write" in d.reason and "(Grep, Read)" in d.reason
    d = gate.on_tool("Write", {}, ctx(tools=("Write",)))
    assert d.reason.endswith("(none)")
    assert gate.on_tool("Read", {}, ctx()) is None
    assert gate.on_tool("edit", {}, ctx()) is None


# -- dependency files ------------------------------------------------------------------------------

def dep_files(commands=("pip install", "npm install", "python -m pip install", "cargo add")):
    return DepFiles("safety::no-dep-bump", {"globs": ["**/requirements*.txt", "**/package.json", "deps/**"],
                                            "commands": list(commands)})


@pytest.mark.parametrize("rel,folder,denied", [
    ("requirements.txt", False, True),
    ("sub/requirements-dev.txt", False, True),
    ("a/b/package.json", False, True),
    ("deps/x.lock", False, True),
    ("deps", False, True),  # removing the folder removes what it holds
    ("", False, True),
    ("deps", True, False),  # making it changes nothing in it
    ("src/a.py", False, False),
    ("package.json.bak", False, False),
    ("requirements", False, False),
])
def test_dependency_files_and_what_holds_them_are_denied(rel, folder, denied):
    d = dep_files().on_write(f"/w/{rel}", rel, ctx(folder=folder))
    if denied:
        assert d.verdict == DENY and d.rule == "dep-files" and "declares or locks dependencies" in d.reason
    else:
        assert d is None


def test_dependency_files_outside_the_worktree_or_without_globs_are_not_judged():
    assert dep_files().on_write("/etc/requirements.txt", None, ctx()) is None
    assert DepFiles("a", {"globs": [], "commands": []}).on_write("/w/requirements.txt", "requirements.txt", ctx()) is None


@pytest.mark.parametrize("line,prefix", [
    ("pip install requests", "pip install"),
    ("pip --quiet install requests", "pip install"),  # flags are dropped on both sides
    ("pip install -U requests", "pip install"),
    ("python -m pip install x", "python pip install"),
    ("npm install", "npm install"),
    ("cargo add serde", "cargo add"),
])
def test_commands_that_change_dependencies_are_denied(line, prefix):
    d = dep_files().on_command(command(line), ctx())
    assert d.verdict == DENY and d.rule == prefix and f"`{prefix}` changes dependencies" in d.reason


@pytest.mark.parametrize("line", ["pip list", "pip show install", "pip3 install x", "npm test", "npm", "python -m pytest",
                                  "python x.py pip install", "cargo build", "ls install"])
def test_other_commands_do_not_change_dependencies(line):
    assert dep_files().on_command(command(line), ctx()) is None


def test_dependency_commands_with_flags_in_their_declaration_match_without_them():
    gate = dep_files(["python -m pip install", "uv pip --system install"])
    assert gate.commands == {"python": [("python", "pip", "install")], "uv": [("uv", "pip", "install")]}
    assert gate.on_command(command("uv pip install x"), ctx()).verdict == DENY


# -- egress ----------------------------------------------------------------------------------------

def egress(**params):
    return EgressAllowlist("net::egress-allowlist", {"domains": ["pypi.org", "*.example.com"], "addresses": ["10.0.0.0/8"],
                                                     "ports": [443], **params})


def test_egress_keeps_its_lists():
    gate = egress()
    assert (gate.domains, gate.addresses, gate.ports) == (("pypi.org", "*.example.com"), ("10.0.0.0/8",), (443,))


@pytest.mark.parametrize("ports", [None, [True], ["443"], [443.0], 443, [[443]]])
def test_egress_ports_must_be_a_list_of_numbers(ports):
    params = {"domains": [], "addresses": []}
    if ports is not None:
        params["ports"] = ports
    with pytest.raises(PolicyError, match="`ports` must be a list of port numbers"):
        EgressAllowlist("a", params)


@pytest.mark.parametrize("domain", ["*", "*.com", "1.2.3.4", "http://x.org", "x.org/path", "x.org:443", "a*.x.org", ""])
def test_egress_domains_must_be_names_or_wildcards_below_a_domain(domain):
    with pytest.raises(PolicyError):
        egress(domains=[domain])


# -- a new kind is one module and one registry entry -------------------------------------------------------

TOY_GATE = '''
from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate, no_more, take_list


class NoWords(Gate):
    """A toy kind: a file tool's path holding one of the words is refused."""

    kind = "toy-no-words"

    def configure(self, params):
        self.words = take_list(params, "words")
        no_more(self.kind, params)

    def on_tool(self, tool, tool_input, ctx):
        path = str(tool_input.get("file_path", ""))
        word = next((w for w in self.words if w in path), None)
        return None if word is None else deny(f"`{path}` names `{word}`", self.atom, "toy")
'''


def test_a_gate_kind_is_one_module_and_one_registry_entry(tmp_path, monkeypatch, catalog_copy):
    """The CONTRIBUTING recipe, end to end: the kind's module in a package of its own, its entry in the registry;
    then an atom names it, a role lists the atom, the policy compiles, and the gate judges with it."""
    from runtime.gate.engine import decide
    from runtime.gate.policy import Policy
    from runtime.manifests.kinds import GateKind
    from runtime.policy.build import build_policy

    package = tmp_path / "toy_gates"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "no_words.py").write_text(TOY_GATE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(GATE_KINDS, "toy-no-words", GateKind("toy_gates.no_words:NoWords", {"words": "str-list"}))

    atom = catalog_copy / "capabilities" / "toy" / "no-words"
    atom.mkdir(parents=True)
    (atom / "capability.toml").write_text(
        'name = "toy::no-words"\nsummary = "Paths holding the words are not read."\ngate = "toy-no-words"\n\n'
        '[params.words]\ntype = "str-list"\ndefault = ["secret-plan"]\n\n'
        '[[examples]]\ntool = "Read"\ninput = { file_path = "notes/secret-plan.md" }\nexpect = "deny"\n\n'
        '[[examples]]\ntool = "Read"\ninput = { file_path = "notes/other.md" }\nexpect = "allow"\n')
    (atom / "text.md").write_text("Leave the secret plan alone.\n")
    (catalog_copy / "roles" / "toy.toml").write_text(
        '[role]\nname = "toy"\ndisplay-name = "toy"\ndescription = "read-only, and no secret plans"\n'
        'use-cases = ["a test"]\n\n[capabilities]\nextends = "read-only"\nrequired = ["toy::no-words"]\n\n'
        '[tools]\nshown = ["Read", "Glob", "Grep", "WebFetch"]\n\n[escalation]\npolicy = "ask-via-return"\n\n'
        '[params."output::report-format"]\nfields = ["summary", "findings"]\n')
    root = tmp_path / "work"
    (root / "notes").mkdir(parents=True)
    policy = Policy(build_policy(catalog_copy, "toy", None, root))

    refused = decide(policy, "Read", {"file_path": str(root / "notes" / "secret-plan.md")}, str(root))
    assert refused.verdict == "deny" and refused.atom == "toy::no-words" and "secret-plan" in refused.reason
    assert decide(policy, "Read", {"file_path": str(root / "notes" / "other.md")}, str(root)).verdict == "allow"
