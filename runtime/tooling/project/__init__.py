"""What `runtime init` learns about a repository: its own test, lint, type and format commands.

``scan`` reads the files that declare them (tox, nox, pyproject, setup.cfg,
the Makefile, package.json, Cargo.toml, go.mod, pre-commit, CI workflows) as
data, never running any of the repository's code; ``translate`` turns each
into the command the gate and the sandbox run (tox environments and nox
sessions into what they run, ``uv run`` into ``uv run --no-sync``, formatters
into their checking form); ``rules`` finds the shell rules the project role
needs for those the shipped ``edit-local`` refuses, and asks the gate that
each found command is then allowed; ``render`` writes the role, the
toolchain and a task template.
"""
