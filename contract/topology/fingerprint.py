"""A fingerprint of the wiring that does not depend on how the GPUs are numbered.

The wiring is a complete graph: GPUs coloured by model, every pair labelled (NV12, SYS...).
Its canonical form is built in three steps.

Decomposition. GPU machines are nested: GPUs in NVLink groups, groups under PCIe
switches, switches under NUMA nodes. For a label L, take the graph of the pairs whose
label is *not* L: when it falls apart into several components, every pair between two
components is L, and each component is a unit seen the same way from outside. The
wiring is then "these parts, all joined by L", and the parts are described the same
way, recursively, and sorted. At most one label can split a set this way, so the form
does not depend on any choice. An all-to-all NVSwitch box, quads, bridged pairs and
PCIe trees all decompose down to single GPUs this way, in about O(n^2) per level.

Twins, in a part that does not split: GPUs with the same label to every other GPU are
joined among themselves by one label (being twins is transitive); each such set becomes
one vertex whose form says what it holds, and the smaller part is described again.

Search, for what remains (DGX-1's hybrid cube mesh, hypercubes, tori): colour refinement
with individualisation, the method of graph-isomorphism tools such as nauty:
1. Refine: a GPU's colour becomes (its colour, the multiset of (label, colour) to the GPUs
   whose label is not the matrix's most common one) until no colour class splits. Colours
   are ranks of sorted signatures, so they never depend on GPU numbers; leaving the common
   label out splits nothing differently and keeps a round near O(n x NVLink peers).
2. Stop when the partition is *uniform*: inside each class all pairs carry one label, and
   between two classes all pairs carry one label. The part is then fully described by the
   classes in colour order (model, size) and those labels.
3. Otherwise pick the first class that is not uniform, try each of its GPUs as a colour
   of its own, refine, recurse, and keep the smallest description. Two branches ending in
   the same description reveal a symmetry; GPUs that the symmetries found so far map onto
   an explored one are skipped (orbit pruning), and a branch one of whose leaves matches
   the first leaf of an ancestor is a mirror of that ancestor's first branch and is left
   at once (first-path pruning). A 256-GPU hypercube then takes well under a second
   (tests/benchmarks/bench_fingerprint_scale.py). A search that still outgrows its budget
   (about a second of work) is refused with a UserError rather than left to hang.

The form is hashed with sha256. Included: GPU models (normalised names), GPU count, pair
labels. Not included: NICs, CPU affinity, hostnames, UUIDs, versions.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from wirewise.errors import UserError
from wirewise.topology import hardware

SCHEMA = "wirewise-wiring/1"
SEARCH_WORK = 30_000  # search nodes x GPUs: see _Wiring

Certificate = tuple  # (classes: ((kind, size), ...), labels between classes row by row)


def fingerprint(links: list[list[str]], gpu_names: list[str | None]) -> str:
    """sha256 hex of the canonical form of the wiring."""
    payload = json.dumps(canonical_form(links, gpu_names), separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def canonical_form(links: list[list[str]], gpu_names: list[str | None]) -> dict:
    """The wiring as nested parts joined by one label each, and searched forms of the rest."""
    models = [hardware.normalize_model(name) for name in gpu_names]
    form, _key = _describe(links, models, list(range(len(links))))
    return {"schema": SCHEMA, "gpus": len(links), "wiring": form}


def _describe(links, forms: list, members: list[int]):
    """(JSON-able form of the part `members`, its text for sorting). forms[i]: GPU i's own form."""
    if len(members) == 1:
        form = forms[members[0]]
    else:
        split = _split(links, members)
        if split is None:
            form = _describe_unsplittable(links, forms, members)
        else:
            label, parts = split
            described = sorted((_describe(links, forms, part) for part in parts), key=lambda d: d[1])
            form = {"join": label, "parts": [d[0] for d in described]}
    return form, _text(form)


def _text(form) -> str:
    return json.dumps(form, separators=(",", ":"))


def _split(links, members: list[int]) -> tuple[str, list[list[int]]] | None:
    """The label joining all pairs between the components of the other labels, if any."""
    present = sorted({links[i][j] for i in members for j in members if i < j})
    for label in present:
        parts = _components_without(links, members, label)
        if len(parts) > 1:
            return label, parts
    return None


def _components_without(links, members: list[int], label: str) -> list[list[int]]:
    """Components of the graph of pairs whose label is not `label`."""
    unvisited = set(members)
    parts = []
    while unvisited:
        start = min(unvisited)
        unvisited.remove(start)
        part, stack = [start], [start]
        while stack:
            row = links[stack.pop()]
            reached = [w for w in unvisited if row[w] != label]
            unvisited.difference_update(reached)
            part.extend(reached)
            stack.extend(reached)
        if not parts and not unvisited:
            return [part]  # connected: this label does not split the part
        parts.append(sorted(part))
    return parts


