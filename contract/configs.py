"""Render the framework configs in templates/ for a strategy (data in, plain dicts and text out).

Both sides render them, so they live in the contract: `wirewise launch` (and `wirewise.advice`)
writes the accelerate launcher config a job starts with, and a benchmark rank under `--engine
accelerate` or a DeepSpeed strategy renders the same files for its own run.

Which templates a strategy uses is in its descriptor (wirewise.registry.STRATEGIES: `deepspeed`,
`deepspeed_overrides`, `accelerate`). DeepSpeed templates use DeepSpeed's own "auto"
convention; a descriptor's overrides are merged over the template first (a variant's own
settings). A benchmark then fills in what accelerate fills in for its default DeepSpeed config
(the article's set-up): micro-batch and global batch from the run, bf16 from the precision, and
the bucket sizes from the model's hidden size (reduce bucket h^2, ZeRO-3 prefetch 0.9 h^2,
ZeRO-3 persistence threshold 10 h). A launch leaves those "auto" for the script's own framework
to fill (accelerate from its dataloader and model, the Trainer from its TrainingArguments), so
the config never disagrees with the batch the script really runs; it sets bf16 alone, which
accelerate refuses to take from the launcher config beside a DeepSpeed file. Accelerate
templates use ${name} placeholders.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from wirewise.strategy import StrategySpec

TEMPLATES = Path(str(resources.files("wirewise.templates")))
# A run's precision (wirewise.workloads.train) as accelerate's mixed_precision names it.
MIXED_PRECISION = {"fp32": "no", "bf16-mixed": "bf16", "bf16": "bf16"}
# accelerate's mixed_precision -> the precision a run records (fp16 is none of PRECISIONS: unknown)
RAN_AS = {"no": "fp32", "bf16": "bf16-mixed"}


def deepspeed_template(spec: StrategySpec) -> dict[str, Any]:
    """templates/deepspeed/<name>.json with the descriptor's overrides, "auto" values kept."""
    if spec.deepspeed is None:
        raise ValueError(f"strategy {spec.name} does not run on DeepSpeed (its descriptor names no deepspeed template)")
    template = json.loads((TEMPLATES / "deepspeed" / f"{spec.deepspeed}.json").read_text())
    template = {k: v for k, v in template.items() if not k.startswith("_")}  # drop the comment
    config = _merged(template, spec.deepspeed_overrides)
    stage = config.get("zero_optimization", {}).get("stage")
    if stage != spec.zero_stage:
        raise ValueError(f"{_source(spec)} with {spec.name}'s overrides runs ZeRO stage {stage}; its descriptor says {spec.zero_stage}")
    return config


def deepspeed_config(spec: StrategySpec, micro_batch: int, world_size: int, bf16: bool, hidden_size: int) -> dict[str, Any]:
    """The DeepSpeed config of a strategy that runs on DeepSpeed, for one benchmark run: every
    "auto" filled in as accelerate fills it."""
    config = deepspeed_template(spec)
    accumulation = config.get("gradient_accumulation_steps", 1)
    _fill(config, {
        "train_micro_batch_size_per_gpu": micro_batch,
        "train_batch_size": micro_batch * world_size * accumulation,
        "bf16.enabled": bf16,
        "zero_optimization.reduce_bucket_size": hidden_size * hidden_size,
        "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * hidden_size * hidden_size),
        "zero_optimization.stage3_param_persistence_threshold": 10 * hidden_size,
    })
    left = [k for k, v in _flatten(config).items() if v == "auto"]
    if left:
        raise ValueError(f"{_source(spec)}: no value for 'auto' in {', '.join(left)}")
    return config


def deepspeed_launch_config(spec: StrategySpec, bf16: bool) -> dict[str, Any]:
    """The DeepSpeed config a launched job starts with: bf16 set, the rest left to the framework."""
    config = deepspeed_template(spec)
    _fill(config, {"bf16.enabled": bf16})
    return config


