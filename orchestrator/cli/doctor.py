"""`wirewise doctor`: the rules on the history and on this node; `--health-check` and `--prolog`
for Slurm. Parsing and printing only: the work is in wirewise.orchestrator.health.doctor and
wirewise.orchestrator.health.node."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, JunitOption, print_json, print_tables

RulesOption = Annotated[Path | None, typer.Option("--rules", help="A rules file laid over the shipped defaults (docs/fleet.md) [default: the setting rules].")]


def doctor(
    node: Annotated[str | None, typer.Option("--node", help="The node to check (default: every node with results, and this one; with --health-check or --prolog: this node).")] = None,
    include_cpu: Annotated[bool, typer.Option("--include-cpu", help="Judge CPU-rank (gloo) runs too, which measure the host, not the fabric.")] = False,
    rules: RulesOption = None,
    health_check: Annotated[bool, typer.Option("--health-check", help="Slurm's HealthCheckProgram: NVML and the node's verdicts, no GPU work; drains the node with the reason when a rule fires.")] = False,
    report_only: Annotated[bool, typer.Option("--report-only", help="With --health-check: report, drain nothing (exit 1 when a rule fires, 3 when nothing could be judged).")] = False,
    prolog: Annotated[bool, typer.Option("--prolog", help="Slurm's Prolog: a short collective on the job's GPUs; exit 1 (Slurm drains and requeues) on a fault.")] = False,
    junit: JunitOption = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Judge nodes by the rules: busbw or tokens/s below the fingerprint's baseline, slower than
    same-fingerprint peers, tasks failed where peers passed; and on this node (NVML) inactive
    NVLinks, PCIe below its maximum, a changed wiring. Records each node's verdict. Exits 1 when
    a rule fires, 3 when a node could not be judged (no baseline, peers or live reading), 0 when
    healthy."""
    from wirewise.errors import UserError
    from wirewise.orchestrator.health.rules import load_rules

    if health_check and prolog:
        raise UserError("give --health-check or --prolog, not both")
    if junit is not None and (health_check or prolog):
        raise UserError("--junit goes with doctor on the history, not --health-check or --prolog")
    if report_only and not health_check:
        raise UserError("--report-only goes with --health-check")
    if health_check or prolog:
        _on_node(rules, node, db, json, "prolog" if prolog else "health-check", report_only)
        return
    loaded = load_rules(rules)
    from wirewise.orchestrator.health.doctor import doctor as check
    from wirewise.orchestrator.store import Store
    from wirewise.topology.probe import probe_node, short_hostname

    found = check(Store.existing(db), node, include_cpu, live=probe_node, live_node=short_hostname(), rules=loaded)
    if junit is not None:
        from wirewise.orchestrator.report.junit import doctor_cases, write_junit

        write_junit(junit, "wirewise doctor", doctor_cases(found))
    if json:
        print_json(found)
    else:
        from wirewise.orchestrator.report.tables import doctor_table

        if found["findings"]:
            print_tables([doctor_table(found)])
        for verdict in ("healthy", "not judged"):
            named = [name for name, said in found["verdicts"].items() if said == verdict]
            if named:
                typer.echo(f"{verdict}: {', '.join(named)}")
        if not found["nodes"]:
            typer.echo("healthy: no nodes with results")
        for note in found["notes"]:
            typer.echo(f"note: {note}")
    raise typer.Exit(exit_code(found["healthy"]))


def exit_code(healthy: bool | None) -> int:
    """0 healthy, 1 a rule fired, NOT_JUDGED_EXIT when nothing could be judged (a script must not
    read that as healthy)."""
    return {True: 0, False: 1, None: NOT_JUDGED_EXIT}[healthy]


NOT_JUDGED_EXIT = 3


def _on_node(rules: Path | None, node: str | None, db: str | None, json: bool, mode: str, report_only: bool) -> None:
    """The health check or the prolog on this node (wirewise.orchestrator.health.node.on_node).
    Exit status: the health check 0 (a drain is its answer; with --report-only 1 when a rule
    fired, 3 when nothing was judged), the prolog 1 when it drained the node (Slurm then
    requeues the job), else 0, also when it could not judge the node (the note says why)."""
    from wirewise.orchestrator.health.node import on_node

    def show(outcome) -> None:
        name = outcome.node
        if json:
            print_json(outcome.to_json())
        else:
            for finding in outcome.findings:
                typer.echo(f"{name}: {finding.check}: {finding.evidence}")
            if outcome.drained:
                typer.echo(f"{name}: drained: {outcome.acted[0].reason}")
            elif outcome.not_judged:
                typer.echo(f"{name}: not judged ({mode}): {outcome.not_judged}")
            elif not outcome.findings:
                said = "healthy" if outcome.judged else "not judged"
                typer.echo(f"{name}: {said} ({mode}, {outcome.seconds:.1f} s)")
        for note in outcome.notes:
            sys.stderr.write(f"wirewise: note: {note}\n")

    outcome = on_node(mode, str(rules) if rules else None, node, db, show, report_only)
    show(outcome)
    if report_only:
        raise typer.Exit(exit_code(outcome.healthy))
    raise typer.Exit(outcome.exit_code)
