"""runtime run PLAN | --goal TEXT: many sandboxed agents, planned, merged, judged, replanned.

Exit 0 when the run is accepted, 2 when it is not (rejected or failed), 3
when the planner needs answers (printed), 1 for usage or manifest errors.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import MissingExtra, UsageError
from runtime.printable import printable

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.live import Live
    from rich.table import Table

    from runtime.cli.settings import Run
    from runtime.manifests.catalog import Catalog
    from runtime.models.types import ModelReach
    from runtime.orchestration.advisors.asking import AgentDefaults
    from runtime.orchestration.events import AgentProgress, RunEvent
    from runtime.orchestration.executor import ExecutorFactory
    from runtime.orchestration.plans.load import Plan
    from runtime.workspace.git import Git


def _defaults(args: Run, plan: Plan | None = None) -> AgentDefaults:
    from runtime.orchestration.advisors.asking import agent_defaults

    return agent_defaults(plan, args.agent_backend, args.agent_model, args.agent_api_base,
                          Path(args.agent_scripts).resolve() if args.agent_scripts else None)


def _note_agent_ids(plan: Plan) -> None:
    """A plan's own agent ids are not the ones its agents run under: say so rather than replace them silently."""
    from runtime.orchestration.plans.load import explicit_agent_id

    named = [s for s in plan.subtasks if getattr(s, "task", None) is not None and explicit_agent_id(s)]
    if named:
        shown = ", ".join(f"{s.id} ({s.task.agent_id})" for s in named[:5]) + (" ..." if len(named) > 5 else "")
        print(printable(f"note: agents of a run are named <run-id>.<subtask> (so a re-run never collides with an "
                        f"earlier one); the agent-id given for {shown} is not used"), file=sys.stderr)


def _check_models(args: Run) -> None:
    """Models named on the command line are checked before the run creates anything."""
    from runtime.models.llm import model_problem

    for flag, model, api_base in (("--planner-model", args.planner_model, args.planner_api_base),
                                  ("--agent-model", args.agent_model, args.agent_api_base)):
        if model:
            problem = model_problem(model, api_base)
            if problem is not None:
                raise UsageError(f"{flag}: {problem}")


def _check_plan_models(args: Run, plan: Plan) -> None:
    """A plan's own planner and reviewer are called through litellm like an agent's model: without the
    `models` extra, one line now rather than a failed call once agents have run."""
    from runtime.models.llm import get_litellm, is_scripted

    specs = [plan.reviewer] + ([] if args.planner_model else [plan.planner])
    for spec in specs:
        if spec is not None and not is_scripted(spec.model):
            get_litellm(spec.model)


def _planner_config(args: Run, plan: Plan | None = None) -> ModelReach | None:
    """The planner the command line names, else the plan's `[plan.planner]`, else None."""
    from runtime.models.types import ModelReach

    if args.planner_model:
        return ModelReach.planner(args.planner_model, api_base=args.planner_api_base,
                                  script=str(Path(args.planner_script).resolve()) if args.planner_script else None,
                                  max_retries=args.planner_retries)
    return plan.planner if plan is not None else None


def _first_plan(args: Run, catalog: Catalog, git: Git,
                state_dir: Path) -> tuple[Plan | None, list[str], list[str]]:
    from runtime.orchestration.advisors.asking import roles_info, validator
    from runtime.orchestration.advisors.planner import PlannerContext, propose_plan

    assert args.goal is not None  # run() plans only for --goal: a PLAN file and --resume come with their plan
    config = _planner_config(args)
    if config is None:
        raise UsageError("--goal needs a planner: pass --planner-model (and --planner-script for scripted/...)")
    memory = relevant_memory(state_dir, args.goal)
    files = [p for p in git.text("ls-files", "-z").split("\0") if p]
    validate, state = validator(catalog, git.root, _defaults(args), set())
    outcome = propose_plan(config, args.goal, PlannerContext(roles_info(catalog), files, memory), validate=validate)
    if outcome.questions:
        return None, outcome.questions, []
    if outcome.plan is None:
        return None, [], outcome.errors
    return state["plan"], [], []


def relevant_memory(state_dir: Path, goal: str) -> list[str]:
    """What accepted runs and curated facts say about this goal (the planner reads it first)."""
    from runtime.memory.reader import open_memory
    from runtime.orchestration.meta import memory_path

    return [f"{e.title}: {e.body}"[:500] if e.title else e.body[:500]
            for e in open_memory(memory_path(state_dir)).search(goal, limit=8)]


