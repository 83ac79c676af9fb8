"""The placement object of `wirewise place`: the chosen GPUs, their predicted busbw and its
basis, the next-best alternatives, the reasons (the advised strategy joins it in
wirewise.orchestrator.decide)."""

from __future__ import annotations

from wirewise.orchestrator.placement import select_gpus
from wirewise.orchestrator.placement.history import History, Predictor, predictor
from wirewise.orchestrator.placement.search import ranked
from wirewise.topology import Topology, labels

ALTERNATIVES = 3


def place(
    topo: Topology,
    k: int | None,
    policy: str | list[int] = "packed",
    free: list[int] | None = None,
    history: History | None = None,
    free_source: str = "--free",
) -> dict:
    """The placement object of docs/placement.md (without the strategy; wirewise.orchestrator.decide.add_advice adds it),
    predicted from the measured `history` of the wiring where given."""
    free = sorted(free) if free is not None else list(range(topo.gpus))
    predict = predictor(topo, history)
    gpus = select_gpus(topo, k, policy, free, predict=predict)
    prediction = predict.predict(gpus)
    return {
        "gpus": gpus,
        "cuda_visible_devices": ",".join(map(str, gpus)),
        "fabric": topo.fabric,
        "fingerprint": topo.fingerprint,
        "free": free,
        "free_source": free_source,
        **prediction.as_dict(),
        "alternatives": alternatives(predict, gpus, free),
        "reasons": reasons(topo, predict, gpus, free),
    }


def alternatives(predict: Predictor, chosen: list[int], free: list[int]) -> list[dict]:
    """The best set of each other predicted busbw, best first: what choosing otherwise costs."""
    seen = {predict(tuple(chosen))}
    found = []
    for gpus in ranked(predict.wiring, tuple(free), len(chosen), predict):
        busbw = predict(gpus)
        if busbw in seen:
            continue
        seen.add(busbw)
        found.append({"gpus": list(gpus), **predict.predict(gpus).as_dict()})
        if len(found) == ALTERNATIVES:
            break
    return found


def reasons(topo: Topology, predict: Predictor, gpus: list[int], free: list[int]) -> list[str]:
    wiring, chosen = predict.wiring, tuple(gpus)
    said = [f"{len(gpus)} of {len(free)} free GPU(s) on a node of fabric {topo.fabric}"]
    if len(gpus) > 1:
        said.append(_links_text(topo, chosen))
        groups = wiring.groups_spanned(chosen)
        numa = wiring.numa_spanned(chosen)
        said.append(
            f"{groups} NVLink group(s), {numa} NUMA node(s)" if topo.fabric != "pcie" else f"{numa} NUMA node(s)"
        )
    said.append(_prediction_text(predict, chosen))
    left = [g for g in free if g not in gpus]
    if left:
        figure = f" ({_left_text(wiring, tuple(left))})" if topo.named or len(left) == 1 else ""  # no rates, no figure
        said.append(f"leaves GPU(s) {','.join(map(str, left))} free{figure}")
    return said


def _links_text(topo: Topology, gpus: tuple[int, ...]) -> str:
    slowest = min(
        ((topo.bandwidth_gbs(a, b) or 0.0, topo.links[a][b]) for a in gpus for b in gpus if a < b),
        key=lambda item: item[0],
    )
    return f"slowest pair link {labels.normalize(slowest[1])} (~{slowest[0]:g} GB/s per direction by the wiring model)"


def _prediction_text(predict: Predictor, gpus: tuple[int, ...]) -> str:
    found = predict.predict(gpus)
    if found.basis == "unknown":
        return "GPU model unknown: no busbw predicted (give --gpu-name)"
    if found.busbw_gbs is None:
        return "one GPU: no collective traffic to predict"
    if found.basis == "measured":
        return (
            f"predicted all_reduce busbw {found.busbw_gbs:g} GB/s: median of {found.results} measured result(s) "
            f"at {found.bytes} bytes on this wiring and set shape, one case ({found.case})"
        )
    return f"predicted all_reduce busbw {found.busbw_gbs:g} GB/s from the wiring model (nothing measured for this set shape)"


def _left_text(wiring, left: tuple[int, ...]) -> str:
    if len(left) == 1:
        return "one GPU"
    return f"~{wiring.model_busbw(left):g} GB/s busbw as one set by the model"
