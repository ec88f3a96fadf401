"""The models the orchestrator consults: the planner (a goal into a plan, `planner`), the reviewer
(the merged result against the success criteria, `reviewer`), their strict replies (`replies`), and
asking either with the runtime's context (`asking`)."""
