"""The peak FLOP/s behind MFU: datasheet by GPU name, or an explicit override, and always said which."""

from __future__ import annotations

import pytest

from wirewise.jobs.train.flops import PEAK_ENV, mfu, peak_flops, train_flops_per_token


@pytest.mark.parametrize(
    ("name", "tflops"),
    [("NVIDIA H200", 989), ("NVIDIA H100 80GB HBM3", 989), ("NVIDIA H100 PCIe", 756), ("NVIDIA H200 NVL", 835),
     ("NVIDIA A100-SXM4-80GB", 312), ("NVIDIA GH200 480GB", 989), ("NVIDIA GB200", 2500)],
)
def test_datasheet_peak_by_device_name(name, tflops, monkeypatch):
    monkeypatch.delenv(PEAK_ENV, raising=False)
    peak, source = peak_flops(name)
    assert peak == tflops * 1e12 and "datasheet" in source


def test_override_and_unknown_gpu(monkeypatch):
    monkeypatch.delenv(PEAK_ENV, raising=False)
    for unknown in ("NVIDIA Tesla T4", "NVIDIA RTX A1000"):  # whole model names: an A1000 is no A100
        peak, source = peak_flops(unknown)
        assert peak is None and PEAK_ENV in source, unknown
    monkeypatch.setenv(PEAK_ENV, "789.2")
    peak, source = peak_flops("NVIDIA H200")
    assert peak == pytest.approx(789.2e12) and source == f"{PEAK_ENV}=789.2"


def test_mfu_of_a_published_plain_loop():
    """Figures (docs/facts.md) for a plain PyTorch loop on the 1.04B Mistral-style model (hidden 2048,
    16 layers, 16 heads, 8 KV heads, MLP 7168, vocab 32000): 56.5k tokens/s on one H200 is 43.5%
    MFU by 6N against a measured 808 TFLOP/s. Its parameters, counted by hand: embeddings and
    head 2 x 65,536,000, 16 layers x 56,627,200, final norm 2,048 = 1,037,109,248."""
    dense, _ = train_flops_per_token(n_params=1_037_109_248, n_layers=16, hidden=2048, context=2048)
    assert round(mfu(dense * 56_500, 1.0, 808e12, 1), 3) == 0.435
    assert mfu(dense * 56_500, 1.0, None, 1) is None  # no peak known: no MFU, not a guess


def test_attention_term_follows_palm():
    """PaLM (arXiv 2204.02311, appendix B) counts 6N + 12 L H Q T FLOPs per token (L layers, H
    heads of size Q, sequence T): for the 1.04B model at 2048 the attention part is
    12 x 16 x 16 x 128 x 2048 = 805,306,368."""
    dense, with_attention = train_flops_per_token(n_params=1_037_109_248, n_layers=16, hidden=2048, context=2048)
    assert with_attention - dense == 805_306_368
