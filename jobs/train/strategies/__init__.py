"""The code of each data-parallel strategy, one small file each; the training loop is shared
(wirewise.jobs.train.loop), and each strategy's descriptor in wirewise.registry.STRATEGIES
names its code here (`impl`).

Loaded by name, so a DDP run never imports DeepSpeed.
"""

from __future__ import annotations

from wirewise import registry
from wirewise.jobs.train.strategies.base import Setup, Strategy


def make_strategy(setup: Setup) -> Strategy:
    """Wrap `setup.built.model` the way the run asks: the strategy itself, or through an engine."""
    engine = registry.ENGINES[setup.params.engine]
    ref = engine or registry.STRATEGIES[setup.params.strategy].impl
    return registry.load(ref)(setup)


__all__ = ["Setup", "Strategy", "make_strategy"]
