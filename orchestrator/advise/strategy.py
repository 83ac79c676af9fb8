"""Which data-parallel strategy for a model on a chosen GPU set: what fits, how fast each would
run, and one recommendation with its reasons.

Throughput per strategy, each row saying its `basis` and `source`:
    measured    the median tokens/s the store holds for this model, strategy, wiring
                (fingerprint) and set shape, in one case (wirewise.case; the preferred one of
                several: placement.history.preferred_case), one GPU included;
    fitted      the step model (wirewise.orchestrator.advise.step) with the achieved MFU and the
                overlap of communication with compute fitted to the training results the store
                holds for this wiring (wirewise.orchestrator.advise.fit): the strategy's own
                results, else the MFU of every strategy's results at full overlap;
    model       the step model at ASSUMED_MFU and full overlap.
The step model reads each strategy's collectives from its descriptor (wirewise.strategy: which
op, which phase, overlapped or not, per layer or per bucket), on the wire in bf16 as the
article's accounting (bf16 parameters and gradients), each at its op's busbw (measured for this
set shape where stored, else the set's predicted all-reduce busbw).

Against the seed article (Mistral-7B, 4 H200 NVL, batch 1 x 2048; docs/placement.md has the
figures): inside a quad ddp, zero3 and fsdp within 2% (the article: a tie), zero1/zero2 ~20%
below, because accelerate's default DeepSpeed config does not overlap their collectives; across
quads ddp 3.0x and fsdp 4.0x slower (the article: 3 to 5x, fsdp losing most, ddp least).

The pick: measured results decide where there are any; otherwise, with predictions for every
strategy that fits, the ones within NEAR of the fastest are as good, and of those the most
sharded on a fast wire (less memory for free: fsdp, the article's default inside a quad or on
NVSwitch), the least sharded on a slow one (less traffic; the article: ddp if it fits, else
the stage that fits). Without predictions (the GPU's peak unknown) the same rules by wire alone.
"""

from __future__ import annotations

from dataclasses import asdict

from wirewise import registry
from wirewise.orchestrator.advise.fit import Fit
from wirewise.orchestrator.advise.memory import StrategyMemory, dial_order
from wirewise.orchestrator.advise.params import ModelShape
from wirewise.orchestrator.advise.step import ASSUMED_HIDDEN, ASSUMED_MFU, Work, step_time, tokens_per_s
from wirewise.orchestrator.placement.wiring import RING_EFFICIENCY
from wirewise.topology import hardware

# The model's wire: 2-byte elements in every collective, as the article's accounting keeps
# parameters and gradients in bf16 (measured results are fitted at their own precision).
WIRE_PRECISION = "bf16"
# Throughputs this close count as a tie: the article's repeat runs differ by "a few percent".
NEAR = 0.05


def is_fast_wire(busbw_gbs: float | None, gpu_name: str | None) -> bool:
    """Faster than PCIe could carry a ring between these GPUs: NVLink (or NVSwitch)."""
    return busbw_gbs is not None and busbw_gbs > RING_EFFICIENCY * hardware.pcie_gbs(gpu_name)


def step_work(shape: ModelShape, gpus: int, batch_size: int, gpu_name: str | None) -> Work | None:
    """One rank's work in a step of this job; None when the GPU's peak is not known."""
    peak = hardware.datasheet_bf16_tflops(gpu_name)
    if peak is None:
        return None
    return Work(shape.params, shape.layers, batch_size * shape.tokens_per_sample, gpus, peak[1] * 1e12, WIRE_PRECISION)


def modelled_tokens_per_s(shape: ModelShape, strategy: str, gpus: int, batch_size: int,
                          busbw_gbs, gpu_name: str | None,
                          mfu: float = ASSUMED_MFU, hidden: float = ASSUMED_HIDDEN) -> float | None:
    """Samples' tokens per second over all GPUs; None when the GPU's peak is not known.
    `busbw_gbs`: the set's busbw, one figure or per op."""
    work = step_work(shape, gpus, batch_size, gpu_name)
    if work is None:
        return None
    return round(tokens_per_s(step_time(registry.STRATEGIES[strategy], work, busbw_gbs, mfu, hidden), work))


def advise(
    shape: ModelShape,
    gpus: int,
    memory: list[StrategyMemory],
    busbw_gbs: float | None,
    gpu_name: str | None,
    batch_size: int = 1,
    measured: dict[str, tuple[float, int, list[str], str]] | None = None,
    fits: dict[str, Fit] | None = None,
    pooled: Fit | None = None,
    op_busbw: dict[str, float] | None = None,
    notes: list[str] = (),
) -> dict:
    """{"strategy": the pick or None, "reasons": [...], "strategies": [per strategy: fits,
    memory, predicted tokens/s, its basis and source, the step it rests on]}.
    `measured`: strategy -> (tokens/s, results, sources: wirewise for benchmarks, job for real
    jobs, the case as words: placement.history.History.tokens_per_s); `fits`: strategy -> its own fit on this wiring; `pooled`: the fit of every
    strategy's results; `op_busbw`: busbw per op for this set; `notes`: what the history
    left out, said after the reasons."""
    measured, fits = measured or {}, fits or {}
    work = step_work(shape, gpus, batch_size, gpu_name)
    rows = [_row(mem, measured.get(mem.strategy), fits.get(mem.strategy) or pooled,
                 mem.strategy in fits, work, op_busbw or busbw_gbs) for mem in memory]
    pick, reasons = _recommend(rows, gpus, is_fast_wire(busbw_gbs, gpu_name), busbw_gbs)
    return {"strategy": pick, "reasons": reasons + list(notes), "strategies": rows}


