"""The case: everything that decides a measured figure, defined once (docs/results.md, "The case").

Two results of one case are repeats of one measurement; two results of different cases never
are, so every reader of the history (results, compare, report, the baselines and rules,
placement, the advice) groups by the case and cannot forget a setting. Where a result ran (its
node, fingerprint, fabric) is not part of the case: readers put it beside the case where they
compare places (a baseline is a fingerprint and a case).

The API, for every reader and writer:

- `CASE_FIELDS[workload]`: the case's fields, in the order they are shown;
- `FIELDS[name]`: each derived field: its column type and its meaning (docs/results.md shows it);
- `derive(row, groups, domains)`: every derived column of one record (a `ResultRecord.model_dump()`
  or a stored row: the same names), `groups` the NVLink groups of its node 0 (None: unknown),
  `domains` each stored node's NVLink domain (a node absent: its wiring is not stored);
- `case_of(row, groups, domains)`: the record's case as a dict; `case_key(workload, case)`: its key;
- `NOT_CASE`: every record field and parameter that is not in the case, with the reason;
- `device_of`, `geometry_of`, `scope_of`: the one rule for GPU or CPU ranks, for the placement
  got inside node 0, and for the fabric between its nodes.

The store computes the case once, when a record is stored (wirewise.orchestrator.store.cases):
the derived fields are columns of the results table, beside the record's own, and `case_key`
an indexed column, so a reader groups in SQL on one key. A migration fills the rows stored
before (db/versions/0010).

Adding a setting: one line in FIELDS (how it is read from a record) and its name in
CASE_FIELDS; the schema takes its column from FIELDS, and a migration adds that column and
refills the stored cases (wirewise.orchestrator.store.cases.refill_cases). tests/store checks
that every record field and parameter is in a case or in NOT_CASE.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# Ops that take a reduction (nccl-tests prints `redop` for every op, `sum` for sendrecv too: it
# is a setting only of these) and ops that have a root (nccl-tests prints -1 for the others).
REDUCING_OPS = frozenset({"all_reduce", "reduce_scatter", "reduce"})
ROOTED_OPS = frozenset({"broadcast", "reduce", "gather", "scatter"})
DEFAULT_REDOP = "sum"  # wirewise's sweep sums; nccl-tests' -o default
DEFAULT_ROOT = 0  # wirewise's broadcast root; nccl-tests' -r default

DEVICES = ("gpu", "cpu")
GEOMETRIES = ("packed", "spread")
# The fabric between a run's nodes (scope_of): one node; nodes that all sit in one multi-node
# NVLink domain (GB200/GB300 NVL72: their GPUs reach each other over NVLink); anything else.
SCOPES = ("node", "nvlink-domain", "network")
# The placement a run asked for (a campaign's policy, a pair test's label), as planners record
# it in params.placement; the geometry it got is `geometry`.
PLACEMENTS = ("packed", "spread", "all", "explicit", "cpu", "pair")
# What --precision auto runs as on each device (wirewise.jobs.train.loop).
AUTO_PRECISION = {"gpu": "bf16-mixed", "cpu": "fp32"}


def device_of(gpu_count: int | None) -> str:
    """'cpu' for CPU ranks, else 'gpu'. The one rule: a record of CPU ranks says gpu_count 0
    (wirewise.jobs.records, wirewise.jobs.history); an unknown count (None, an imported log
    that does not show its ranks) is a GPU run."""
    return "cpu" if gpu_count == 0 else "gpu"


def geometry_of(gpus: list[int] | None, groups: list[list[int]] | None) -> str | None:
    """'packed' (every GPU of a node in one NVLink group) or 'spread' (across groups), from the
    node's GPUs and its NVLink groups in its own numbering; None where it cannot be told (fewer
    than two GPUs, no wiring stored, a wiring without disjoint groups)."""
    if not gpus or len(gpus) < 2 or not groups:
        return None
    return "packed" if any(set(gpus) <= set(group) for group in groups) else "spread"


def scope_of(node_count: int | None, nodes: list[str] | None, domains: Mapping[str, Any] | None) -> str | None:
    """'node' for a run on one node; over several, 'nvlink-domain' when every node sits in one
    multi-node NVLink domain (`domains`: node -> its domain, None for none, as the store holds
    each node's wiring: wirewise.topology.fabric.domain_of), else 'network'. None where it cannot
    be told: the node count or the nodes unsaid, or a node whose wiring is not stored (the store
    derives it again when that wiring is saved). CPU ranks too: the scope says where the nodes
    sit, the device that the ranks do not use NVLink (a gloo pair inside a rack and one across
    racks are still kept apart: never pooled, at worst judged on fewer peers)."""
    if node_count == 1:
        return "node"
    if not node_count or not nodes or len(nodes) != node_count or domains is None:
        return None
    if any(node not in domains for node in nodes):
        return None
    found = {_hashable(domains[node]) for node in nodes}
    return "nvlink-domain" if len(found) == 1 and None not in found else "network"


def _hashable(domain: Any) -> Any:
    """A domain as read back from JSON (a list) or given (a tuple): one hashable form."""
    return tuple(domain) if isinstance(domain, list) else domain


def with_scope(case: Mapping[str, Any]) -> dict[str, Any]:
    """A case written before the fabric scope was a case field (baselines files before version 4,
    baselines stored before db/versions/0015), with it: `node` for one node; over several it was
    not said (empty), so such a baseline matches only results whose scope cannot be told
    either, never a pair inside an NVLink domain or one across the network."""
    if "scope" in case:
        return dict(case)
    return {**case, "scope": "node" if case.get("node_count") == 1 else None}


@dataclass(frozen=True)
class Where:
    """Where a record ran, as the store knows it when it derives the case: node 0's NVLink
    groups in its own numbering (None: unknown) and each stored node's NVLink domain."""

    groups: list[list[int]] | None = None
    domains: Mapping[str, Any] | None = None


def ranks_of(gpu_count: int | None, world_size: int | None) -> int | None:
    """How many ranks ran: the GPUs (one rank each), or the CPU ranks (gpu_count 0); where the
    GPU count went unsaid, the rank count; None where that is unsaid too."""
    if gpu_count is None:
        return world_size
    return gpu_count or world_size or 0


def _params(row: Mapping) -> Mapping:
    return row.get("params") or {}


def _extra(row: Mapping) -> Mapping:
    return row.get("extra") or {}


def _ranks(row: Mapping, where: Where) -> int | None:
    return ranks_of(row.get("gpu_count"), row.get("world_size"))


def _ranks_per_node(row: Mapping, where: Where) -> int | None:
    ranks, nodes = _ranks(row, where), row.get("node_count")
    if not ranks or not nodes or ranks % nodes:
        return None
    return ranks // nodes


def _redop(row: Mapping, where: Where) -> str | None:
    if row.get("workload") != "collective" or row.get("op") not in REDUCING_OPS:
        return None
    return str(_extra(row).get("redop") or DEFAULT_REDOP)


def _root(row: Mapping, where: Where) -> int | None:
    if row.get("workload") != "collective" or row.get("op") not in ROOTED_OPS:
        return None
    root = _extra(row).get("root")
    return root if isinstance(root, int) and root >= 0 else DEFAULT_ROOT


def _cuda_graph(row: Mapping, where: Where) -> bool | None:
    return bool(_params(row).get("cuda_graph")) if row.get("workload") == "collective" else None


def _transport(row: Mapping, where: Where) -> str:
    return str(_params(row).get("transport") or "default")


def _device(row: Mapping, where: Where) -> str:
    return device_of(row.get("gpu_count"))


def _geometry(row: Mapping, where: Where) -> str | None:
    return None if _device(row, where) == "cpu" else geometry_of(row.get("gpus"), where.groups)


def _scope(row: Mapping, where: Where) -> str | None:
    return scope_of(row.get("node_count"), row.get("nodes"), where.domains)


def _placement(row: Mapping, where: Where) -> str | None:
    placement = _params(row).get("placement")
    return str(placement) if placement is not None else None


def _precision(row: Mapping, where: Where) -> str | None:
    if row.get("workload") != "train":
        return None
    ran = _extra(row).get("precision") or _params(row).get("precision")
    if ran in (None, "auto"):  # a job that did not say, or a failed run's 'auto'
        return AUTO_PRECISION[_device(row, where)] if ran == "auto" else None
    return str(ran)


def _engine(row: Mapping, where: Where) -> str | None:
    if row.get("workload") != "train":
        return None
    return str(_params(row).get("engine") or "native")


def _compile(row: Mapping, where: Where) -> bool | None:
    if row.get("workload") != "train":
        return None
    value = _params(row).get("compile")
    if value is None:  # wirewise's own runs default to eager; a job's record does not say
        return None if row.get("source") == "job" else False
    return bool(value)


@dataclass(frozen=True)
class Field:
    """A field the store derives from a record and keeps as a column: its SQL type ('text' of
    `width`, 'int' or 'flag'), how it is read, and what it means."""

    kind: str
    read: Callable[[Mapping, Where], Any]
    meaning: str
    width: int = 0


FIELDS: dict[str, Field] = {
    "redop": Field("text", _redop, "the reduction (sum, ...) of all_reduce, reduce_scatter and reduce; empty for other ops", 16),
    "root": Field("int", _root, "the root rank of broadcast, reduce, gather and scatter; empty for other ops"),
    "cuda_graph": Field("flag", _cuda_graph, "timed as one CUDA graph replay (--cuda-graph, nccl-tests -G) or eager calls"),
    "transport": Field("text", _transport, "the transport asked for: default, or pcie (NVLink peer-to-peer off)", 16),
    "device": Field("text", _device, "gpu, or cpu for CPU ranks (gloo; the record's gpu_count is 0)", 8),
    "ranks": Field("int", _ranks, "how many ranks ran: one per GPU, or the CPU ranks"),
    "ranks_per_node": Field("int", _ranks_per_node, "ranks (GPUs) per node: ranks / node_count"),
    "geometry": Field("text", _geometry, "the placement got: packed (one NVLink group) or spread (across groups), "
                      "from node 0's GPUs and wiring; empty where it cannot be told (one GPU, no wiring stored)", 16),
    "scope": Field("text", _scope, "the fabric between the nodes: node (one node), nvlink-domain (every node in one "
                   "multi-node NVLink domain), network (any other nodes); empty where a node's wiring is not stored", 16),
    "precision": Field("text", _precision, "what training ran as: fp32, bf16-mixed or bf16 (auto resolved)", 16),
    "engine": Field("text", _engine, "native or accelerate (wirewise's runs); accelerate or custom (a job's record)", 16),
    "compile": Field("flag", _compile, "torch.compile on (--compile); empty where a job's record does not say"),
    # Not a case field: the policy a campaign asked for (packed, spread, all, explicit, cpu) or a
    # pair test's label (pair), filterable (--placement); what it got is the geometry.
    "placement": Field("text", _placement, "the placement asked for: " + ", ".join(PLACEMENTS), 64),
}

# The record's own fields that are in a case, with their meaning.
RECORD_FIELDS = {
    "source": "wirewise (its own benchmark), nccl-tests (an imported log) or job (a training job's own record)",
    "op": "the collective", "dtype": "the element type", "bytes": "the message size",
    "in_place": "in place (the output buffer is the input) or out of place",
    "model": "the model", "strategy": "the training strategy", "micro_batch": "samples per rank per step",
    "seq_len": "tokens per sample (language models)",
    "node_count": "how many nodes ran it (empty: an imported log that does not show every host)",
}

_SHAPE = ("transport", "device", "ranks", "node_count", "ranks_per_node", "geometry", "scope")
CASE_FIELDS: dict[str, tuple[str, ...]] = {
    "collective": ("source", "op", "dtype", "redop", "root", "bytes", "in_place", "cuda_graph", *_SHAPE),
    "train": ("source", "model", "strategy", "precision", "engine", "compile", "micro_batch", "seq_len", *_SHAPE),
}
WORKLOADS = tuple(CASE_FIELDS)
ALL_CASE_FIELDS = tuple(dict.fromkeys(name for fields in CASE_FIELDS.values() for name in fields))
KEY_WIDTH = 32  # hex digits of the case key


def meaning(name: str) -> str:
    """What a case field (or `placement`) means, in one line."""
    return FIELDS[name].meaning if name in FIELDS else RECORD_FIELDS[name]


def derive(row: Mapping[str, Any], groups: list[list[int]] | None = None,
           domains: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every derived column of one record or stored row, and its case_key."""
    where = Where(groups, domains)
    found = {name: field.read(row, where) for name, field in FIELDS.items()}
    found["case_key"] = case_key(row["workload"], case_of({**row, **found}))
    return found


def case_of(row: Mapping[str, Any], groups: list[list[int]] | None = None,
            domains: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The case of a row that holds its derived columns (a stored row, or a record passed
    through `derive`); a record without them has them derived here (`groups` and `domains`
    then give its geometry and scope)."""
    if any(name not in row for name in FIELDS):
        where = Where(groups, domains)
        row = {**row, **{name: field.read(row, where) for name, field in FIELDS.items()}}
    return {name: row.get(name) for name in CASE_FIELDS[row["workload"]]}


def case_key(workload: str, case: Mapping[str, Any]) -> str:
    """The case as a key: the first KEY_WIDTH hex digits of sha256 over its sorted JSON, the
    workload with it. Equal cases have equal keys on every database and machine."""
    values = {name: _plain(name, case.get(name)) for name in CASE_FIELDS[workload]}
    text = json.dumps({"workload": workload, **values}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_WIDTH]


FLAGS = frozenset({"in_place", *(name for name, field in FIELDS.items() if field.kind == "flag")})


def _plain(name: str, value: Any) -> Any:
    """A flag as true or false, as a database may read it back (SQLite: 0 or 1)."""
    return bool(value) if name in FLAGS and value is not None else value


# Every record field and parameter that is in no case, and why: tests/store fails on a field
# or parameter that is in neither (a new setting must be placed, on purpose).
NOT_CASE: dict[str, str] = {
    # where and when it ran: readers put these beside the case
    "record_id": "the record's identity", "task_id": "the task's identity", "campaign": "which campaign ran it",
    "node": "where it ran (node 0)", "nodes": "where it ran (every node): the fabric between them is scope", "node_fingerprints": "each node's wiring",
    "fingerprint": "node 0's wiring: where, not what (readers group by it beside the case)",
    "fabric": "node 0's wiring class: where, not what (results shows it beside the case)",
    "gpus": "which physical GPUs: their count is ranks, their NVLink geometry is geometry",
    "gpu_count": "ranks and device say it", "world_size": "ranks says it",
    "started_at": "when", "ended_at": "when", "versions": "software versions: kept, shown by doctor, not compared",
    "env": "NCCL_* and friends as run: the transport's own settings are the transport; the rest is kept",
    "transport_carried": "what NCCL's INFO lines show the connections used: an observation of the run, beside "
                         "the transport asked for (a fallback off NVLink is a finding, transport-off-nvlink)",
    "status": "the outcome: every reader keeps each status apart beside the case", "error": "the outcome's words",
    "workload": "the case's kind (each workload has its own fields)",
    "params": "the task's parameters: each one is below", "extra": "what a record says beyond its columns (wirewise.record.Extra)",
    "count": "elements: bytes / element size of dtype", "wrong": "an outcome (-c)",
    # the measured figures
    "time_us": "a figure", "algbw_gbs": "a figure", "busbw_gbs": "a figure", "step_time_s": "a figure",
    "samples_per_s": "a figure", "tokens_per_s": "a figure", "peak_mem_bytes": "a figure",
    "model_state_bytes": "a figure", "mfu": "a figure",
    # parameters (params.*)
    "ops": "each record is one op (op)", "min_bytes": "each record is one size (bytes)",
    "max_bytes": "each record is one size (bytes)", "step_factor": "each record is one size (bytes)",
    "iters": "timed repeats within one figure (nccl-tests -n): the figure is their mean",
    "warmup": "untimed calls before the figure (nccl-tests -w)", "check": "verification after the timing (-c)",
    "corrupt_rank": "a test hook", "oom_rank": "a test hook", "inject_memory_error_at_step": "a test hook",
    "steps": "timed steps within one figure: the figure is their mean",
    "warmup_steps": "untimed steps before the figure", "lr": "the optimizer's step size: no effect on the time",
    "seed": "the initial weights' seed: no effect on the time",
    "data": "where batches come from: their shapes are micro_batch and seq_len",
    "memory_limit_gb": "a cap on GPU memory, kept in params: a run past it ends oom (its status)",
    # nccl-tests' header (wirewise.orchestrator.record.nccl_tests): the log's identity and its sweep
    "log": "the imported file", "section": "the run within the file", "test": "the binary (op says the op)",
    "nthread": "nccl-tests' threads per process: ranks says the ranks", "ngpus": "GPUs per thread: ranks says the ranks",
    "step_bytes": "the sweep's sizes (bytes)", "agg_iters": "calls per timed iteration (-m): the figure is per call",
    "validation": "verification (-c)",
    "graph": "cuda_graph says it",
}
