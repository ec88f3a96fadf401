"""The OS sandbox around every agent process.

`bwrap` turns a declarative `SandboxSpec` into a bubblewrap command prefix (a
root of read-only system folders, write access only where the task's scope
allows, a private /tmp and HOME, its own network and PID namespaces, an
unprivileged uid: `identity`), `seccomp` builds its system-call filter and
`launch` puts the pieces together; `limits` holds what a run may spend (its
`cgroups`, `rlimits` and the `disk` meter); `env` builds the agent's environment from
scratch so no credential of the orchestrator leaks in; `egress`, `domains`,
`addresses` and `netrelay` are the only way out, for roles that declare
domains. The gate checks each tool call; the sandbox limits what
an allowed call can do anyway (a `conftest.py` the agent wrote and pytest
later imports still cannot write outside the scope).
"""
