"""Nothing an agent writes ever runs on the host through the orchestrator's own git.

The agent is a `command` backend script (only the OS sandbox and verify stand in
its way). It makes a nested repository inside its write scope whose own config
names a clean filter, and a `.gitattributes` selecting it: when the orchestrator's
git checks whether that nested repository is dirty, it runs `git status` inside it,
with *its* config, on the host. The filter writes a canary file on the host; the
tests check from the host that the canary never exists, that nothing nested was
committed (not even for inspection), and that the base branch never moved.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess

from tests.spawn.conftest import BASE_BRANCH, SH_FIX, SH_REPORT, Spawner, marker
from tests.support import git, kill_group, running, wait_for

# A commit anyone can re-make byte for byte: fixed names, dates and content. The agent re-makes the commit a
# base's gitlink records (or its own earlier one), so git sees the nested repository at the recorded commit
# and has to look inside it to tell whether it is dirty.
NESTED_COMMIT = ("export GIT_DIR=$PWD/.git GIT_WORK_TREE=$PWD "
                 "GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b "
                 "GIT_AUTHOR_DATE='2001-01-01T00:00:00Z' GIT_COMMITTER_DATE='2001-01-01T00:00:00Z' && "
                 "git init -q -b main . && echo data > f && git add f && git commit -qm nested")


def nested_repo_script(folder: str, canary: str) -> str:
    """Shell (inside the sandbox) that leaves ``folder`` holding a repository whose clean filter, fsmonitor
    and hook write ``canary``. `f` is re-dated after its commit: its size matches the nested index, so only
    its content can tell, and any `git status` there runs the clean filter.

    GIT_DIR is named because the folder belongs to the orchestrator: git's ownership check would refuse it."""
    filt = shlex.quote(f"sh -c 'id > {canary}; cat'")
    return (f"mkdir -p {folder} && cd {folder} && {NESTED_COMMIT} && "
            f"git config filter.evil.clean {filt} && git config filter.evil.required true && "
            "printf 'f filter=evil\\n* filter=evil\\n' > .gitattributes && "
            "git config core.fsmonitor " + shlex.quote(f"sh -c 'id > {canary}.fsmonitor'") + " && "
            "mkdir -p .git/hooks && printf '#!/bin/sh\\nid > %s.hook\\n' " + shlex.quote(canary) +
            " > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && "
            "touch -d '2001-01-01 00:00:07' f && unset GIT_DIR GIT_WORK_TREE && cd - >/dev/null")


def canaries(canary: str) -> list[str]:
    return [p for p in (canary, f"{canary}.fsmonitor", f"{canary}.hook") if os.path.exists(p)]


def gitlinks(s: Spawner, rev: str) -> list[str]:
    """Paths recorded as nested repositories (mode 160000) anywhere in ``rev``'s tree."""
    out = s.git("ls-tree", "-r", "-z", rev)
    return [entry.split("\t", 1)[1] for entry in out.split("\0") if entry.startswith("160000 ")]


