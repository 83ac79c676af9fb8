"""`wirewise doctor`: flag nodes whose measurements or wiring have drifted.

From the history (any node):
- busbw below its fingerprint's usual range: for every collective case (op, size, GPUs,
  transport, in place, dtype, source) the node's latest result is compared with every other
  ok result of the same case on the same wiring. It is flagged when it falls below the median
  by more than both 3 scaled MADs (the spread of the history) and 5% (so that a history of
  identical numbers does not flag rounding). At least MIN_HISTORY earlier results are needed.

Live, on the node doctor runs on (NVML, through the topology probe; a test plants a fake):
- NVLinks reported inactive on a GPU whose other links are up;
- PCIe links below their maximum generation or width (GPUs lower the generation when idle:
  the advice says to look again under load);
- a wiring whose fingerprint differs from the one stored for the node.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.report.query import facts
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters, has_results_on, nodes_with_results
from wirewise.orchestrator.store.topology import node_names, node_wirings
from wirewise.units import human_bytes

MIN_HISTORY = 3
MAD_TO_SIGMA = 1.4826  # a normal distribution's sigma from its median absolute deviation
SIGMAS = 3.0
MIN_DROP = 0.05
CASE = ("op", "bytes", "gpus", "transport", "in_place", "dtype", "source")


@dataclass(frozen=True)
class Finding:
    node: str
    check: str  # busbw-below-range | nvlink-inactive | pcie-degraded | wiring-changed
    evidence: str
    advice: str


def doctor(store: Store, node: str | None = None, include_cpu: bool = False,
           live: Callable[[], Any] | None = None, live_node: str | None = None) -> dict[str, Any]:
    """Findings for `node` (every node with results when None). `live` probes this machine's
    topology (named `live_node`); it runs only when that is the node being checked."""
    nodes = _nodes(store, node, live_node if live else None)
    findings: list[Finding] = []
    notes: list[str] = []
    history = _history(store, node, include_cpu)
    for name in nodes:
        findings += busbw_findings(name, history, notes)
    if live is not None and live_node in nodes:
        findings += live_findings(store, live_node, live, notes)
    return {"healthy": not findings, "nodes": nodes, "findings": [asdict(f) for f in findings], "notes": notes}


def _nodes(store: Store, node: str | None, live_node: str | None) -> list[str]:
    if node is None:
        return sorted(nodes_with_results(store) | ({live_node} if live_node else set()))
    if node != live_node and not has_results_on(store, node) and node not in node_names(store):
        raise UserError(f"--node {node!r}: no results or wiring stored for that node (wirewise topo list shows the nodes)")
    return [node]


# -- drift against the fingerprint's history --------------------------------------------
def _history(store: Store, node: str | None, include_cpu: bool) -> list[dict[str, Any]]:
    """The ok collective results a check needs: for one node, those of the wirings it ran on
    (not the whole database); for every node, all of them."""
    base = Filters(workload="collective", status="ok", include_cpu=include_cpu)
    if node is None:
        return facts(store, base)
    wirings = {f["fingerprint"] for f in facts(store, replace(base, node=node)) if f["fingerprint"]}
    return [f for fingerprint in sorted(wirings) for f in facts(store, replace(base, fingerprint=fingerprint))]



def busbw_findings(node: str, history: list[dict[str, Any]], notes: list[str]) -> list[Finding]:
    """The node's latest result per case against the other results of its wiring; one finding
    per (op, GPUs, transport) with every size that fell out of range."""
    cases: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for fact in history:
        if fact["fingerprint"] and fact["busbw_gbs"] is not None:
            cases[(fact["fingerprint"], *(fact[name] for name in CASE))].append(fact)
    slow: dict[tuple, list[str]] = defaultdict(list)
    thin = 0
    for key, members in cases.items():
        mine = [f for f in members if f["node"] == node]
        if not mine:
            continue
        latest = max(mine, key=lambda f: (f["started_at"], f["id"]))
        others = [f["busbw_gbs"] for f in members if f["id"] != latest["id"]]
        if len(others) < MIN_HISTORY:
            thin += 1
            continue
        low, median = usual_floor(others)
        if latest["busbw_gbs"] < low:
            slow[(latest["op"], latest["gpus"], latest["transport"], latest["fingerprint"])].append(
                f"{human_bytes(latest['bytes'])}: {latest['busbw_gbs']:.3g} GB/s vs usual {median:.3g} "
                f"(floor {low:.3g}, {len(others)} results)"
            )
    if thin:
        notes.append(f"{node}: {thin} case(s) have fewer than {MIN_HISTORY} other results on their wiring: not judged")
    return [
        Finding(
            node, "busbw-below-range",
            f"{op} on {gpus} GPU(s), transport {transport}, wiring {fingerprint[:12]}: " + "; ".join(sizes),
            "re-run `wirewise bench collectives` on this node to confirm; then check `wirewise doctor` on the node "
            "itself (NVLinks, PCIe), `nvidia-smi -q -d PERFORMANCE` for throttling, and other jobs on the node",
        )
        for (op, gpus, transport, fingerprint), sizes in sorted(slow.items(), key=lambda item: str(item[0]))
    ]


def usual_floor(values: list[float]) -> tuple[float, float]:
    """(the lowest value the history explains, its median): median - max(3 scaled MADs, 5%)."""
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return median - max(SIGMAS * MAD_TO_SIGMA * mad, MIN_DROP * median), median


# -- live checks ----------------------------------------------------------------------------
def live_findings(store: Store, node: str, probe: Callable[[], Any], notes: list[str]) -> list[Finding]:
    try:
        topo = probe()
    except UserError as exc:
        notes.append(f"{node}: live checks skipped: {exc}")
        return []
    gpus = topo.details.get("gpus") or []
    if topo.details.get("source") == "file" or not any("pcie" in gpu for gpu in gpus):
        notes.append(f"{node}: NVML gave no per-GPU link state: NVLink and PCIe checks skipped")
        return wiring_findings(store, node, topo, notes)
    return [*nvlink_findings(node, gpus), *pcie_findings(node, gpus, notes), *wiring_findings(store, node, topo, notes)]


def nvlink_findings(node: str, gpus: list[dict[str, Any]]) -> list[Finding]:
    """Inactive links on GPUs that have active ones (a GPU with none is not wired by NVLink)."""
    found = []
    for index, gpu in enumerate(gpus):
        links = gpu.get("nvlinks") or []
        down = [link["link"] for link in links if not link["active"]]
        up = len(links) - len(down)
        if down and up:
            found.append(Finding(
                node, "nvlink-inactive",
                f"GPU {index} ({gpu.get('pci_bus_id') or 'bus id unknown'}): NVLink(s) {', '.join(map(str, down))} inactive, {up} active",
                f"`nvidia-smi nvlink --status -i {index}`; on NVSwitch systems check the fabric manager "
                "(`systemctl status nvidia-fabricmanager`); reseat the bridge or drain the node for repair",
            ))
    return found


def pcie_findings(node: str, gpus: list[dict[str, Any]], notes: list[str]) -> list[Finding]:
    """Links below their maximum width, or generation while the GPU runs at full clocks: out of
    P0 (idle is P8) a GPU may lower its link's generation to save power, so a generation read
    then is noted, not flagged (a health check must not call an idle node degraded)."""
    found = []
    for index, gpu in enumerate(gpus):
        pcie = gpu.get("pcie") or {}
        gen, max_gen, width, max_width = (pcie.get(k) for k in ("curr_gen", "max_gen", "curr_width", "max_width"))
        low_gen = gen is not None and max_gen is not None and gen < max_gen
        low_width = width is not None and max_width is not None and width < max_width
        pstate = gpu.get("pstate")
        if low_gen and not low_width and pstate not in (None, 0):
            notes.append(f"{node}: GPU {index} PCIe gen {gen} of {max_gen} in P{pstate} (power saving): "
                         "not judged; run doctor while a job runs to check the generation")
            continue
        if low_gen or low_width:
            found.append(Finding(
                node, "pcie-degraded",
                f"GPU {index} ({gpu.get('pci_bus_id') or 'bus id unknown'}): PCIe gen {gen} x{width}, maximum gen {max_gen} x{max_width}",
                f"`nvidia-smi -q -d PCIE -i {index}` while a job runs; a narrow width means a badly seated card or "
                "riser: reseat it",
            ))
    return found


def wiring_findings(store: Store, node: str, topo: Any, notes: list[str]) -> list[Finding]:
    """The live wiring against the one most recently stored for the node."""
    stored = node_wirings(store, nodes=[node])
    if not stored:
        notes.append(f"{node}: no stored wiring to compare with (wirewise topo save stores it)")
        return []
    fingerprint, fabric = stored[0].fingerprint, stored[0].fabric
    if fingerprint == topo.fingerprint:
        return []
    return [Finding(
        node, "wiring-changed",
        f"live wiring {topo.fabric} {topo.fingerprint[:12]} ({topo.gpus} GPUs), stored {fabric} {fingerprint[:12]}",
        "compare `nvidia-smi topo -m` with the stored wiring (wirewise topo list): a GPU or link may be missing; "
        "if the change is intended, store it with `wirewise topo save`",
    )]
