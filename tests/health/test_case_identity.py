"""The rules, the baselines and the confirming repeat keep every case apart (issue 28).

Four H200 NVL nodes of one wiring (n1..n4), each with three runs of one case (the baseline);
then n1's three newest runs are another case, 30% slower, differing in one case field: dtype,
CUDA-graph timing, in or out of place, node count (a 2-node x 2-GPU run beside the 1-node
4-GPU case), transport (a deliberate `--transport pcie` run), source, and for training
precision, compile, micro-batch, sequence length. A slower run of another case is not a slow
node: doctor must not flag n1, and `baseline export` makes two baselines, the first case's
resting on its own twelve results only. The control (the same case, 30% slower) is flagged:
the test can fail.

Records go through the store's real ingest (store_measurement); doctor and baseline run as
processes.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.topology.common import NVL_QUADS_NAMED
from wirewise.orchestrator.record.ingest import store_measurement
from wirewise.orchestrator.store import Store
from wirewise.record import ResultRecord
from wirewise.topology import read_topology

TOPO = read_topology(NVL_QUADS_NAMED)
NODES = ("n1", "n2", "n3", "n4")
START = datetime(2026, 12, 1, tzinfo=timezone.utc)
GIB = 1 << 30

COLLECTIVE = {"workload": "collective", "op": "all_reduce", "bytes": GIB, "dtype": "float32", "in_place": False,
              "gpus": [0, 1, 2, 3], "gpu_count": 4, "params": {"transport": "default", "cuda_graph": False}}
TRAIN = {"workload": "train", "model": "mistral-1b", "strategy": "ddp", "micro_batch": 4, "seq_len": 2048,
         "gpus": [0, 1], "gpu_count": 2, "world_size": 2, "step_time_s": 0.4,
         "params": {"transport": "default", "precision": "bf16-mixed", "compile": False, "engine": "native"},
         "extra": {"precision": "bf16-mixed", "device": "cuda"}}
METRIC = {"collective": "busbw_gbs", "train": "tokens_per_s"}
VALUE = {"collective": 320.0, "train": 55000.0}


def _merged(base: dict, change: dict) -> dict:
    out = {**base, **change}
    for key in ("params", "extra"):
        if key in base or key in change:
            out[key] = {**base.get(key, {}), **change.get(key, {})}
    return out


# one case field changed in n1's newest runs (None: the control, the same case)
COLLECTIVE_VARIANTS = {
    "control": None,
    "dtype": {"dtype": "bfloat16"},
    "cuda-graph": {"params": {"cuda_graph": True}},
    "in-place": {"in_place": True},
    "node-count": {"gpus": [0, 1], "node_count": 2, "nodes": ["n1", "n9"], "gpu_count": 4},
    "transport": {"params": {"transport": "pcie"}},
    "source": {"source": "nccl-tests"},
}
TRAIN_VARIANTS = {
    "control": None,
    "precision": {"params": {"precision": "bf16"}, "extra": {"precision": "bf16"}},
    "compile": {"params": {"compile": True}},
    "batch": {"micro_batch": 8},
    "seq-len": {"seq_len": 1024},
    "transport": {"params": {"transport": "pcie"}},
    "node-count": {"gpus": [0], "node_count": 2, "nodes": ["n1", "n9"], "gpu_count": 2},
    "source": {"source": "job"},
}


def record(node: str, when: int, value: float, base: dict, change: dict | None = None) -> ResultRecord:
    fields = _merged(base, change or {})
    fields.setdefault("nodes", [node])
    return ResultRecord(node=node, fingerprint=TOPO.fingerprint, fabric=TOPO.fabric,
                        started_at=START + timedelta(minutes=when), ended_at=START + timedelta(minutes=when, seconds=30),
                        **{METRIC[base["workload"]]: value}, **fields)


def plant_history(url: str, base: dict, change: dict | None) -> None:
    """Three runs of `base` on each node; then n1's three newest runs 30% slower, of `base`
    changed by `change`."""
    store = Store(url)
    value = VALUE[base["workload"]]
    for i, node in enumerate(NODES):
        store_measurement(store, [record(node, 10 * i + k, value * (1 + 0.002 * k), base) for k in range(3)], TOPO, node)
    store_measurement(store, [record("n1", 100 + k, value * 0.7, base, change) for k in range(3)], TOPO, "n1")


def doctor(url: str, *args: str) -> tuple[int, dict]:
    proc = wirewise("doctor", "--node", "n1", *args, "--json", "--db", url)
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def exported(url: str, folder) -> list[dict]:
    path = folder / "baselines.json"
    wirewise_json("baseline", "export", "--out", str(path), "--db", url)
    return json.loads(path.read_text())["baselines"]


@pytest.mark.parametrize("workload, variant", [("collective", v) for v in COLLECTIVE_VARIANTS]
                         + [("train", v) for v in TRAIN_VARIANTS])
def test_a_slower_run_of_another_case_does_not_flag_the_node(db_url, tmp_path, workload, variant) -> None:
    base = COLLECTIVE if workload == "collective" else TRAIN
    change = (COLLECTIVE_VARIANTS if workload == "collective" else TRAIN_VARIANTS)[variant]
    plant_history(db_url, base, change)
    code, found = doctor(db_url)
    rule = "busbw-below-baseline" if workload == "collective" else "tokens-below-baseline"
    if change is None:
        assert code == 1 and [f["check"] for f in found["findings"]] == [rule], found
        return
    assert (code, found["findings"]) == (0, []), found
    assert found["verdicts"] == {"n1": "healthy"}  # judged by its own runs of the first case
    assert any("not judged" in note for note in found["notes"]), found["notes"]  # the other case: n1's alone
    baselines = exported(db_url, tmp_path)
    assert len(baselines) == 2, [b["case"] for b in baselines]
    first = next(b for b in baselines if b["median"] > VALUE[workload] * 0.9)
    assert (first["results"], first["nodes"]) == (12, 4)


def test_a_deliberate_pcie_training_run_is_its_own_baseline(db_url, tmp_path) -> None:
    """The issue's example: a healthy node whose newest runs were deliberate `--transport pcie`
    ones is judged by its NVLink runs; once the other nodes ran the PCIe case too, n1's PCIe runs
    are judged against theirs (and pass)."""
    plant_history(db_url, TRAIN, TRAIN_VARIANTS["transport"])
    store = Store(db_url)
    for i, node in enumerate(NODES[1:]):
        store_measurement(store, [record(node, 200 + 10 * i + k, VALUE["train"] * 0.7, TRAIN, TRAIN_VARIANTS["transport"])
                                  for k in range(3)], TOPO, node)
    code, found = doctor(db_url)
    assert (code, found["findings"], found["notes"]) == (0, [], [])
    transports = sorted((b["case"]["transport"], b["results"]) for b in exported(db_url, tmp_path))
    assert transports == [("default", 12), ("pcie", 12)]


def test_baselines_round_trip_with_their_cases(db_url, tmp_path) -> None:
    """Exported and imported into a fresh database, each case's baseline judges only its case:
    a fifth node's bf16 sweep at the bf16 baseline (224 GB/s, 30% under the float32 one) is
    healthy, and so is its float32 sweep at 320; n1's bf16 runs make that baseline (3 results)."""
    plant_history(db_url, COLLECTIVE, COLLECTIVE_VARIANTS["dtype"])
    path = tmp_path / "baselines.json"
    wirewise_json("baseline", "export", "--out", str(path), "--db", db_url)
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    imported = wirewise_json("baseline", "import", str(path), "--db", fresh)
    assert (imported["baselines"], imported["added"]) == (2, 2)
    store = Store(fresh)
    store_measurement(store, [record("n5", k, 224.0, COLLECTIVE, COLLECTIVE_VARIANTS["dtype"]) for k in range(3)], TOPO, "n5")
    store_measurement(store, [record("n5", 10 + k, 320.0, COLLECTIVE) for k in range(3)], TOPO, "n5")
    proc = wirewise("doctor", "--node", "n5", "--json", "--db", fresh)
    found = json.loads(proc.stdout)
    assert (proc.returncode, found["findings"], found["verdicts"]) == (0, [], {"n5": "healthy"}), found
    slow = Store(fresh)
    store_measurement(slow, [record("n5", 20 + k, 150.0, COLLECTIVE, COLLECTIVE_VARIANTS["dtype"]) for k in range(3)], TOPO, "n5")
    proc = wirewise("doctor", "--node", "n5", "--json", "--db", fresh)
    found = json.loads(proc.stdout)
    assert proc.returncode == 1 and "bfloat16" in found["findings"][0]["evidence"]


