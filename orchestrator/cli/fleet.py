"""`wirewise fleet`: the nodes of a cluster as a whole. `fleet pairs` tests pairs of nodes and
names the bad node or link. Parsing and printing only; the work is in
wirewise.orchestrator.fleet.

Commands from other modules join the group with one line each below (`app.command("NAME")(function)`).
"""

from typing import Annotated

import typer

from wirewise.orchestrator.cli import fleet_health
from wirewise.orchestrator.cli.doctor import RulesOption
from wirewise.orchestrator.cli.common import (
    ConstraintOption, DbOption, JsonOption, JunitOption, NodelistOption, PartitionOption, command_group, console, print_json, scope_options,
)

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
    from wirewise.orchestrator.health.pairs import pair_tests
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


app.command("pairs")(pairs)
app.command("status")(fleet_health.status)
app.command("drain")(fleet_health.drain)
app.command("retest")(fleet_health.retest)
app.command("resume")(fleet_health.resume)
