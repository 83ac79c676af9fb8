"""`wirewise campaign`: plan, submit, follow, collect, resume, cancel and list campaigns.
Parsing and printing only; the work is in wirewise.orchestrator.campaign."""

import sys
import time
from contextlib import contextmanager
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import (
    DbOption, JsonOption, JunitOption, command_group, console, err_console, print_json, print_lines, print_tables,
    survey_progress,
)

app = command_group(
    "Campaigns: one YAML spec -> every measurement of a grid, as job arrays on Slurm or here.\n\n"
    "The spec's format is in docs/campaigns.md; examples are in docs/campaigns/."
)

SpecArg = Annotated[str, typer.Argument(metavar="SPEC", help="Campaign spec (YAML).")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="Campaign name (the spec's `name`).")]
TopologyFileOption = Annotated[str | None, typer.Option("--topology-file", help="Plan on this saved `nvidia-smi topo -m` (one node of the target type).")]
NodeOption = Annotated[str | None, typer.Option("--node", help="Plan on the wiring stored for this node (`wirewise topo save`).")]
NameOption = Annotated[str | None, typer.Option("--name", help="Run the spec under this campaign name instead of its own.")]
GpusOption = Annotated[str | None, typer.Option("--gpus", metavar="K[,K...]", help="GPU counts to sweep instead of the spec's axes.gpus (every workload), e.g. 2,4,8 or 2-4.")]
IncludeDownOption = Annotated[bool, typer.Option("--include-down", help="Fleet campaigns (target.scope each-node): plan the nodes Slurm reports down or drained too (they run once Slurm takes them back).")]


def _counts(text: str | None) -> list[int] | None:
    from wirewise.errors import UserError
    from wirewise.ranges import GPU_COUNTS, parse_ranges

    if text is None:
        return None
    counts = parse_ranges(text, GPU_COUNTS, option="--gpus")
    if not counts:
        raise UserError(f"--gpus {text!r}: give GPU counts such as 2 or 2,4,8")
    return counts


@app.command()
def plan(spec: SpecArg, topology_file: TopologyFileOption = None, node: NodeOption = None, name: NameOption = None,
         gpus: GpusOption = None, include_down: IncludeDownOption = False, db: DbOption = None,
         json: JsonOption = False) -> None:
    """Expand a spec into tasks, each on its exact GPUs; list what cannot be placed and why (a fleet spec: per node type, with its nodes)."""
    from wirewise.orchestrator.campaign.lifecycle import plan_spec
    from wirewise.orchestrator.report.campaigns import plan_table

    _, planned = plan_spec(spec, topology_file, node, db, name, _counts(gpus), include_down)
    _note_cpu(planned)
    if json:
        print_json(planned.to_json())
        return
    print_tables([plan_table(planned)])


