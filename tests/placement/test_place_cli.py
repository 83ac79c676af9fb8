"""`wirewise place` as a process: fixtures' wirings, free GPUs, measured history, bad input."""

from __future__ import annotations

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.placement.history import plant_all_reduce
from tests.topology.common import NVL_QUADS, NVL_QUADS_NAMED, NVSWITCH_NAMED, fixture_text
from tests.topology.renumber import renumber_text
from wirewise.topology import read_topology, topology_from_text

NVL, NVSWITCH = NVL_QUADS_NAMED, NVSWITCH_NAMED  # H200 NVL quads and H200 SXM on NVSwitch, named
QUADS = ({0, 1, 2, 3}, {4, 5, 6, 7})


def place(*args: str):
    return wirewise_json("place", *args)


def test_four_on_nvl_quads_is_one_quad_at_nvlink_speed() -> None:
    out = place("--gpus", "4", "--topology-file", str(NVL))
    assert set(out["gpus"]) in QUADS
    assert out["cuda_visible_devices"] == ",".join(map(str, out["gpus"]))
    assert out["fabric"] == "nvlink-groups" and out["basis"] == "model" and out["results"] == 0
    assert (out["gpu_model"], out["gpu_model_source"]) == ("NVIDIA H200 NVL", str(NVL))
    # 3 peers x NV6 x 25 GB/s x 0.8 ring efficiency (the article measured 322).
    assert out["predicted_busbw_gbs"] == 360.0
    # The next-best set is 3 + 1 across the socket link, cut C = 64 x 0.55 x 0.8 = 28.16 GB/s
    # (PCIe Gen5 through host memory), the triple's own ring 2 x 150 x 0.8 = 240:
    # 2(n-1)/n / (1/C + (2 x 2/3)/240) = 1.5 / 0.041067 = 36.5.
    assert out["alternatives"][0]["gpus"] == [0, 1, 2, 4]
    assert out["alternatives"][0]["predicted_busbw_gbs"] == 36.5
    assert "strategy" not in out


def test_free_gpus_steer_the_choice() -> None:
    assert place("--gpus", "4", "-f", str(NVL), "--free", "2,3,4-7")["gpus"] == [4, 5, 6, 7]
    out = place("--gpus", "2", "-f", str(NVL), "--free", "2,3,5,6,7")
    assert out["gpus"] == [2, 3] and out["free_source"] == "--free"


def test_spread_policy_crosses_quads() -> None:
    out = place("--gpus", "4", "-f", str(NVL), "--policy", "spread")
    assert [len(set(out["gpus"]) & quad) for quad in QUADS] == [2, 2]
    # Two NV6 pairs (120 each) over the cut: 1.5 / (1/28.16 + 1/120) = 34.2 (the article: 35).
    assert out["predicted_busbw_gbs"] == 34.2


def test_nvswitch_prediction_is_flat() -> None:
    out = place("--gpus", "3", "-f", str(NVSWITCH))
    assert out["predicted_busbw_gbs"] == 360.0
    assert out["alternatives"] == []  # every other set predicts the same


def test_measured_history_overrides_the_model(db_url: str) -> None:
    """A degraded quad bridge measured at 20 GB/s inside a quad, 26 across: the measured
    history contradicts the model (120 vs 28.2) and the cross-quad pair wins."""
    topo = read_topology(NVL)
    plant_all_reduce(db_url, topo, "nvl1", {(0, 1): 20.0, (0, 4): 26.0})
    out = place("--gpus", "2", "--node", "nvl1", "--db", db_url)
    assert len(set(out["gpus"]) & QUADS[0]) == 1
    assert out["basis"] == "measured" and out["results"] == 1 and out["predicted_busbw_gbs"] == 26.0
    assert out["bytes"] == 1 << 30
    assert any("measured" in reason for reason in out["reasons"])


def test_history_of_a_renumbered_node_counts_by_set_shape(db_url: str) -> None:
    """nvl2 numbers the same wiring differently (nvl1's GPU i is its GPU perm[i]): its pair
    (0, 2) crosses its quads, and it predicts every cross-quad pair of nvl1."""
    perm = [0, 4, 1, 5, 2, 6, 3, 7]
    nvl2 = topology_from_text(renumber_text(fixture_text(NVL.name), perm))
    assert nvl2.groups == [[0, 1, 4, 5], [2, 3, 6, 7]]
    assert nvl2.fingerprint == read_topology(NVL).fingerprint
    plant_all_reduce(db_url, nvl2, "nvl2", {(0, 2): 31.0})
    plant_all_reduce(db_url, read_topology(NVL), "nvl1", {})
    out = place("--gpus", "2", "--policy", "spread", "--node", "nvl1", "--db", db_url)
    assert out["basis"] == "measured" and out["predicted_busbw_gbs"] == 31.0


def test_cpu_ranks_and_forced_pcie_are_not_gpu_history(db_url: str) -> None:
    topo = read_topology(NVL)
    plant_all_reduce(db_url, topo, "nvl1", {(0, 4): 900.0}, extra={"device": "cpu"}, gpu_count=0)  # CPU ranks: no GPU
    plant_all_reduce(db_url, topo, "nvl1", {(1, 5): 800.0}, params={"transport": "pcie"})
    out = place("--gpus", "2", "--node", "nvl1", "--db", db_url)
    assert out["basis"] == "model" and out["predicted_busbw_gbs"] == 120.0


def test_largest_size_is_the_one_that_counts(db_url: str) -> None:
    topo = read_topology(NVL)
    plant_all_reduce(db_url, topo, "nvl1", {(0, 1): 200.0}, size=1 << 20)
    plant_all_reduce(db_url, topo, "nvl1", {(2, 3): 110.0, (4, 5): 118.0, (6, 7): 114.0})
    out = place("--gpus", "2", "--node", "nvl1", "--db", db_url)
    assert out["predicted_busbw_gbs"] == 114.0 and out["results"] == 3


def test_table_output_for_people() -> None:
    proc = wirewise("place", "--gpus", "4", "-f", str(NVL), check=True)
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in proc.stdout
    assert "predicted all_reduce busbw 360 GB/s from the wiring model" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "9", "-f", str(NVL)], "9 GPUs asked for but only 8 free"),
        (["--gpus", "2", "-f", str(NVL), "--free", "1,x"], "'x' is not a GPU index"),
        (["--gpus", "2", "-f", str(NVL), "--policy", "nearest"], "--policy 'nearest'"),
        (["--gpus", "2", "-f", str(NVSWITCH), "--policy", "spread"], "spread needs NVLink groups"),
        (["--gpus", "2", "-f", str(NVL), "--model", "gpt-9"], "unknown model 'gpt-9'"),
        (["--gpus", "2", "--node", "ghost"], "unknown node 'ghost'"),
        (["--gpus", "2", "-f", str(NVL), "--gpu-name", "NVIDIA A100-SXM4-80GB"], "names its GPUs H200 NVL"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path) -> None:
    # a data folder of its own: another test on this worker may have made the default database
    proc = wirewise("place", *args, cwd=tmp_path, env={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert proc.returncode == 2
    assert proc.stderr.startswith("wirewise: error: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "wirewise.db").exists()


def test_unknown_node_in_a_real_database(db_url: str) -> None:
    plant_all_reduce(db_url, read_topology(NVL), "nvl1", {})
    proc = wirewise("place", "--gpus", "2", "--node", "nvl9", "--db", db_url)
    assert proc.returncode == 2 and "no topology stored for node 'nvl9'" in proc.stderr
