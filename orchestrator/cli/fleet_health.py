"""`wirewise fleet status`, `drain`, `retest`, `resume`. Parsing and printing only: the work is
in wirewise.orchestrator.health.fleet."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from wirewise.limits import MAX_NODES
from wirewise.orchestrator.cli.common import DbOption, JsonOption, print_json, print_tables, site_partition, warn
from wirewise.orchestrator.cli.doctor import RulesOption

Partition = Annotated[str | None, typer.Option("--partition", "-p", help="Only this Slurm partition's nodes [default: the setting partition, without --node].")]
Nodes = Annotated[list[str] | None, typer.Option("--node", help="Only this node (repeat for several).")]
Apply = Annotated[bool, typer.Option("--apply", help="Do it; without --apply, say what would be done.")]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds the repeated measurements may take in all (30 to a year).")]


def _timeout(seconds: float) -> float:
    """--timeout as a number of seconds the repeats (and a re-test's reservation) can be given."""
    from wirewise.errors import UserError
    from wirewise.limits import MAX_TIME_MIN

    if not 30 <= seconds <= MAX_TIME_MIN * 60:  # also refuses nan
        raise UserError(f"--timeout {seconds:g}: give seconds from 30 to {MAX_TIME_MIN * 60} (a year)")
    return seconds


def status(
    partition: Partition = None,
    node: Nodes = None,
    format_: Annotated[str, typer.Option("--format", metavar="table|prometheus", help="prometheus: node_exporter textfile-collector metrics (verdicts, open findings by rule, drain, last check, latest busbw and its baseline).")] = "table",
    out: Annotated[Path | None, typer.Option("--out", help="With --format prometheus: the file to write (replaced whole, never half-read by a scrape) [default: stdout].")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Every node: its Slurm state and reason, its verdict and evidence, and the audit trail.
    Without Slurm, the stored verdicts, and a warning saying what Slurm was not asked."""
    from wirewise.errors import UserError
    from wirewise.orchestrator.health.fleet import fleet_status
    from wirewise.orchestrator.store import Store

    if format_ not in ("table", "prometheus"):
        raise UserError(f"--format {format_!r}: choose table or prometheus")
    if out is not None and format_ != "prometheus":
        raise UserError("--out goes with --format prometheus")
    if json and format_ == "prometheus":
        raise UserError("give --json or --format prometheus, not both")
    store = Store.existing(db)
    rows, notes = fleet_status(store, site_partition(partition, node), node)
    warn(notes)
    if format_ == "prometheus":
        _write_prometheus(store, rows, out)
        return
    if json:
        print_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"{len(rows)} node(s)")
    for name in ("node", "state", "reason", "verdict", "evidence", "last action"):
        table.add_column(name, overflow="fold", max_width=60)
    for row in rows:
        last = row["actions"][-1] if row["actions"] else None
        table.add_row(row["node"], row["state"] or "?", row["reason"] or "", row["verdict"], "\n".join(row["evidence"]),
                      f"{last['action']} {last['outcome']} ({last['asked_by']}, {last['at']:%Y-%m-%d %H:%M})" if last else "")
    print_tables([table])


def _write_prometheus(store, rows: list[dict], out: Path | None) -> None:
    from wirewise.atomic import write_text_atomic
    from wirewise.orchestrator.health.prometheus import exposition, latest_busbw

    text = exposition(rows, latest_busbw(store, [row["node"] for row in rows]))
    if out is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(out, text)


def drain(
    apply: Apply = False,
    partition: Partition = None,
    node: Nodes = None,
    rules: RulesOption = None,
    beyond: Annotated[int, typer.Option("--beyond-guardrails", min=0, max=MAX_NODES, help="The second confirmation: drain this many nodes past the guardrails (the dry run says how many).")] = 0,
    timeout: Timeout = 900.0,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Drain the nodes with open findings, each after a repeat of its failing measurement
    confirms it, with the reason wirewise:<rule>:<metric>:<delta>; never past the guardrails."""
    from wirewise.orchestrator.health.fleet import fleet_drain
    from wirewise.orchestrator.health.rules import load_rules
    from wirewise.orchestrator.store import Store

    timeout = _timeout(timeout)
    loaded = load_rules(rules)
    report = fleet_drain(Store(db), loaded, apply, site_partition(partition, node), node, beyond, timeout, loaded.file)
    _show(report, json, {"would_drain": "would confirm, then drain", "drained": "drained", "not_confirmed": "not drained: the repeat passed",
                         "not_measured": "not drained: not measured", "held": "held", "skipped": "skipped"})


def retest(
    apply: Apply = False,
    partition: Partition = None,
    node: Nodes = None,
    rules: RulesOption = None,
    timeout: Timeout = 900.0,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Run the defect's measurement again on the nodes wirewise drained, inside a maintenance
    reservation (no user job lands there meanwhile); they stay drained until `fleet resume`."""
    from wirewise.orchestrator.health.fleet import fleet_retest
    from wirewise.orchestrator.health.rules import load_rules
    from wirewise.orchestrator.store import Store

    timeout = _timeout(timeout)
    loaded = load_rules(rules)
    report = fleet_retest(Store(db), loaded, apply, site_partition(partition, node), node, timeout, loaded.file)
    _show(report, json, {"would_retest": "would re-test", "passed": "re-test passed", "failed": "re-test failed",
                         "not_measured": "not measured", "skipped": "skipped"})


def resume(apply: Apply = False, partition: Partition = None, node: Nodes = None, db: DbOption = None,
           json: JsonOption = False) -> None:
    """Return to service the nodes wirewise drained whose re-test passed."""
    from wirewise.orchestrator.health.fleet import fleet_resume
    from wirewise.orchestrator.store import Store

    report = fleet_resume(Store(db), apply, site_partition(partition, node), node)
    _show(report, json, {"would_resume": "would resume", "resumed": "resumed", "skipped": "skipped"})


def _show(report: dict[str, Any], json: bool, headings: dict[str, str]) -> None:
    if json:
        print_json(report)
        return
    said = False
    for key, heading in headings.items():
        for item in report.get(key) or []:
            said = True
            detail = item.get("why") or item.get("repeat") or item.get("retest") or "; ".join(item.get("confirm_by") or item.get("measure") or [])
            typer.echo(f"{item['node']}: {heading}" + (f" ({item['reason']})" if item.get("reason") else "") + (f": {detail}" if detail else ""))
    if not said:
        typer.echo("nothing to do")
    if report.get("stopped"):
        typer.echo(f"stopped: {report['stopped']}")
    if not report.get("apply") and any(report.get(k) for k in ("would_drain", "would_retest", "would_resume")):
        typer.echo("dry run: nothing changed; --apply does it")


__all__ = ["drain", "print_tables", "resume", "retest", "status"]
