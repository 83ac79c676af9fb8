"""Which pairs of nodes to test next. Pure: nodes and the tests so far in, the next round out
(disjoint pairs, so a round's tests run at once without sharing a node); an empty round ends.

    next_round(nodes, measures, mode, tolerance, scope) -> [(a, b), ...]   (mode: quick or all)

quick: first the nodes in disjoint pairs, in order (n/2 tests); then each node of a bad pair
that is not known good, and each node not tested yet (the odd one out), against a known-good
node, each known-good node used once per round. k bad nodes among n cost about n/2 + 2k tests
instead of n(n-1)/2: a bad node's first pair is bad, so it and its partner are each tested
against a healthy node once (wirewise.orchestrator.fleet.verdict tells them apart). With no
known-good node yet (every pair bad so far, or an odd node left on 3), a node is tested
against one it has not met, so the round after has a known-good node if one exists.
On fewer than 4 nodes quick mode tests every pair: the fleet's figure needs two pairs that
share no node, and 3 nodes have none (a slow node is in two of the three pairs: the third,
between the two healthy ones, is what tells it apart). A link is only tested in quick mode
if its two nodes meet: a slow link between two healthy nodes of different first pairs is
found by `all`.

all: every pair, n(n-1)/2 tests, in rounds of disjoint pairs (the circle method: n-1 rounds of
n/2 for even n, n rounds of (n-1)/2 for odd n).
"""

from __future__ import annotations

from wirewise.orchestrator.fleet.verdict import Measure, Pair, Scope, judge

MODES = ("quick", "all")


def next_round(nodes: list[str], measures: list[Measure], mode: str, tolerance: float,
               scope: Scope | None = None) -> list[Pair]:
    tested = {m.key for m in measures}
    if mode == "all" or len(nodes) < 4:
        return _next_of_all(nodes, tested)
    if not measures:
        return [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
    verdict = judge(nodes, measures, tolerance, scope)
    unresolved = verdict.suspects + verdict.untested
    good = verdict.known_good
    pairs: list[Pair] = []
    busy: set[str] = set()
    for node in unresolved:
        partners = good or [n for n in nodes if n != node]
        partner = next((p for p in partners if p != node and p not in busy and frozenset((node, p)) not in tested), None)
        if partner is not None and node not in busy:
            pairs.append((node, partner))
            busy |= {node, partner}
    return pairs


def rounds_of_all(nodes: list[str]) -> list[list[Pair]]:
    """Every pair once, in rounds of disjoint pairs (the circle method)."""
    ring = list(nodes) + ([None] if len(nodes) % 2 else [])
    rounds = []
    for _ in range(len(ring) - 1):
        half = len(ring) // 2
        pairs = [(ring[i], ring[-1 - i]) for i in range(half)]
        rounds.append([p for p in pairs if None not in p])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def _next_of_all(nodes: list[str], tested: set[frozenset[str]]) -> list[Pair]:
    for pairs in rounds_of_all(nodes):
        left = [p for p in pairs if frozenset(p) not in tested]
        if left:
            return left
    return []