def _row(mem: StrategyMemory, found: tuple[float, int, list[str], str] | None, fitted: Fit | None, own: bool,
         work: Work | None, busbw) -> dict:
    row = {"strategy": mem.strategy, "fits": mem.fits, "total_gb": mem.total_gb}
    mfu, hidden = (fitted.mfu, fitted.hidden) if fitted else (ASSUMED_MFU, ASSUMED_HIDDEN)
    step = step_time(registry.STRATEGIES[mem.strategy], work, busbw, mfu, hidden) if work else None
    if found:
        tokens, basis, results = found[0], "measured", found[1]
        source = (f"median of {results} training result(s) of this model and strategy on this wiring and set shape, "
                  f"one case ({found[3]})")
    elif step is None:
        tokens, basis, results = None, "model", 0
        source = "no prediction: the GPU's peak FLOP/s is not known (give --gpu-name with a known model)"
    elif fitted:
        tokens, basis, results = round(tokens_per_s(step, work)), "fitted", fitted.results
        whose = "its own" if own else "every strategy's"
        overlap = f", communication hidden behind {hidden:.0%} of compute" if own else " at full overlap"
        source = (f"step model fitted to {whose} {fitted.results} training result(s) on this wiring "
                  f"({'; '.join(fitted.labels)}): MFU {mfu:.3f}{overlap}")
    else:
        tokens, basis, results = round(tokens_per_s(step, work)), "model", 0
        source = f"step model at an assumed MFU of {mfu:g} and full overlap (nothing measured on this wiring)"
    row.update(predicted_tokens_per_s=tokens, basis=basis, results=results, source=source,
               sources=list(found[2]) if found else [],
               calibration=asdict(mem.calibration) if mem.calibration else None)
    if step is not None:  # the step model's own figure, next to a measured one too
        row.update(modelled_tokens_per_s=round(tokens_per_s(step, work)), mfu=round(mfu, 3), hidden=hidden, **step.as_dict())
    return row


def _recommend(rows: list[dict], gpus: int, fast: bool, busbw_gbs: float | None) -> tuple[str | None, list[str]]:
    fitting = [row for row in rows if row["fits"] is not False]
    ruled_out = [row["strategy"] for row in rows if row["fits"] is False]
    reasons = [f"ruled out by memory: {', '.join(ruled_out)}"] if ruled_out else []
    if not fitting:
        smallest = min(rows, key=lambda row: row["total_gb"])
        return None, reasons + [
            f"nothing fits: even {smallest['strategy']} needs ~{smallest['total_gb']:g} GB per GPU; "
            "use more GPUs, a smaller batch or activation checkpointing"
        ]
    if any(row["fits"] is None for row in fitting):
        reasons.append("GPU memory unknown: fit not judged (give --gpu-mem-gb)")
    measured = [row for row in fitting if row["basis"] == "measured"]
    if measured:
        best = max(measured, key=lambda row: row["predicted_tokens_per_s"])
        return best["strategy"], reasons + [
            f"{best['strategy']} measured fastest on this wiring and set shape "
            f"({best['predicted_tokens_per_s']:g} tokens/s over {best['results']} result(s) of {', '.join(best['sources'])})"
        ]
    names = [row["strategy"] for row in fitting]
    if gpus == 1:
        return names[0], reasons + ["one GPU: nothing to shard over"]
    wire = f"{busbw_gbs:g} GB/s predicted busbw" if busbw_gbs is not None else "unknown busbw"
    kind = "fast wire" if fast else "slow wire"
    if all(row["predicted_tokens_per_s"] for row in fitting):
        fastest = max(row["predicted_tokens_per_s"] for row in fitting)
        near = [row for row in fitting if row["predicted_tokens_per_s"] >= (1 - NEAR) * fastest]
        dial = {name: i for i, name in enumerate(dial_order())}
        pick = (max if fast else min)(near, key=lambda row: dial[row["strategy"]])
        ties = [row["strategy"] for row in near if row is not pick]
        why = (f"{pick['strategy']} predicted at {pick['predicted_tokens_per_s']:g} tokens/s ({pick['basis']})"
               + (f", within {NEAR:.0%} of {', '.join(ties)}" if ties else ", the fastest that fits"))
        if ties:
            why += "; the most sharded of them, for its memory" if fast else "; the least sharded of them, for its traffic"
        return pick["strategy"], reasons + [f"{kind} ({wire}): {why}"]
    if fast and "fsdp" in names:  # the article's measurement of fsdp itself, not of its place on the dial
        return "fsdp", reasons + [f"fast wire ({wire}): fsdp is about as fast as ddp and uses far less memory"]
    first = next(name for name in dial_order() if name in names)
    why = f"{first} fits" if not registry.STRATEGIES[first].shards else f"{first} is the least-sharded stage that fits"
    if fast:
        return first, reasons + [f"fast wire ({wire}): {why}"]
    return first, reasons + [f"slow wire ({wire}): sharding traffic costs most here; {why}"]
