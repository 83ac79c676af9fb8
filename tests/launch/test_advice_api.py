"""`wirewise.advice()`, the Python API: torch-free at import, a typed answer, its configuration as
a dict and as files, and, inside a launched job, the job it is part of."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import wirewise
from tests.launch.conftest import no_slurm
from tests.topology.common import NVL_QUADS
from wirewise.errors import UserError
from wirewise.launch_file import LAUNCH_FILE, LaunchFile
from wirewise.orchestrator.launch.advice import Advice, StrategyAdvice
from wirewise.topology import read_topology


def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'none.db'}"


def test_a_script_asks_before_torch_or_the_control_plane_is_imported(tmp_path):
    code = (
        "import sys, wirewise\n"
        "before = sorted(m for m in sys.modules if m.startswith('wirewise.orchestrator'))\n"
        f"advice = wirewise.advice(model='tiny-mistral', batch_size=2, seq_len=16, gpus=2, db={db(tmp_path)!r})\n"
        "print(before, type(advice).__name__, advice.strategy, advice.num_processes,\n"
        "      sorted(m for m in ('torch', 'transformers', 'accelerate', 'deepspeed') if m in sys.modules))\n"
    )
    env = {"PATH": "/usr/bin:/bin", **no_slurm()}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "Advice", "ddp", "2", "[]"]


def test_the_answer_is_typed_and_its_configuration_a_dict_and_files(gpu_node, tmp_path):
    advice = wirewise.advice(model="mistral-7b", batch_size=1, seq_len=2048, gpus=2, strategy="zero3", db=db(tmp_path),
                             env=no_slurm())
    assert wirewise.Advice is Advice and isinstance(advice, Advice)
    assert all(isinstance(row, StrategyAdvice) for row in advice.strategies)
    assert (advice.strategy, advice.chosen_by, advice.advised, advice.device) == ("zero3", "strategy=", "fsdp", "cuda")
    assert [row.strategy for row in advice.strategies] == ["ddp", "zero1", "zero2", "zero3", "fsdp"]
    row = advice.row()
    assert row.strategy == "zero3" and row.tokens_basis == "model" and row.memory_basis == "model" and row.runs_here
    assert advice.accelerate_config["distributed_type"] == "DEEPSPEED"
    assert advice.accelerate_config["deepspeed_config"]["deepspeed_config_file"] == "deepspeed.json"

    path = advice.write_config(tmp_path / "run")
    assert path == tmp_path / "run" / "accelerate.yaml"
    written = yaml.safe_load(path.read_text())
    assert written == advice.config_in(tmp_path / "run")
    ds_file = Path(written["deepspeed_config"]["deepspeed_config_file"])
    assert ds_file == (tmp_path / "run" / "deepspeed.json").resolve()
    assert json.loads(ds_file.read_text()) == advice.deepspeed_config
    assert json.loads(json.dumps(advice.to_dict()))["strategies"][3]["strategy"] == "zero3"


def test_a_job_given_a_strategy_keeps_it_and_auto_asks_afresh(tmp_path):
    given = no_slurm(WIREWISE_STRATEGY="ddp")
    kept = wirewise.advice(model="tiny-mistral", gpus=2, db=db(tmp_path), env=given)
    assert (kept.strategy, kept.chosen_by) == ("ddp", "WIREWISE_STRATEGY (the strategy this job was given)")
    fresh = wirewise.advice(model="tiny-mistral", gpus=2, strategy="auto", db=db(tmp_path), env=given)
    assert (fresh.strategy, fresh.chosen_by) == ("ddp", "advice")
    with pytest.raises(UserError, match="WIREWISE_STRATEGY \\(the strategy this job was given\\) 'zero9': not a strategy"):
        wirewise.advice(model="tiny-mistral", db=db(tmp_path), env=no_slurm(WIREWISE_STRATEGY="zero9"))


def test_inside_the_ranks_of_a_launch_the_advice_is_the_launchs_job(tmp_path):
    """torchrun's variables and the launch file: the GPUs, nodes and wiring `wirewise launch`
    chose (GPUs 4,5 of a two-quad node), without probing or placing again."""
    topo = read_topology(NVL_QUADS)
    launch = LaunchFile(
        model="tiny-mistral", batch_size=2, seq_len=16, strategy="ddp", chosen_by="--strategy", advised="fsdp",
        device="cpu", processes_per_node=2, nodes=["gpu01", "gpu02"], assigned_gpus=[4, 5], placement="packed",
        topology=topo.model_dump(mode="json"), accelerate_config_file=str(tmp_path / "accelerate.yaml"), script=["t.py"],
    )
    (tmp_path / LAUNCH_FILE).write_text(launch.model_dump_json())
    env = no_slurm(WORLD_SIZE="4", LOCAL_WORLD_SIZE="2", WIREWISE_LAUNCH_DIR=str(tmp_path), WIREWISE_STRATEGY="ddp")
    advice = wirewise.advice(model="tiny-mistral", batch_size=2, seq_len=16, db=db(tmp_path), env=env)
    assert (advice.nodes, advice.processes_per_node, advice.num_processes) == (["gpu01", "gpu02"], 2, 4)
    assert (advice.assigned_gpus, advice.device, advice.strategy) == ([4, 5], "cpu", "ddp")
    assert advice.to_dict()["fingerprint"] == topo.fingerprint
    assert advice.accelerate_config["num_machines"] == 2 and advice.accelerate_config["num_processes"] == 4


def test_the_registry_names_each_models_transformer_block():
    """The FSDP unit the launcher config names is the block the built model repeats."""
    pytest.importorskip("transformers")
    from wirewise.jobs.train.models import build_model
    from wirewise.models import MODELS

    for name in ("tiny-mistral", "tiny-dinov2"):
        built = build_model(name, "cpu", None)
        assert tuple(c.__name__ for c in built.layer_classes) == MODELS[name].layer_classes
    families = {entry.family: entry.layer_classes for entry in MODELS.values()}
    assert families == {"mistral": ("MistralDecoderLayer",), "dinov2": ("Dinov2Layer",)}


@pytest.mark.parametrize("given, said", [
    ({"batch_size": "4"}, "batch_size='4': give a whole number"),
    ({"batch_size": 4.5}, "batch_size=4.5: give a whole number"),
    ({"batch_size": True}, "batch_size=True"),
    ({"env": ["SLURM_JOB_ID=1"]}, "env=['SLURM_JOB_ID=1']: give a mapping"),
    ({"env": {"WORLD_SIZE": 4}}, "env={'WORLD_SIZE': 4}"),
    ({"model": None, "params": float("inf")}, "params=inf"),
    ({"model": None, "params": float("nan")}, "params=nan"),
    ({"model": None, "params": 1e300}, "params=1e+300"),
    ({"model": None, "params": 7.5}, "params=7.5"),
    ({"gpu_mem_gb": float("nan")}, "gpu_mem_gb=nan"),
    ({"gpu_mem_gb": "80"}, "gpu_mem_gb='80'"),
    ({"seq_len": 10**30}, "--seq-len 1000000000000000000000000000000"),
    ({"gpus": 2.0}, "gpus=2.0"),
    ({"strategy": 3}, "strategy=3"),
    ({"cpu": "yes"}, "cpu='yes'"),
    ({"model": 7}, "model=7"),
    ({"model": "no-such-model"}, "unknown model 'no-such-model'"),
    ({"batchsize": 4}, "unexpected keyword argument 'batchsize'"),
    ({"env": {"WORLD_SIZE": "99999999999999999999", "LOCAL_WORLD_SIZE": "1"}}, "WORLD_SIZE='99999999999999999999'"),
])
def test_a_bad_argument_is_one_advice_error_a_value_error(tmp_path, given, said):
    """wirewise.advice() from a script: one documented type for whatever its caller can fix
    (issue 29: TypeError, AttributeError and OverflowError came from inside; 4.5 was taken)."""
    import wirewise

    args = {"model": "tiny-mistral", "cpu": True, "db": db(tmp_path), "env": {**no_slurm(), "WIREWISE_RUNS": str(tmp_path)}}
    args.update(given)
    if "WORLD_SIZE" in (given.get("env") or {}) and isinstance(given["env"]["WORLD_SIZE"], str):
        args["env"] = {**no_slurm(), **given["env"]}
    with pytest.raises(wirewise.AdviceError) as raised:
        wirewise.advice(**{k: v for k, v in args.items() if not (k == "model" and v is None)})
    assert isinstance(raised.value, ValueError) and said in str(raised.value) and "\n" not in str(raised.value)


def test_a_whole_float_parameter_count_is_taken(tmp_path):
    import wirewise

    found = wirewise.advice(params=7e9, cpu=True, db=db(tmp_path), env=no_slurm())
    assert found.params == 7_000_000_000 and isinstance(found.params, int)
