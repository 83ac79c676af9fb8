"""`wirewise fleet`: the nodes of a cluster as a whole. `fleet pairs` tests pairs of nodes and
names the bad node or link; `fleet status`, `drain`, `retest`, `resume` act on each node's verdict.
Parsing and printing only; the work is in wirewise.orchestrator.fleet.
"""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from wirewise.limits import MAX_NODES
from wirewise.orchestrator.cli.common import (
    ConstraintOption, DbOption, JsonOption, JunitOption, NodelistOption, PartitionOption, command_group, console, print_json, scope_options, print_tables, site_partition, warn,
)
from wirewise.orchestrator.cli.doctor import RulesOption

app = command_group(
    "The nodes of a cluster as a whole: pair tests that name the bad node or link; each node's verdict, "
    "drain, re-test, resume.\n\n"
    "Fleet campaigns (every node of a partition) are campaign specs with target.scope each-node "
    "(docs/fleet.md); `wirewise topo survey` stores every node's wiring."
)

def pairs(
    partition: PartitionOption = None,
    nodelist: NodelistOption = None,
    constraint: ConstraintOption = None,
    mode: Annotated[str, typer.Option("--mode", help="quick: disjoint pairs, then each node of a bad pair against a healthy one (about n/2 + 2k tests); all: every pair.")] = "quick",
    op: Annotated[str, typer.Option("--op", help="The collective (all_reduce, all_gather, reduce_scatter, ...).")] = "all_reduce",
    size: Annotated[str, typer.Option("--bytes", "-b", help="Message size of each test (64M, 1G, ...).")] = "64M",
    iters: Annotated[int, typer.Option("--iters", "-n", min=1, help="Timed iterations per test.")] = 10,
    warmup: Annotated[int, typer.Option("--warmup", min=0, help="Untimed iterations first.")] = 3,
    backend: Annotated[str | None, typer.Option("--backend", help="nccl or gloo [default: nccl where every node has GPUs, else gloo CPU ranks].")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", min=1, help="Ranks per node: GPUs with nccl [default: every GPU of the node], CPU ranks with gloo [default: 1].")] = None,
    tolerance: Annotated[float | None, typer.Option("--tolerance", help="A pair is slow below (1 - this) x the fleet's median busbw [default: the rules' pair-below-fleet tolerance, 0.2].")] = None,
    rules: RulesOption = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds each test may run before it counts as failed.")] = 300.0,
    name: Annotated[str | None, typer.Option("--name", help="The campaign that stores the tests [default: pairs-DATE-TIME].")] = None,
    junit: JunitOption = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Test pairs of nodes with a collective and name each slow node and link, with the evidence; exit 1 when something is flagged.
    Each bad node gets a pair-below-fleet finding (`wirewise fleet status`), which `fleet drain` acts on."""
    from wirewise.errors import UserError
    from wirewise.orchestrator.fleet.pairs import PairTest
    from wirewise.units import gbs_text
    from wirewise.orchestrator.fleet.pair_findings import pair_tests
    from wirewise.orchestrator.health.rules import load_rules
    from wirewise.orchestrator.store import Store
    from wirewise.units import parse_size

    if backend not in (None, "nccl", "gloo"):
        raise UserError(f"--backend {backend!r}: choose nccl or gloo")
    try:
        test = PairTest(op=op, size=parse_size(size), iters=iters, warmup=warmup, backend=backend, gpus=gpus, timeout_s=timeout)
    except ValueError as exc:
        raise UserError(f"--bytes {size!r}: {exc}") from None
    scope = scope_options(partition, nodelist, constraint)
    out = None if json else console()

    def on_round(number, tested, measures) -> None:
        if out is not None:
            said = ", ".join(f"{a}-{b} {gbs_text(m.busbw_gbs)}" for (a, b), m in zip(tested, measures))
            out.print(f"round {number}: {said}", markup=False, highlight=False)

    report = pair_tests(Store(db), scope, mode, test, tolerance, name, load_rules(rules), on_round=on_round)
    if junit is not None:
        from wirewise.orchestrator.report.junit import pair_cases, write_junit

        write_junit(junit, f"wirewise fleet pairs {report['campaign']}", pair_cases(report))
    if json:
        print_json(report)
    else:
        print_verdict(report)
    if not report["healthy"]:
        raise typer.Exit(1)


def print_verdict(report: dict) -> None:
    from wirewise.units import gbs_text
    from wirewise.units import bytes_text

    out = console()

    def say(line: str, style: str | None = None) -> None:
        out.print(line, style=style, markup=False, highlight=False)

    say(f"pair tests ({report['mode']}) on {len(report['nodes'])} node(s): {report['tests']} test(s) in "
        f"{report['rounds']} round(s), {report['op']} at {bytes_text(report['bytes'])}, {report['backend']} x "
        f"{report['ranks_per_node']} per node")
    scopes = report["scopes"] if len(report["scopes"]) > 1 else {None: report}
    for scope, figures in scopes.items():
        where = f"{scope} ({figures['tests']} test(s)): " if scope else ""
        spread = f", healthy pairs spread {figures['spread']:.0%}" if figures["spread"] is not None else ""
        if figures["reference_gbs"] is None:
            say(f"{where}no test measured anything: every one failed", "red")
        else:
            say(f"{where}fleet median {gbs_text(figures['reference_gbs'])}; slow below "
                f"{gbs_text(figures['threshold_gbs'])} (tolerance {report['tolerance']:.0%}){spread}")
    for node in report["bad_nodes"]:
        evidence = report["evidence"]["nodes"][node]
        ratio = f", {evidence['ratio']:.0%} of the median" if evidence["ratio"] is not None else ""
        partners = ", ".join(f"{p['with']} {gbs_text(p['busbw_gbs'])}" + (f" ({p['scope']})" if p.get("scope") else "")
                             for p in evidence["pairs"])
        say(f"bad node {node}: best pair {gbs_text(evidence['busbw_gbs'])}{ratio}; its tests: {partners}", "red")
    for pair in report["evidence"]["pairs"]:
        ratio = f" ({pair['ratio']:.0%} of the median)" if pair["ratio"] is not None else ""
        say(f"bad pair {'-'.join(pair['nodes'])}: {gbs_text(pair['busbw_gbs'])}{ratio}: {pair['why']}", "red")
    if report["untested"]:
        say(f"untested: {', '.join(report['untested'])}", "yellow")
    for left in report["left_out"]:
        say(f"left out {left['node']}: {left['reason']}", "yellow")
    for found in report.get("findings", []):
        say(f"finding on {found['node']}: {found['reason']} (`wirewise fleet drain` confirms and drains)", "red")
    if report["healthy"]:
        floor = "its scope's floor" if len(report["scopes"]) > 1 else gbs_text(report["threshold_gbs"])
        say(f"healthy: every node and pair at or above {floor}", "green")
    say(f"stored as campaign {report['campaign']} (`wirewise campaign status {report['campaign']} --nodes`)")



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
    from wirewise.orchestrator.fleet.actions import fleet_status
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
    from wirewise.orchestrator.fleet.prometheus import exposition, latest_busbw

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
    from wirewise.orchestrator.fleet.actions import fleet_drain
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
    from wirewise.orchestrator.fleet.actions import fleet_retest
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
    from wirewise.orchestrator.fleet.actions import fleet_resume
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


app.command("pairs")(pairs)
app.command("status")(status)
app.command("drain")(drain)
app.command("retest")(retest)
app.command("resume")(resume)
