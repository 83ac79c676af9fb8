"""DeepSpeed ZeRO-1/2/3 through `deepspeed.initialize`, with a torch AdamW: the code of every
strategy whose descriptor names a DeepSpeed template (zero1, zero2, zero3 and their variants).

The ranks already exist and share a torch process group (wirewise.jobs.worker made it), so DeepSpeed
adopts that group instead of launching or rendezvousing on its own. Its config comes from
the descriptor's templates/deepspeed/<name>.json and overrides. On GPU it trains in its bf16 mode
(bf16 weights, fp32 master partitions in the optimizer); on CPU in fp32.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from wirewise.configs import deepspeed_config
from wirewise.jobs.train.strategies.base import Setup, Strategy, make_adamw, tensors_in


def fix_cuda_arch_list() -> str | None:
    """DeepSpeed's op builder cannot parse arch suffixes like '9.0a' (docs/facts.md); '9.0' builds
    the same kernels for it. Returns the original value when it had to change it."""
    value = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if not value:
        return None
    fixed = re.sub(r"(\d+\.\d+)[a-z]+", r"\1", value)
    if fixed == value:
        return None
    os.environ["TORCH_CUDA_ARCH_LIST"] = fixed
    return value


def skip_cpu_inference_extension() -> None:
    """On CPU ranks DeepSpeed compiles a shared-memory all-reduce extension when it starts (one
    to two minutes on two cores) that only its inference all-reduce uses; training collectives
    go through the torch process group. Marking it unavailable skips the build. Should a
    DeepSpeed version keep this table elsewhere, it simply builds the extension as before."""
    import deepspeed.ops

    try:
        compatible = deepspeed.ops.__compatible_ops__
    except AttributeError:
        return
    if isinstance(compatible, dict):
        compatible["deepspeed_shm_comm"] = False


def render_config(setup: Setup) -> dict[str, Any]:
    return deepspeed_config(
        setup.spec,
        micro_batch=setup.params.micro_batch,
        world_size=setup.ctx.world_size,
        bf16=setup.precision != "fp32",
        hidden_size=setup.built.config.hidden_size,
    )


class ZeroStrategy(Strategy):
    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.name = setup.params.strategy
        self.stage = setup.spec.zero_stage
        replaced_arch = fix_cuda_arch_list()
        # DeepSpeed calls collectives torch now names differently; one warning per call floods the log.
        warnings.filterwarnings("ignore", message=r".*is deprecated\. Please use `torch\.distributed\.", category=FutureWarning)
        import deepspeed

        if not setup.on_gpu:
            skip_cpu_inference_extension()
        model = setup.built.model
        self.config = render_config(setup)
        deepspeed.init_distributed(dist_backend=setup.ctx.backend, dist_init_required=False)
        engine, optimizer, _, _ = deepspeed.initialize(
            model=model, optimizer=make_adamw(model.parameters(), setup), config=self.config, dist_init_required=False
        )
        if setup.params.compile:
            engine.compile()
        self.model = engine
        self.optimizer = optimizer
        if replaced_arch:
            self.extra["torch_cuda_arch_list_was"] = replaced_arch

    def backward(self, loss: torch.Tensor) -> None:
        self.model.backward(loss)

    def optimizer_step(self) -> None:
        self.model.step()  # DeepSpeed's step also clears the gradients

    def param_tensors(self) -> Iterable[torch.Tensor]:
        return zero_param_tensors(self.model.module, self.stage)

    def grad_tensors(self) -> Iterable[torch.Tensor | None]:
        return zero_grad_tensors(self.model.module, self.optimizer, self.stage)

    def optimizer_tensors(self) -> Iterable[torch.Tensor]:
        return zero_optimizer_tensors(self.optimizer, self.stage)


# The inventories below name DeepSpeed 0.19's attributes for what each stage keeps. They are
# shared with the accelerate engine, whose DeepSpeed runs the same optimizer classes.


def zero_param_tensors(module: torch.nn.Module, stage: int) -> Iterator[torch.Tensor]:
    for p in module.parameters():
        yield p.data  # ZeRO-1/2: views into the flat bf16 buffer; ZeRO-3: empty unless persistent
        if stage == 3:
            yield p.ds_tensor  # this rank's partition


def zero_grad_tensors(module: torch.nn.Module, optimizer: Any, stage: int) -> Iterator[torch.Tensor]:
    for p in module.parameters():
        yield p.grad
    for bucket in getattr(optimizer, "ipg_buckets", {}).values():
        yield from tensors_in(bucket.buffer)  # gradients waiting to be reduced
    yield from tensors_in(list(getattr(optimizer, "averaged_gradients", {}).values()))
    if stage == 3:
        yield optimizer.grad_partitions_flat_buffer
        masters = optimizer.fp32_partitioned_groups_flat
    else:
        yield getattr(optimizer, "grads_in_partition", None)
        masters = optimizer.single_partition_of_fp32_groups
    yield from (m.grad for m in masters)


def zero_optimizer_tensors(optimizer: Any, stage: int) -> Iterator[torch.Tensor]:
    yield from tensors_in(list(optimizer.optimizer.state.values()))  # the torch AdamW's moments
    yield from (optimizer.fp32_partitioned_groups_flat if stage == 3 else optimizer.single_partition_of_fp32_groups)