def add_submodule(s: Spawner, path: str) -> str:
    """A submodule recorded in the base inside the agent's scope (vendored code): a gitlink and `.gitmodules`,
    at the commit `NESTED_COMMIT` makes."""
    vendor = s.tmp / "vendor-lib"
    vendor.mkdir()
    subprocess.run(["sh", "-c", NESTED_COMMIT], cwd=vendor, check=True, capture_output=True)
    sha = git(vendor, "rev-parse", "HEAD")
    (s.repo / ".gitmodules").write_text(f'[submodule "lib"]\n\tpath = {path}\n\turl = {vendor}\n')
    (s.repo / path).mkdir(parents=True)  # an unpopulated submodule: an empty folder, as a fresh clone has
    s.git("update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
    s.git("add", ".gitmodules")
    s.git("commit", "-qm", "vendor lib as a submodule")
    s.base = s.git("rev-parse", "HEAD")
    return sha


def test_a_base_submodule_folder_is_read_only_in_the_sandbox(spawner: Spawner):
    """The submodule's folder is the sandbox's first line: the agent cannot make a repository there."""
    s = spawner
    add_submodule(s, "src/calc/vendor")
    canary = str(s.tmp / "canary-submodule")
    agent = f"{SH_FIX}; ({nested_repo_script('src/calc/vendor', canary)}) || echo refused >&2; {SH_REPORT}"
    r = s.spawn(s.task(agent_id="ag-nested-ro", command=agent), "--merge")
    assert canaries(canary) == [], r.describe()
    assert "refused" in (s.run_dir("ag-nested-ro") / "attempt-1" / "stderr.log").read_text()
    assert r.label == "ok", r.describe()  # the rest of the work is fine, and merged
    assert gitlinks(s, BASE_BRANCH) == ["src/calc/vendor"]
    assert gitlinks(s, BASE_BRANCH) == gitlinks(s, s.base)


def test_nested_repository_inside_a_base_submodule_never_runs_on_the_host(spawner: Spawner):
    """Without the sandbox (`--no-os-sandbox`, the command agent ungated), the agent makes the nested
    repository at the submodule's commit: the orchestrator's own git must still never look inside."""
    s = spawner
    add_submodule(s, "src/calc/vendor")
    canary = str(s.tmp / "canary-submodule")
    agent = f"{SH_FIX}; {nested_repo_script('src/calc/vendor', canary)}; {SH_REPORT}"
    r = s.spawn(s.task(agent_id="ag-nested-sub", command=agent), "--merge", "--no-os-sandbox")
    assert canaries(canary) == [], r.describe()
    assert r.outcome is not None, r.describe()
    assert r.label == "rejected", r.describe()
    feedback = r.outcome["attempts"][-1]["checks"]
    assert any("src/calc/vendor" in c["feedback"] and "nested repository" in c["feedback"]
               for c in feedback if c["status"] == "rejected"), feedback
    assert not any(c["kind"] == "checks-unchanged" for c in feedback), feedback  # the checks changed nothing
    assert s.sha(BASE_BRANCH) == s.base  # never merged
    inspection = r.outcome["inspection"]
    if inspection:  # the rest of the work is kept for inspection; the nested repository is not
        assert gitlinks(s, inspection) == gitlinks(s, s.base)
        assert "src/calc/vendor/f" not in s.files_at(inspection)
    assert not (s.worktree("ag-nested-sub")).exists()
    assert s.state_json("ag-nested-sub")["status"] == "rejected"


def test_nested_repository_kept_by_an_interrupted_run_never_runs_on_resume(spawner: Spawner):
    """Ctrl-C while the agent sleeps: the inspection commit must not record the nested repository as a
    gitlink, or the resumed run's commit would look inside it again, with its config."""
    s = spawner
    n = marker()
    canary = str(s.tmp / "canary-resume")
    agent_id = "ag-nested-resume"
    agent = (f"{SH_FIX}; {nested_repo_script('src/calc/nest', canary)}; "
             f'if [ "$SLOW_AGENT" = yes ]; then sleep {n}; fi; {SH_REPORT}')
    task = s.task(agent_id=agent_id, command=agent, agent={"env": ["SLOW_AGENT"]})
    proc = s.start(task, env={"SLOW_AGENT": "yes"})
    try:
        wait_for(lambda: running("sleep", n) or proc.poll() is not None, 60, what="the agent to start")
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        kill_group(proc)
    assert proc.returncode == 130, (out, err)
    assert canaries(canary) == []
    work = s.state_json(agent_id)["work"]
    assert work and gitlinks(s, work) == [], s.git("ls-tree", "-r", work)
    assert not any(p.startswith("src/calc/nest/") for p in s.files_at(work))

    r = s.spawn(task, env={"SLOW_AGENT": "no"})
    assert canaries(canary) == [], r.describe()
    assert r.outcome is not None and r.label == "rejected", r.describe()
    for rev in s.commits(f"{s.base}..agent/{agent_id}"):
        assert gitlinks(s, rev) == [], rev
    assert s.sha(BASE_BRANCH) == s.base
