"""One small descriptor per data-parallel strategy, one file each; the training loop is shared
(wirewise.jobs.train.loop) and wirewise.registry.STRATEGIES names them.

Loaded by name, so a DDP run never imports DeepSpeed.
"""

from __future__ import annotations

from wirewise import registry
from wirewise.jobs.train.strategies.base import Setup, Strategy


def make_strategy(setup: Setup) -> Strategy:
    """Wrap `setup.built.model` the way the run asks: the strategy itself, or through an engine."""
    engine = registry.ENGINES[setup.params.engine]
    ref = engine or registry.STRATEGIES[setup.params.strategy]
    return registry.load(ref)(setup)


__all__ = ["Setup", "Strategy", "make_strategy"]
