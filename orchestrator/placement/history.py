"""Predicted busbw of a GPU set: measured where the store has it, else the wiring model.

Measured history is looked up by the wiring's fingerprint and the set's shape (a class of the
set that does not depend on GPU numbering: GPUs 0-3 and 4-7 of two identical quads share it),
in one case (wirewise.case): results of different cases are never pooled. Only results of GPU
ranks of one node on the default transport count: CPU ranks (gloo) and forced-PCIe runs say
nothing about how a placement performs, and a run over several nodes (a pair test, a 2 x 2
job, stored with node 0's GPUs) is no set of one node. Of the cases measured on a shape, the
one a placement is about comes first (PREFERRED: out of place, eager calls, the default
reduction and dtype, wirewise's own benchmark), then the one with the most results; its
figure is the median at the largest size measured. Training results are looked up the same
way for the advice: per strategy, one case of the model, micro-batch and sequence length on
this set shape (eager, native engine, the GPU's default precision, wirewise's own first).
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


# The case a prediction is about, where several were measured: each field's preferred value
# (wirewise.case fields; the training ones are the advice's). A case is ranked by how many of
# these it matches, in this order, then by how many results it rests on.
PREFERRED = {
    "collective": (("in_place", False), ("cuda_graph", False), ("redop", "sum"), ("dtype", "float32"),
                   ("source", "wirewise")),
    "train": (("compile", False), ("engine", "native"), ("precision", "bf16-mixed"), ("source", "wirewise")),
}
# The case fields a prediction's text names (the others are fixed by what it predicts).
SHOWN = {"collective": ("dtype", "in_place", "cuda_graph", "source"),
         "train": ("precision", "compile", "engine", "source")}


def preferred_case(workload: str, cases: dict[str, list[dict]]) -> str:
    """The key of the case a prediction rests on, of `cases` (case key -> its rows, each row a
    dict holding the case's fields): the most preferred (PREFERRED), then the most results,
    then the smallest key (a stable choice)."""
    def rank(key: str) -> tuple:
        row = cases[key][0]
        return (*(row.get(name) != value for name, value in PREFERRED[workload]), -len(cases[key]), key)

    return min(cases, key=rank)


def case_text(workload: str, row: dict) -> str:
    """The fields of a case a prediction's reader needs, as words: 'float32, out of place,
    eager, wirewise'."""
    words = []
    for name in SHOWN[workload]:
        value = row.get(name)
        if name == "in_place":
            words.append("in place" if value else "out of place")
        elif name in ("cuda_graph", "compile"):
            words.append({True: "CUDA graph" if name == "cuda_graph" else "compiled", False: "eager"}.get(value, "eager?"))
        elif value is not None:
            words.append(str(value))
    return ", ".join(words)


@dataclass(frozen=True)
class Measured:
    busbw_gbs: float
    results: int
    bytes: int
    case: str = ""  # the case it was measured in, as words (case_text)


@dataclass(frozen=True)
class Prediction:
    busbw_gbs: float | None
    basis: str  # MEASURED, MODEL or UNKNOWN
    results: int = 0  # how many stored results it rests on
    bytes: int | None = None  # the message size they were measured at
    case: str | None = None  # the case they were measured in, as words

    def as_dict(self) -> dict:
        return {"predicted_busbw_gbs": self.busbw_gbs, "basis": self.basis, "results": self.results, "bytes": self.bytes,
                "measured_case": self.case}


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
                return Prediction(found.busbw_gbs, MEASURED, found.results, found.bytes, found.case)
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
        """shape -> the median busbw of its preferred case (preferred_case) at the largest size
        measured in that case, from every node of this wiring."""
        if op not in self._measured:
            by_shape: dict[str, dict[str, list[dict]]] = {}
            for shape, row in self.case_rows(("bytes", "busbw_gbs"), "collective", op=op):
                by_shape.setdefault(shape, {}).setdefault(row["sans_bytes"], []).append(row)
            self._measured[op] = {shape: _at_largest(cases[preferred_case("collective", cases)])
                                  for shape, cases in by_shape.items()}
        return self._measured[op]

    def tokens_per_s(self, gpus, model: str, micro_batch: int | None = None,
                     seq_len: int | None = None) -> dict[str, tuple[float, int, list[str], str]]:
        """strategy -> (median tokens/s, results, their source, the case as words) of training
        runs of `model` on this wiring and this set's shape (at this micro-batch and sequence
        length, where given), in each strategy's preferred case (preferred_case): benchmarks
        (source wirewise) and real jobs (source job) are each their own case."""
        topo = self.topo
        wanted = set_shape(topo.links, topo.gpu_names, sorted(gpus))
        same_work = {name: value for name, value in (("micro_batch", micro_batch), ("seq_len", seq_len)) if value is not None}
        by_strategy: dict[str, dict[str, list[dict]]] = {}
        for shape, row in self.case_rows(("strategy", "tokens_per_s"), "train", model=model, ranks=len(gpus), **same_work):
            if shape == wanted:
                by_strategy.setdefault(row["strategy"], {}).setdefault(row["case_key"], []).append(row)
        found = {}
        for strategy, cases in by_strategy.items():
            rows = cases[preferred_case("train", cases)]
            found[strategy] = (round(median(r["tokens_per_s"] for r in rows), 1), len(rows), [rows[0]["source"]],
                               case_text("train", rows[0]))
        return found

    def case_rows(self, columns: tuple[str, ...], workload: str, **equal) -> list[tuple[str, dict]]:
        """(set shape, row) of `results`, each row a dict of `columns`, the case key and the
        workload's case fields; a collective's row also holds `sans_bytes`: its case without
        the size (one case at every size of a sweep)."""
        from wirewise.case import CASE_FIELDS, case_key

        fields = CASE_FIELDS[workload]
        names = tuple(dict.fromkeys((*columns, "case_key", *fields)))
        found = []
        for shape, values in self.results(names, present=columns, workload=workload, **equal):
            row = dict(zip(names, values))
            if workload == "collective":
                row["sans_bytes"] = case_key(workload, {**row, "bytes": None})
            found.append((shape, row))
        return found

    def results(self, columns: tuple[str, ...], present: tuple[str, ...] | None = None,
                **equal) -> list[tuple[str, tuple]]:
        """(set shape, the columns) of the successful results on this wiring whose columns
        `equal` the values given and whose `present` columns (default: all of `columns`) hold a
        value, that ran on GPUs of one node on the default transport (the module's docstring
        says why). Each result's GPUs are read in the numbering of the node it ran on."""
        from wirewise.orchestrator.store.results import ok_results

        topo = self.topo
        rows = ok_results(self.store, ("node", "gpus", *columns),
                          present=columns if present is None else present, fingerprint=topo.history_fingerprints,
                          node_count=1, device="gpu", transport="default", **equal)
        found = []
        for node, gpus, *values in rows:
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


def _at_largest(rows: list[dict]) -> Measured:
    """One case's median busbw at the largest size it was measured at."""
    largest = max(row["bytes"] for row in rows)
    values = [row["busbw_gbs"] for row in rows if row["bytes"] == largest]
    return Measured(round(median(values), 1), len(values), largest, case_text("collective", rows[0]))
