"""Render the framework configs in templates/ for one run (data in, plain dicts and text out).

Which templates a strategy uses is in its descriptor (wirewise.registry.STRATEGIES: `deepspeed`,
`deepspeed_overrides`, `accelerate`). DeepSpeed templates use DeepSpeed's own "auto"
convention; a descriptor's overrides are merged over the template first (a variant's own
settings), then the values filled in here are the ones accelerate fills in for its default
DeepSpeed config (the article's set-up): micro-batch and global batch from the run, bf16 from
the precision, and the bucket sizes from the model's hidden size (reduce bucket h^2, ZeRO-3
prefetch 0.9 h^2, ZeRO-3 persistence threshold 10 h). Accelerate templates use ${name}
placeholders.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from wirewise.strategy import StrategySpec

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def deepspeed_config(spec: StrategySpec, micro_batch: int, world_size: int, bf16: bool, hidden_size: int) -> dict[str, Any]:
    """The DeepSpeed config of a strategy that runs on DeepSpeed, for one run."""
    if spec.deepspeed is None:
        raise ValueError(f"strategy {spec.name} does not run on DeepSpeed (its descriptor names no deepspeed template)")
    source = f"templates/deepspeed/{spec.deepspeed}.json"
    template = json.loads((TEMPLATES / "deepspeed" / f"{spec.deepspeed}.json").read_text())
    template = {k: v for k, v in template.items() if not k.startswith("_")}  # drop the comment
    config = _merged(template, spec.deepspeed_overrides)
    stage = config.get("zero_optimization", {}).get("stage")
    if stage != spec.zero_stage:
        raise ValueError(f"{source} with {spec.name}'s overrides runs ZeRO stage {stage}; its descriptor says {spec.zero_stage}")
    accumulation = config.get("gradient_accumulation_steps", 1)
    filled = {
        "train_micro_batch_size_per_gpu": micro_batch,
        "train_batch_size": micro_batch * world_size * accumulation,
        "bf16.enabled": bf16,
        "zero_optimization.reduce_bucket_size": hidden_size * hidden_size,
        "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * hidden_size * hidden_size),
        "zero_optimization.stage3_param_persistence_threshold": 10 * hidden_size,
    }
    for dotted, value in filled.items():
        *path, key = dotted.split(".")
        node = config
        for part in path:
            node = node.get(part, {})
        if node.get(key) == "auto":
            node[key] = value
    left = [k for k, v in _flatten(config).items() if v == "auto"]
    if left:
        raise ValueError(f"{source}: no value for 'auto' in {', '.join(left)}")
    return config


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


def accelerate_config(template: str, **fields: Any) -> str:
    """templates/accelerate/<template>.yaml with its ${fields} filled in (every one must be given)."""
    text = (TEMPLATES / "accelerate" / f"{template}.yaml").read_text()
    return string.Template(text).substitute({k: str(v) for k, v in fields.items()})
