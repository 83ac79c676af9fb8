"""One descriptor per collective, one file each; wirewise.registry.OPS names them."""

from __future__ import annotations

from wirewise import registry
from wirewise.jobs.collectives.ops.base import Collective, Geometry

OPS: dict[str, Collective] = {name: registry.load(ref) for name, ref in registry.OPS.items()}

__all__ = ["OPS", "Collective", "Geometry"]
