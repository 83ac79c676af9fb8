"""Where a prediction's GPU model comes from when a saved matrix names no GPU: `--gpu-name`, or
the stored nodes of the same wiring, else none: the set is still chosen by the wiring, without a
predicted figure, and the reasons say why (never a guessed PCIe Gen4).
`wirewise topo save` and `wirewise place` run as processes on a real SQLite store."""

from __future__ import annotations

from tests.conftest import wirewise, wirewise_json
from tests.placement.history import plant_all_reduce
from tests.topology.common import NVL_QUADS, NVL_QUADS_NAMED, as_text, fixture_text
from tests.topology.renumber import renumber_text
from wirewise.topology import read_topology


def save(db_url: str, path, node: str) -> None:
    wirewise("topo", "save", "-f", str(path), "--node", node, "--db", db_url, check=True)


def test_the_model_comes_from_a_stored_node_of_the_same_wiring(db_url: str, tmp_path) -> None:
    """nvl1 was saved with names; a nameless matrix of the same wiring, numbered differently,
    takes its model, its fingerprint then matches, and nvl1's measured history counts."""
    save(db_url, NVL_QUADS_NAMED, "nvl1")
    plant_all_reduce(db_url, read_topology(NVL_QUADS_NAMED), "nvl1", {(0, 1): 111.0})
    renumbered = tmp_path / "renumbered.txt"
    renumbered.write_text(renumber_text(fixture_text(NVL_QUADS.name), [0, 4, 1, 5, 2, 6, 3, 7]))
    out = wirewise_json("place", "--gpus", "2", "-f", str(renumbered), "--db", db_url)
    assert (out["gpu_model"], out["gpu_model_source"]) == ("NVIDIA H200 NVL", "stored node nvl1 (same wiring)")
    assert out["fingerprint"] == read_topology(NVL_QUADS_NAMED).fingerprint
    assert out["basis"] == "measured" and out["predicted_busbw_gbs"] == 111.0
    assert "GPU model NVIDIA H200 NVL (from stored node nvl1 (same wiring)): NVLink 4 (18 links x 25 GB/s), PCIe Gen5 x16" in out["reasons"]


def test_stored_nodes_that_disagree_are_not_chosen_between(db_url: str, tmp_path) -> None:
    other = tmp_path / "h100-quads.txt"
    other.write_text(as_text(read_topology(NVL_QUADS).links, ["NVIDIA H100 NVL"] * 8))
    save(db_url, NVL_QUADS_NAMED, "nvl1")
    save(db_url, other, "h100nvl1")
    out = wirewise_json("place", "--gpus", "2", "-f", str(NVL_QUADS), "--db", db_url)
    assert (out["gpus"], out["gpu_model"], out["predicted_busbw_gbs"], out["basis"]) == ([0, 1], None, None, "unknown")
    assert any("stored nodes of this wiring have NVIDIA H100 NVL, NVIDIA H200 NVL" in r for r in out["reasons"])
    out = wirewise_json("place", "--gpus", "2", "-f", str(NVL_QUADS), "--db", db_url, "--gpu-name", "NVIDIA H100 NVL")
    assert out["gpu_model"] == "NVIDIA H100 NVL" and out["predicted_busbw_gbs"] == 120.0


def test_a_node_stored_without_names_is_placed_by_its_wiring(db_url: str) -> None:
    save(db_url, NVL_QUADS, "bare1")
    out = wirewise_json("place", "--gpus", "4", "--node", "bare1", "--db", db_url)
    assert out["gpus"] == [0, 1, 2, 3] and out["predicted_busbw_gbs"] is None and out["gpu_model_source"] is None
    assert any(r.startswith("GPU model unknown: stored node bare1 names none") for r in out["reasons"])
    out = wirewise_json("place", "--gpus", "4", "--node", "bare1", "--db", db_url, "--gpu-name", "NVIDIA H200 NVL")
    assert out["predicted_busbw_gbs"] == 360.0 and out["gpu_model_source"] == "--gpu-name"


def test_a_plain_topo_m_file_is_placed_without_a_figure_and_says_why(tmp_path) -> None:
    """Issue 29: `nvidia-smi topo -m` alone never names its GPUs; choosing the best-connected set
    needs no model (one NVLink quad of four), only the predicted figure does."""
    proc = wirewise("place", "--gpus", "4", "-f", str(NVL_QUADS), "--model", "mistral-7b", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in proc.stdout and "GPU model unknown" in proc.stdout
    assert "no busbw predicted" in proc.stdout and "GB/s busbw" not in proc.stdout
    out = wirewise_json("place", "--gpus", "4", "-f", str(NVL_QUADS), cwd=tmp_path)
    assert (out["gpus"], out["basis"], out["predicted_busbw_gbs"]) == ([0, 1, 2, 3], "unknown", None)
    assert not (tmp_path / "wirewise.db").exists()
    assert "predicted all_reduce busbw 360 GB/s from the wiring model" in wirewise(
        "place", "--gpus", "4", "-f", str(NVL_QUADS), "--gpu-name", "NVIDIA H200 NVL", cwd=tmp_path, check=True).stdout
