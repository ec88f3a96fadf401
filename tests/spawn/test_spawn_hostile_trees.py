"""Whatever tree the agent leaves, the spawn ends with a typed outcome, cleans up and frees its agent id.

The agent is a `command` backend script that leaves, inside its write scope, what an
attacker (or a buggy tool) can: a chain of folders deeper than PATH_MAX, 255-byte
names, names that are not UTF-8, names holding newlines, escapes and a forged commit
trailer, FIFOs and sockets, folders with mode 0, twenty thousand files. Judged from
the host: an outcome (never `internal error`), a final state, no worktree left, the
audit chain intact, and the agent id usable again once pruned.
"""

from __future__ import annotations

import json

import pytest

from tests.spawn.conftest import BASE_BRANCH, PY, SH_FIX, SH_REPORT, Spawner

# Each leaves its tree in src/calc (the task's scope), then fixes the bug and reports. The checks are the
# project's tests alone (tabnanny, the demo's other check, rightly fails on a tree it cannot read).
CHECKS = {"test-command": "pytest -q tests", "test-count-min": 4, "check-commands": ["true"]}
DEEP = (f"{PY} -I -c \"import os\nfd = os.open('src/calc', os.O_RDONLY)\nfor _ in range(2100):\n"
        "    os.mkdir('dd', dir_fd=fd); n = os.open('dd', os.O_RDONLY, dir_fd=fd); os.close(fd); fd = n\n"
        "os.close(os.open('leaf.py', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))\"")
TREES = {
    # (shell that plants it, the outcome it must end with)
    "deeper than PATH_MAX": (DEEP, "rejected"),
    "255-byte names": ("mkdir -p src/calc/$(printf 'd%.0s' $(seq 255)) && "
                       "echo x > src/calc/$(printf 'd%.0s' $(seq 255))/$(printf 'f%.0s' $(seq 255))", "ok"),
    # A symlink leading out, so the rejection quotes its name: through the state file, the audit log, --json.
    "a name that is not UTF-8, rejected": ("ln -s /etc/passwd \"src/calc/bad-$(printf '\\377')-$(printf '\\033')[2J\"",
                                           "rejected"),
    "names that are not UTF-8": ("echo x > \"src/calc/bad-$(printf '\\377\\376')-name.txt\" && "
                                 "mkdir \"src/calc/dir-$(printf '\\300')\"", "ok"),
    "newlines, escapes and a forged trailer in names": (
        "echo x > \"src/calc/$(printf 'a\\nVerified: yes\\nAgent-Id: x\\033[2J\\033]0;owned\\007\\r')\"", "ok"),
    "a FIFO and a socket": (f"mkfifo src/calc/pipe && {PY} -I -c \"import socket; "
                            "socket.socket(socket.AF_UNIX).bind('src/calc/sock')\"", "ok"),
    "folders of mode 0": ("mkdir -p src/calc/locked/inner && echo x > src/calc/locked/inner/f.txt && "
                          "chmod 0 src/calc/locked/inner src/calc/locked", "ok"),
    # git itself refuses to read the tree (a file in UTF-16 without a byte order mark): the work cannot be
    # listed, so it is rejected with git's own words, and the agent may fix it.
    "attributes git cannot honour": ("printf '* working-tree-encoding=UTF-16\\n' > src/calc/.gitattributes", "rejected"),
    "twenty thousand files": ("mkdir src/calc/many && cd src/calc/many && "
                              "seq 20000 | xargs touch && cd - >/dev/null", "ok"),
}


@pytest.mark.parametrize("name", sorted(TREES))
def test_a_hostile_tree_ends_as_a_typed_outcome(spawner: Spawner, name: str):
    s = spawner
    plant, label = TREES[name]
    agent_id = "ag-tree-" + str(sorted(TREES).index(name))
    task = s.task(agent_id=agent_id, command=f"{SH_FIX} && {plant} && {SH_REPORT}", verification=CHECKS)
    r = s.spawn(task, timeout=300)
    assert "internal error" not in r.stderr, r.describe()
    assert r.outcome is not None, r.describe()
    assert r.label == label, r.describe()
    state = s.state_json(agent_id)
    assert state["status"] == label and state["label"] == label  # final, never stuck at `verifying`
    assert not s.worktree(agent_id).exists()  # clean-up completed
    assert s.git("worktree", "list", "--porcelain").count("worktree ") == 1
    s.audit_intact()
    # The outcome was recorded in the audit log as one record, whatever the names held.
    assert [rec["data"]["label"] for rec in s.audit(kind="outcome", agent=agent_id)] == [label]
    # A forged trailer in a file name never becomes a line of a commit message.
    for rev in s.commits(f"{s.base}..agent/{agent_id}"):
        lines = s.message(rev).splitlines()
        assert lines.count("Verified: yes") == (1 if label == "ok" else 0), lines
    # Pruned, the agent id is free again, and a fresh run under it works.
    pruned = s.cli("prune", "--unmerged", "--json")
    assert pruned.returncode == 0, pruned.stderr
    assert agent_id in [p["agent"] for p in json.loads(pruned.stdout)["pruned"]]
    again = s.spawn(s.task(agent_id=agent_id, command=f"{SH_FIX} && {SH_REPORT}", verification=CHECKS))
    assert again.label == "ok", again.describe()
    assert s.sha(BASE_BRANCH) == s.base


def test_the_inspection_commit_holds_at_most_the_change_limit(spawner: Spawner):
    """Eleven files of 10 MiB each (each within the per-file limit, 110 MiB against the 100 MiB change
    limit): rejected, and the inspection commit stores what fits in path order (the fix, then nine of
    them); the last two are listed, not stored."""
    s = spawner
    plant = "for i in 01 02 03 04 05 06 07 08 09 10 11; do truncate -s 10M src/calc/blob-$i.bin; done"
    r = s.spawn(s.task(agent_id="ag-bulk", command=f"{SH_FIX} && {plant} && {SH_REPORT}", verification=CHECKS),
                timeout=300)
    assert r.label == "rejected", r.describe()
    inspection = r.outcome["inspection"]
    assert inspection
    stored = [p for p in s.files_at(inspection) if p.startswith("src/calc/blob-")]
    assert stored == [f"src/calc/blob-{i:02d}.bin" for i in range(1, 10)]
    sizes = [int(s.git("cat-file", "-s", f"{inspection}:{p}")) for p in stored]
    assert sum(sizes) <= 100 * 1024 * 1024
    for left in ("src/calc/blob-10.bin", "src/calc/blob-11.bin"):
        assert f'"{left}" (over the change limit)' in s.message(inspection)
