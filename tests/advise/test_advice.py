"""The strategy advisor through `wirewise place --model`, and its throughput model by hand.

The named H200 NVL node is the quads fixture with `nvidia-smi -L` lines: its GPUs then carry
PCIe Gen5 (64 GB/s x16) and 141 GB each, and a dense bf16 peak of 835 TFLOP/s."""

from __future__ import annotations

import pytest

from tests.conftest import wirewise_json
from tests.placement.history import plant_training
from tests.topology.common import NVL_QUADS, fixture_text
from wirewise.orchestrator.advise.params import model_shape
from wirewise.orchestrator.advise.strategy import modelled_tokens_per_s
from wirewise.topology import read_topology

QUADS = ({0, 1, 2, 3}, {4, 5, 6, 7})


@pytest.fixture
def named_nvl(tmp_path):
    names = "".join(f"GPU {i}: NVIDIA H200 NVL (UUID: GPU-{i:08d})\n" for i in range(8))
    path = tmp_path / "h200-nvl.txt"
    path.write_text(names + fixture_text(NVL_QUADS.name))
    return path


def advice(*args: str) -> dict:
    return wirewise_json("place", "--model", "mistral-7b", *args)


def test_mistral_7b_on_80_gb_cards_rules_out_ddp() -> None:
    out = advice("--gpus", "4", "-f", str(NVL_QUADS), "--gpu-mem-gb", "80")
    rows = {row["strategy"]: row for row in out["advice"]["strategies"]}
    assert rows["ddp"]["fits"] is False and out["strategy"] != "ddp"
    assert "strategy: ruled out by memory: ddp" in out["reasons"]


def test_across_quads_on_a_card_where_ddp_fits_ddp_is_preferred(named_nvl) -> None:
    out = advice("--gpus", "4", "-f", str(named_nvl), "--policy", "spread")
    assert [len(set(out["gpus"]) & quad) for quad in QUADS] == [2, 2]
    assert out["advice"]["gpu_mem_gb"] == 141.0
    # Across the quads: PCIe Gen5 x16 through the socket link, 64 x 0.5 x 0.8.
    assert out["predicted_busbw_gbs"] == 25.6
    assert out["strategy"] == "ddp"
    assert any("slow wire" in reason and "ddp fits" in reason for reason in out["reasons"])


def test_inside_one_quad_fsdp_is_preferred(named_nvl) -> None:
    out = advice("--gpus", "4", "-f", str(named_nvl))
    assert set(out["gpus"]) in QUADS and out["strategy"] == "fsdp"
    assert any("fast wire" in reason for reason in out["reasons"])


def test_slow_wire_without_room_for_ddp_takes_the_least_sharded_stage(named_nvl) -> None:
    # 60 GB cards (x 0.9 usable = 54): zero1 needs 43.45 + 9.52 = 52.97 GB, ddp 96.42.
    out = advice("--gpus", "4", "-f", str(named_nvl), "--policy", "spread", "--gpu-mem-gb", "60")
    assert out["strategy"] == "zero1"


def test_nothing_fits_says_so(named_nvl) -> None:
    out = advice("--gpus", "2", "-f", str(named_nvl), "--gpu-mem-gb", "24")
    assert out["strategy"] is None
    assert any("nothing fits" in reason for reason in out["reasons"])


def test_measured_training_on_the_same_set_shape_decides(named_nvl, db_url: str) -> None:
    """zero2 measured faster than fsdp on a quad of this wiring (another quad than the one
    chosen: the set shape is the same)."""
    topo = read_topology(named_nvl)
    plant_training(db_url, topo, "nvl1", "mistral-7b", [
        {"gpus": [4, 5, 6, 7], "strategy": "fsdp", "tokens_per_s": 30000.0},
        {"gpus": [4, 5, 6, 7], "strategy": "zero2", "tokens_per_s": 33000.0},
        {"gpus": [4, 5, 6, 7], "strategy": "ddp", "tokens_per_s": 99000.0, "extra": {"device": "cpu"}},
        {"gpus": [0, 1, 4, 5], "strategy": "ddp", "tokens_per_s": 99000.0},  # another shape
    ])
    out = advice("--gpus", "4", "--node", "nvl1", "--db", db_url)
    assert out["gpus"] == [0, 1, 2, 3] and out["strategy"] == "zero2"
    rows = {row["strategy"]: row for row in out["advice"]["strategies"]}
    assert rows["zero2"]["basis"] == "measured" and rows["zero2"]["results"] == 1
    assert rows["ddp"]["basis"] == "model"


def test_throughput_model_by_hand() -> None:
    """Mistral-7B, 4 H200 NVL, batch 1 x 2048: compute 6 x 7.2417e9 x 2048 / (835e12 x 0.45)
    = 0.23683 s; ddp gradients 2 x 7.2417e9 x 2 x 3/4 / 360e9 = 0.06035 s (hidden behind
    compute): 4 x 2048 / 0.23683 = 34,590 tokens/s. Across quads at 25.6 GB/s: fsdp moves
    1.5 x 2 x 7.2417e9 x 2 x 3/4 / 25.6e9 = 1.27303 s: 4 x 2048 / 1.27303 = 6,435."""
    shape = model_shape("mistral-7b")
    assert modelled_tokens_per_s(shape, "ddp", 4, 1, 360.0, "NVIDIA H200 NVL") == pytest.approx(34590, abs=2)
    assert modelled_tokens_per_s(shape, "fsdp", 4, 1, 25.6, "NVIDIA H200 NVL") == pytest.approx(6435, abs=2)
    assert modelled_tokens_per_s(shape, "ddp", 4, 1, 360.0, None) is None
