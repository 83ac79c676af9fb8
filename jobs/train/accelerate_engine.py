"""The same benchmark through HF Accelerate (`--engine accelerate`), as the article ran it.

The launcher config the strategy's descriptor names (templates/accelerate/<ddp|fsdp|deepspeed>.yaml)
and, for a DeepSpeed strategy, its DeepSpeed config (templates/deepspeed/<name>.json and the
descriptor's overrides) are rendered into the run folder,
so `accelerate launch --config_file RUN_DIR/accelerate.yaml` would reproduce the set-up.
The ranks already exist (wirewise.jobs.supervise started them with RANK, WORLD_SIZE, MASTER_ADDR...), so
instead of launching, each rank turns the rendered file into the `Accelerator` plugins
`accelerate launch` would have given it.

GPU only (docs/facts.md: on CPU accelerate's FSDP plugin never shards and its DeepSpeed
plugin miscounts processes); plain DDP also runs on CPU, which the tests use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import yaml

from wirewise.atomic import write_text_atomic
from wirewise.configs import MIXED_PRECISION, launcher_config
from wirewise.jobs.train.strategies.base import Setup, Strategy, make_adamw
from wirewise.jobs.train.strategies.fsdp import pending_unsharded_grads
from wirewise.jobs.train.strategies.zero import (
    fix_cuda_arch_list,
    render_config,
    zero_grad_tensors,
    zero_optimizer_tensors,
    zero_param_tensors,
)


class AccelerateEngine(Strategy):
    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.name = f"accelerate-{setup.params.strategy}"
        self.spec = setup.spec
        launcher = self._render(Path(setup.run_dir))
        self.accelerator = self._accelerator(yaml.safe_load(launcher.read_text()))
        model = setup.built.model
        # Together: accelerate's FSDP2 path re-points the optimizer at the sharded parameters.
        model, self.optimizer = self.accelerator.prepare(model, make_adamw(model.parameters(), setup))
        self.model = model
        self.config = {"launcher_config": str(launcher), **self.config}
        # What accelerate made of it: with one process it applies no FSDP (DistributedType.NO).
        self.extra["accelerate_distributed_type"] = str(self.accelerator.distributed_type)

    def _render(self, run_dir: Path) -> Path:
        """The descriptor's launcher config (and DeepSpeed config) in the run folder, rendered as
        `wirewise launch` renders them (wirewise.configs). Every rank renders the same files;
        atomic writes keep readers from a half-written one."""
        ds_path = None
        if self.spec.on_deepspeed:
            fix_cuda_arch_list()
            ds_config = render_config(self.setup)
            ds_path = run_dir / "deepspeed.json"
            write_text_atomic(ds_path, json.dumps(ds_config, indent=1))
            self.config = {"deepspeed": ds_config}
        layers = [c.__name__ for c in self.setup.built.layer_classes]
        launcher = launcher_config(
            self.spec, self.setup.ctx.world_size, MIXED_PRECISION[self.setup.precision],
            cpu=not self.setup.on_gpu, layer_classes=layers, deepspeed_file=ds_path,
        )
        path = run_dir / "accelerate.yaml"
        write_text_atomic(path, yaml.safe_dump(launcher, sort_keys=False))
        return path

    def _accelerator(self, launcher: dict[str, Any]):
        from accelerate import Accelerator
        from accelerate.utils import DeepSpeedPlugin, FullyShardedDataParallelPlugin

        kwargs: dict[str, Any] = {"cpu": not self.setup.on_gpu}
        if launcher["distributed_type"] == "DEEPSPEED":
            ds = launcher["deepspeed_config"]
            kwargs["deepspeed_plugin"] = DeepSpeedPlugin(
                hf_ds_config=ds["deepspeed_config_file"], zero3_init_flag=ds["zero3_init_flag"]
            )
            # what `accelerate launch` takes from the DeepSpeed file's bf16 section
            kwargs["mixed_precision"] = "bf16" if self.config["deepspeed"]["bf16"]["enabled"] else "no"
        else:
            kwargs["mixed_precision"] = launcher["mixed_precision"]
        if launcher["distributed_type"] == "FSDP":
            fsdp = launcher["fsdp_config"]
            kwargs["fsdp_plugin"] = FullyShardedDataParallelPlugin(
                fsdp_version=fsdp["fsdp_version"],
                auto_wrap_policy=fsdp["fsdp_auto_wrap_policy"].lower(),
                transformer_cls_names_to_wrap=fsdp["fsdp_transformer_layer_cls_to_wrap"].split(","),
                reshard_after_forward=fsdp["fsdp_reshard_after_forward"],
                state_dict_type=fsdp["fsdp_state_dict_type"],
                cpu_ram_efficient_loading=fsdp["fsdp_cpu_ram_efficient_loading"],
                activation_checkpointing=fsdp["fsdp_activation_checkpointing"],
            )
        return Accelerator(**kwargs)

    # accelerate wraps the forward in autocast itself (and DeepSpeed needs none)
    def loss(self, batch: dict[str, Any]) -> torch.Tensor:
        return self.model(**batch).loss

    def backward(self, loss: torch.Tensor) -> None:
        self.accelerator.backward(loss)  # under DeepSpeed this also runs the engine's step

    def optimizer_step(self) -> None:
        self.optimizer.step()  # a no-op wrapper under DeepSpeed (its step ran in backward)
        self.optimizer.zero_grad(set_to_none=True)

    # what this rank holds: the same inventories as the native strategies
    def _engine(self):
        return self.accelerator.deepspeed_engine_wrapped.engine

    def param_tensors(self):
        if self.spec.on_deepspeed:
            return zero_param_tensors(self._engine().module, self.spec.zero_stage)
        return self.model.parameters()

    def grad_tensors(self):
        if self.spec.on_deepspeed:
            engine = self._engine()
            return zero_grad_tensors(engine.module, engine.optimizer, self.spec.zero_stage)
        if self.spec.accelerate == "fsdp":
            return [*super().grad_tensors(), *pending_unsharded_grads(self.model)]
        return super().grad_tensors()

    def optimizer_tensors(self):
        if self.spec.on_deepspeed:
            return zero_optimizer_tensors(self._engine().optimizer, self.spec.zero_stage)
        return super().optimizer_tensors()

    def close(self) -> None:
        self.accelerator.free_memory()
        self.accelerator = None
        super().close()