def _describe_unsplittable(links, forms, members: list[int]):
    """Twins (GPUs that see all others alike) become one vertex each, whose form says what
    they are; what remains without twins is searched."""
    twins = _twin_classes(links, members)
    if len(twins) == len(members):
        return {"search": _searched_form(links, forms, members)}
    quotient_links = [[links[a[0]][b[0]] if a is not b else "X" for b in twins] for a in twins]
    quotient_forms = [
        forms[group[0]] if len(group) == 1 else _describe(links, forms, group)[0] for group in twins
    ]
    return _describe(quotient_links, quotient_forms, list(range(len(twins))))[0]


def _twin_classes(links, members: list[int]) -> list[list[int]]:
    """Classes of GPUs u, v with the same label to every other GPU of the part. Being twins
    is transitive, and twins are joined among themselves by one label."""
    classes: list[list[int]] = []
    for gpu in members:
        for group in classes:
            other = group[0]
            if all(links[gpu][w] == links[other][w] for w in members if w != gpu and w != other):
                group.append(gpu)
                break
        else:
            classes.append([gpu])
    return classes


def _searched_form(links, forms, members: list[int]) -> dict:
    sub_links = [[links[i][j] for j in members] for i in members]
    keys = [_text(forms[i]) for i in members]
    form_of = dict(zip(keys, (forms[i] for i in members)))
    ranked = sorted(set(keys))
    colours = [float(ranked.index(k)) for k in keys]
    (classes, between), _leaf, _symmetries = _search(_Wiring(sub_links), keys, colours)
    return {
        "classes": [[form_of[key], size] for key, size in classes],
        "labels": [list(row) for row in between],
    }


def _search(wiring: _Wiring, kinds, colours, ancestors: tuple = ()):
    """(smallest certificate below this node, its classes, symmetries found below).
    kinds[i]: what GPU i is (its form as text); colours: the current partition; ancestors:
    (node, whether this path runs through the node's first child) from the top down."""
    wiring.spend_node()
    links = wiring.links
    colours = _refine(wiring, colours)
    classes = _classes(colours)
    target = _first_mixed_class(links, classes)
    if target is None:
        certificate = _certificate(links, kinds, classes)
        _check_equivalent(ancestors, certificate, classes)
        return certificate, classes, []

    node = _Node()
    best: tuple | None = None
    symmetries: list[dict[int, int]] = []
    orbit = _UnionFind(wiring.n)
    explored: list[int] = []
    for gpu in target:
        if any(orbit.same(gpu, done) for done in explored):
            continue
        explored.append(gpu)
        try:
            certificate, leaf_classes, found = _search(
                wiring, kinds, _individualise(colours, gpu), (*ancestors, (node, len(explored) == 1))
            )
        except _Equivalent as equivalent:
            if equivalent.node is not node:
                raise  # a subtree further up is the one equivalent to an explored one
            found = [equivalent.mapping]  # this child's subtree mirrors the first child's: nothing new below
            certificate = None
        for mapping in found:
            for a, b in mapping.items():
                orbit.union(a, b)
        symmetries.extend(found)
        if certificate is not None and (best is None or certificate < best[0]):
            best = (certificate, leaf_classes)
    return best[0], best[1], symmetries


class _Node:
    """A search node: the first leaf found below it, which later branches are compared with."""

    def __init__(self) -> None:
        self.first_leaf: tuple | None = None  # (certificate, classes)


class _Equivalent(Exception):
    """A leaf equals the first leaf of `node` from another branch: `mapping` (an automorphism
    fixing the node's individualised GPUs) carries the whole branch onto the node's first
    child, whose leaves are explored already (nauty's first-path pruning)."""

    def __init__(self, node: _Node, mapping: dict[int, int]) -> None:
        self.node, self.mapping = node, mapping


def _check_equivalent(ancestors: tuple, certificate, classes) -> None:
    """Record this leaf as the first below each ancestor that has none; raise _Equivalent for
    the highest ancestor whose first leaf, in another branch, has the same certificate."""
    for node, in_first_child in ancestors:
        if node.first_leaf is None:
            node.first_leaf = (certificate, classes)
        elif not in_first_child and node.first_leaf[0] == certificate:
            raise _Equivalent(node, _mapping(classes, node.first_leaf[1]))


