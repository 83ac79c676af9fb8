"""What every strategy descriptor offers the training loop, and the byte counting they share.

A strategy wraps the model and its optimizer and exposes one training step in three parts
(`loss`, `backward`, `optimizer_step`) plus three inventories of the tensors this rank holds:
parameters, gradients and optimizer state. The inventories point at the real tensors and
shards (a DTensor's local shard, a ZeRO-3 partition, DeepSpeed's flat fp32 master
partitions...), and `count_bytes` sums the bytes of the storages behind them, each storage
once: a parameter that is a view into a flat buffer counts that buffer, as the allocator does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from wirewise import registry
from wirewise.strategy import StrategySpec


@dataclass(frozen=True)
class Setup:
    """Everything a strategy needs to wrap a model."""

    built: Any  # wirewise.jobs.train.models.BuiltModel
    params: Any  # wirewise.workloads.train.TrainParams
    ctx: Any  # wirewise.jobs.rank.RankContext
    precision: str  # resolved: fp32 | bf16-mixed | bf16
    run_dir: Any  # where rendered configs are written (recorded with the run)

    @property
    def on_gpu(self) -> bool:
        return self.ctx.device.type == "cuda"

    @property
    def spec(self) -> StrategySpec:
        """The run's strategy descriptor (its ZeRO stage, engine configs...)."""
        return registry.STRATEGIES[self.params.strategy]


def make_adamw(parameters, setup: Setup) -> torch.optim.Optimizer:
    """torch AdamW for every strategy (DeepSpeed too): the same optimizer maths everywhere.
    Fused on GPU (one kernel over all tensors); the plain for-each version on CPU."""
    return torch.optim.AdamW(
        parameters, lr=setup.params.lr, betas=(0.9, 0.95), weight_decay=0.0, fused=setup.on_gpu or None
    )


def local_tensor(t: torch.Tensor) -> torch.Tensor:
    """The part of a tensor this rank stores: a DTensor's local shard, else the tensor itself."""
    to_local = getattr(t, "to_local", None)
    return to_local() if callable(to_local) else t


def tensors_in(obj: Any) -> Iterator[torch.Tensor]:
    """Tensors inside nested dicts, lists and tuples (optimizer state, DeepSpeed's buffers)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from tensors_in(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from tensors_in(value)


class StorageCounter:
    """Sums storage bytes, each storage once, across several inventories."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, int]] = set()

    def count(self, tensors: Iterable[torch.Tensor | None]) -> int:
        total = 0
        for tensor in tensors:
            if tensor is None:
                continue
            tensor = local_tensor(tensor)
            if tensor.device.type == "meta":
                continue
            storage = tensor.untyped_storage()
            key = (str(tensor.device), storage.data_ptr())
            if storage.nbytes() == 0 or key in self.seen:
                continue
            self.seen.add(key)
            total += storage.nbytes()
        return total


class Strategy:
    """One training step in three parts, and what this rank holds. Subclasses wrap the model."""

    name = "base"
    model: torch.nn.Module  # what the loop calls: the wrapped model (or DeepSpeed engine)
    optimizer: Any

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.config: dict[str, Any] = {}  # rendered framework config, recorded in extra
        self.extra: dict[str, Any] = {}  # anything else the record should carry

    # -- the step ---------------------------------------------------------------------
    def autocast(self):
        """bf16 autocast where the strategy computes in bf16 over fp32 weights (DDP's mixed mode)."""
        return contextlib.nullcontext()

    def loss(self, batch: dict[str, Any]) -> torch.Tensor:
        with self.autocast():
            return self.model(**batch).loss

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def optimizer_step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    # -- what this rank holds ---------------------------------------------------------
    def param_tensors(self) -> Iterable[torch.Tensor]:
        return self.model.parameters()

    def grad_tensors(self) -> Iterable[torch.Tensor | None]:
        return (p.grad for p in self.model.parameters())

    def optimizer_tensors(self) -> Iterable[torch.Tensor]:
        return tensors_in(list(self.optimizer.state.values()))

    def grad_bytes(self) -> int:
        """Gradient bytes held right now (parameter storages excluded, should a grad alias one)."""
        counter = StorageCounter()
        counter.count(self.param_tensors())
        return counter.count(self.grad_tensors())

    def params_and_optimizer_bytes(self) -> tuple[int, int]:
        """Parameters first, so an fp32 master copy that *is* the parameter is not counted twice."""
        counter = StorageCounter()
        return counter.count(self.param_tensors()), counter.count(self.optimizer_tensors())

    def close(self) -> None:
        """Drop the references that keep model, optimizer and communication buffers alive."""
        self.model = None
        self.optimizer = None
