"""`wirewise doctor` as a process.

History: the H100 nccl-tests log imported for four nodes of one wiring (conftest.py). A slow
result is planted by importing the log again for a node with its bandwidths halved.

Live checks: no GPU exists here, so NVML is a fake module put first on PYTHONPATH
(tests/report/fake_nvml/pynvml.py, one H200 NVL quad); the probe, the store and doctor's
checks are the real ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import ROOT, FIXTURES, wirewise
from tests.report.conftest import import_log
from wirewise.topology.probe import short_hostname

FAKE_NVML = Path(__file__).with_name("fake_nvml")


def doctor(url: str, *args: str, env: dict | None = None) -> tuple[int, dict]:
    proc = wirewise("doctor", *args, "--json", "--db", url, env=env)
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def fake_nvml(**config) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(FAKE_NVML), str(ROOT)]), "WIREWISE_FAKE_NVML": json.dumps(config)}


def test_healthy_history_is_quiet(report_db):
    for node in ("h100-a", "h100-b"):
        code, found = doctor(report_db, "--node", node)
        assert (code, found["healthy"], found["findings"], found["nodes"]) == (0, True, [], [node])


def test_a_planted_slow_result_is_flagged_and_only_on_its_node(report_db, tmp_path):
    import_log(tmp_path, report_db, "h100-a", 0.5)
    code, found = doctor(report_db, "--node", "h100-a")
    assert code == 1 and not found["healthy"]
    [finding] = found["findings"]
    assert (finding["node"], finding["check"]) == ("h100-a", "busbw-below-baseline")
    # 1 GiB out of place: h100-a's latest results (the rules' 3 repeats: it has 2) 469.67 and
    # 234.84, median 352.25, against the other nodes' 464.97 472.02 474.37: median 472.02, MAD
    # 2.35 (3 x 1.4826 x 2.35 / 472.02 / sqrt(2) = 1.6% < max_drop 3%), floor 472.02 x 0.97
    assert "all_reduce on 8 GPU(s) (packed), transport default, float64" in finding["evidence"]
    assert "against the baseline of 3 results on 3 node(s)" in finding["evidence"]
    assert "1G: 352.3 GB/s vs 472 (floor 457.9, -25.4%)" in finding["evidence"]
    assert finding["evidence"].count(" GB/s vs ") == 20  # 32M..16G (min_bytes 32M), in place and out of place
    assert finding["reason"] == "wirewise:busbw-below-baseline:all_reduce.busbw:-25.4%"
    assert finding["gpus"] == list(range(8)) and finding["measurement"]["sizes"][0] == 32 << 20
    assert "fleet drain" in finding["advice"]
    for healthy in ("h100-b", "h100-c"):  # the slow run does not move the others' baseline
        assert doctor(report_db, "--node", healthy)[0] == 0
    human = wirewise("doctor", "--node", "h100-a", "--db", report_db)
    assert human.returncode == 1 and "busbw-below-baseline" in human.stdout


def test_a_drop_inside_max_drop_is_not_flagged(report_db, tmp_path):
    import_log(tmp_path, report_db, "h100-c", 0.97)  # median of its 2 results: 0.99 of the baseline
    assert doctor(report_db, "--node", "h100-c")[0] == 0


def test_a_five_percent_drop_over_three_repeats_is_flagged(report_db, tmp_path):
    """The defaults catch a 5% busbw drop with three repeats (rules.yaml; the false-alarm and
    detection rates are tests/benchmarks/bench_rules.py's)."""
    for factor in (0.95, 0.951, 0.949):  # three runs (distinct figures: the same log twice is one run)
        import_log(tmp_path, report_db, "h100-d", factor)
    code, found = doctor(report_db, "--node", "h100-d")
    assert code == 1 and [f["delta"] for f in found["findings"]] == ["-5.2%"]  # 0.95 of h100-d's x1.005 vs a, b, c


def test_too_little_history_is_said_not_judged(report_db, tmp_path):
    import_log(tmp_path, report_db, "h100-b", 0.5)
    code, found = doctor(report_db, "--node", "h100-b")  # still 4 others: judged
    assert code == 1
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    import_log(tmp_path, fresh, "lonely", 1.0)
    code, found = doctor(fresh, "--node", "lonely")
    assert (code, found["healthy"], found["verdicts"]) == (3, None, {"lonely": "not judged"})  # not "healthy": exit 3
    assert found["notes"] == ["lonely: 20 collective case(s) have fewer than 3 results to compare with "
                              "(in the history or an imported baseline): not judged",
                              "lonely: no rule could compare anything of it: not judged (not the same as healthy)"]


def test_live_links_and_pcie_through_nvml(report_db):
    host = short_hostname()
    wirewise("topo", "save", "--db", report_db, env=fake_nvml(), check=True)  # this node's wiring, healthy
    code, found = doctor(report_db, "--node", host, env=fake_nvml())
    assert (code, found["findings"]) == (0, [])
    code, found = doctor(report_db, "--node", host, env=fake_nvml(inactive={"1": [0, 1]}, pcie={"2": [4, 8]}))
    assert code == 1
    assert [(f["node"], f["check"]) for f in found["findings"]] == [(host, "nvlink-inactive"), (host, "pcie-degraded")]
    links, pcie = (f["evidence"] for f in found["findings"])
    assert links.startswith("GPU 1 (00000000:28:00.0): NVLink(s) 0, 1 inactive, 16 active")
    assert pcie == "GPU 2 (00000000:38:00.0): PCIe gen 4 x8, maximum gen 5 x16"


def test_an_idle_gpus_lower_pcie_generation_is_noted_not_flagged(report_db):
    """Out of P0 a GPU may lower its link's generation to save power (the probe's fake machine,
    like a real idle H100, reads gen 1 of 5 in P8): a health check must not call that node
    degraded. A narrow link is flagged whatever the state."""
    host = short_hostname()
    wirewise("topo", "save", "--db", report_db, env=fake_nvml(), check=True)
    code, found = doctor(report_db, "--node", host, env=fake_nvml(pcie={"2": [1, 16]}, pstate={"2": 8}))
    assert (code, found["findings"]) == (0, [])
    assert f"{host}: GPU 2 PCIe gen 1 of 5 in P8 (power saving): not judged; run doctor while a job runs to check the generation" in found["notes"]
    code, found = doctor(report_db, "--node", host, env=fake_nvml(pcie={"2": [1, 8]}, pstate={"2": 8}))
    assert code == 1 and [f["evidence"] for f in found["findings"]] == ["GPU 2 (00000000:38:00.0): PCIe gen 1 x8, maximum gen 5 x16"]


def test_live_wiring_that_no_longer_matches_the_stored_one(report_db):
    host = short_hostname()
    nvl8 = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
    wirewise("topo", "save", "--from-file", str(nvl8), "--node", host, "--db", report_db, check=True)
    code, found = doctor(report_db, "--node", host, env=fake_nvml())
    [finding] = found["findings"]
    assert code == 1 and finding["check"] == "wiring-changed"
    assert finding["evidence"].startswith("live wiring nvlink-all-to-all ") and "(4 GPUs), stored nvlink-groups " in finding["evidence"]


def test_without_nvml_the_live_checks_are_skipped_with_a_note(report_db):
    code, found = doctor(report_db, "--node", short_hostname())  # no results of its own either: nothing judged
    [note] = [note for note in found["notes"] if "live checks skipped" in note]
    assert code == 3 and "no NVIDIA GPU or driver" in note
    assert "--from-file" not in note  # topo's option: doctor has none (it said to pass it, issue 34)


def test_an_unknown_node_exits_2(report_db):
    proc = wirewise("doctor", "--node", "nowhere", "--db", report_db)
    assert proc.returncode == 2
    assert proc.stderr == "wirewise: error: --node 'nowhere': no results or wiring stored for that node (wirewise topo list shows the nodes)\n"
