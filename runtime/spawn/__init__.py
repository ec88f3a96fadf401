"""Running an agent: launching its process and supervising it.

`supervise` starts the agent in its own session and process group, in a cgroup
of its own where the kernel holds its processes, memory and CPU and counts its
disk writes (`runtime.sandbox.limits`), enforces what only the parent can see
(wall clock, caller hooks for turns, tool calls, tokens and cost, and the
sampled tree where the machine has no cgroup) and, when the run ends for any
reason, stops every process the agent left behind. `budget` says what a run of
a task's code may spend, the agent's and its checks' alike.
"""
