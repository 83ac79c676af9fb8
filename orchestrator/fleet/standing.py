"""What the pair tests in the store say of each node and pair, for placement across nodes
(`wirewise place --across-nodes`, `wirewise run`) and for anything else that must keep jobs
off bad nodes.

    pair_standing(store, nodes, tolerance) -> Measured   (wirewise.orchestrator.placement.nodes.Measured)

Every pair test counts (known by its label: wirewise.orchestrator.store.pair_results.pair_results;
another two-node collective is another case), judged as `fleet pairs` judges (verdict.judge)
within its campaign, one case (wirewise.case: op, dtype, device, ranks per node, the fabric
scope between the two nodes, ...) at a time, at the largest size the campaign measured it. A node's standing is its
verdict in the newest campaign that tested it: bad -> avoided (with its evidence), healthy
-> preferred; a slow link between two healthy nodes is one placement does not span. Drained
nodes and other reasons to avoid a node add to `avoid` the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from wirewise.orchestrator.fleet.verdict import Measure, judge
from wirewise.units import gbs_text
from wirewise.orchestrator.placement.nodes import Measured


def pair_standing(store, nodes: Iterable[str] | None, tolerance: float) -> Measured:
    """The standing of `nodes` (None: every node tested), judged at `tolerance` (the rules'
    pair-below-fleet tolerance, as `fleet pairs` judges by default). Each campaign that tested
    any of them is judged whole: a node judged on its own pairs alone is its own reference (a
    slow node, slow in every pair, would pass)."""
    from wirewise.orchestrator.store.pair_results import pair_results

    measured = Measured()
    if store is None:
        return measured
    wanted = None if nodes is None else set(nodes)
    campaigns: dict[str | None, list] = {}
    for result in pair_results(store):  # newest first
        campaigns.setdefault(result.campaign, []).append(result)
    decided: set[str] = set()
    for campaign, rows in campaigns.items():  # newest campaign first
        tested = {n for row in rows for n in row.nodes}
        if wanted is not None and not tested & wanted:
            continue
        for (case, size), measures in _cases(rows).items():
            op = dict(case).get("op")
            names = sorted({n for m in measures for n in m.nodes})
            verdict = judge(names, measures, tolerance)
            for node, evidence in verdict.bad_nodes.items():
                if node not in decided:
                    measured.avoid.setdefault(node, _why(campaign, op, size, evidence))
            for pair in verdict.bad_pairs:
                if pair["why"].startswith("a slow link") and not set(pair["nodes"]) & decided:
                    measured.slow_links.add(frozenset(pair["nodes"]))
            for m in measures:
                if m.busbw_gbs is not None and m.key not in measured.busbw:
                    measured.busbw[m.key] = m.busbw_gbs
            measured.healthy |= {n for n in verdict.known_good if n not in decided and n not in measured.avoid}
        decided |= tested
    return measured


def figure_of(rows):
    """The row a test's figure is read from, of one test's rows at one op and size: out of
    place where both forms were measured (nccl-tests' first columns)."""
    measured = [row for row in rows if row.status == "ok" and row.busbw_gbs is not None]
    return next((row for row in measured if not row.in_place), measured[0] if measured else None)


def _cases(rows) -> dict[tuple, list[Measure]]:
    """One campaign's pair results as measures per (case less size and form, size): each case
    at its largest size, each pair's latest test there (out of place where both forms were
    measured); a test that failed before measuring counts as failed in each of them."""
    largest: dict[tuple, int] = {}
    for row in rows:
        if row.op is not None and row.bytes is not None:
            largest[row.sizes_key] = max(largest.get(row.sizes_key, 0), row.bytes)
    failed = [row for row in rows if row.status != "ok"]
    cases: dict[tuple, list[Measure]] = {}
    for case, size in largest.items():
        tests: dict[frozenset[str], list] = {}
        for row in rows:  # newest first: a pair's first task is its latest
            if row.sizes_key == case and row.bytes == size:
                held = tests.setdefault(frozenset(row.nodes), [])
                if not held or held[0].task_id == row.task_id:
                    held.append(row)
        measures = {pair: Measure(chosen.nodes, chosen.busbw_gbs) for pair, held in tests.items()
                    if (chosen := figure_of(held)) is not None}
        for row in failed:
            measures.setdefault(frozenset(row.nodes), Measure(row.nodes, None, row.error))
        cases[(case, size)] = list(measures.values())
    if not cases and failed:
        cases[((), None)] = list({frozenset(r.nodes): Measure(r.nodes, None, r.error) for r in failed}.values())
    return cases


def _why(campaign: str | None, op: str | None, size: int | None, evidence: dict) -> str:
    from wirewise.units import bytes_text

    where = f"pair test {campaign}" if campaign else "pair results"
    if evidence.get("busbw_gbs") is None:
        return f"{where}: every test with it failed, its partners being healthy"
    return (f"{where}: best pair {gbs_text(evidence['busbw_gbs'])} busbw, {evidence['ratio']:.0%} of the fleet's "
            f"{gbs_text(evidence['reference_gbs'])} ({op} at {bytes_text(size)})")
