"""The strategy advisor through `wirewise place --model`, and its step model by hand.

The H200 NVL node is the quads fixture with `nvidia-smi -L` lines: its GPUs then carry PCIe
Gen5 (64 GB/s x16), NVLink 4 and 141 GB each, and a dense bf16 peak of 835 TFLOP/s."""

from __future__ import annotations

import pytest

from tests.conftest import wirewise_json
from tests.placement.history import plant_training
from tests.topology.common import NVL_QUADS, NVL_QUADS_NAMED
from wirewise.orchestrator.advise.params import model_shape
from wirewise.orchestrator.advise.strategy import modelled_tokens_per_s
from wirewise.topology import read_topology

QUADS = ({0, 1, 2, 3}, {4, 5, 6, 7})
NVL = str(NVL_QUADS_NAMED)


def advice(*args: str) -> dict:
    return wirewise_json("place", "--model", "mistral-7b", *args)


def rows(out: dict) -> dict:
    return {row["strategy"]: row for row in out["advice"]["strategies"]}


def test_mistral_7b_on_80_gb_cards_rules_out_ddp() -> None:
    out = advice("--gpus", "4", "-f", NVL, "--gpu-mem-gb", "80")
    assert rows(out)["ddp"]["fits"] is False and out["strategy"] != "ddp"
    assert "strategy: ruled out by memory: ddp" in out["reasons"]


def test_across_quads_on_a_card_where_ddp_fits_ddp_is_preferred() -> None:
    out = advice("--gpus", "4", "-f", NVL, "--policy", "spread")
    assert [len(set(out["gpus"]) & quad) for quad in QUADS] == [2, 2]
    assert out["advice"]["gpu_mem_gb"] == 141.0
    assert out["strategy"] == "ddp"
    assert any("slow wire" in reason and "ddp predicted at" in reason and "the fastest that fits" in reason
               for reason in out["reasons"])


def test_inside_one_quad_fsdp_is_preferred() -> None:
    out = advice("--gpus", "4", "-f", NVL)
    assert set(out["gpus"]) in QUADS and out["strategy"] == "fsdp"
    assert any("fast wire" in reason and "the most sharded of them" in reason for reason in out["reasons"])
    assert {row["basis"] for row in rows(out).values()} == {"model"}
    assert all("assumed MFU of 0.45" in row["source"] for row in rows(out).values())


def test_slow_wire_without_room_for_ddp_takes_the_least_sharded_stage() -> None:
    # 60 GB cards (x 0.9 usable = 54): zero1 needs 43.45 + 9.52 = 52.97 GB, ddp 96.42; zero1 and
    # zero2 move the same bytes, so they tie, and the least sharded of the two is the pick.
    out = advice("--gpus", "4", "-f", NVL, "--policy", "spread", "--gpu-mem-gb", "60")
    assert out["strategy"] == "zero1"


def test_nothing_fits_says_so() -> None:
    out = advice("--gpus", "2", "-f", NVL, "--gpu-mem-gb", "24")
    assert out["strategy"] is None
    assert any("nothing fits" in reason for reason in out["reasons"])


def test_a_file_without_names_takes_gpu_name_and_then_predicts_and_judges_fit() -> None:
    out = advice("--gpus", "4", "-f", str(NVL_QUADS), "--gpu-name", "NVIDIA H200 NVL")
    assert (out["gpu_model"], out["gpu_model_source"]) == ("NVIDIA H200 NVL", "--gpu-name")
    assert out["predicted_busbw_gbs"] == 360.0 and out["advice"]["gpu_mem_gb"] == 141.0
    assert all(row["predicted_tokens_per_s"] and row["fits"] is not None for row in rows(out).values())


def test_measured_training_on_the_same_set_shape_decides(db_url: str) -> None:
    """zero2 measured faster than fsdp on a quad of this wiring (another quad than the one
    chosen: the set shape is the same)."""
    topo = read_topology(NVL_QUADS_NAMED)
    same = {"micro_batch": 1, "seq_len": 2048}
    plant_training(db_url, topo, "nvl1", "mistral-7b", [
        {"gpus": [4, 5, 6, 7], "strategy": "fsdp", "tokens_per_s": 30000.0, **same},
        {"gpus": [4, 5, 6, 7], "strategy": "zero2", "tokens_per_s": 33000.0, **same},
        {"gpus": [4, 5, 6, 7], "strategy": "ddp", "tokens_per_s": 99000.0, "extra": {"device": "cpu"}, "gpu_count": 0, **same},
        {"gpus": [0, 1, 4, 5], "strategy": "ddp", "tokens_per_s": 99000.0, **same},  # another shape
        {"gpus": [4, 5, 6, 7], "strategy": "ddp", "tokens_per_s": 99000.0, "micro_batch": 8, "seq_len": 2048},
    ])
    out = advice("--gpus", "4", "--node", "nvl1", "--db", db_url)
    assert out["gpus"] == [0, 1, 2, 3] and out["strategy"] == "zero2"
    assert rows(out)["zero2"]["basis"] == "measured" and rows(out)["zero2"]["results"] == 1
    assert rows(out)["ddp"]["basis"] == "model"  # its one result on this shape ran another micro-batch


