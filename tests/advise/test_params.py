"""Parameter counts without weights: config arithmetic (no torch) against published sizes and
against transformers' own build on the meta device."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from wirewise.models import MODELS
from wirewise.orchestrator.advise.params import _meta_shape, model_shape

GPT2_SMALL = {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12}


def test_mistral_7b_has_its_published_size() -> None:
    shape = model_shape("mistral-7b")
    # Mistral-7B-v0.1: 7,241,732,096 parameters (the model card's safetensors total).
    assert shape.params == 7_241_732_096
    assert (shape.layers, shape.hidden, shape.vocab, shape.tokens_per_sample) == (32, 4096, 32000, 2048)
    assert shape.counted_by == "config arithmetic"


def test_dinov2_base_by_hand() -> None:
    # Backbone 86.6M (embeddings 651,264 + 12 layers x 7,089,408 + final norm 1,536)
    # plus the Food-101 head over CLS and mean patch: 1,536 x 101 + 101.
    shape = model_shape("dinov2-base")
    assert shape.params == 651_264 + 12 * 7_089_408 + 1_536 + 1_536 * 101 + 101
    assert shape.tokens_per_sample == 16 * 16 + 1


@pytest.mark.parametrize("name", sorted(MODELS))
def test_arithmetic_equals_the_meta_device_build(name: str) -> None:
    entry = MODELS[name]
    built = _meta_shape(name, {"model_type": entry.family, **entry.config}, entry.kind, 128)
    assert model_shape(name).params == built.params


def test_any_transformers_config_is_built_on_meta(tmp_path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**GPT2_SMALL, "architectures": ["GPT2LMHeadModel"]}))
    shape = model_shape(str(config), seq_len=1024)
    # GPT-2 small: 124,439,808 parameters (LM head tied to the token embeddings).
    assert shape.params == 124_439_808 and shape.counted_by == "meta-device build"


def test_registry_models_need_no_torch(tmp_path) -> None:
    """A login node without torch: importing torch fails, the registry still counts; a
    foreign architecture says what it needs."""
    foreign = tmp_path / "config.json"
    foreign.write_text(json.dumps(GPT2_SMALL))
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
        "from wirewise.errors import UserError\n"
        "from wirewise.orchestrator.advise.params import model_shape\n"
        "print(model_shape('mistral-7b').params)\n"
        f"try:\n    model_shape({str(foreign)!r})\nexcept UserError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "7241732096"
    assert "needs torch and transformers" in out[1]
