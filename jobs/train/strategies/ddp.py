"""DDP: every rank holds full parameters, gradients and optimizer state; one all-reduce per step.

With a single rank there is nothing to all-reduce, so the model runs unwrapped (as accelerate
does with one process): a one-GPU run then measures the training step itself.
"""

from __future__ import annotations

import torch
from torch.nn.parallel import DistributedDataParallel

from wirewise.jobs.train.strategies.base import Setup, Strategy, make_adamw


class DDPStrategy(Strategy):
    name = "ddp"

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        module = setup.built.model
        wrapped = setup.ctx.world_size > 1
        if wrapped:
            device_ids = [setup.ctx.device.index] if setup.on_gpu else None
            # Gradients as views of the all-reduce buckets: no second copy of every gradient.
            self.model = DistributedDataParallel(module, device_ids=device_ids, gradient_as_bucket_view=True)
            if setup.params.compile:
                # Compiling the DDP module lets dynamo split the graph at bucket boundaries, so
                # all-reduces still overlap the backward.
                self.model = torch.compile(self.model)
        else:
            if setup.params.compile:
                module.compile()
            self.model = module
        self.optimizer = make_adamw(module.parameters(), setup)
        self.config = {
            "wrapped_in_ddp": wrapped,
            "gradient_as_bucket_view": wrapped,
            "autocast_bf16": setup.precision == "bf16-mixed",
        }

    def autocast(self):
        return torch.autocast(self.setup.ctx.device.type, torch.bfloat16, enabled=self.setup.precision == "bf16-mixed")
