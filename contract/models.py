"""The model registry: the models the training benchmark builds, as transformers configs.

Plain data, so the control plane (CLI, estimator, campaign planner) can list and check names
and count parameters without importing torch; wirewise.jobs.train.models builds them. A local config file
(config.json-like) or model folder (with a config.json) works too; its weights are not
loaded: the benchmark measures speed and memory, which random weights share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from wirewise.errors import UserError
from wirewise.limits import MAX_CONFIG_BYTES, read_json

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
# The repeated transformer block of each family, as transformers names its class (FSDP's unit;
# tests/launch/test_advice_api.py checks them against the built models).
_MISTRAL_LAYER = ("MistralDecoderLayer",)
_DINOV2_LAYER = ("Dinov2Layer",)
_DINOV2_HEAD = dict(image_size=224, patch_size=14, num_labels=FOOD101_CLASSES)  # 224 px: 16 x 16 patches

MODELS: dict[str, ModelEntry] = {
    "mistral-7b": ModelEntry("mistral", "causal-lm", _MISTRAL_7B, "Mistral-7B-v0.1 shape, 7.24B params", 2048, _MISTRAL_LAYER),
    "mistral-1b": ModelEntry(
        "mistral", "causal-lm",
        {**_MISTRAL_7B, "hidden_size": 2048, "intermediate_size": 7168, "num_hidden_layers": 16,
         "num_attention_heads": 16, "num_key_value_heads": 8},
        "Mistral-style, hidden 2048, 16 layers, 1.04B params (the plain-loop MFU comparison)", 2048,
        _MISTRAL_LAYER,
    ),
    "tiny-mistral": ModelEntry(
        "mistral", "causal-lm",
        dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=512, sliding_window=None, tie_word_embeddings=False),
        "2-layer Mistral for CPU tests", 32, _MISTRAL_LAYER,
    ),
    "dinov2-base": ModelEntry(
        "dinov2", "image-classification",
        dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, mlp_ratio=4, **_DINOV2_HEAD),
        "DINOv2-base backbone + linear head, 101 classes, 224 px (86M + head)", layer_classes=_DINOV2_LAYER,
    ),
    "dinov2-large": ModelEntry(
        "dinov2", "image-classification",
        dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, mlp_ratio=4, **_DINOV2_HEAD),
        "DINOv2-large backbone + linear head, 101 classes, 224 px (304M + head)", layer_classes=_DINOV2_LAYER,
    ),
    "tiny-dinov2": ModelEntry(
        "dinov2", "image-classification",
        dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2, image_size=56, patch_size=14,
             num_labels=FOOD101_CLASSES),
        "2-layer DINOv2 on 56 px images for CPU tests", layer_classes=_DINOV2_LAYER,
    ),
}


def local_config_path(name: str) -> Path | None:
    """The config.json a model argument points to, or None when it is not a local path."""
    path = Path(name).expanduser()
    try:
        if path.is_dir() and (path / "config.json").is_file():
            return path / "config.json"
        if path.is_file():
            return path
    except OSError:  # a name no file system holds (longer than NAME_MAX, ...): not a path
        pass
    return None


def check_model_name(name: str) -> dict[str, Any]:
    """The config of a registry name (its family as model_type) or of a usable local config,
    read once for the caller to use; ValueError with a one-line reason for anything else."""
    if name in MODELS:
        return {"model_type": MODELS[name].family, **MODELS[name].config}
    path = local_config_path(name)
    if path is None:
        raise ValueError(f"unknown model {name!r}: use one of {', '.join(MODELS)}, or a config file / model folder")
    try:
        doc = read_config(path)
    except UserError as exc:  # a ValueError here: a field validator's (wirewise.workloads.train)
        raise ValueError(str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("model_type"), str):
        raise ValueError(f"model config {str(path)!r} has no \"model_type\": is it a transformers config.json?")
    return doc


def read_config(path: Path) -> Any:
    """A local model config, read as every file a person names is (wirewise.limits.read_json)."""
    return read_json(path, "model config", MAX_CONFIG_BYTES, "give a transformers config.json, or the model folder that holds one")


def max_positions(name: str) -> int | None:
    """The longest sequence a causal LM's config allows (max_position_embeddings), or None
    where the config does not say (image models, configs without the key)."""
    if name in MODELS:
        return MODELS[name].config.get("max_position_embeddings")
    path = local_config_path(name)
    try:
        doc = read_config(path) if path else None
    except UserError:
        return None
    value = doc.get("max_position_embeddings") if isinstance(doc, dict) else None
    return value if isinstance(value, int) else None


def check_data_kind(data: str | None, kind: Kind) -> None:
    """Raise ValueError unless `data` suits a `kind` model: a folder of images for a classifier,
    an instruction file for a language model (None, synthetic batches, suits both)."""
    if data is not None and Path(data).is_dir() == (kind == "causal-lm"):
        wanted = "a JSON/JSONL instruction file" if kind == "causal-lm" else "an image folder"
        raise ValueError(f"--data {data!r}: a {kind} model trains on {wanted}")


def image_classes(root: Path) -> tuple[Path, list[str]]:
    """(folder holding one sub-folder per class, class names in label order)."""
    images = root / "images" if (root / "images").is_dir() else root
    listed = root / "meta" / "classes.txt"
    if listed.is_file():
        names = [line.strip() for line in listed.read_text().splitlines() if line.strip()]
    else:
        names = sorted(p.name for p in images.iterdir() if p.is_dir())
    if not names:
        raise ValueError(f"{root}: no class folders (expected Food-101's images/<class>/*.jpg)")
    return images, names


def read_instructions(path: Path) -> list[dict[str, str]]:
    """An Alpaca-style JSON list or JSONL of instruction records; ValueError in one line otherwise."""
    try:
        text = path.read_text()
        if path.suffix == ".jsonl":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            records = json.loads(text)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file (expected a JSON list or JSONL of instruction records)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}); expected a JSON list or JSONL of instruction records") from None
    if not isinstance(records, list) or not records or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{path}: expected a non-empty JSON list (or JSONL) of instruction records")
    return records


def check_data_source(data: str) -> None:
    """Read `--data` once in the control plane, so a bad file is a one-line error before any
    rank starts (not a rank's traceback in the result)."""
    path = Path(data)
    try:
        image_classes(path) if path.is_dir() else read_instructions(path)
    except OSError as exc:
        raise ValueError(f"--data {data!r}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise ValueError(f"--data {exc}") from None