@app.command()
def submit(
    spec: SpecArg,
    executor: Annotated[str | None, typer.Option("--executor", help="Where the tasks run: slurm or local [default: the spec's target.executor].")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Plan and show the arrays and Slurm parameters; record and submit nothing.")] = False,
    topology_file: TopologyFileOption = None,
    node: NodeOption = None,
    name: NameOption = None,
    gpus: GpusOption = None,
    include_down: IncludeDownOption = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Record the campaign and submit it: job arrays through submitit (slurm), or run it here (local). A fleet spec's nodes without a stored wiring are surveyed first."""
    from wirewise.orchestrator.campaign.lifecycle import campaign_folder, plan_spec, submission_for, submit_spec
    from wirewise.orchestrator.executor import check_name, executor_named
    from wirewise.orchestrator.report.campaigns import submitted_lines

    if executor is not None:
        check_name(executor, "--executor")
    with survey_progress(quiet=json) as on_probe:
        campaign, planned = plan_spec(spec, topology_file, node, db, name, _counts(gpus), include_down,
                                      probe=not dry_run, on_probe=on_probe)
    _note_cpu(planned)
    executor = executor or campaign.target.executor
    if dry_run:
        gpus = planned.topology.gpus if planned.topology is not None else None
        runs = [(t.spec.task_id, 1) for t in planned.tasks]
        submission = submission_for(campaign, gpus, runs, executor, campaign_folder(campaign), dry_run=True,
                                    pins=planned.pins(campaign.target.partition))
        report = {"campaign": campaign.name, "executor": executor, "dry_run": True, "skipped": len(planned.skipped),
                  **submission.to_json()}
        if planned.left_out:
            report["left_out"] = [{"node": n, "reason": r} for n, r in planned.left_out.items()]
    else:
        from wirewise.orchestrator.store import Store

        with _task_progress(len(planned.tasks), quiet=json or not executor_named(executor).runs_here) as on_task:
            report = submit_spec(Store(db), campaign, planned, executor, on_task)
    if json:
        print_json(report)
    else:
        typer.echo("\n".join(submitted_lines(report)))
    _exit_if_interrupted(report)


def _exit_if_interrupted(report: dict) -> None:
    """A local run stopped by Ctrl-C (or `campaign cancel`) exits 130 once its cancelled task
    is stored, as `bench` does (wirewise.orchestrator.bench.here.EXIT_CANCELLED)."""
    from wirewise.orchestrator.bench.here import EXIT_CANCELLED

    if report.get("interrupted"):
        typer.echo(f"wirewise: campaign {report['campaign']} stopped: its cancelled task is stored; "
                   f"`wirewise campaign resume {report['campaign']}` runs the rest", err=True)
        raise typer.Exit(EXIT_CANCELLED)


@app.command()
def status(
    name: NameArg,
    watch: Annotated[bool, typer.Option("--watch", help="Poll until every task has ended, then collect.")] = False,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls with --watch (1 to 86400).")] = 10.0,
    nodes: Annotated[bool, typer.Option("--nodes", help="Each node's tasks per state too (fleet campaigns; --json always has them).")] = False,
    junit: JunitOption = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Tasks per state, from the campaign folder and one Slurm query per poll."""
    from wirewise.errors import UserError
    from wirewise.limits import MAX_INTERVAL_S
    from wirewise.orchestrator.campaign.track import campaign_status, collect_campaign
    from wirewise.orchestrator.report.campaigns import status_table
    from wirewise.orchestrator.store import Store

    if not 1 <= interval <= MAX_INTERVAL_S:  # also refuses nan
        raise UserError(f"--interval {interval:g}: give seconds from 1 to {MAX_INTERVAL_S}")
    store = Store.existing(db)
    state = campaign_status(store, name, stored_if_unusable=not watch)
    if state.note:
        sys.stderr.write(f"wirewise: note: {state.note}\n")
    if watch:
        state = _watch(store, name, state, interval, quiet=json)
        collect_campaign(store, name)
    if junit is not None:
        from pathlib import Path

        from wirewise.orchestrator.campaign.folder import CampaignFolder
        from wirewise.orchestrator.report.junit import campaign_cases, write_junit

        folder = CampaignFolder(Path(state.campaign.folder))
        errors = {t.task_id: folder.run_error(t.task_id, t.attempt) for t in state.tasks if t.status not in ("ok", "pending", "running")}
        write_junit(junit, f"wirewise campaign {name}", campaign_cases(state, {k: v for k, v in errors.items() if v}))
    if json:
        print_json(state.to_json())
    else:
        console().print(status_table(state, by_node=nodes))
        for warning in state.warnings:
            err_console().print(f"warning: {warning}", style="yellow", markup=False, highlight=False)


@app.command()
def collect(name: NameArg, db: DbOption = None, json: JsonOption = False) -> None:
    """Store the results of finished tasks (again: adds nothing)."""
    from wirewise.orchestrator.campaign.track import collect_campaign
    from wirewise.orchestrator.store import Store

    collected, state = collect_campaign(Store(db), name)
    report = {"campaign": name, "files": collected.files, "records": collected.records, "new_records": collected.new,
              "counts": state.counts}
    if json:
        print_json(report)
    else:
        typer.echo(f"campaign {name}: {collected.files} result file(s), {collected.new} new record(s) stored; "
                   + ", ".join(f"{k} {v}" for k, v in state.counts.items()))


@app.command()
def resume(
    name: NameArg,
    include_oom: Annotated[bool, typer.Option("--include-oom", help="Retry tasks that ran out of memory too.")] = False,
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1, help="Runs per task at most, the first included.")] = 3,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Submit again exactly the tasks that are missing, failed, cancelled or timed out."""
    from wirewise.orchestrator.campaign.lifecycle import resume_campaign
    from wirewise.orchestrator.report.campaigns import submitted_lines
    from wirewise.orchestrator.store import Store

    with _task_progress(None, quiet=json) as on_task:
        report = resume_campaign(Store(db), name, include_oom, max_attempts, on_task)
    if json:
        print_json(report)
        _exit_if_interrupted(report)
        return
    if not report["resubmitted"]:
        typer.echo(f"campaign {name}: nothing to resubmit")
        for left in report.get("left_out", []):
            typer.echo(f"  left out: {left['node']}: {left['reason']}")
    else:
        typer.echo("\n".join(submitted_lines(report)))
    if report["attempt_limit_reached"]:
        typer.echo(f"{len(report['attempt_limit_reached'])} task(s) left out: they ran {max_attempts} times (--max-attempts)")
    _exit_if_interrupted(report)


@app.command()
def cancel(name: NameArg, db: DbOption = None, json: JsonOption = False) -> None:
    """Cancel the campaign's arrays still in Slurm (or stop its run here)."""
    from wirewise.orchestrator.campaign.lifecycle import cancel_campaign
    from wirewise.orchestrator.store import Store

    report = cancel_campaign(Store(db), name)
    if json:
        print_json(report)
    elif report.get("stopped_local_run"):
        typer.echo(f"campaign {name}: asked the local run (pid {report['stopped_local_run']}) to stop")
    else:
        arrays = report["cancelled_arrays"]
        note = f" ({report['note']})" if report.get("note") else ""
        typer.echo(f"campaign {name}: cancelled {', '.join(arrays)}" if arrays else f"campaign {name}: nothing running{note}")


@app.command()
def forget(
    name: NameArg,
    remove_results: Annotated[bool, typer.Option("--remove-results", help="Remove the campaign's stored results too (default: kept).")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Remove a campaign's records (its results stay unless --remove-results); its folder stays on disk."""
    from wirewise.orchestrator.campaign.lifecycle import forget as forget_campaign
    from wirewise.orchestrator.store import Store

    report = forget_campaign(Store(db), name, remove_results)
    if json:
        print_json(report)
        return
    kept = "its results kept" if report["results_kept"] else f"{report['results_removed']} result(s) removed"
    typer.echo(f"campaign {name} forgotten: {report['tasks_removed']} task record(s) removed, {kept}; "
               f"its folder {report['folder']} is left as it is")


@app.command("list")
def list_(db: DbOption = None, json: JsonOption = False) -> None:
    """Stored campaigns, newest first, with their tasks per state as last seen."""
    from wirewise.orchestrator.report.campaigns import campaigns_table
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.campaigns import list_campaigns

    rows = list_campaigns(Store.existing(db))
    if json:
        print_json(rows)
    elif not rows:
        typer.echo("no campaigns stored yet; run `wirewise campaign submit SPEC`")
    else:
        console().print(campaigns_table(rows))


def _note_cpu(planned) -> None:
    if planned.cpu_ranks:
        typer.echo("wirewise: note: no NVIDIA GPU or driver here: the tasks run as CPU ranks (gloo)", err=True)


def _watch(store, name, state, interval: float, quiet: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from wirewise.orchestrator.campaign.track import campaign_status

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), disable=quiet) as bar:
        task = bar.add_task(name, total=len(state.tasks), counts="")
        while True:
            finished = sum(1 for t in state.tasks if t.status not in ("running", "pending"))
            bar.update(task, completed=finished, counts=" ".join(f"{k} {v}" for k, v in state.counts.items()))
            if state.done:
                return state
            time.sleep(interval)
            state = campaign_status(store, name)


@contextmanager
def _task_progress(total: int | None, quiet: bool):
    """A progress bar over tasks run here (local executor) and a line per task as it ends, in
    a terminal and in a pipe; yields the per-task callback."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from wirewise.orchestrator.bench.here import progress_bar

    with progress_bar(TextColumn("[bold]tasks"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[last]}"),
                      TimeElapsedColumn(), quiet=quiet) as progress:
        bar = progress.add_task("tasks", total=total, last="")

        def on_task(task_id: str, status: str) -> None:
            progress.update(bar, advance=1, last=f"{task_id} {status}")
            if not quiet:
                print_lines([f"task {task_id}: {status}"])

        yield on_task
