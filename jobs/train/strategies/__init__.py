"""One small descriptor per data-parallel strategy; the training loop is shared (jobs.train.loop).

Imported lazily by name so a DDP run never imports DeepSpeed.
"""

from __future__ import annotations

from jobs.train.strategies.base import Setup, Strategy


def make_strategy(setup: Setup) -> Strategy:
    """Wrap `setup.built.model` the way the run asks: native strategy or the accelerate engine."""
    if setup.params.engine == "accelerate":
        from jobs.train.strategies.accelerate import AccelerateStrategy

        return AccelerateStrategy(setup)
    name = setup.params.strategy
    if name == "ddp":
        from jobs.train.strategies.ddp import DDPStrategy

        return DDPStrategy(setup)
    if name == "fsdp":
        from jobs.train.strategies.fsdp import FSDPStrategy

        return FSDPStrategy(setup)
    from jobs.train.strategies.zero import ZeroStrategy

    return ZeroStrategy(setup)


__all__ = ["Setup", "Strategy", "make_strategy"]
