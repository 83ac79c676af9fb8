"""The step model fitted to training steps measured on a wiring: achieved MFU and `hidden`, the
share of a phase's compute that communication runs beside (wirewise.orchestrator.advise.step).

Each measured step is modelled with its own work (parameters, tokens per rank, ranks, precision,
the GPU's peak) at the busbw its GPU set has (measured all-reduce, all-gather and reduce-scatter
of that set shape where stored, else the wiring model). For each hidden share on a grid
(0, 0.05, ..., 1) every result gives the MFU that reproduces it exactly (the step time falls as
MFU rises, so bisection finds it); their median is the fit's MFU at that share, and the share
whose median explains all results best (least squares on log step time) wins, if it explains
them better than full overlap by more than NOISE (run-to-run noise: a parameter is not fitted
to noise). One result, or results that communication never slowed, thus fit the MFU alone at
full overlap; results with differing communication loads (other wires, set sizes or batches)
tell the share apart from the MFU.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median

from wirewise import registry
from wirewise.orchestrator.advise.step import Work, step_time
from wirewise.strategy import RING_VOLUME

OPS = tuple(RING_VOLUME)  # the collectives a strategy's descriptor may name

HIDDEN_GRID = tuple(i / 20 for i in range(21))
MFU_RANGE = (0.01, 1.0)
# rms of log step time: repeat runs differ by "a few percent" (the seed article, Part 2).
NOISE = 0.03


@dataclass(frozen=True)
class Observation:
    """One measured training step."""

    strategy: str
    work: Work
    busbw_gbs: Mapping[str, float]  # per op, for the result's GPU set
    step_s: float  # the median of its runs
    label: str  # what it was: "mistral-1b ddp x2, 4 x 2048 tokens"
    runs: int = 1


@dataclass(frozen=True)
class Fit:
    mfu: float
    hidden: float
    results: int  # runs
    rms_log_error: float  # of the fitted model over the results (0.05: ~5% off)
    labels: tuple[str, ...]

    def as_dict(self) -> dict:
        return {"mfu": round(self.mfu, 3), "hidden": self.hidden, "results": self.results,
                "rms_log_error": round(self.rms_log_error, 4), "fitted_to": list(self.labels)}


def fit(observations: Sequence[Observation], shares: Sequence[float] = HIDDEN_GRID) -> Fit | None:
    """The (MFU, hidden) that explain the observations best, hidden one of `shares` (which ends
    with full overlap, 1); None without observations."""
    if not observations:
        return None
    candidates = []  # (error, hidden, mfu)
    for hidden in shares:
        mfu = median(_exact_mfu(obs, hidden) for obs in observations)
        error = math.sqrt(sum(_log_error(obs, mfu, hidden) ** 2 for obs in observations) / len(observations))
        candidates.append((error, hidden, mfu))
    full = candidates[-1]  # hidden = 1
    best = min(candidates, key=lambda c: (round(c[0], 9), -c[1]))
    error, hidden, mfu = best if full[0] - best[0] > NOISE else full
    return Fit(mfu, hidden, sum(obs.runs for obs in observations), error, tuple(obs.label for obs in observations))


def _modelled(obs: Observation, mfu: float, hidden: float) -> float:
    return step_time(registry.STRATEGIES[obs.strategy], obs.work, obs.busbw_gbs, mfu, hidden).step_s


def _log_error(obs: Observation, mfu: float, hidden: float) -> float:
    return math.log(_modelled(obs, mfu, hidden) / obs.step_s)


def _exact_mfu(obs: Observation, hidden: float) -> float:
    """The MFU at which the modelled step equals the measured one (clamped to MFU_RANGE)."""
    low, high = MFU_RANGE
    if _modelled(obs, high, hidden) >= obs.step_s:
        return high  # communication alone takes longer than the measured step
    if _modelled(obs, low, hidden) <= obs.step_s:
        return low
    for _ in range(30):  # to 1e-9 of the MFU
        mid = (low + high) / 2
        low, high = (mid, high) if _modelled(obs, mid, hidden) > obs.step_s else (low, mid)
    return (low + high) / 2


# -- the observations a store holds ----------------------------------------------------------
def observations(history) -> list[Observation]:
    """The eager training steps measured on this wiring (a placement.history.History) on
    several GPUs of one node (torch.compile runs measure another implementation; the step model
    has no network term, so runs over several nodes are left out: `left_out` says how many),
    each with the busbw its GPU set has: measured per op for its set shape where stored, else
    the wiring model on the node it ran on. One GPU's runs are the advice's measured figures
    there, not fitted: they fit an MFU without a wire, at their own batch."""
    from wirewise.errors import UserError
    from wirewise.orchestrator.advise.params import model_shape
    from wirewise.strategy import PRECISIONS
    from wirewise.topology import hardware

    topo = history.topo
    rows = history.results(
        ("node", "gpus", "strategy", "model", "ranks", "step_time_s", "tokens_per_s", "precision", "compile", "case_key",
         "extra"),
        present=("step_time_s", "tokens_per_s", "strategy"), workload="train",
    )
    if not rows:
        return []
    measured = {op: history.measured(op) for op in OPS}
    repeats: dict[tuple, list[float]] = {}
    for shape, (node, gpus, strategy, model, world, step_s, tokens_s, precision, compiled, case, extra) in rows:
        extra = extra or {}
        if len(gpus) < 2 or compiled or strategy not in registry.STRATEGIES or not step_s:
            continue
        try:
            model_facts = model_shape(model)
        except UserError:
            continue  # a local model config this machine does not have
        links, names = history.wirings.get(node, (topo.links, topo.gpu_names))
        peak = extra.get("peak_tflops") or (hardware.datasheet_bf16_tflops(names[gpus[0]]) or (None, None))[1]
        if not peak or precision not in PRECISIONS:
            continue
        node_wiring = history.wiring(node)
        modelled = node_wiring.model_busbw(tuple(gpus)) if node_wiring.named else None
        busbw = {op: measured[op][shape].busbw_gbs if shape in measured[op] else modelled for op in OPS}
        if None in busbw.values():
            continue
        ranks = world or len(gpus)
        tokens = round(tokens_s * step_s / ranks)  # per rank per step, as the run counted them
        work = Work(extra.get("n_params") or model_facts.params, model_facts.layers, tokens, ranks, peak * 1e12, precision)
        label = f"{model} {strategy} x{ranks}, {tokens} tokens per rank"
        repeats.setdefault((case, strategy, work, tuple(busbw.values()), label), []).append(step_s)
    # Repeats of one case on one set shape are one observation, at their median step.
    return [Observation(strategy, work, dict(zip(OPS, busbw)), median(steps),
                        label if len(steps) == 1 else f"{label}, median of {len(steps)}", len(steps))
            for (_, strategy, work, busbw, label), steps in repeats.items()]


def left_out(history) -> list[str]:
    """What the fit and the measured figures leave out of this wiring's training history, said."""
    runs = history.multi_node(workload="train")
    if not runs:
        return []
    return [f"{runs} multi-node training result(s) on this wiring left out of the measured figures and the step-model "
            "fit: they are other cases, and the step model has no network term"]
