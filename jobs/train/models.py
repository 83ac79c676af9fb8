"""Models the training benchmark builds: transformers configs with random weights, no download.

The registry is plain data so the CLI can list and check names without importing torch;
transformers is imported only when a rank builds a model. A local config file
(config.json-like) or model folder (with a config.json) works too; its weights are not
loaded: the benchmark measures speed and memory, which random weights share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Kind = Literal["causal-lm", "image-classification"]

FOOD101_CLASSES = 101
DEFAULT_SEQ_LEN = 512


@dataclass(frozen=True)
class ModelEntry:
    family: str  # transformers model_type
    kind: Kind
    config: dict[str, Any]
    about: str
    default_seq_len: int = DEFAULT_SEQ_LEN  # causal LMs only
    layer_classes: tuple[str, ...] = field(default=())  # transformer blocks: FSDP wraps each


_MISTRAL_7B = dict(  # mistralai/Mistral-7B-v0.1
    vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=32768, sliding_window=4096,
    rms_norm_eps=1e-5, tie_word_embeddings=False,
)
_DINOV2_HEAD = dict(image_size=224, patch_size=14, num_labels=FOOD101_CLASSES)  # 224 px: 16 x 16 patches

MODELS: dict[str, ModelEntry] = {
    "mistral-7b": ModelEntry("mistral", "causal-lm", _MISTRAL_7B, "Mistral-7B-v0.1 shape, 7.24B params", 2048),
    "mistral-1b": ModelEntry(
        "mistral", "causal-lm",
        {**_MISTRAL_7B, "hidden_size": 2048, "intermediate_size": 7168, "num_hidden_layers": 16,
         "num_attention_heads": 16, "num_key_value_heads": 8},
        "Mistral-style, hidden 2048, 16 layers, 1.04B params (the plain-loop MFU comparison)", 2048,
    ),
    "tiny-mistral": ModelEntry(
        "mistral", "causal-lm",
        dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=512, sliding_window=None, tie_word_embeddings=False),
        "2-layer Mistral for CPU tests", 32,
    ),
    "dinov2-base": ModelEntry(
        "dinov2", "image-classification",
        dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, mlp_ratio=4, **_DINOV2_HEAD),
        "DINOv2-base backbone + linear head, 101 classes, 224 px (86M + head)",
    ),
    "dinov2-large": ModelEntry(
        "dinov2", "image-classification",
        dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, mlp_ratio=4, **_DINOV2_HEAD),
        "DINOv2-large backbone + linear head, 101 classes, 224 px (304M + head)",
    ),
    "tiny-dinov2": ModelEntry(
        "dinov2", "image-classification",
        dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2, image_size=56, patch_size=14,
             num_labels=FOOD101_CLASSES),
        "2-layer DINOv2 on 56 px images for CPU tests",
    ),
}


def local_config_path(name: str) -> Path | None:
    """The config.json a model argument points to, or None when it is not a local path."""
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path / "config.json"
    if path.is_file():
        return path
    return None


def check_model_name(name: str) -> None:
    """Raise ValueError with a one-line reason unless `name` is a registry name or a usable config."""
    if name in MODELS:
        return
    path = local_config_path(name)
    if path is None:
        raise ValueError(f"unknown model {name!r}: use one of {', '.join(MODELS)}, or a config file / model folder")
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"model config {str(path)!r} is not readable JSON: {exc}") from None
    if not isinstance(doc, dict) or "model_type" not in doc:
        raise ValueError(f"model config {str(path)!r} has no \"model_type\": is it a transformers config.json?")


def check_data_kind(data: str | None, kind: Kind) -> None:
    """Raise ValueError unless `data` suits a `kind` model: a folder of images for a classifier,
    an instruction file for a language model (None, synthetic batches, suits both)."""
    if data is not None and Path(data).is_dir() == (kind == "causal-lm"):
        wanted = "a JSON/JSONL instruction file" if kind == "causal-lm" else "an image folder"
        raise ValueError(f"--data {data!r}: a {kind} model trains on {wanted}")


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
    unused trainable parameter makes DDP wait for a gradient that never comes (REFERENCE.md)."""
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
