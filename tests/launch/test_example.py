"""docs/examples/finetune.py, the Trainer example, under `wirewise launch` on two CPU ranks (gloo),
with every strategy that runs as itself on CPU ranks through accelerate: ddp, the advice here.
(FSDP and the ZeRO stages do not: accelerate trains plain DDP for them on CPU ranks, which
test_launch_command.py shows refused; tests/gpu/launch_check.sh runs them on GPUs.)

It checks the configuration the job ran with is the one the advice named (the run folder's
accelerate.yaml, the script's own `wirewise.advice()`, what accelerate built), that the ranks
trained one model together (the loss fell), and that the job's figures reached
`wirewise results --source job`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, wirewise, wirewise_json
from tests.launch.conftest import DDP_ON_TWO_CPU_RANKS, no_slurm

EXAMPLE = ROOT / "docs" / "examples" / "finetune.py"
QUICK = ["--batch-size", "2", "--seq-len", "16", "--steps", "6", "--lr", "3e-3"]  # few steps of the tiny model


def run_example(tmp_path: Path, db_url: str, *launch_args: str, cwd: Path | None = None):
    """`wirewise launch ... -- docs/examples/finetune.py QUICK --report R`: (process, the report, the run folder)."""
    report = tmp_path / "report.json"
    env = no_slurm(WIREWISE_RUNS=str(tmp_path / "runs"), HF_HUB_OFFLINE="1")
    proc = wirewise("launch", "--model", "tiny-mistral", "--batch-size", "2", "--seq-len", "16", "--db", db_url,
                    *launch_args, "--", str(EXAMPLE), *QUICK, "--report", str(report), env=env, cwd=cwd or tmp_path,
                    timeout=600)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    (run_dir,) = (tmp_path / "runs").iterdir()
    return proc, json.loads(report.read_text()), run_dir


@pytest.mark.slow
def test_the_example_runs_with_the_configuration_the_advice_named(tmp_path, db_url):
    proc, seen, run_dir = run_example(tmp_path, db_url, "--gpus", "2")
    assert "wirewise launch: ddp on 2 CPU rank(s)" in proc.stderr and "chosen by advice" in proc.stderr

    ran_with = yaml.safe_load((run_dir / "accelerate.yaml").read_text())
    assert ran_with == DDP_ON_TWO_CPU_RANKS
    assert seen["config_in_run_dir"] == ran_with  # what the script's own wirewise.advice() names
    advice = seen["advice"]
    assert (advice["strategy"], advice["chosen_by"], advice["num_processes"], advice["device"]) == (
        "ddp", "WIREWISE_STRATEGY (the strategy this job was given)", 2, "cpu")
    assert seen["accelerate"]["distributed_type"] == "DistributedType.MULTI_CPU"  # accelerate's own DDP, gloo
    assert (seen["accelerate"]["num_processes"], seen["accelerate"]["backend"]) == (2, "gloo")
    assert seen["losses"][-1] < seen["losses"][0]

    launch = json.loads((run_dir / "launch.json").read_text())
    assert (launch["strategy"], launch["advised"], launch["processes_per_node"]) == ("ddp", "ddp", 2)
    result = json.loads(Path(seen["result_file"]).read_text())
    record = result["records"][0]
    assert Path(seen["result_file"]) == run_dir / "result.json"
    assert (record["source"], record["model"], record["strategy"], record["world_size"]) == ("job", "tiny-mistral", "ddp", 2)
    assert record["extra"]["launch"]["chosen_by"] == "advice" and record["params"]["engine"] == "accelerate"
    assert record["seq_len"] == 16 and record["micro_batch"] == 2 and len(record["peak_mem_bytes"]) == 2
    assert record["tokens_per_s"] == pytest.approx(2 * 2 * 16 / record["step_time_s"], rel=0.01)

    listed = wirewise_json("results", "--source", "job", "--include-cpu", "--db", db_url)
    assert [(row["source"], row["model"], row["strategy"], row["count"]) for row in listed] == [("job", "tiny-mistral", "ddp", 1)]
    assert wirewise_json("collect", str(run_dir), "--db", db_url)["new_records"] == 0  # the job stored it already
