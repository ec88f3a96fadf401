"""The agent's workspace: git worktrees the orchestrator owns, their changes, agent-id locks."""
