"""Campaign specs and plans through the real command (`wirewise campaign plan/submit`), on the
topology fixtures: placements per fabric, skipped combinations with their reasons, stable ids,
and specs that must be refused with their field named and nothing recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, ROOT, wirewise, wirewise_json

NVL_QUADS = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
NVSWITCH = FIXTURES / "topo" / "synthetic-h200-sxm-8gpu-nvswitch.txt"
SWEEP = {"ops": ["all_reduce"], "min_bytes": "4K", "max_bytes": "4K", "iters": 2, "warmup": 1}


def write_spec(folder: Path, **doc) -> Path:
    spec = {"name": "t", "workloads": [{"collectives": SWEEP}], **doc}
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def plan(spec: Path, topo: Path | None = NVL_QUADS, *extra: str) -> dict:
    args = ["campaign", "plan", str(spec), *extra]
    if topo is not None:
        args += ["--topology-file", str(topo)]
    return wirewise_json(*args)


def test_packed_takes_one_quad_and_spread_takes_two_from_each(tmp_path):
    spec = write_spec(tmp_path, axes={"gpus": [2, 4], "placement": ["packed", "spread"]})
    tasks = plan(spec)["tasks"]
    sets = {(len(t["gpus"]), t["placement"]): t["gpus"] for t in tasks}
    quads = ({0, 1, 2, 3}, {4, 5, 6, 7})
    assert set(sets[(4, "packed")]) in quads
    assert sum(g < 4 for g in sets[(4, "spread")]) == 2 and sum(g >= 4 for g in sets[(4, "spread")]) == 2
    assert any(set(sets[(2, "packed")]) <= quad for quad in quads)
    assert sum(g < 4 for g in sets[(2, "spread")]) == 1  # one per quad: the cross-quad pair


def test_what_cannot_be_placed_is_listed_with_its_reason(tmp_path):
    spec = write_spec(tmp_path, axes={"gpus": [2, 16], "placement": ["packed", "spread", [0, 9]]})
    on_nvswitch = plan(spec, NVSWITCH)
    reasons = {(s["placement"], str(s["gpus"])): s["reason"] for s in on_nvswitch["skipped"]}
    assert "NVLink groups" in reasons[("spread", "2")]  # nothing to spread across on NVSwitch
    assert "16" in reasons[("packed", "16")] and "8" in reasons[("packed", "16")]
    assert "9" in reasons[("explicit", "[0, 9]")]
    assert [t["placement"] for t in on_nvswitch["tasks"]] == ["packed"]  # only packed 2 runs
    for skipped in on_nvswitch["skipped"]:
        assert set(skipped) >= {"workload", "params", "gpus", "placement", "transport", "reason"}


def test_plan_json_shape_and_stable_ids(tmp_path):
    spec = write_spec(tmp_path, axes={"gpus": [2], "placement": ["packed", "all", [1, 5]], "transport": ["default", "pcie"],
                                      "repeats": 2})
    first, second = plan(spec), plan(spec)
    assert first == second
    assert first["campaign"] == "t" and first["node"]["fabric"] == "nvlink-groups"
    tasks = first["tasks"]
    assert len(tasks) == 3 * 2 * 2  # three placements x two transports x two repeats
    assert len({t["task_id"] for t in tasks}) == len(tasks)
    assert set(tasks[0]) == {"task_id", "workload", "params", "gpus", "placement", "transport", "repeat", "nodes"}
    assert {t["placement"]: t["gpus"] for t in tasks} == {"packed": tasks[0]["gpus"], "all": list(range(8)), "explicit": [1, 5]}
    assert {t["params"]["transport"] for t in tasks} == {"default", "pcie"}
    renamed = plan(spec, NVL_QUADS, "--name", "other")
    assert not {t["task_id"] for t in renamed["tasks"]} & {t["task_id"] for t in tasks}


def test_training_cases_cross_models_and_strategies(tmp_path):
    spec = write_spec(tmp_path, workloads=[{"train": {"models": ["tiny-mistral", "tiny-dinov2"], "strategies": ["ddp", "fsdp"],
                                                      "batch_size": 2, "steps": 1}, "axes": {"gpus": [4]}}])
    tasks = plan(spec)["tasks"]
    assert sorted((t["params"]["model"], t["params"]["strategy"]) for t in tasks) == [
        ("tiny-dinov2", "ddp"), ("tiny-dinov2", "fsdp"), ("tiny-mistral", "ddp"), ("tiny-mistral", "fsdp")]
    assert all(len(t["gpus"]) == 4 and t["params"]["micro_batch"] == 2 for t in tasks)


def test_the_shipped_specs_plan(tmp_path):
    article = plan(ROOT / "docs" / "campaigns" / "article-h200.yaml")
    assert len(article["tasks"]) == 90
    assert {t["params"].get("model") for t in article["tasks"]} == {None, "mistral-7b", "dinov2-large"}
    cpu = plan(ROOT / "docs" / "campaigns" / "demo.yaml", None, "--gpus", "2")
    assert all(t["gpus"] == [] and t["placement"] == "cpu" for t in cpu["tasks"]) or cpu["node"] is not None


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"workloads": [{"train": {"models": ["tiny-mistral"], "strategies": ["ddp", "zero1", "zero4"]}}]},
         "workloads[0].train.strategies[2]: 'zero4' is not one of ddp, fsdp, zero1, zero2, zero3"),
        ({"workloads": [{"collectives": {**SWEEP, "opz": ["all_reduce"]}}]}, "workloads[0].collectives.opz: unknown key"),
        ({"axes": {"gpus": [2], "placment": ["packed"]}}, "axes.placment: unknown key"),
        ({"axes": {"placement": ["packed", "scattered"]}}, "axes.placement[1]: 'scattered' is not one of packed, spread, all"),
        ({"workloads": [{"collectives": {**SWEEP, "transport": "pcie"}}]}, "set axes.transport"),
        ({"workloads": [{"collectives": SWEEP, "train": {"models": ["tiny-mistral"], "strategies": ["ddp"]}}]},
         "workloads[0]: give exactly one of collectives or train"),
        ({"name": "x; touch pwned"}, "name: 'x; touch pwned' is not a name"),
        ({"name": "$(touch pwned)"}, "name: '$(touch pwned)' is not a name"),
        ({"name": "a\"b'c"}, "is not a name"),
        ({"target": {"executor": "slurm", "partition": "gpu\n#SBATCH --wrap=touch pwned"}}, "target.partition:"),
        ({"target": {"executor": "slurm", "account": "a;b"}}, "target.account:"),
        ({"target": {"executor": "slurm", "constraint": "nvswitch$(id)"}}, "target.constraint:"),
        ({"target": {"time": "one hour"}}, "target.time:"),
        ({"target": {"folder": "/tmp/x$(touch pwned)"}}, "target.folder: '/tmp/x$(touch pwned)' is not a plain path"),
        ({"target": {"folder": "/tmp/a\nb"}}, "target.folder:"),
    ],
)
def test_bad_specs_name_the_field_and_record_nothing(tmp_path, db_url, doc, expected):
    spec = write_spec(tmp_path, **doc)
    proc = wirewise("campaign", "submit", str(spec), "--topology-file", str(NVL_QUADS), "--db", db_url,
                    cwd=tmp_path, env={"WIREWISE_RUNS": str(tmp_path / "runs")})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "pwned").exists()
    stored = Path(db_url.removeprefix("sqlite:///"))  # a refused spec may leave no database at all
    assert not stored.exists() or wirewise_json("db", "info", "--db", db_url)["rows"]["campaigns"] == 0


def test_unreadable_and_malformed_specs(tmp_path):
    missing = wirewise("campaign", "plan", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "cannot read campaign spec" in missing.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    proc = wirewise("campaign", "plan", str(broken))
    assert proc.returncode == 2 and "not valid YAML" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_multi_node_tasks_are_one_element_each(tmp_path):
    """nodes: 2 runs every task as its own job on two nodes, one supervisor per node."""
    spec = write_spec(tmp_path, axes={"gpus": [4], "repeats": 3}, target={"executor": "slurm", "nodes": 2, "tasks_per_element": 8})
    report = wirewise_json("campaign", "submit", str(spec), "--topology-file", str(NVL_QUADS), "--dry-run")
    assert report["tasks"] == 3 and report["bundles"] == 3
    parameters = report["parameters"]
    assert parameters["nodes"] == 2 and parameters["tasks_per_node"] == 1 and parameters["gpus_per_node"] == 8
    assert parameters["slurm_exclusive"] is True and parameters["mem_gb"] == 0
    assert all(t["nodes"] == 2 for t in plan(spec)["tasks"])
