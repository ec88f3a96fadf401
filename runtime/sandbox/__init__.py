"""The OS sandbox around every agent process.

`bwrap` turns a declarative `SandboxSpec` into a bubblewrap command prefix (a
read-only root, write access only where the task's scope allows, a private
/tmp and HOME, no network unless the role allows it, its own PID namespace);
`env` builds the agent's environment from scratch so no credential of the
orchestrator leaks in. The gate checks each tool call; the sandbox limits what
an allowed call can do anyway (a `conftest.py` the agent wrote and pytest
later imports still cannot write outside the scope).
"""
