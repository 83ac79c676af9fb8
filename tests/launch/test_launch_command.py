"""`wirewise launch --dry-run`: what it reads from the job's environment, the GPUs it picks, the
strategy and the configuration it writes, the command it would become, and the one-line
refusals. The command runs as a process where its output and exit code are the point; the
rest calls the same functions in-process (advise_job, plan_launch: a process costs a second or
more on two cores). The runs themselves are in test_example.py (two CPU ranks) and
test_launch_slurm.py (through srun on the test cluster).

No GPU exists here: where a GPU node is the point, NVML is the fake module of
tests/report/fake_nvml (one H200 NVL quad, live), or the ranks are CPU ranks standing in for
GPUs placed on a saved wiring (as on the test cluster's fake GPUs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import wirewise
from tests.launch.conftest import DDP_ON_TWO_CPU_RANKS, FSDP_ON_TWO_GPUS, fake_gpu_node, launcher_config_of, no_slurm
from tests.topology.common import NVL_QUADS_NAMED as NVL_QUADS  # the GPU model named: busbw and fit known
from wirewise.errors import UserError
from wirewise.orchestrator.launch.advice import advise_job
from wirewise.orchestrator.launch.command import plan_launch

# Everything a shell would act on, if one were in the way.
TRICKY = ["a b", ";", "$(touch canary)", '"quoted"', "it's", "*", "--gpus", "\\n"]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text("print('training')\n")
    return path


def launch_json(*args: str, env: dict | None = None, cwd: Path | None = None) -> dict:
    """`wirewise launch --dry-run --json ARGS` (ARGS end with `-- SCRIPT ...`)."""
    proc = wirewise("launch", "--dry-run", "--json", *args, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def refused(*args: str, env: dict | None = None, cwd: Path | None = None) -> str:
    """The one line on stderr of a launch that exits 2."""
    proc = wirewise("launch", *args, env=env, cwd=cwd)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wirewise: error: "), proc.stderr
    return lines[0]


def planned(script: Path, tmp_path: Path, env: dict, **options) -> dict:
    """advise_job then plan_launch, in-process: the `--dry-run --json` object."""
    advice = advise_job(db=f"sqlite:///{tmp_path / 'none.db'}", env=env, option="--strategy", **options)
    return plan_launch(advice, [str(script)], f"sqlite:///{tmp_path / 'none.db'}", env).to_dict()


def test_a_workstation_without_gpus_gets_cpu_ranks_running_ddp(tmp_path, script):
    found = launch_json("--model", "tiny-mistral", "--gpus", "2", "--", str(script), *TRICKY,
                        env=no_slurm(WIREWISE_RUNS=str(tmp_path / "runs")), cwd=tmp_path)
    assert (found["strategy"], found["chosen_by"], found["device"]) == ("ddp", "advice", "cpu")
    assert (found["processes_per_node"], found["num_processes"], found["gpus"]) == (2, 2, [])
    assert found["accelerate_config"] == DDP_ON_TWO_CPU_RANKS
    # the command it would become: accelerate launch with the config, the script and its arguments as typed
    run_dir = Path(found["run_dir"])
    assert found["command"][-len(TRICKY) - 1:] == [str(script), *TRICKY]
    assert found["command"][1:4] == ["-P", "-m", "accelerate.commands.launch"]
    assert found["command"][4:8] == ["--config_file", str(run_dir / "accelerate.yaml"), "--main_process_port", "0"]
    assert found["command"] == found["node_command"]
    assert found["env"]["ACCELERATE_USE_CPU"] == "true" and found["env"]["WIREWISE_STRATEGY"] == "ddp"
    assert found["env"]["WIREWISE_LAUNCH_DIR"] == str(run_dir)
    default = Path(os.environ["XDG_DATA_HOME"]) / "wirewise" / "wirewise.db"  # the data folder's (tests/conftest.py)
    assert found["env"]["WIREWISE_DB"] == f"sqlite:///{default}"  # absolute: every node opens it
    assert run_dir.parent == tmp_path / "runs" and not (tmp_path / "runs").exists()  # a dry run writes nothing
    assert not (tmp_path / "wirewise.db").exists() and not (tmp_path / "canary").exists()


def test_a_dry_run_prints_the_choice_the_configuration_and_the_command(tmp_path, script):
    proc = wirewise("launch", "--model", "tiny-mistral", "--gpus", "2", "--dry-run", "--", str(script), "a b",
                    env=no_slurm(WIREWISE_RUNS=str(tmp_path / "runs")), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("wirewise launch: ddp on 2 CPU rank(s) of ")
    assert "- no GPU here: 2 CPU rank(s) per node (gloo)" in out
    assert "distributed_type: MULTI_GPU" in out and "use_cpu: true" in out
    assert "ACCELERATE_USE_CPU=true" in out
    assert "\ncommand: " in out and out.rstrip().endswith(f"{script} 'a b'")


def test_strategies_that_do_not_run_on_cpu_ranks_are_refused_by_name(tmp_path, script):
    env = no_slurm(WIREWISE_RUNS=str(tmp_path / "runs"))
    line = refused("--model", "tiny-mistral", "--strategy", "fsdp", "--gpus", "2", "--", str(script), env=env, cwd=tmp_path)
    assert "--strategy fsdp: accelerate's FSDP plugin does not shard on CPU ranks" in line
    line = refused("--model", "tiny-mistral", "--strategy", "zero2", "--gpus", "2", "--", str(script), env=env, cwd=tmp_path)
    assert "--strategy zero2: accelerate's DeepSpeed plugin does not run on CPU ranks" in line

def test_an_advised_strategy_cpu_ranks_cannot_run_falls_back_to_ddp(gpu_node, tmp_path, script):
    """On the quad's fast wire the advice is fsdp; CPU ranks standing in for those GPUs run ddp."""
    found = planned(script, tmp_path, no_slurm(), model="mistral-7b", gpus=2, cpu=True)
    assert (found["advised"], found["strategy"], found["device"]) == ("fsdp", "ddp", "cpu")
    assert any(r.startswith("ddp instead of fsdp: accelerate's FSDP plugin does not shard") for r in found["reasons"])
    assert [row["strategy"] for row in found["strategies"] if row["runs_here"]] == ["ddp"]


