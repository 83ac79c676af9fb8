"""How many parameters a model has, without weights or downloads.

The registry's models (wirewise.models) are counted by config arithmetic, so a login node
without torch can estimate them. Any other transformers config (a local config.json or model
folder) is built on torch's meta device, which allocates no memory: the count is exact for
whatever architecture transformers knows. The arithmetic is checked against the meta build in
tests/advise/test_params.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wirewise.errors import UserError
from wirewise.models import DEFAULT_SEQ_LEN, MODELS, check_model_name

# Families whose count the arithmetic below knows (decoder LMs of the Llama shape, and DINOv2),
# and the config keys it reads as sizes.
LLAMA_LIKE = ("mistral", "llama", "qwen2")
SIZE_KEYS = ("hidden_size", "num_hidden_layers", "vocab_size", "head_dim", "num_attention_heads", "num_key_value_heads",
             "intermediate_size", "image_size", "patch_size", "num_channels", "num_labels")


@dataclass(frozen=True)
class ModelShape:
    """What the memory estimate needs from a model."""

    name: str
    kind: str  # causal-lm / image-classification
    params: int
    layers: int
    hidden: int
    tokens_per_sample: int  # sequence length, or patches + CLS for a vision transformer
    vocab: int | None  # the logits per token of a language model
    counted_by: str  # "config arithmetic" or "meta-device build"


def model_shape(name: str, seq_len: int | None = None) -> ModelShape:
    """The shape of a registry model or local transformers config; UserError for anything else."""
    try:
        config = check_model_name(name)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    entry = MODELS.get(name)
    kind, default_seq = (entry.kind, entry.default_seq_len) if entry else (None, DEFAULT_SEQ_LEN)
    family = config["model_type"]
    if family not in LLAMA_LIKE and family != "dinov2":
        return _meta_shape(name, config, kind, seq_len or default_seq)
    sizes = [value for key, value in config.items() if key in SIZE_KEYS and value is not None]  # null: derived
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
        raise UserError(f"model {name!r}: its config's sizes ({', '.join(k for k in config if k in SIZE_KEYS)}) "
                        "must be positive whole numbers")
    try:
        if family in LLAMA_LIKE:
            return _llama_shape(name, config, seq_len or default_seq)
        return _dinov2_shape(name, config)
    except KeyError as exc:  # a config written by hand, or for another version of the family
        raise UserError(f"model {name!r}: its config has no {exc.args[0]!r}, which a {family} model needs") from None


def _llama_shape(name: str, c: dict[str, Any], seq_len: int) -> ModelShape:
    """Embeddings, per layer q/k/v/o projections (k and v narrowed by grouped-query attention),
    a gated MLP (gate, up, down) and two RMSNorms, a final norm, and the LM head unless tied."""
    hidden, layers, vocab = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    head_dim = c.get("head_dim") or hidden // c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or c["num_attention_heads"]
    attention = 2 * hidden * c["num_attention_heads"] * head_dim + 2 * hidden * kv * head_dim
    if c.get("attention_bias") or c["model_type"] == "qwen2":  # Qwen2 has q/k/v biases
        attention += c["num_attention_heads"] * head_dim + 2 * kv * head_dim
    per_layer = attention + 3 * hidden * c["intermediate_size"] + 2 * hidden
    embeddings = vocab * hidden * (1 if c.get("tie_word_embeddings") else 2)
    params = embeddings + layers * per_layer + hidden
    return ModelShape(name, "causal-lm", params, layers, hidden, seq_len, vocab, "config arithmetic")


def _dinov2_shape(name: str, c: dict[str, Any]) -> ModelShape:
    """Patch embedding (a conv), CLS and mask tokens, position embeddings for the configured
    image size; per layer two LayerNorms, q/k/v/output with biases, two layer scales and the
    MLP; a final LayerNorm; the classifier reads CLS and mean patch (2 x hidden inputs)."""
    hidden, layers = c["hidden_size"], c["num_hidden_layers"]
    patches = (c.get("image_size", 224) // c.get("patch_size", 14)) ** 2
    channels = c.get("num_channels", 3)
    mlp = int(hidden * c.get("mlp_ratio", 4))
    embeddings = channels * c.get("patch_size", 14) ** 2 * hidden + hidden + 2 * hidden + (patches + 1) * hidden
    per_layer = 4 * hidden + 4 * (hidden * hidden + hidden) + 2 * hidden + (hidden * mlp + mlp) + (mlp * hidden + hidden)
    labels = c.get("num_labels", 2)
    params = embeddings + layers * per_layer + 2 * hidden + (2 * hidden * labels + labels)
    return ModelShape(name, "image-classification", params, layers, hidden, patches + 1, None, "config arithmetic")


def _meta_shape(name: str, config: dict[str, Any], kind: str | None, seq_len: int) -> ModelShape:
    """Any transformers architecture, built on the meta device (needs torch and transformers)."""
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageClassification
    except ImportError:
        raise UserError(
            f"model {name!r} ({config['model_type']}) is counted by building it on the meta device, "
            "which needs torch and transformers (pip install 'wirewise[jobs]')"
        ) from None
    try:  # transformers is handed the user's config: what it refuses, it refuses at length
        built = AutoConfig.for_model(**config)
        if kind is None:
            is_image = any(a.endswith("ForImageClassification") for a in (built.architectures or []))
            kind = "image-classification" if is_image else "causal-lm"
        auto = AutoModelForCausalLM if kind == "causal-lm" else AutoModelForImageClassification
        with torch.device("meta"):
            model = auto.from_config(built)
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise UserError(f"model {name!r}: transformers cannot build model_type {str(config['model_type'])[:60]!r} "
                        f"from this config ({reason})") from None
    params = sum(p.numel() for p in model.parameters())
    hidden = getattr(built, "hidden_size", None) or getattr(built, "d_model", 0)
    layers = getattr(built, "num_hidden_layers", None) or getattr(built, "n_layer", 0)
    vocab = getattr(built, "vocab_size", None) if kind == "causal-lm" else None
    tokens = seq_len if kind == "causal-lm" else _vision_tokens(built)
    return ModelShape(name, kind, params, layers, hidden, tokens, vocab, "meta-device build")


def _vision_tokens(config) -> int:
    size, patch = getattr(config, "image_size", 224), getattr(config, "patch_size", 16)
    size = size if isinstance(size, int) else size[0]
    patch = patch if isinstance(patch, int) else patch[0]
    return (size // patch) ** 2 + 1


def params_shape(params: int, seq_len: int | None = None) -> ModelShape:
    """A model known only by its parameter count (`wirewise launch --params N`): model states are
    counted exactly, activations not at all (no layers or width to count them by)."""
    if params < 1:
        raise UserError(f"--params {params}: give the model's parameter count, e.g. --params 7e9")
    return ModelShape(f"params:{params}", "causal-lm", params, 0, 0, seq_len or DEFAULT_SEQ_LEN, None,
                      "given (--params); activations not counted")
