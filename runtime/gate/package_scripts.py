"""`npm test -- ARGS`: the arguments go to the package's script, judged as the command they make.

npm appends the words after `--` to the script's command line (each quoted for `sh`) and runs it
with `sh -c` in the package's folder. The compiled policy carries the scripts of the worktree's
package.json, read when it was compiled (a script added later is unknown, so its arguments are
refused), and the gate judges `SCRIPT ARGS` as a shell command of its own: `"test": "jest"` with
`-- --watch=false` is `jest --watch=false`, allowed only if the rules allow that. Without `--`
nothing changes: the rule for npm decides, and the script is the repository's own code.
"""

from __future__ import annotations

import os
import shlex

from runtime.lang.shell_types import Command, Script, ShellDeny

# npm options that run the script of another package than the worktree's top one.
_ELSEWHERE = frozenset({"--workspace", "--workspaces", "--ws", "--prefix", "-C", "--include-workspace-root"})
# npm's commands that run a script, and the script each runs (None: the next word names it).
_RUNS = {"test": "test", "t": "test", "tst": "test", "start": "start", "stop": "stop", "restart": "restart",
         "run": None, "run-script": None, "rum": None, "urn": None}


def script_named(args: list[str]) -> str | None:
    """The package.json script that `npm ARGS` runs, by npm's own command names; None when it runs none."""
    name = _RUNS.get(args[0]) if args else None
    if args and args[0] in _RUNS and name is None and len(args) > 1 and not args[1].startswith("-"):
        name = args[1]
    return name


def script_call(cmd: Command, scripts: dict[str, str], root: str) -> tuple[Command, Script, str] | str:
    """The npm command without the words after `--`, what the script makes of them and its command line;
    or why not."""
    from runtime.gate.shell import analyze

    args = cmd.args
    cut = args.index("--")
    name = script_named(args[:cut])
    if name is None:
        return (f"`npm {' '.join(args[:cut])} -- …`: only `npm test -- ARGS` and `npm run SCRIPT -- ARGS` pass "
                "arguments on to a script")
    for word in args[:cut]:
        if word.split("=", 1)[0] in _ELSEWHERE or (word[:2] == "-w" and word[:3] != "--"):
            # Another package's script (a workspace, another prefix): not the one the policy holds.
            return (f"`npm {' '.join(args[:cut])} -- …` runs a script of another package (`{word}`); pass arguments "
                    "only to the worktree's own package.json scripts, or run the program directly")
    if name not in scripts:
        known = ", ".join(sorted(scripts)) or "none"
        return (f"`npm {' '.join(args[:cut])} -- …` passes its arguments to the script `{name}`, which the worktree's "
                f"package.json did not declare when the policy was compiled (scripts: {known}); run it without arguments")
    if any(os.path.normpath(cwd) != root for cwd in cmd.cwds):
        return (f"`npm {' '.join(args[:cut])} -- …` runs a package.json script; run it from the worktree's top folder, "
                "whose package.json the policy knows")
    tail = " ".join(shlex.quote(a) for a in args[cut + 1:])
    line = f"{scripts[name]} {tail}".strip()
    try:
        inner = analyze(line, root)
    except ShellDeny as exc:
        return (f"`npm {' '.join(args[:cut])} -- …` runs `{line[:80]}` (the script `{name}` with your arguments), "
                f"and {exc}; run the program directly if your rules allow it")
    own = Command(cmd.name, cmd.words[:cut], cmd.assigns, cmd.cwds, cmd.via, cmd.open_args, cmd.path)
    return own, inner, line