@pytest.mark.parametrize("options, message", [
    ({"model": "tiny-mistral", "strategy": "zero9"}, "--strategy 'zero9': not a strategy (use auto or one of ddp, fsdp"),
    ({"model": "tiny-mistral", "params": 7_000_000_000}, "give the model: --model NAME"),
    ({"strategy": "ddp"}, "give the model: --model NAME"),
    ({"model": "no-such-model"}, "unknown model 'no-such-model'"),
    ({"model": "tiny-mistral", "gpus": 0}, "--gpus 0: give at least 1 GPU, at most 65536"),
    ({"params": 0}, "--params 0: give the model's parameter count"),
])
def test_bad_input_says_how_to_fix_it(tmp_path, options, message):
    with pytest.raises(UserError) as raised:
        advise_job(db=f"sqlite:///{tmp_path / 'none.db'}", env=no_slurm(), option="--strategy", **options)
    assert message in str(raised.value)


@pytest.mark.parametrize("args, message", [
    (["--params", "seven"], "--params 'seven': give the parameter count as a number"),
    (["--model", "tiny-mistral", "--json"], "--json goes with --dry-run"),
    (["--model", "tiny-mistral", "--strategy", "zero9"], "--strategy 'zero9': not a strategy"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, script, args, message):
    assert message in refused(*args, "--", str(script), env=no_slurm(), cwd=tmp_path)


def test_the_script_must_be_what_accelerate_launch_takes(tmp_path, script, monkeypatch):
    monkeypatch.setenv("WIREWISE_RUNS", str(tmp_path / "runs"))
    advice = advise_job("tiny-mistral", db=f"sqlite:///{tmp_path / 'none.db'}", env=no_slurm())
    with pytest.raises(UserError, match="give the training script after `--`"):
        plan_launch(advice, [], None, no_slurm())
    with pytest.raises(UserError, match="'python' is not a file: .*not `python train.py`"):
        plan_launch(advice, ["python", str(script)], None, no_slurm())
    found = plan_launch(advice, ["-m", "my_package.train", "--lr", "1"], None, no_slurm())
    assert found.command[-4:] == ["--module", "my_package.train", "--lr", "1"]
    assert not (tmp_path / "runs").exists()


def test_a_gpu_node_gets_its_best_set_and_the_advised_strategys_configuration(tmp_path, script):
    """The fake NVML's H200 NVL quad, the job holding GPUs 1-3: two of them, and the advice on a
    fast wire (fsdp) with the launcher config its descriptor renders."""
    env = fake_gpu_node(CUDA_VISIBLE_DEVICES="1,2,3", WIREWISE_RUNS=str(tmp_path / "runs"))
    found = launch_json("--model", "mistral-7b", "--seq-len", "2048", "--gpus", "2", "--", str(script), env=env, cwd=tmp_path)
    assert (found["device"], found["gpus"], found["cuda_visible_devices"]) == ("cuda", [1, 2], "1,2")
    assert found["placement"]["free"] == [1, 2, 3] and found["placement"]["policy"] == "packed"
    assert found["placement"]["free_source"] == "the job's GPUs (CUDA_VISIBLE_DEVICES)"
    assert (found["advised"], found["strategy"]) == ("fsdp", "fsdp")
    assert found["env"]["CUDA_VISIBLE_DEVICES"] == "1,2" and "ACCELERATE_USE_CPU" not in found["env"]
    assert found["accelerate_config"] == FSDP_ON_TWO_GPUS
    rows = {row["strategy"]: row for row in found["strategies"]}
    assert rows["ddp"]["fits"] and rows["fsdp"]["memory_gb"] < rows["ddp"]["memory_gb"]
    assert all(row["tokens_basis"] == "model" and row["tokens_per_s"] for row in rows.values())
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", ["ddp", "zero1", "zero2", "zero3"])
def test_a_named_strategy_gets_its_descriptors_configuration(gpu_node, tmp_path, script, name):
    env = no_slurm(CUDA_VISIBLE_DEVICES="1,2,3")
    found = planned(script, tmp_path, env, model="mistral-7b", gpus=2, strategy=name)
    assert (found["strategy"], found["chosen_by"], found["advised"]) == (name, "--strategy", "fsdp")
    assert any(f"{name} as --strategy says (the advice: fsdp)" in reason for reason in found["reasons"])
    if name == "ddp":
        expected = launcher_config_of("MULTI_GPU", 2, gpu_ids="all", mixed_precision="bf16")
    else:  # DeepSpeed reads its own file, which names the precision: the launcher config names none
        ds_file = str(Path(found["run_dir"]) / "deepspeed.json")
        expected = launcher_config_of("DEEPSPEED", 2, deepspeed_config={"deepspeed_config_file": ds_file, "zero3_init_flag": False})
    assert found["accelerate_config"] == expected
    if name != "ddp":
        ds = found["deepspeed_config"]
        assert ds["zero_optimization"]["stage"] == int(name[-1]) and ds["bf16"] == {"enabled": True}
        assert ds["train_micro_batch_size_per_gpu"] == "auto"  # the script's own batch fills it
        assert "mixed_precision" not in found["accelerate_config"]  # accelerate refuses it beside a DeepSpeed file
    else:
        assert found["deepspeed_config"] is None


def test_a_job_holding_gpus_of_two_quads_gets_a_pair_inside_one(tmp_path, script, monkeypatch):
    """A saved two-quad wiring, Slurm's fake GPUs 0,1,4,5 (no driver: CPU ranks stand in)."""
    monkeypatch.setenv("WIREWISE_RUNS", str(tmp_path / "runs"))
    env = no_slurm(CUDA_VISIBLE_DEVICES="0,1,4,5")
    found = planned(script, tmp_path, env, model="tiny-mistral", gpus=2, topology_file=NVL_QUADS)
    assert found["placement"]["gpus"] == [0, 1] and found["placement"]["predicted_busbw_gbs"] == 120.0
    assert found["fabric"] == "nvlink-groups" and found["fingerprint"].startswith("3d646ba4")
    assert (found["device"], found["gpus"], found["assigned_gpus"]) == ("cpu", [], [0, 1])
    assert any("CPU rank(s) (gloo) stand in for GPUs 0,1" in r for r in found["reasons"])
    every = planned(script, tmp_path, env, model="tiny-mistral", topology_file=NVL_QUADS)
    assert every["assigned_gpus"] == [0, 1, 4, 5] and every["placement"]["policy"] == "all"
    assert every["processes_per_node"] == 4
    with pytest.raises(UserError, match=r"--gpus 6: this job has 4 GPU\(s\) here \(0,1,4,5: the job's GPUs"):
        planned(script, tmp_path, env, model="tiny-mistral", gpus=6, topology_file=NVL_QUADS)


def test_a_model_known_by_its_parameter_count_alone(gpu_node, tmp_path, script):
    found = planned(script, tmp_path, no_slurm(), params=7_240_000_000, gpus=2, cpu=True)
    assert (found["model"], found["params"], found["device"]) == ("params:7240000000", 7_240_000_000, "cpu")
    ddp = next(row for row in found["strategies"] if row["strategy"] == "ddp")
    assert ddp["memory_gb"] == pytest.approx(12 * 7.24, abs=0.01)  # model states only (the article's 12 B/param)


@pytest.mark.slurm
def test_in_a_three_node_allocation_it_becomes_one_srun_task_per_node(slurm_cluster, tmp_path, script):
    """The environment of a batch script on the first of three nodes (no job runs: a dry run).
    srun's options are spelt out, not taken from the job's SLURM_NTASKS; the network between the
    nodes is not modelled, so the advice takes the slow-wire rules."""
    env = fake_gpu_node(
        SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="gpu[01-02],cpu7", SLURM_NODEID="0", SLURM_JOB_CPUS_PER_NODE="16(x2),8",
        SLURM_NTASKS="24", CUDA_VISIBLE_DEVICES="0,1,2,3", SLURM_JOB_GPUS="0,1,2,3", WIREWISE_RUNS=str(tmp_path / "runs"),
    )
    found = launch_json("--model", "mistral-7b", "--", str(script), env=env, cwd=tmp_path)
    run_dir = found["run_dir"]
    assert found["nodes"] == ["gpu01", "gpu02", "cpu7"] and found["num_processes"] == 12
    assert found["command"][:6] == ["srun", "--nodes=3", "--ntasks=3", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
                                    "--cpus-per-task=8"]
    assert found["command"][7:] == ["-P", "-m", "wirewise.orchestrator.launch.step", run_dir]
    node = found["node_command"]
    assert node[node.index("--machine_rank") + 1] == "0" and node[node.index("--main_process_ip") + 1] == "gpu01"
    assert found["accelerate_config"]["num_machines"] == 3 and found["accelerate_config"]["num_processes"] == 12
    assert found["reasons"][-2].startswith("strategy: 3 nodes: the network between them is not modelled")
    assert found["advised"] == "ddp" and "slow wire (unknown busbw)" in found["reasons"][-1]
    assert "4242" in run_dir


def test_the_per_node_step_refuses_to_run_outside_an_srun_step(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "wirewise.orchestrator.launch.step", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, **no_slurm()})
    assert proc.returncode == 2 and proc.stderr.startswith("wirewise: error:"), proc.stderr


# -- careless and hostile environments and scripts (issue 29) ------------------------------------
def test_a_script_named_like_an_option_reaches_accelerate_as_a_file(tmp_path):
    """`-- --debug a`: a file named --debug is the script; accelerate must not take it for its own
    --debug option, so it goes as ./--debug. A module name is a dotted name, never an option."""
    (tmp_path / "--debug").write_text("print('training')\n")
    found = launch_json("--model", "tiny-mistral", "--cpu", "--gpus", "2", "--", "--debug", "a",
                        env=no_slurm(WIREWISE_RUNS=str(tmp_path / "runs")), cwd=tmp_path)
    assert found["node_command"][-2:] == ["./--debug", "a"] and "--debug" not in found["node_command"][:-2]
    assert "-m '--debug'" in refused("--model", "tiny-mistral", "--cpu", "--", "-m", "--debug", env=no_slurm(), cwd=tmp_path)


@pytest.mark.parametrize("variables, said", [
    ({"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "n1", "SLURM_NODEID": "abc"}, "SLURM_NODEID='abc'"),
    ({"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "n1", "SLURM_NODEID": "-1"}, "SLURM_NODEID='-1'"),
    ({"WORLD_SIZE": "99999999999999999999", "LOCAL_WORLD_SIZE": "1"}, "WORLD_SIZE='99999999999999999999'"),
    ({"WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "٤"}, "LOCAL_WORLD_SIZE='٤'"),
    ({"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "8"}, "LOCAL_WORLD_SIZE=8 is more than WORLD_SIZE=2"),
    ({"SLURM_JOB_ID": "x/../../../escaped", "SLURM_JOB_NODELIST": "n1"}, "SLURM_JOB_ID='x/../../../escaped'"),
    ({"SLURM_JOB_ID": "..", "SLURM_JOB_NODELIST": "n1"}, "SLURM_JOB_ID='..'"),
])
def test_a_malformed_scheduler_variable_is_one_line_naming_it(tmp_path, script, variables, said):
    runs = tmp_path / "deep" / "runs"
    for dry in (["--dry-run"], []):
        line = refused(*dry, "--model", "tiny-mistral", "--cpu", "--gpus", "2", "--", str(script),
                       env=no_slurm(WIREWISE_RUNS=str(runs), **variables), cwd=tmp_path)
        assert said in line, line
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_dir()) == [], "a folder was made"


def test_ranks_across_machines_without_slurm_are_refused_not_started_on_a_placeholder_port(tmp_path, script):
    """WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 outside Slurm: two machines no scheduler names. The dry run
    showed a placeholder port; started, accelerate was exec'd with it."""
    env = no_slurm(WIREWISE_RUNS=str(tmp_path / "runs"), WORLD_SIZE="4", LOCAL_WORLD_SIZE="2")
    for dry in (["--dry-run"], []):
        line = refused(*dry, "--model", "tiny-mistral", "--cpu", "--gpus", "2", "--", str(script), env=env, cwd=tmp_path)
        assert "WORLD_SIZE=4 and LOCAL_WORLD_SIZE=2" in line and "2 machines" in line, line
    assert not (tmp_path / "runs").exists()
