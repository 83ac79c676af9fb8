"""Which data-parallel strategy for a model on a chosen GPU set: what fits, how fast each would
run, and one recommendation with its reasons.

Throughput comes from the store's training results on the same wiring (fingerprint) and the
same set shape where there are any; otherwise from a model of one step:
    compute     6 x params x tokens per GPU / (datasheet bf16 peak x ASSUMED_MFU)
    traffic     the collectives of the strategy's descriptor (wirewise.strategy), bf16 on the
                wire, at the set's busbw: time = bus bytes / busbw, so 2 bytes x params x
                2(N-1)/N for ddp's all-reduce, the same for zero1/zero2's reduce-scatter plus
                all-gather, 1.5 x that for zero3/fsdp's two all-gathers and a reduce-scatter
    a step      max(compute, communication): DDP's buckets and FSDP's prefetch overlap them.

The rules follow the seed article's evidence (docs/facts.md): on a fast wire fsdp is about as
fast as ddp and uses far less memory, so it is the pick when it fits; on a slow wire across
NVLink groups (3-5x slower training, fsdp losing most, ddp least) take ddp if it fits, else
the least-sharded stage that fits.
"""

from __future__ import annotations

from wirewise import registry
from wirewise.orchestrator.advise.memory import StrategyMemory, dial_order
from wirewise.orchestrator.advise.params import ModelShape
from wirewise.orchestrator.placement.wiring import RING_EFFICIENCY
from wirewise.topology import hardware

# Share of the datasheet peak a training loop reaches on H200 (docs/facts.md: 35% eager, 46% compiled).
ASSUMED_MFU = 0.45
# This model's wire: 2-byte elements in every collective (the descriptors also say what each
# implementation sends at each precision, for a model fitted to measurements).
WIRE_PRECISION = "bf16"


def is_fast_wire(busbw_gbs: float | None, gpu_name: str | None) -> bool:
    """Faster than PCIe could carry a ring between these GPUs: NVLink (or NVSwitch)."""
    return busbw_gbs is not None and busbw_gbs > RING_EFFICIENCY * hardware.pcie_gbs(gpu_name)


def modelled_tokens_per_s(shape: ModelShape, strategy: str, gpus: int, batch_size: int,
                          busbw_gbs: float | None, gpu_name: str | None) -> float | None:
    """Samples' tokens per second over all GPUs; None when the GPU's peak is not known."""
    peak = hardware.datasheet_bf16_tflops(gpu_name)
    if peak is None:
        return None
    tokens = batch_size * shape.tokens_per_sample
    compute_s = 6.0 * shape.params * tokens / (peak[1] * 1e12 * ASSUMED_MFU)
    comm_s = 0.0
    if gpus > 1 and busbw_gbs:
        comm_s = registry.STRATEGIES[strategy].bus_bytes(shape.params, gpus, WIRE_PRECISION) / (busbw_gbs * 1e9)
    return round(gpus * tokens / max(compute_s, comm_s))


def advise(
    shape: ModelShape,
    gpus: int,
    memory: list[StrategyMemory],
    busbw_gbs: float | None,
    gpu_name: str | None,
    batch_size: int = 1,
    measured: dict[str, tuple[float, int]] | None = None,
) -> dict:
    """{"strategy": the pick or None, "reasons": [...], "strategies": [per strategy: fits,
    memory, predicted tokens/s and its basis]}. `measured`: strategy -> (tokens/s, results)."""
    measured = measured or {}
    rows = []
    for mem in memory:
        found = measured.get(mem.strategy)
        rows.append({
            "strategy": mem.strategy,
            "fits": mem.fits,
            "total_gb": mem.total_gb,
            "predicted_tokens_per_s": found[0] if found else modelled_tokens_per_s(
                shape, mem.strategy, gpus, batch_size, busbw_gbs, gpu_name),
            "basis": "measured" if found else "model",
            "results": found[1] if found else 0,
        })
    pick, reasons = _recommend(rows, gpus, is_fast_wire(busbw_gbs, gpu_name), busbw_gbs)
    return {"strategy": pick, "reasons": reasons, "strategies": rows}


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
            f"({best['predicted_tokens_per_s']:g} tokens/s over {best['results']} result(s))"
        ]
    names = [row["strategy"] for row in fitting]
    if gpus == 1:
        return names[0], reasons + ["one GPU: nothing to shard over"]
    wire = f"{busbw_gbs:g} GB/s predicted busbw" if busbw_gbs is not None else "unknown busbw"
    if fast and "fsdp" in names:  # the article's measurement of fsdp itself, not of its place on the dial
        return "fsdp", reasons + [f"fast wire ({wire}): fsdp is about as fast as ddp and uses far less memory"]
    first = next(name for name in dial_order() if name in names)
    why = f"{first} fits" if not registry.STRATEGIES[first].shards else f"{first} is the least-sharded stage that fits"
    if fast:
        return first, reasons + [f"fast wire ({wire}): {why}"]
    return first, reasons + [f"slow wire ({wire}): sharding traffic costs most here; {why}"]
