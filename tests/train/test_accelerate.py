"""The accelerate engine: rendered configs, and the one accelerate path a CPU can run (DDP).

The CLI offers `--engine accelerate` on GPUs only; FSDP and ZeRO through accelerate run in
tests/gpu/train_check.sh. Here the loop runs it directly (wirewise.jobs.supervise.run_task), which checks
that configs render, the Accelerator is built from them, and the same inventories apply.
"""

from __future__ import annotations

import json

import pytest
import yaml

from wirewise import registry
from wirewise.jobs.supervise import run_task
from wirewise.task import TaskSpec
from wirewise.configs import accelerate_config, deepspeed_config


def test_deepspeed_config_fills_autos_like_accelerate():
    config = deepspeed_config(registry.STRATEGIES["zero3"], micro_batch=4, world_size=8, bf16=True, hidden_size=4096)
    assert config["train_micro_batch_size_per_gpu"] == 4 and config["train_batch_size"] == 32
    assert config["bf16"] == {"enabled": True}
    zero = config["zero_optimization"]
    assert zero["stage"] == 3 and zero["reduce_bucket_size"] == 4096**2
    assert zero["stage3_prefetch_bucket_size"] == int(0.9 * 4096**2)
    assert zero["stage3_param_persistence_threshold"] == 40960
    assert config["zero_allow_untested_optimizer"] is True and "_comment" not in config
    for stage in (1, 2):
        assert deepspeed_config(registry.STRATEGIES[f"zero{stage}"], 1, 2, False, 64)["zero_optimization"]["stage"] == stage


@pytest.mark.parametrize("template", ["ddp", "fsdp", "deepspeed"])
def test_accelerate_templates_render_to_launcher_configs(template):
    fields = {"num_processes": 4, "mixed_precision": "bf16", "layer_classes": "MistralDecoderLayer",
              "deepspeed_config_file": "/runs/x/deepspeed.json"}
    needed = {"ddp": ["num_processes", "mixed_precision"], "fsdp": ["num_processes", "mixed_precision", "layer_classes"],
              "deepspeed": ["num_processes", "deepspeed_config_file"]}[template]
    doc = yaml.safe_load(accelerate_config(template, **{k: fields[k] for k in needed}))
    assert doc["num_processes"] == 4
    assert doc["distributed_type"] == {"ddp": "MULTI_GPU", "fsdp": "FSDP", "deepspeed": "DEEPSPEED"}[template]
    if template == "fsdp":
        assert doc["fsdp_config"]["fsdp_transformer_layer_cls_to_wrap"] == "MistralDecoderLayer"
        assert doc["fsdp_config"]["fsdp_version"] == 2
    with pytest.raises(KeyError):  # a missing field is an error, not a silent ${...}
        accelerate_config(template)


@pytest.mark.slow
def test_accelerate_engine_runs_ddp_on_cpu_ranks(tmp_path):
    params = {"model": "tiny-mistral", "strategy": "ddp", "engine": "accelerate", "micro_batch": 4, "seq_len": 32,
              "steps": 2, "warmup_steps": 1, "lr": 1e-3}
    spec = TaskSpec(workload="train", params=params, nproc_per_node=2, timeout_s=300, env={"HF_HUB_OFFLINE": "1"})
    result = json.loads(run_task(spec, tmp_path / "run").read_text())
    record = result["records"][0]
    assert result["status"] == "ok", record["error"]
    extra = record["extra"]
    assert record["params"]["engine"] == "accelerate" and extra["strategy_impl"] == "accelerate-ddp"
    assert extra["accelerate_distributed_type"] == "DistributedType.MULTI_CPU"  # accelerate's own DDP
    assert extra["losses"][-1] < extra["losses"][0]
    rendered = yaml.safe_load((tmp_path / "run" / "accelerate.yaml").read_text())
    assert rendered["distributed_type"] == "MULTI_GPU" and rendered["num_processes"] == 2
    # the same inventory as native DDP: full fp32 params and grads, two Adam moments
    # tiny-mistral, counted by hand from its config (vocab 512, hidden 64, MLP 128, 2 layers, 4
    # heads, 2 KV heads, untied head): embeddings 32,768 + head 32,768 + 2 x 36,992 per layer +
    # norm 64 = 139,584 parameters; fp32 weights and gradients of 558,336 B each, Adam's two
    # fp32 moments (1,116,672 B) and its 21 fp32 step counters (2 x 9 per layer, embeddings,
    # head, norm: 84 B), per rank
    assert extra["n_params"] == 139_584
    assert extra["param_bytes"] == [558_336] * 2 and extra["grad_bytes"] == [558_336] * 2
    assert extra["optimizer_bytes"] == [1_116_756] * 2