def _plain(value: object) -> str:
    """A value as a person reads it in an event line (no Python reprs)."""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "-"
    return str(value)


@dataclass
class _Row:
    """A subtask's line in the live table: its latest progress, and its state (its label once it ended)."""

    progress: AgentProgress | None = None
    state: str = ""


def _printer(args: Run) -> tuple[Callable[[str, RunEvent], None], Live | None]:
    from runtime.orchestration.events import AgentProgress, SubtaskEnd

    if args.json:
        def emit_json(run_id: str, event: RunEvent) -> None:
            print(json.dumps(event.to_json(run_id)), flush=True)
        return emit_json, None
    from rich.live import Live
    from rich.table import Table

    from runtime.cli.show import console as make_console
    from runtime.cli.show import guarded, line, text

    console = make_console(stderr=True)
    rows: dict[str, _Row] = {}
    live = Live(console=console, refresh_per_second=6, transient=False)

    def table() -> Table:
        t = Table(title="agents")
        for col in ("subtask", "agent", "state", "attempt", "turns", "tool calls", "denials", "seconds", "cost"):
            # ids are what a person copies into `runtime status` and git: never cut them
            t.add_column(col, no_wrap=True, overflow="fold" if col in ("subtask", "agent") else "ellipsis")
        for sid, r in rows.items():
            p = r.progress
            shown = ("", "", "", "", "", "") if p is None else (
                p.agent, p.attempt, p.turns, p.tool_calls, p.denials, p.elapsed_s)
            agent, attempt, turns, calls, denials, seconds = shown
            cost = p.cost_usd if p is not None else 0.0
            shown_cost = f"{cost:.4f}" if isinstance(cost, int | float) else cost  # its sender may be a worker node
            t.add_row(*(text(v) for v in (sid, agent, r.state, attempt, turns, calls, denials, seconds, shown_cost)))
        return t

    def emit(run_id: str, event: RunEvent) -> None:
        if not live.is_started:
            live.start()
        if isinstance(event, AgentProgress):
            row = rows.setdefault(event.subtask, _Row())
            row.progress, row.state = event, event.state
        elif isinstance(event, SubtaskEnd):
            rows.setdefault(event.subtask, _Row()).state = event.label
        elif event.kind in ("integrated", "plan-check", "judgement", "replan", "shared-path", "merged"):
            # paths the agents wrote, a reviewer's reason: shown as text, one line, escaped
            console.print(line(f"{event.kind}: ", ", ".join(f"{k}={_plain(v)}" for k, v in event.data().items())),
                          soft_wrap=True)
        live.update(table())
    return guarded(emit, live.stop, console), live


def _executor(args: Run, plan: Plan) -> ExecutorFactory:
    """The executor factory the run asks for (the command line's, else the plan's); joining a Ray
    cluster is checked here, before anything is made."""
    from runtime.orchestration.executor import LocalExecutor

    if (args.executor or plan.executor) != "ray":
        if args.ray_address:
            raise UsageError("--ray-address goes with --executor ray")
        placed = next((s for s in plan.subtasks if s.node_labels), None)
        if placed is not None:
            where = f"{plan.path}:{placed.line}: " if plan.path else ""
            raise UsageError(f"{where}subtask `{placed.id}` has node-labels, which only a cluster can honour: "
                             "run the plan with --executor ray")
        return LocalExecutor
    try:
        from runtime.orchestration.ray_executor import ray_executor
    except ImportError as exc:
        if exc.name != "ray":
            raise
        raise MissingExtra("--executor ray", "ray") from None
    return ray_executor(args.ray_address or plan.ray_address)


