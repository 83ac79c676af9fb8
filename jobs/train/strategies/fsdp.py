"""FSDP (torch `fully_shard`, FSDP2): parameters, gradients and optimizer state sharded per rank.

Each transformer layer is its own unit (gathered just before it runs, resharded right after),
then the root takes the rest (embeddings, head). Under bf16-mixed the sharded fp32 weights are
gathered as bf16 and gradients reduced in fp32 (MixedPrecisionPolicy).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from wirewise.jobs.train.models import transformer_layers
from wirewise.jobs.train.strategies.base import Setup, Strategy, make_adamw


class FSDPStrategy(Strategy):
    name = "fsdp"

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        model = setup.built.model
        policy = MixedPrecisionPolicy()
        if setup.precision == "bf16-mixed":
            policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        layers = transformer_layers(model, setup.built.layer_classes)
        if setup.params.compile:
            layers = compile_in_place(model, layers)
        for layer in layers:
            fully_shard(layer, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        self.model = model
        self.optimizer = make_adamw(model.parameters(), setup)
        self.config = {
            "wrapped_layers": len(layers),
            "layer_classes": [c.__name__ for c in setup.built.layer_classes],
            "mp_policy": {"param_dtype": str(policy.param_dtype), "reduce_dtype": str(policy.reduce_dtype)},
            "reshard_after_forward": True,
        }

    def grad_tensors(self):
        yield from super().grad_tensors()
        yield from pending_unsharded_grads(self.model)


def compile_in_place(model: torch.nn.Module, layers: list) -> list:
    """torch.compile each layer and put the compiled wrapper where the layer was (torchtitan's
    recipe): FSDP then shards the wrapper, so its all-gather hooks stay outside the compiled code."""
    wanted = {id(layer) for layer in layers}
    compiled = []
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if id(child) in wanted:
                wrapper = torch.compile(child)
                parent.register_module(name, wrapper)
                compiled.append(wrapper)
    return compiled


def pending_unsharded_grads(model: torch.nn.Module) -> Iterator[torch.Tensor]:
    """Full-size gradients a unit holds until its reduce-scatter (the root's run last, after
    autograd finishes). FSDP2 keeps them on private objects, named differently across torch
    versions; where neither name exists, only the sharded gradients are counted."""
    for module in model.modules():
        get_state = getattr(module, "_get_fsdp_state", None)
        if get_state is None:
            continue
        state = get_state()
        groups = getattr(state, "_fsdp_param_groups", None) or [getattr(state, "_fsdp_param_group", None)]
        for group in groups:
            for fsdp_param in getattr(group, "fsdp_params", None) or []:
                unsharded = getattr(fsdp_param, "_unsharded_param", None)
                if unsharded is not None and unsharded.grad is not None:
                    yield unsharded.grad
                if getattr(fsdp_param, "unsharded_accumulated_grad", None) is not None:
                    yield fsdp_param.unsharded_accumulated_grad
