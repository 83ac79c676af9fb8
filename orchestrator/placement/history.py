"""Predicted busbw of a GPU set: measured where the store has it, else the wiring model.

Measured history is looked up by the wiring's fingerprint and the set's shape (a class of the
set that does not depend on GPU numbering: GPUs 0-3 and 4-7 of two identical quads share it),
at the largest message size measured for that shape, median over the results there. Only
results of GPU ranks on the default transport count: CPU ranks (gloo) and forced-PCIe runs
say nothing about how a placement performs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from statistics import median

from wirewise.orchestrator.placement.wiring import Wiring
from wirewise.topology import Topology
from wirewise.topology.fingerprint import set_shape

MEASURED, MODEL, UNKNOWN = "measured", "model", "unknown"  # UNKNOWN: nothing measured, GPU model not named
DEFAULT_OP = "all_reduce"


@dataclass(frozen=True)
class Measured:
    busbw_gbs: float
    results: int
    bytes: int


@dataclass(frozen=True)
class Prediction:
    busbw_gbs: float | None
    basis: str  # MEASURED, MODEL or UNKNOWN
    results: int = 0  # how many stored results it rests on
    bytes: int | None = None  # the message size they were measured at

    def as_dict(self) -> dict:
        return {"predicted_busbw_gbs": self.busbw_gbs, "basis": self.basis, "results": self.results, "bytes": self.bytes}


@dataclass
class Predictor:
    """predict(gpus) for one node: the shape's measured busbw, else the model's."""

    topo: Topology
    measured: dict[str, Measured] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.wiring = Wiring.of(self.topo)
        self._shapes: dict[tuple[int, ...], str] = {}

    def predict(self, gpus) -> Prediction:
        gpus = tuple(sorted(gpus))
        if self.measured and len(gpus) > 1:
            found = self.measured.get(self.shape(gpus))
            if found:
                return Prediction(found.busbw_gbs, MEASURED, found.results, found.bytes)
        if not self.wiring.named:
            return Prediction(None, UNKNOWN)
        return Prediction(self.wiring.model_busbw(gpus), MODEL)

    def __call__(self, gpus) -> float | None:
        """The ranking key: the prediction; where the GPU model is unknown, the wiring model at
        nominal rates (25 GB/s per NVLink, PCIe Gen4), which ranks sets by their structure."""
        found = self.predict(gpus)
        return self.wiring.model_busbw(tuple(sorted(gpus))) if found.basis == UNKNOWN else found.busbw_gbs

    def shape(self, gpus: tuple[int, ...]) -> str:
        if gpus not in self._shapes:
            self._shapes[gpus] = set_shape(self.topo.links, self.topo.gpu_names, gpus)
        return self._shapes[gpus]


def predictor(topo: Topology, history: History | None = None, op: str = DEFAULT_OP) -> Predictor:
    """A predictor for a node, with the store's measured history when one is given."""
    return Predictor(topo, history.measured(op) if history is not None else {})