def run(args: Run) -> int:
    import anyio

    from runtime.manifests.catalog import Catalog
    from runtime.manifests.locate import find_catalog
    from runtime.orchestration import meta
    from runtime.orchestration.advisors.asking import Replanner, reviewer_for, roles_info
    from runtime.orchestration.plans.load import load_plan
    from runtime.orchestration.plans.save import save_plan
    from runtime.orchestration.run import RunOptions, resumed_run, run_plan
    from runtime.spawn.state import default_state_dir
    from runtime.workspace.git import Git

    if sum(bool(x) for x in (args.plan, args.goal, args.resume)) != 1:
        raise UsageError("give a PLAN file, --goal TEXT, or --resume RUN_ID")
    catalog = Catalog(Path(find_catalog(args.catalog)))
    git = Git(Path.cwd())
    _check_models(args)
    state_dir = Path(args.state_dir or default_state_dir(git.root)).resolve()
    resume = resumed_run(state_dir, args.resume) if args.resume else None
    plan: Plan | None
    if resume is not None:
        plan = resume.plan(catalog, git.root)
    elif args.plan:
        plan = load_plan(catalog, args.plan)
    else:
        plan, questions, errors = _first_plan(args, catalog, git, state_dir)
        if questions:
            print("The planner needs answers before it can plan:", *[f"- {printable(q)}" for q in questions], sep="\n")
            return 3
        if plan is None:
            print("The planner produced no valid plan:", *[f"- {printable(e)}" for e in errors], sep="\n",
                  file=sys.stderr)
            return 2
    _check_plan_models(args, plan)
    _check_reach(plan, catalog, git, sandboxed=not args.no_os_sandbox)
    executor = _executor(args, plan)
    if args.save_plan:
        print(f"plan saved to {save_plan(Path(args.save_plan), plan.data)}", file=sys.stderr)
    _note_agent_ids(plan)
    planner = _planner_config(args, plan)
    replanner = None
    if planner is not None:
        files = [p for p in git.text("ls-files", "-z").split("\0") if p]
        replanner = Replanner(catalog, plan.base_dir, planner, _defaults(args, plan), roles_info(catalog), files,
                              relevant_memory(state_dir, plan.goal))
    reviewer = reviewer_for(plan.reviewer) if plan.reviewer else None
    show, live = _printer(args)
    seen: dict[str, str] = {}

    def emit(run_id: str, event: RunEvent) -> None:
        seen["run"] = run_id  # the id a person needs to resume after an interrupt
        show(run_id, event)

    options = RunOptions(repo=git.root, merge=args.merge, use_sandbox=not args.no_os_sandbox, state_dir=state_dir,
                         catalog=args.catalog, resume=resume, on_event=emit, replanner=replanner,
                         reviewer=reviewer, remember=meta.remember, executor=executor, unattended=args.unattended)
    if args.no_os_sandbox:
        print("WARNING: --no-os-sandbox: agents run WITHOUT an OS sandbox", file=sys.stderr)
    from runtime.sandbox.limits import fallback_note

    if note := fallback_note():
        print(note, file=sys.stderr)
    import signal

    previous = signal.signal(signal.SIGTERM, lambda _sig, _frame: signal.raise_signal(signal.SIGINT))
    try:
        report = anyio.run(run_plan, plan, catalog, options)
    except KeyboardInterrupt:
        if live is not None and live.is_started:
            live.stop()
        run_id = seen.get("run") or args.resume
        how = f"`runtime run --resume {run_id}`" if run_id else "the same command again"
        print(printable(f"interrupted: agents stopped, their work kept on their branches; continue with {how}"),
              file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        if live is not None and live.is_started:
            live.stop()
            print(file=sys.stderr)
    if not args.json:
        # The reason quotes outcomes, checks and a reviewer model; questions come from agents' reports.
        reason = "  " + printable(report.reason.strip(), multiline=True).replace("\n", "\n  ")
        print(f"run {printable(report.run_id)}: {printable(report.status)}\n{reason}\nreport: {printable(report.path)}")
        for question in report.questions:
            print(f"question: {printable(question)}")
    return report.exit_code


def _check_reach(plan: Plan, catalog: Catalog, git: Git, *, sandboxed: bool) -> None:
    """Nothing runs that cannot pass: every subtask's test and check programs are found where verify looks, and
    its write scope names something of the repository (`runtime.spawn.preflight.preflight_reach`), checked
    before any agent starts."""
    from runtime.sandbox.toolchain import toolchain_mounts
    from runtime.spawn.preflight import preflight_reach, toolchain_file
    from runtime.spawn.world import check_included

    toolchain = toolchain_mounts(catalog.toolchain, git.root) if catalog.toolchain else None
    head = git.resolve("HEAD")
    where = toolchain_file(catalog.layers, git.root)
    world = catalog.toolchain.worktree
    check_included(git, world, catalog.toolchain.source)
    for sub in plan.subtasks:
        preflight_reach(sub.task, git, head, toolchain, sandboxed=sandboxed, toolchain_file=where,
                        setup_path=world.path if world.setup else ())