def accelerate_config(template: str, **fields: Any) -> str:
    """templates/accelerate/<template>.yaml with its ${fields} filled in (every one must be given)."""
    text = (TEMPLATES / "accelerate" / f"{template}.yaml").read_text()
    return string.Template(text).substitute({k: str(v) for k, v in fields.items()})


def launcher_config(
    spec: StrategySpec,
    processes: int,
    mixed_precision: str,
    *,
    machines: int = 1,
    cpu: bool = False,
    layer_classes: list[str] | None = None,
    deepspeed_file: str | Path | None = None,
) -> dict[str, Any]:
    """The accelerate launcher config (what `accelerate launch --config_file` reads) of a strategy:
    its descriptor's template, for `processes` ranks over all `machines`.

    - FSDP wraps each of `layer_classes`; without them the key is left out and accelerate wraps
      the classes the model lists in `_no_split_modules` (its own fallback).
    - DeepSpeed reads its config from `deepspeed_file`; accelerate takes precision from that
      file, so the launcher config names none.
    - CPU ranks (`cpu`) keep the MULTI_GPU launcher, which starts one process per rank, with
      `use_cpu`; accelerate's MULTI_CPU launcher starts one process unless MPI runs it. Only DDP
      runs on CPU this way (see `cpu_refusal`)."""
    if spec.accelerate is None:
        raise ValueError(f"strategy {spec.name} names no accelerate template")
    fields: dict[str, Any] = {"num_processes": processes}
    if spec.accelerate == "deepspeed":
        if deepspeed_file is None:
            raise ValueError(f"strategy {spec.name} runs on DeepSpeed: give the DeepSpeed config file")
        fields["deepspeed_config_file"] = deepspeed_file
    else:
        fields["mixed_precision"] = mixed_precision
    if spec.accelerate == "fsdp":
        fields["layer_classes"] = ",".join(layer_classes or []) or "unset"
    config = yaml.safe_load(accelerate_config(spec.accelerate, **fields))
    if spec.accelerate == "fsdp" and not layer_classes:
        del config["fsdp_config"]["fsdp_transformer_layer_cls_to_wrap"]
    config["num_machines"] = machines
    config["use_cpu"] = cpu
    return config


def cpu_refusal(spec: StrategySpec) -> str | None:
    """Why a strategy cannot run as itself on CPU ranks through accelerate, or None (DDP).
    Seen with accelerate 1.15 on two CPU ranks (docs/facts.md): under `use_cpu` accelerate
    builds a MULTI_CPU state whatever the config says, so an FSDP config trains plain DDP
    (DistributedDataParallel, nothing sharded) and so does a DeepSpeed one; a DeepSpeed config
    without `use_cpu` hangs in DeepSpeed's launcher."""
    if spec.accelerate == "ddp":
        return None
    if spec.accelerate == "fsdp":
        return "accelerate's FSDP plugin does not shard on CPU ranks (it trains plain DDP there)"
    return "accelerate's DeepSpeed plugin does not run on CPU ranks (it trains plain DDP there, or hangs without use_cpu)"


def _fill(config: dict[str, Any], values: Mapping[str, Any]) -> None:
    """Each dotted key whose value is "auto" gets its value (others keep what the template says)."""
    for dotted, value in values.items():
        *path, key = dotted.split(".")
        node = config
        for part in path:
            node = node.get(part, {})
        if node.get(key) == "auto":
            node[key] = value


def _source(spec: StrategySpec) -> str:
    return f"templates/deepspeed/{spec.deepspeed}.json"


def _merged(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `overrides` laid over it, section by section (nested dicts merge); new dicts
    throughout, so filling in "auto" never writes into a descriptor."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping):
            merged[key] = _merged(merged[key] if isinstance(merged.get(key), dict) else {}, value)
        else:
            merged[key] = value
    return merged


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
