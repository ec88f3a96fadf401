"""Running an agent: launching its process and supervising it.

`supervise` starts the agent in its own session and process group, enforces
the limits the parent can observe (wall clock, memory and process count of the
whole tree, and caller hooks for turns, tool calls, tokens and cost) and, when
the run ends for any reason, stops every process the agent left behind.
"""
