"""`wirewise estimate` as a process: the seed article's figures, the ZeRO formulas, calibration
against measured peaks in a real store, and bad input."""

from __future__ import annotations

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.placement.history import plant_training
from tests.topology.common import NVL_QUADS
from wirewise.topology import read_topology

PSI = 7_241_732_096  # Mistral-7B parameters


def by_strategy(out: dict) -> dict:
    return {row["strategy"]: row for row in out["strategies"]}


def test_article_accounting_reproduces_the_seed_article() -> None:
    out = wirewise_json("estimate", "--model", "mistral-7b", "--gpus", "4", "--gpu-mem-gb", "80")
    rows = by_strategy(out)
    # The article: params 14 GB + grads 14 GB + fp32 moments ~58 GB = 87 GB for ddp; fsdp ~22 GB.
    assert rows["ddp"]["model_state_gb"] == pytest.approx(87, abs=0.5)
    assert rows["ddp"]["params_gb"] == pytest.approx(14.5, abs=0.05)
    assert rows["ddp"]["optimizer_gb"] == pytest.approx(57.9, abs=0.05)
    assert rows["fsdp"]["model_state_gb"] == pytest.approx(22, abs=0.5)
    assert rows["ddp"]["fits"] is False  # DDP on 4x A100 80GB: OOM in the article
    assert rows["fsdp"]["fits"] is True
    assert out["params"] == PSI and out["accounting"] == "article"


def test_zero_accounting_follows_the_zero_paper() -> None:
    rows = by_strategy(wirewise_json("estimate", "-m", "mistral-7b", "--gpus", "4", "--accounting", "zero", "--gpu-mem-gb", "80"))
    gb = PSI / 1e9
    expected = {"ddp": 16 * gb, "zero1": 4 * gb + 12 * gb / 4, "zero2": 2 * gb + 14 * gb / 4, "zero3": 16 * gb / 4, "fsdp": 16 * gb / 4}
    for strategy, value in expected.items():
        assert rows[strategy]["model_state_gb"] == pytest.approx(value, abs=0.01)


def test_activations_scale_with_batch_and_sequence() -> None:
    one = by_strategy(wirewise_json("estimate", "-m", "mistral-7b", "--gpus", "4", "--strategy", "fsdp", "--gpu-mem-gb", "80"))
    # Korthikanti et al.: 34 s b h bytes per layer; plus logits 6 bytes x s x vocab.
    per_sample = (32 * 34 * 2048 * 4096 + 6 * 2048 * 32000) / 1e9
    assert one["fsdp"]["activation_gb"] == pytest.approx(per_sample, abs=0.01)
    four = by_strategy(wirewise_json("estimate", "-m", "mistral-7b", "--gpus", "4", "-s", "fsdp", "--batch-size", "4",
                                     "--seq-len", "1024", "--gpu-mem-gb", "80"))
    assert four["fsdp"]["activation_gb"] == pytest.approx(2 * per_sample, abs=0.01)
    assert list(four) == ["fsdp"]


def test_measured_peaks_calibrate_the_estimate(db_url: str) -> None:
    """Two fsdp runs on 4 GPUs peaking at 37 GB (the article's measured FSDP peak) against an
    estimate of 21.73 + 9.52 = 31.25 GB: factor 37 / 31.25 = 1.184."""
    topo = read_topology(NVL_QUADS)
    run = {"gpus": [0, 1, 2, 3], "strategy": "fsdp", "micro_batch": 1, "seq_len": 2048, "peak_mem_bytes": [36e9, 37e9, 36.5e9, 35e9]}
    cpu = {**run, "peak_mem_bytes": [1e9] * 4, "extra": {"device": "cpu"}, "gpu_count": 0}  # CPU ranks: no GPU
    plant_training(db_url, topo, "nvl1", "mistral-7b", [run, run, cpu])
    rows = by_strategy(wirewise_json("estimate", "-m", "mistral-7b", "--gpus", "4", "--gpu-mem-gb", "80", "--db", db_url))
    assert rows["fsdp"]["calibration"] == {"factor": pytest.approx(1.184, abs=0.002), "results": 2, "measured_peak_gb": 37.0,
                                           "sources": ["wirewise"]}
    assert rows["fsdp"]["total_gb"] == pytest.approx(37.0, abs=0.05)
    assert rows["ddp"]["calibration"] is None


def test_table_says_the_accounting() -> None:
    out = wirewise("estimate", "-m", "mistral-7b", "--gpus", "4", "--gpu-mem-gb", "80", check=True).stdout
    assert "accounting article" in out and "ddp" in out and "no" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "gpt-9"], "unknown model 'gpt-9'"),
        (["-m", "mistral-7b", "--strategy", "zero4"], "unknown strategy 'zero4'"),
        (["-m", "mistral-7b", "--accounting", "fp8"], "unknown accounting 'fp8'"),
        (["-m", "mistral-7b", "--gpus", "0"], "at least 1"),
        (["-m", "mistral-7b", "--gpu-mem-gb", "-3"], "--gpu-mem-gb must be positive"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path) -> None:
    proc = wirewise("estimate", *args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("wirewise: error: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_gpu_name_gives_the_cards_memory() -> None:
    out = wirewise_json("estimate", "--model", "mistral-7b", "--gpus", "4", "--gpu-name", "NVIDIA H200")
    assert (out["gpu_mem_gb"], out["gpu_mem_source"]) == (141.0, "the GPU's name (NVIDIA H200)")
    assert by_strategy(out)["ddp"]["fits"] is True  # 86.9 + 9.5 GB of 141 x 0.9
