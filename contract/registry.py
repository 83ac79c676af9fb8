"""Every plug-in by name, and where its code lives on the compute side.

Adding a collective op or a workload is one file under `wirewise.jobs` and one line here, after
nccl-tests' one-file-per-op. A training strategy is one file under `wirewise.jobs.train.strategies`
(its code) and one descriptor here (`wirewise.strategy.StrategySpec`: what it shards, what it
moves per step, its engine configs), which every stage reads; a strategy from another package
is one module holding its descriptor and one entry-point line in the group
`wirewise.strategies` (STRATEGY_PLUGINS), found the first time a name is not built in. The
control plane checks names against these tables without importing torch; the compute side
loads the objects by reference with `load()`, so a DDP run never imports DeepSpeed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator

from wirewise.errors import UserError
from wirewise.strategy import COMPUTE_DTYPE, WEIGHT_DTYPE, StrategySpec, Traffic

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

# The collectives of each strategy (wirewise.strategy): DDP all-reduces its gradients in 25 MB
# buckets while the backward runs; DeepSpeed ZeRO-1/2 reduce-scatter them in buckets during the
# backward on the compute stream (overlap_comm is off for stages 1-2 unless set: the templates
# leave it unset, as accelerate's default config does) and all-gather the updated parameters
# after the step; ZeRO-3 and FSDP all-gather each layer's parameters before its forward and
# again before its backward, prefetched, and reduce-scatter its gradients beside the backward.
_GRADS_ALL_REDUCED = (Traffic("all_reduce", "grads", "backward", True, "bucket", WEIGHT_DTYPE),)
_ZERO_1_2 = (
    Traffic("reduce_scatter", "grads", "backward", False, "bucket", COMPUTE_DTYPE),
    Traffic("all_gather", "params", "step", False, "bucket", COMPUTE_DTYPE),
)


def _fully_sharded(grads_wire: Mapping[str, int], grads_unit: str) -> tuple[Traffic, ...]:
    return (
        Traffic("all_gather", "params", "forward", True, "layer", COMPUTE_DTYPE),
        Traffic("all_gather", "params", "backward", True, "layer", COMPUTE_DTYPE),
        Traffic("reduce_scatter", "grads", "backward", True, grads_unit, grads_wire),
    )


_ZERO = "wirewise.jobs.train.strategies.zero:ZeroStrategy"
BUILT_IN_STRATEGIES = (
    StrategySpec("ddp", "DDP", "torch DistributedDataParallel: everything replicated, one all-reduce of the gradients",
                 impl="wirewise.jobs.train.strategies.ddp:DDPStrategy", zero_stage=0, dial=0,
                 traffic=_GRADS_ALL_REDUCED, accelerate="ddp"),
    StrategySpec("fsdp", "FSDP", "torch FSDP2 (fully_shard per layer): parameters, gradients and optimizer state sharded",
                 impl="wirewise.jobs.train.strategies.fsdp:FSDPStrategy", zero_stage=3, dial=4,
                 traffic=_fully_sharded(WEIGHT_DTYPE, "layer"), accelerate="fsdp"),
    StrategySpec("zero1", "ZeRO-1", "DeepSpeed ZeRO stage 1: optimizer state sharded",
                 impl=_ZERO, zero_stage=1, dial=1, traffic=_ZERO_1_2, accelerate="deepspeed", deepspeed="zero1"),
    StrategySpec("zero2", "ZeRO-2", "DeepSpeed ZeRO stage 2: optimizer state and gradients sharded",
                 impl=_ZERO, zero_stage=2, dial=2, traffic=_ZERO_1_2, accelerate="deepspeed", deepspeed="zero2"),
    StrategySpec("zero3", "ZeRO-3", "DeepSpeed ZeRO stage 3: optimizer state, gradients and parameters sharded",
                 impl=_ZERO, zero_stage=3, dial=3, traffic=_fully_sharded(COMPUTE_DTYPE, "bucket"),
                 accelerate="deepspeed", deepspeed="zero3"),
)
STRATEGY_PLUGINS = "wirewise.strategies"  # entry-point group: name = 'module:StrategySpec object'


class StrategyTable(Mapping[str, StrategySpec]):
    """Strategy name -> descriptor: the built-in ones, then the plug-ins of STRATEGY_PLUGINS,
    looked up the first time a name is not built in or the whole table is listed (so checking
    `--strategy ddp` reads no package metadata). A plug-in that does not load, is not a
    StrategySpec or reuses a name is a UserError naming it."""

    def __init__(self, built_in: tuple[StrategySpec, ...], group: str) -> None:
        self.built_in = {spec.name: spec for spec in built_in}
        self.group = group
        self._everything: dict[str, StrategySpec] | None = None

    def __getitem__(self, name: str) -> StrategySpec:
        if name in self.built_in:
            return self.built_in[name]
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def by_dial(self) -> list[StrategySpec]:
        """Least sharded first (the article's order: ddp, zero1, zero2, zero3, fsdp), plug-ins in place."""
        return sorted(self.values(), key=lambda spec: spec.dial)

    def _all(self) -> dict[str, StrategySpec]:
        if self._everything is None:
            self._everything = dict(self.built_in)  # what a plug-in sees while the plug-ins load
            try:
                plugins = _plugins(self.group, self.built_in)
            except BaseException:
                self._everything = None  # the next lookup says what is wrong again
                raise
            self._everything = {**self.built_in, **plugins}
        return self._everything


def _plugins(group: str, taken: dict[str, StrategySpec]) -> dict[str, StrategySpec]:
    from importlib.metadata import entry_points

    found: dict[str, StrategySpec] = {}
    for point in entry_points(group=group):
        where = f"strategy plug-in {point.name!r} ({point.value}, entry point group {group})"
        try:
            spec = point.load()
        except Exception as exc:
            raise UserError(f"{where} does not load: {type(exc).__name__}: {exc}") from None
        if not isinstance(spec, StrategySpec):
            raise UserError(f"{where} is a {type(spec).__name__}, not a wirewise.strategy.StrategySpec")
        if spec.name != point.name:
            raise UserError(f"{where} describes {spec.name!r}: name the entry point after its strategy")
        if spec.name in taken or spec.name in found:
            raise UserError(f"{where}: {spec.name!r} is already a strategy; give the plug-in its own name")
        found[spec.name] = spec
    return found


# data-parallel strategy -> its descriptor; the code it names subclasses
# wirewise.jobs.train.strategies.base.Strategy
STRATEGIES = StrategyTable(BUILT_IN_STRATEGIES, STRATEGY_PLUGINS)

# training engine -> the class that applies any strategy through it (None: the strategy's own)
ENGINES: dict[str, str | None] = {
    "native": None,
    "accelerate": "wirewise.jobs.train.accelerate_engine:AccelerateEngine",
}


def load(ref: str) -> Any:
    """'package.module:attribute' -> the attribute (imports the module)."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def one_of(table: Mapping[str, Any] | tuple[str, ...]) -> Any:
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
