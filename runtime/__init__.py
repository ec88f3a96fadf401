"""Role-sandboxed multi-agent runtime.

Kept empty on purpose: the PreToolUse hook imports ``runtime.gate`` in a fresh
process for every tool call, and anything imported here would be paid each time.
"""

__version__ = "0.1.0"

# The name it is installed by (`pip install agent-role-runtime`): "agent-runtime" on PyPI is another
# project. The command and the import package are both `runtime`.
DISTRIBUTION = "agent-role-runtime"