def test_step_model_by_hand() -> None:
    """Mistral-7B (7,241,732,096 params, 32 layers), 4 H200 NVL, batch 1 x 2048, bf16 on the wire.
    Compute 6 x 7.2417e9 x 2048 / (835e12 x 0.45) = 0.236826 s (forward a third, 0.078942).
    ddp at 360 GB/s: 2 bytes x 7.2417e9 x 2 x 3/4 = 21.725e9 bus bytes = 0.060348 s, hidden
    behind the backward but for its last 25 MB bucket of 580 (0.000104 s): 8192 / 0.236930
    = 34,576 tokens/s. zero1 does not overlap its reduce-scatter and all-gather (10.863e9 bus
    bytes each): 0.236826 + 0.060348 = 0.297174 s, 27,566. fsdp across quads at 34.2 GB/s: each
    all-gather 10.863e9 / 34.2e9 = 0.317620 s, the reduce-scatter too; forward 0.317620 - 0.078942
    exposed, backward 0.635240 - 0.157884, the first and last layer's call of each (1/32) never
    hidden: 0.716034 s exposed, 8192 / 0.952860 = 8,597."""
    shape = model_shape("mistral-7b")
    assert modelled_tokens_per_s(shape, "ddp", 4, 1, 360.0, "NVIDIA H200 NVL") == pytest.approx(34576, abs=1)
    assert modelled_tokens_per_s(shape, "zero1", 4, 1, 360.0, "NVIDIA H200 NVL") == pytest.approx(27566, abs=1)
    assert modelled_tokens_per_s(shape, "fsdp", 4, 1, 34.2, "NVIDIA H200 NVL") == pytest.approx(8597, abs=1)
    assert modelled_tokens_per_s(shape, "ddp", 4, 1, 360.0, None) is None


def test_the_table_for_people_lists_each_strategy_with_its_basis() -> None:
    from tests.conftest import wirewise

    proc = wirewise("place", "--model", "mistral-7b", "--gpus", "4", "-f", NVL, "--policy", "spread", check=True)
    lines = {line.split()[1]: line for line in proc.stdout.splitlines() if line.startswith("│") and "yes" in line}
    assert set(lines) == {"ddp", "zero1", "zero2", "zero3", "fsdp"}
    assert all(line.split()[-2] == "model" for line in lines.values())
    assert "strategy: ddp" in proc.stdout


def test_one_answer_reads_the_wiring_join_and_each_history_once(db_url, monkeypatch) -> None:
    """`place --model` on a store with measured training and busbw: placement and advice ask
    the wiring's history the same things (each op's busbw, the nodes' wirings); one History
    answers them all, so the wiring join runs once and no results query twice. Spies wrap the
    store's real reads (in process: a process could not count them)."""
    from wirewise.orchestrator import decide
    from wirewise.orchestrator.store import results, topology

    topo = read_topology(NVL_QUADS_NAMED)
    same = {"micro_batch": 1, "seq_len": 2048, "step_time_s": 0.3, "params": {"precision": "bf16"}}
    plant_training(db_url, topo, "nvl1", "mistral-7b", [{"gpus": [4, 5, 6, 7], "strategy": s, "tokens_per_s": t, **same}
                                                         for s, t in (("fsdp", 30000.0), ("zero2", 33000.0))])
    joins, queries = [], []
    for module, name, calls in ((topology, "node_wirings", joins), (results, "ok_results", queries)):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _calls=calls, **k: _calls.append(repr((a[1:], k))) or _real(*a, **k))
    out = decide.placement_for(4, topology_file=NVL_QUADS_NAMED, model="mistral-7b", db=db_url)
    assert out["strategy"] == "zero2" and rows(out)["zero2"]["basis"] == "measured"
    assert len(joins) == 1
    assert len(queries) == len(set(queries)) >= 5, queries  # 3 ops' busbw, the steps, the tokens/s (+ memory)
