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
    assert mfu(1e15, 1.0, peak, 1) is None
    monkeypatch.setenv(PEAK_ENV, "789.2")
    peak, source = peak_flops("NVIDIA H200")
    assert peak == pytest.approx(789.2e12) and source == f"{PEAK_ENV}=789.2"


def test_six_n_and_the_attention_term():
    dense, with_attention = train_flops_per_token(n_params=1_000, n_layers=2, hidden=8, context=16)
    assert dense == 6_000 and with_attention == 6_000 + 12 * 2 * 8 * 16
    assert mfu(dense * 100, 0.5, 1e6, 2) == pytest.approx(6_000 * 100 / 0.5 / 2e6)
