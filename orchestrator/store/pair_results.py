"""The pair tests' results (known by their label, the placement
`pair` their tasks record: another two-node collective, a 2 x 2 scaling run say, is no pair
test), which pair verdicts and placement across nodes read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from wirewise.case import CASE_FIELDS, scope_of
from wirewise.orchestrator.store import Store


@dataclass(frozen=True)
class PairResult:
    """One collective measured between two nodes (one row of a two-node task)."""

    campaign: str | None
    task_id: str | None
    nodes: tuple[str, str]  # in node-rank order
    op: str | None  # None: the task failed before measuring
    bytes: int | None
    busbw_gbs: float | None
    status: str
    in_place: bool | None
    case: tuple[tuple[str, object], ...]  # the result's case (wirewise.case), as (field, value) pairs
    ended_at: datetime
    error: str | None = None

    @property
    def sizes_key(self) -> tuple[tuple[str, object], ...]:
        """The case less its size and form: the tests one verdict judges at one size (its largest)."""
        return tuple((name, value) for name, value in self.case if name not in ("bytes", "in_place"))


PAIR_LABEL = "pair"  # the placement a pair test's tasks ask for (wirewise.orchestrator.fleet.pairs; wirewise.case.PLACEMENTS)


CASE = CASE_FIELDS["collective"]


def pair_results(store: Store, campaign: str | None = None) -> list[PairResult]:
    """The pair tests' results (two nodes, labelled `pair`), newest first, each with its case:
    every result of one campaign, or all."""
    with store.read() as db:
        d, p = db.dialect, db.params()
        where = d.seldom(f"placement = {p(PAIR_LABEL)}")  # bound in the order they are written
        if campaign is not None:
            where += f" AND campaign = {p(campaign)}"
        rows = db.rows(
            f"SELECT campaign, task_id, nodes, busbw_gbs, status, ended_at, error, {', '.join(CASE)} "
            f"FROM results WHERE workload = 'collective' AND node_count = 2 AND {where} ORDER BY ended_at DESC, id DESC", p,
        )
    found = []
    for name, task_id, pair, busbw, status, ended_at, error, *values in rows:
        pair, ended_at = d.json(pair), d.when(ended_at)
        if len(pair or []) != 2:
            continue
        case = dict(zip(CASE, values))
        for flag in ("in_place", "cuda_graph"):
            case[flag] = d.flag(case[flag])
        found.append(PairResult(name, task_id, (pair[0], pair[1]), case["op"], case["bytes"], busbw, status,
                                case["in_place"], tuple(case.items()), ended_at, error))
    return found


def pair_scopes(store: Store):
    """A pair of nodes -> its fabric scope (wirewise.case.scope_of), from the NVLink domains the
    nodes' stored wirings reported: what keeps `fleet pairs` from judging a pair across domains
    against the pairs inside one."""
    from wirewise.orchestrator.store.topology import node_domains

    domains = node_domains(store)
    return lambda pair: scope_of(2, list(pair), domains)
