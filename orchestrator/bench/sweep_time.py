"""How long a collective sweep on CPU ranks will take, said before it starts (`bench collectives`).

The basis is one measured sweep (issue 31): the default sweep, all_reduce, all_gather and
reduce_scatter from 1M to 1G (11 sizes, factor 2), 20 timed and 5 warm-up calls per size and
form, on 2 gloo CPU ranks on a 2-core machine, ran 5 min 45 s. A sweep's time is taken to
grow with the bytes its calls move (the large sizes are nearly all of it: 1G alone is half)
and with its ranks (gloo's ranks share this machine's cores). A GPU sweep takes seconds and is
not estimated.
"""

from __future__ import annotations

BASIS_SECONDS = 5 * 60 + 45
BASIS_RANKS = 2
BASIS_OP_BYTES = 3 * (2**31 - 2**20) * (20 + 5)  # ops x the sizes' sum x calls per size
BASIS = "the default 1M-1G sweep on 2 CPU ranks ran 5 min 45 s on a 2-core machine"
SAY_FROM_S = 30.0  # shorter sweeps start without a word


def cpu_sweep_seconds(params, ranks: int) -> float:
    """Seconds `params` (CollectiveParams) would take on `ranks` gloo CPU ranks, by the basis."""
    op_bytes = len(params.ops) * sum(params.sizes) * (params.iters + params.warmup)
    return BASIS_SECONDS * op_bytes / BASIS_OP_BYTES * max(ranks, BASIS_RANKS) / BASIS_RANKS


def cpu_sweep_estimate(params, spec) -> str | None:
    """One line before a long sweep on CPU ranks (`spec` a TaskSpec): how many sizes, roughly
    how long, and from what; None on GPUs or for a sweep under SAY_FROM_S."""
    from wirewise.units import bytes_text

    if spec.backend != "gloo":
        return None
    seconds = cpu_sweep_seconds(params, spec.world_size)
    if seconds < SAY_FROM_S:
        return None
    sizes = params.sizes
    return (f"{len(sizes)} sizes from {bytes_text(sizes[0])} to {bytes_text(sizes[-1])}, {len(params.ops)} op(s), "
            f"on {spec.world_size} CPU ranks: roughly {_duration(seconds)} ({BASIS}); -e sets a smaller largest size")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
