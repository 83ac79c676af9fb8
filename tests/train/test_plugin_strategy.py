"""A sixth strategy added the way the README says, without touching the repository: one file
(docs/examples/wirewise_zero2_overlap.py, ZeRO-2 with DeepSpeed's overlap_comm) and one
entry-point line, installed on PYTHONPATH as an installer would lay it out (a dist-info folder
holding entry_points.txt). Every stage then takes it through the real commands: a campaign plans
it, `estimate` sizes it by its descriptor, `bench train` runs it on two CPU ranks, `report`
draws it; without the plug-in the same name is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, wirewise, wirewise_json
from tests.topology.common import NVL_QUADS
from tests.train.conftest import QUICK, bench_train

PLUGIN = ROOT / "docs" / "examples" / "wirewise_zero2_overlap.py"
NAME = "zero2-overlap"
ONE_LINE = f"{NAME} = wirewise_zero2_overlap:STRATEGY"
# tiny-mistral under DDP on two CPU ranks (counted by hand in tests/train/test_strategies.py)
DDP_HOLDS = {"params": 558_336, "grads": 558_336, "optimizer": 1_116_756}


def install_plugin(folder: Path, *entry_points: str) -> dict[str, str]:
    """The plug-in file and a dist-info with `entry_points` in `folder`: the environment that sees it."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(PLUGIN, folder / PLUGIN.name)
    info = folder / "wirewise_zero2_overlap-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wirewise-zero2-overlap\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[wirewise.strategies]\n" + "\n".join(entry_points) + "\n")
    return {"PYTHONPATH": str(folder)}


def estimate(*args: str, env: dict[str, str] | None = None) -> dict[str, dict]:
    out = wirewise_json("estimate", "-m", "mistral-7b", "--gpus", "4", "--gpu-mem-gb", "80", *args, env=env)
    return {row["strategy"]: row for row in out["strategies"]}


@pytest.mark.slow
def test_a_plugin_strategy_is_planned_estimated_run_and_drawn(tmp_path, train_env, db_url):
    plugin = install_plugin(tmp_path / "plugins", ONE_LINE)
    refused = wirewise("estimate", "-m", "mistral-7b", "--gpus", "4", "--strategy", NAME)
    assert refused.returncode == 2 and refused.stderr == f"wirewise: error: unknown strategy {NAME!r} " \
        "(use one of ddp, zero1, zero2, zero3, fsdp)\n"

    # estimated: by its descriptor's ZeRO stage (2 + 14/N bytes per parameter), in its place on the dial
    rows = estimate("--accounting", "zero", env=plugin)
    assert list(rows) == ["ddp", "zero1", "zero2", NAME, "zero3", "fsdp"]
    assert rows[NAME]["model_state_gb"] == rows["zero2"]["model_state_gb"] == pytest.approx(7.2417 * (2 + 14 / 4), abs=0.01)

    # planned by a campaign
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "plug", "workloads": [
        {"train": {"models": ["tiny-mistral"], "strategies": ["zero2", NAME], "steps": 1}, "axes": {"gpus": [2]}}]}))
    tasks = wirewise_json("campaign", "plan", str(spec), "--topology-file", str(NVL_QUADS), env=plugin)["tasks"]
    assert sorted(t["params"]["strategy"] for t in tasks) == ["zero2", NAME]

    # run on two CPU ranks: its own DeepSpeed settings, and it holds what its ZeRO stage shards
    code, record, err = bench_train("--model", "tiny-mistral", "--strategy", NAME, *QUICK, "--topology-file",
                                    str(NVL_QUADS), env={**train_env, **plugin}, db=db_url)
    assert code == 0 and record["status"] == "ok", err
    extra = record["extra"]
    zero = extra["framework_config"]["zero_optimization"]
    assert (zero["stage"], zero["overlap_comm"], zero["contiguous_gradients"]) == (2, True, True)
    assert extra["losses"][-1] < extra["losses"][0]
    for rank in range(2):
        assert extra["param_bytes"][rank] == DDP_HOLDS["params"]  # ZeRO-2 keeps whole parameters
        assert extra["grad_bytes"][rank] < 0.9 * DDP_HOLDS["grads"]
        assert extra["optimizer_bytes"][rank] < 0.8 * DDP_HOLDS["optimizer"]

    # drawn: in the strategy figure under its label; without the plug-in, the stored run under its name
    for env, tick in ((plugin, "ZeRO-2 overlap"), (None, NAME)):
        out = wirewise_json("report", "--out", str(tmp_path / f"report-{tick}"), "--include-cpu", "--db", db_url, env=env)
        [figure] = [f for f in out["figures"] if f["name"] == "strategies-tiny-mistral"]
        throughput = figure["panels"][0]
        assert throughput["ticks"] == [tick] and throughput["series"][0]["x"] == [NAME]
        assert throughput["series"][0]["y"][0] == pytest.approx(record["tokens_per_s"])


@pytest.mark.parametrize(("line", "message"), [
    ("broken = wirewise_no_such_module:STRATEGY", "strategy plug-in 'broken' (wirewise_no_such_module:STRATEGY, "
     "entry point group wirewise.strategies) does not load: ModuleNotFoundError"),
    ("zero2-base = wirewise_zero2_overlap:reduce_scatter", "is a Traffic, not a wirewise.strategy.StrategySpec"),
    ("overlapped = wirewise_zero2_overlap:STRATEGY", "describes 'zero2-overlap': name the entry point after its strategy"),
    ("zero2 = wirewise_zero2_overlap:ZERO2", "'zero2' is already a strategy; give the plug-in its own name"),
])
def test_a_bad_plugin_is_one_line_and_exit_2(tmp_path, line, message):
    plugin = install_plugin(tmp_path / "plugins", line)
    proc = wirewise("estimate", "-m", "mistral-7b", "--gpus", "4", env=plugin)
    assert proc.returncode == 2 and proc.stderr.startswith("wirewise: error: ") and message in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1
    # checking a built-in name reads no plug-in, so a broken one does not stand in the way of a plan
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "builtin", "workloads": [
        {"train": {"models": ["tiny-mistral"], "strategies": ["fsdp"], "steps": 1}, "axes": {"gpus": [2]}}]}))
    tasks = wirewise_json("campaign", "plan", str(spec), "--topology-file", str(NVL_QUADS), env=plugin)["tasks"]
    assert [t["params"]["strategy"] for t in tasks] == ["fsdp"]
