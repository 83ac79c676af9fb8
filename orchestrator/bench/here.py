"""Run one task now on this machine (`wirewise bench ...`), with a progress bar.

The same wirewise.jobs.supervise.run_task that Slurm tasks call does the work; this adds what a
person at a terminal wants: a progress bar and a fresh run folder. Storing the result is
the record stage's (wirewise.orchestrator.record.ingest).
"""

from __future__ import annotations

from pathlib import Path

from wirewise.orchestrator.bench.folders import new_run_dir


def run_here(spec, label: str, quiet: bool = False, run_dir: Path | None = None, on_row=None) -> Path:
    """Run `spec` (a wirewise.task.TaskSpec) here, in `run_dir` (default: a new one); returns
    the path of its result file. `on_row` gets each row as it is measured (run_task); what it
    prints to stdout shows above the bar on a terminal (rich redirects it there), and goes
    straight through to a pipe, where the bar shows nothing."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from wirewise.jobs.supervise import run_task

    with progress_bar(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[step]}"), TimeElapsedColumn(), quiet=quiet) as bar:
        # The label holds user strings (a --model path) and the columns render markup: escaped.
        task = bar.add_task(escape(label), total=None, step="starting ranks")

        def on_progress(done: int, total: int, step: str) -> None:
            bar.update(task, completed=done, total=total, step=escape(step))

        return run_task(spec, run_dir or new_run_dir(spec.task_id), on_progress=on_progress, on_row=on_row)


def progress_bar(*columns, quiet: bool):
    """A transient rich progress bar on stdout, on a terminal only: what is printed meanwhile
    shows above it; a pipe gets that output alone (rich would hold the bar back and end it with
    a blank line)."""
    from rich.console import Console
    from rich.progress import Progress

    out = Console()
    return Progress(*columns, transient=True, console=out, disable=quiet or not out.is_terminal)


def run_and_record(spec, db: str | None, label: str, quiet: bool = False, on_row=None, note: str | None = None):
    """Open the store (before spending minutes on the run), run `spec` here, store its records
    and its task; returns (records, result file). `note` is said on stderr as the run starts,
    once nothing can refuse it (bad input stays one line). A database that stays busy loses
    nothing: the error names the result file and `wirewise collect` stores it later."""
    import sys

    from wirewise.orchestrator.record.collect import ingest_patiently
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.campaigns import record_task

    run_dir = new_run_dir(spec.task_id)  # a bad WIREWISE_RUNS is an error before the database is touched
    store = Store(db)
    if note:
        sys.stderr.write(f"wirewise: note: {note}\n")
    result_file = run_here(spec, label, quiet, run_dir, on_row)
    records, _new = ingest_patiently(store, result_file)
    record_task(store, spec, records[0].status if records else "failed")
    return records, result_file


EXIT_CANCELLED = 130  # as a shell reports a command stopped by Ctrl-C


def run_ending(workload: str, records, result_file: Path, db: str | None) -> tuple[int, list[str]]:
    """The exit code and last lines of a run here: how it ended and where its rank logs are
    when it did not succeed, then where its results were stored (always)."""
    from wirewise.orchestrator.store.engine import display_url

    failed = [r for r in records if r.status != "ok"]
    lines = []
    if failed or not records:
        what = f"{failed[0].status}: {failed[0].error}" if failed else "returned no rows"
        lines += [f"{workload} run {what}", f"rank logs in {result_file.parent.resolve()}"]
    lines.append(f"stored {len(records)} record(s) in {display_url(db)}; result file {result_file.resolve()}")
    if not failed and records:
        return 0, lines
    return (EXIT_CANCELLED if failed and failed[0].status == "cancelled" else 1), lines
