"""Render the framework configs in templates/ for one run (data in, plain dicts and text out).

DeepSpeed templates use DeepSpeed's own "auto" convention; the values filled in here are
the ones accelerate fills in for its default DeepSpeed config (the article's set-up):
micro-batch and global batch from the run, bf16 from the precision, and the bucket sizes
from the model's hidden size (reduce bucket h^2, ZeRO-3 prefetch 0.9 h^2, ZeRO-3
persistence threshold 10 h). Accelerate templates use ${name} placeholders.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
ZERO_STAGES = {"zero1": 1, "zero2": 2, "zero3": 3}


def deepspeed_config(stage: int, micro_batch: int, world_size: int, bf16: bool, hidden_size: int) -> dict[str, Any]:
    template = json.loads((TEMPLATES / "deepspeed" / f"zero{stage}.json").read_text())
    config = {k: v for k, v in template.items() if not k.startswith("_")}  # drop the comment
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
        raise ValueError(f"templates/deepspeed/zero{stage}.json: no value for 'auto' in {', '.join(left)}")
    return config


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
