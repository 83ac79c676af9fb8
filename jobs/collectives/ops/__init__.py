"""One descriptor per collective, by the names jobs.collectives.params.OP_NAMES lists."""

from __future__ import annotations

from jobs.collectives.ops import all_gather, all_reduce, all_to_all, broadcast, reduce_scatter
from jobs.collectives.ops.base import Collective, Geometry

OPS: dict[str, Collective] = {
    module.OP.name: module.OP for module in (all_reduce, all_gather, reduce_scatter, broadcast, all_to_all)
}

__all__ = ["OPS", "Collective", "Geometry"]
