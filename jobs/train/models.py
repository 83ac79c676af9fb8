"""Build the registry's models (wirewise.models) with random weights, directly on the device.

transformers is imported only here, on the ranks. Nothing is downloaded: the benchmark
measures speed and memory, which random weights share with trained ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirewise.models import DEFAULT_SEQ_LEN, FOOD101_CLASSES, MODELS, Kind, local_config_path


@dataclass
class BuiltModel:
    model: Any  # torch.nn.Module
    kind: Kind
    config: Any  # transformers PretrainedConfig
    layer_classes: tuple[type, ...]  # the transformer block classes (FSDP's wrapping unit)
    tokenizer_dir: Path | None  # a local folder that may hold a tokenizer
    default_seq_len: int

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def load_config(name: str):
    """(transformers config, kind, default seq len, tokenizer folder) for a registry name or a local path."""
    from transformers import AutoConfig

    if name in MODELS:
        entry = MODELS[name]
        return AutoConfig.for_model(entry.family, **entry.config), entry.kind, entry.default_seq_len, None
    path = local_config_path(name)
    if path is None:
        raise ValueError(f"unknown model {name!r}")
    config = AutoConfig.from_pretrained(str(path))
    folder = path.parent if path.name == "config.json" else None
    return config, _kind_of(config), DEFAULT_SEQ_LEN, folder


def _kind_of(config) -> Kind:
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES,
    )

    if any(a.endswith("ForCausalLM") for a in (config.architectures or [])):
        return "causal-lm"
    if any(a.endswith("ForImageClassification") for a in (config.architectures or [])):
        return "image-classification"
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal-lm"
    if config.model_type in MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES:
        return "image-classification"
    raise ValueError(f"model type {config.model_type!r} is neither a causal LM nor an image classifier in transformers")


def build_model(name: str, device, dtype, num_labels: int | None = None) -> BuiltModel:
    """Random weights, created directly on `device` in `dtype` (a 7B model never visits host memory).
    `num_labels` sizes a classifier's head for a dataset; without one, a local config that does
    not say gets Food-101's 101 classes."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageClassification

    config, kind, default_seq_len, tokenizer_dir = load_config(name)
    if kind == "image-classification":
        if num_labels is not None:
            config.num_labels = num_labels
        elif name not in MODELS and "id2label" not in _raw_config(name):
            config.num_labels = FOOD101_CLASSES
    auto = AutoModelForCausalLM if kind == "causal-lm" else AutoModelForImageClassification
    config._attn_implementation = "sdpa"  # flash/memory-efficient kernels on GPU, same maths on CPU
    with torch.device(device):
        model = auto.from_config(config, dtype=dtype)
    _freeze_unused(model)
    model.train()
    return BuiltModel(model, kind, config, _layer_classes(model), tokenizer_dir, default_seq_len)


def _raw_config(name: str) -> dict[str, Any]:
    path = local_config_path(name)
    return json.loads(path.read_text()) if path else {}


def _freeze_unused(model) -> None:
    """DINOv2's mask_token only serves masked pre-training; a classifier never uses it, and an
    unused trainable parameter makes DDP wait for a gradient that never comes (docs/facts.md)."""
    for name, param in model.named_parameters():
        if name.endswith("embeddings.mask_token"):
            param.requires_grad_(False)


def _layer_classes(model) -> tuple[type, ...]:
    """The repeated transformer block: a class transformers keeps whole (_no_split_modules) that
    occurs more than once (DINOv2 also lists its one embeddings module), else a ModuleList's items."""
    import collections

    import torch

    counts = collections.Counter(type(m) for m in model.modules())
    hinted = set(getattr(model, "_no_split_modules", None) or [])
    found = {cls for cls, n in counts.items() if cls.__name__ in hinted and n > 1}
    if not found:
        found = {type(m[0]) for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) > 1}
    return tuple(sorted(found, key=lambda cls: cls.__name__))


def transformer_layers(model, layer_classes: tuple[type, ...]) -> list:
    return [m for m in model.modules() if isinstance(m, layer_classes)]