def test_a_node_no_rule_could_judge_is_not_judged_not_healthy(db_url) -> None:
    """One node alone with its wiring: no baseline, no peers, no campaign. doctor says so and
    exits 3; the verdict it records is none (fleet status keeps what it knew)."""
    store_measurement(Store(db_url), [record("lonely", k, 320.0, COLLECTIVE) for k in range(3)], TOPO, "lonely")
    proc = wirewise("doctor", "--node", "lonely", "--json", "--db", db_url)
    found = json.loads(proc.stdout)
    assert proc.returncode == 3, proc.stderr
    assert (found["healthy"], found["verdicts"], found["findings"]) == (None, {"lonely": "not judged"}, [])
    human = wirewise("doctor", "--node", "lonely", "--db", db_url)
    assert human.returncode == 3 and human.stdout.startswith("not judged: lonely")


GRAPHED_BF16 = {"dtype": "bfloat16", "params": {"cuda_graph": True, "transport": "pcie"}}


def test_the_confirming_repeat_runs_the_case_that_flagged_the_node(db_url) -> None:
    """n1's bf16 CUDA-graph PCIe sweep, 30% below the same case on n2..n4, is flagged; the
    repeat `fleet drain` would submit is that case (dtype, CUDA graph, transport, GPUs, size),
    planned by the real planner on n1's stored wiring, and it judges only the repeat's results
    of that case: a float32 eager run at the same size confirms nothing. (The campaign itself
    runs under Slurm in tests/slurm/test_fleet_health.py.)"""
    from wirewise.orchestrator.campaign.plan import plan_campaign
    from wirewise.orchestrator.campaign.spec import parse_spec
    from wirewise.orchestrator.fleet.repeats import NOT_MEASURED, FAILING, NodeRun, _measured_verdict, campaign_spec
    from wirewise.orchestrator.health.rules import default_rules
    from wirewise.orchestrator.results.rows import result_rows
    from wirewise.orchestrator.store.health import findings
    from wirewise.orchestrator.store.results import Filters
    from wirewise.orchestrator.store.topology import load_topology

    store = Store(db_url)
    for i, node in enumerate(NODES):
        store_measurement(store, [record(node, 10 * i + k, 320.0, COLLECTIVE, GRAPHED_BF16) for k in range(3)], TOPO, node)
    store_measurement(store, [record("n1", 100 + k, 224.0, COLLECTIVE, GRAPHED_BF16) for k in range(3)], TOPO, "n1")
    code, found = doctor(db_url)
    assert code == 1 and "transport pcie, bfloat16, CUDA graph" in found["findings"][0]["evidence"]
    [row] = findings(store, ["n1"])
    spec = parse_spec(campaign_spec("confirm-n1", NodeRun("n1", [row], "confirm"), [row], default_rules(), None, 300),
                      "the confirmation")
    tasks = plan_campaign(spec, load_topology(store, node="n1")).tasks
    assert {(t.spec.params["dtype"], t.spec.params["cuda_graph"], t.transport, tuple(t.spec.gpus)) for t in tasks} == {
        ("bfloat16", True, "pcie", (0, 1, 2, 3))}
    assert {(t.spec.params["min_bytes"], t.spec.params["max_bytes"]) for t in tasks} == {(GIB, GIB)}

    other = [record("n1", 200 + k, 100.0, COLLECTIVE, {"campaign": "confirm-n1"}) for k in range(3)]  # float32, eager
    store_measurement(store, other, TOPO, "n1")
    new = result_rows(store, Filters(campaigns=("confirm-n1",)))
    assert _measured_verdict(row, new).outcome == NOT_MEASURED  # another case: it confirms nothing
    same = [record("n1", 300 + k, 100.0, COLLECTIVE, {**GRAPHED_BF16, "campaign": "confirm-n1"}) for k in range(3)]
    store_measurement(store, same, TOPO, "n1")
    assert _measured_verdict(row, result_rows(store, Filters(campaigns=("confirm-n1",)))).outcome == FAILING


def test_a_case_wirewise_cannot_run_again_is_not_repeated(db_url) -> None:
    """A finding on imported nccl-tests results: a wirewise campaign would be another case, so
    the repeat is refused (not measured: nothing drains), and the dry run says so."""
    from wirewise.orchestrator.fleet.repeats import repeat_refused
    from wirewise.orchestrator.store.health import findings

    plant_history(db_url, {**COLLECTIVE, "source": "nccl-tests"}, None)
    assert doctor(db_url)[0] == 1
    [row] = findings(Store(db_url), ["n1"])
    assert repeat_refused(row).startswith("its case was measured by nccl-tests, not wirewise")
