"""Every plug-in by name, and where its code lives on the compute side.

Adding a collective op, a training strategy or a workload is one file under `wirewise.jobs`
and one line here, after nccl-tests' one-file-per-op. The control plane checks names
against these tables without importing torch; the compute side loads the objects by
reference with `load()`, so a DDP run never imports DeepSpeed.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

from pydantic import AfterValidator

# workload name -> the function every rank runs: run_rank(params: dict, ctx) -> rows
WORKLOADS: dict[str, str] = {
    "collective": "wirewise.jobs.collectives.loop:run_rank",
    "train": "wirewise.jobs.train.loop:run_rank",
}

# collective op -> its descriptor (wirewise.jobs.collectives.ops.base.Collective); a default
# sweep runs DEFAULT_OPS in this order.
OPS: dict[str, str] = {
    "all_reduce": "wirewise.jobs.collectives.ops.all_reduce:OP",
    "all_gather": "wirewise.jobs.collectives.ops.all_gather:OP",
    "reduce_scatter": "wirewise.jobs.collectives.ops.reduce_scatter:OP",
    "broadcast": "wirewise.jobs.collectives.ops.broadcast:OP",
    "all_to_all": "wirewise.jobs.collectives.ops.all_to_all:OP",
}
DEFAULT_OPS = ("all_reduce", "all_gather", "reduce_scatter")

# data-parallel strategy -> its class (wirewise.jobs.train.strategies.base.Strategy)
STRATEGIES: dict[str, str] = {
    "ddp": "wirewise.jobs.train.strategies.ddp:DDPStrategy",
    "fsdp": "wirewise.jobs.train.strategies.fsdp:FSDPStrategy",
    "zero1": "wirewise.jobs.train.strategies.zero:ZeroStrategy",
    "zero2": "wirewise.jobs.train.strategies.zero:ZeroStrategy",
    "zero3": "wirewise.jobs.train.strategies.zero:ZeroStrategy",
}

# training engine -> the class that applies any strategy through it (None: the strategy's own)
ENGINES: dict[str, str | None] = {
    "native": None,
    "accelerate": "wirewise.jobs.train.accelerate_engine:AccelerateEngine",
}


def load(ref: str) -> Any:
    """'package.module:attribute' -> the attribute (imports the module)."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def one_of(table: dict[str, Any] | tuple[str, ...]) -> Any:
    """A pydantic type for a name that must be a key of `table`, with the error people read:
    "'zero4' is not one of ddp, fsdp, zero1, zero2, zero3"."""

    def check(value: str) -> str:
        if value not in table:
            raise ValueError(f"{value!r} is not one of {', '.join(table)}")
        return value

    return Annotated[str, AfterValidator(check)]


OpName = one_of(OPS)
StrategyName = one_of(STRATEGIES)
EngineName = one_of(ENGINES)
WorkloadName = one_of(WORKLOADS)