class History:
    """What the store holds measured on one wiring (its history fingerprints), each part read
    once: a command builds one and hands it to placement and advice, which ask it the same
    things again (one `place --model` once read the wiring join 10 times and all_reduce's
    history 3 times: 15 s on 1,000 stored nodes of one wiring, the 2-core machine)."""

    def __init__(self, store, topo: Topology) -> None:
        self.store, self.topo = store, topo
        self._measured: dict[str, dict[str, Measured]] = {}
        self._shapes: dict[tuple, str] = {}
        self._models: dict[str, Wiring] = {}

    def measured(self, op: str = DEFAULT_OP) -> dict[str, Measured]:
        """shape -> median busbw at the largest size measured for it, from every node of this wiring."""
        if op not in self._measured:
            by_shape: dict[str, dict[int, list[float]]] = {}
            for shape, (size, busbw) in self.results(("bytes", "busbw_gbs"), op=op):
                by_shape.setdefault(shape, {}).setdefault(size, []).append(busbw)
            self._measured[op] = {shape: _at_largest(sizes) for shape, sizes in by_shape.items()}
        return self._measured[op]

    def tokens_per_s(self, gpus, model: str, micro_batch: int | None = None,
                     seq_len: int | None = None) -> dict[str, tuple[float, int, list[str]]]:
        """strategy -> (median tokens/s, results, their sources) of training runs of `model` on
        this wiring and this set's shape (at this micro-batch and sequence length, where given):
        benchmarks (source wirewise) and real jobs (source job) alike."""
        topo = self.topo
        wanted = set_shape(topo.links, topo.gpu_names, sorted(gpus))
        same_work = {name: value for name, value in (("micro_batch", micro_batch), ("seq_len", seq_len)) if value is not None}
        rows = self.results(("strategy", "tokens_per_s", "source"), model=model, gpu_count=len(gpus), **same_work)
        by_strategy: dict[str, list[float]] = {}
        sources: dict[str, set[str]] = {}
        for shape, (strategy, tokens, source) in rows:
            if shape == wanted:
                by_strategy.setdefault(strategy, []).append(tokens)
                sources.setdefault(strategy, set()).add(source)
        return {strategy: (round(median(values), 1), len(values), sorted(sources[strategy]))
                for strategy, values in by_strategy.items()}

    def results(self, columns: tuple[str, ...], present: tuple[str, ...] | None = None,
                **equal) -> list[tuple[str, tuple]]:
        """(set shape, the columns) of the successful results on this wiring whose columns
        `equal` the values given and whose `present` columns (default: all of `columns`) hold a
        value, that ran on GPUs of one node on the default transport: CPU ranks (gloo) and
        forced-PCIe runs say nothing about a placement, and a run over several nodes (a pair
        test, a 2 x 2 job: stored with node 0's GPUs) is another case than any set of one node.
        Each result's GPUs are read in the numbering of the node it ran on."""
        from wirewise.orchestrator.store.results import ok_results

        topo = self.topo
        rows = ok_results(self.store, ("node", "gpus", "params", "extra", *columns),
                          present=columns if present is None else present, fingerprint=topo.history_fingerprints,
                          node_count=1, **equal)
        found = []
        for node, gpus, params, extra, *values in rows:
            if (extra or {}).get("device") == "cpu" or (params or {}).get("transport", "default") != "default":
                continue
            links, names = self.wirings.get(node, (topo.links, topo.gpu_names))
            if not gpus or max(gpus) >= len(links):  # one GPU is a set too: its training results count
                continue
            found.append((self._shape(node, links, names, tuple(sorted(gpus))), tuple(values)))
        return found

    def multi_node(self, **equal) -> int:
        """How many successful results on this wiring ran over several nodes (of those whose
        columns `equal` the values given): what `results` leaves out, for a reader to say so."""
        from wirewise.orchestrator.store.results import ok_results

        rows = ok_results(self.store, ("node_count",), fingerprint=self.topo.history_fingerprints, **equal)
        return sum(1 for (count,) in rows if count and count > 1)

    def _shape(self, node: str, links, names, gpus: tuple[int, ...]) -> str:
        """The set shape of `gpus` on `node`, computed once for each set on each stored wiring
        (the nodes of one wiring share it, and every query of the command asks again)."""
        key = (self._wiring_keys.get(node, node), gpus)
        if key not in self._shapes:
            self._shapes[key] = set_shape(links, names, gpus)
        return self._shapes[key]

    def wiring(self, node: str) -> Wiring:
        """The wiring model of `node` (its stored wiring, else `topo`'s), built once per stored wiring."""
        links, names = self.wirings.get(node, (self.topo.links, self.topo.gpu_names))
        key = self._wiring_keys.get(node, node)
        if key not in self._models:
            self._models[key] = Wiring.of(Topology(links=links, gpu_names=names))
        return self._models[key]

    @cached_property
    def _wiring_keys(self) -> dict[str, str]:
        """node -> its stored links and GPU names as one text: nodes with equal text share set shapes."""
        return {node: json.dumps(wiring) for node, wiring in self.wirings.items()}

    @cached_property
    def wirings(self) -> dict[str, tuple]:
        """node -> (links, GPU names) of every node stored with this wiring's history
        fingerprints (its latest row), from the store's one wiring join; a node stored without
        GPU names has the names `topo` was given."""
        from wirewise.orchestrator.store.topology import node_wirings

        wirings: dict[str, tuple] = {}
        for w in node_wirings(self.store, fingerprints=self.topo.history_fingerprints):
            names = w.gpu_names
            if not any(names) and len(names) == len(self.topo.gpu_names):
                names = list(self.topo.gpu_names)
            wirings.setdefault(w.node, (w.links, names))
        return wirings


def _at_largest(sizes: dict[int, list[float]]) -> Measured:
    largest = max(sizes)
    values = sizes[largest]
    return Measured(round(median(values), 1), len(values), largest)