def _refine(graph: _Wiring, colours: list[float]) -> list[float]:
    """Colour refinement until no class splits.

    A GPU's signature is (its colour, the multiset of (label, colour) to the other GPUs
    whose label is not the matrix's most common one); colours are the ranks of the sorted
    signatures. Leaving the common label out splits no class differently (its count to a
    class is that class's size less the others), and keeps a round at O(n x peers) instead of
    O(n^2): a 256-GPU machine has a few NVLink peers per GPU and PCIe/SYS to the rest."""
    classes = len(set(colours))
    while True:
        # The multiset of (label, colour) as a sorted tuple, repeats kept.
        keys = [(colours[i], tuple(sorted([(label, colours[j]) for j, label in peers]))) for i, peers in enumerate(graph.peers)]
        ranks = {key: float(rank) for rank, key in enumerate(sorted(set(keys)))}
        colours = [ranks[key] for key in keys]
        if len(ranks) == classes:
            return colours
        classes = len(ranks)


class _Wiring:
    """A matrix being searched: its most common off-diagonal label, per GPU the peers with
    another label (what refinement counts), and what is left of the search budget."""

    def __init__(self, links) -> None:
        self.links, self.n = links, len(links)
        counts = Counter(links[i][j] for i in range(self.n) for j in range(self.n) if i != j)
        self.common = min(counts, key=lambda label: (-counts[label], label)) if counts else None
        self.peers = [
            [(j, label) for j, label in enumerate(row) if j != i and label != self.common] for i, row in enumerate(links)
        ]
        # Search nodes allowed: about a second of work at any size (a node costs ~n), so a
        # wiring the search cannot settle is refused at once instead of hanging the caller.
        self.nodes_left = SEARCH_WORK // max(self.n, 1)

    def spend_node(self) -> None:
        self.nodes_left -= 1
        if self.nodes_left < 0:
            raise UserError(
                f"cannot fingerprint this {self.n}-GPU wiring within the search budget: its GPUs are symmetric "
                "in a way that neither NVLink groups, switches nor link classes break down"
            )


def _classes(colours: list[float]) -> list[list[int]]:
    by_colour: dict[float, list[int]] = {}
    for gpu, colour in enumerate(colours):
        by_colour.setdefault(colour, []).append(gpu)
    return [by_colour[c] for c in sorted(by_colour)]


def _first_mixed_class(links, classes) -> list[int] | None:
    """The first class whose pairs (inside it, or to some other class) carry more than one label."""
    for a, members in enumerate(classes):
        if len(members) == 1:
            continue  # after refinement a single GPU sees each class with one label
        if len({links[i][j] for i in members for j in members if i != j}) > 1:
            return members
        for b, others in enumerate(classes):
            if b != a and len({links[i][j] for i in members for j in others}) > 1:
                return members
    return None


def _certificate(links, kinds, classes) -> Certificate:
    """Classes (kind, size) in colour order and the label between each two, read off one GPU
    per class (the partition is uniform); inside a class: the label of its pairs, X for one GPU."""
    sizes = tuple((kinds[c[0]], len(c)) for c in classes)
    firsts = [c[0] for c in classes]
    inside = [links[c[0]][c[1]] if len(c) > 1 else "X" for c in classes]
    between = tuple(
        tuple(inside[k] if k == row else links[first][other] for k, other in enumerate(firsts))
        for row, first in enumerate(firsts)
    )
    return sizes, between


def _individualise(colours: list[float], gpu: int) -> list[float]:
    """`gpu` gets a colour of its own, just below the rest of its class."""
    changed = list(colours)
    changed[gpu] = colours[gpu] - 0.5
    return changed


def _mapping(classes_from: list[list[int]], classes_to: list[list[int]]) -> dict[int, int]:
    """Two uniform partitions with equal certificates: mapping class k onto class k (in any
    order inside) preserves every label and model, so it is a symmetry of the wiring."""
    return {a: b for src, dst in zip(classes_from, classes_to) for a, b in zip(src, dst)}


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)

    def same(self, a: int, b: int) -> bool:
        return self.find(a) == self.find(b)


def set_shape(links: list[list[str]], gpu_names: list[str | None], gpus) -> str:
    """A renumbering-invariant class of a GPU subset within its wiring: sha256 of the canonical
    form with the subset's GPUs marked. Sets that a renumbering of the wiring maps onto each
    other share it (GPUs 0-3 and 4-7 of two identical quads), so they share measured history."""
    chosen = set(gpus)
    marked = [f"{hardware.normalize_model(name)} [{'in' if i in chosen else 'out'}]" for i, name in enumerate(gpu_names)]
    return fingerprint(links, marked)
