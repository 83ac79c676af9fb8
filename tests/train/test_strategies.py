"""Every strategy trains both tiny models; the sharding dial shows in what each rank holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirewise import registry
from tests.train.conftest import QUICK, bench_train

pytestmark = pytest.mark.slow

MIB = 2**20
STRATEGIES = tuple(registry.STRATEGIES.built_in)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("model", ["tiny-mistral", "tiny-dinov2"])
def test_strategy_trains_with_falling_loss(model, strategy, train_env, db_url):
    code, record, err = bench_train("--model", model, "--strategy", strategy, *QUICK, env=train_env, db=db_url)
    assert code == 0 and record, err
    assert record["status"] == "ok", record["error"]
    assert (record["model"], record["strategy"], record["world_size"]) == (model, strategy, 2)
    losses = record["extra"]["losses"]
    assert len(losses) == 3 and losses[-1] < losses[0], losses
    assert record["step_time_s"] > 0 and record["samples_per_s"] == pytest.approx(8 / record["step_time_s"])
    if model == "tiny-mistral":
        assert record["tokens_per_s"] == pytest.approx(8 * 32 / record["step_time_s"])
    else:
        assert record["tokens_per_s"] is None  # a classifier reports samples/s only
    for key in ("peak_mem_bytes", "model_state_bytes"):
        assert len(record[key]) == 2 and all(v > 0 for v in record[key]), key
    extra = record["extra"]
    if (model, strategy) == ("tiny-mistral", "ddp"):
        # Counted by hand from the config (vocab 512, hidden 64, MLP 128, 2 layers, 4 heads, 2 KV
        # heads, untied head): embeddings 32,768 + head 32,768 + 2 x 36,992 per layer + norm 64
        # = 139,584 parameters; fp32 on CPU: 558,336 B of weights, as many of gradients, and
        # 1,116,672 B of Adam moments on every rank, plus Adam's step counter, one fp32 scalar per
        # parameter tensor (21: 2 x 9 per layer, embeddings, head, norm), 84 B.
        assert extra["n_params"] == 139_584
        assert extra["param_bytes"] == [558_336] * 2 and extra["grad_bytes"] == [558_336] * 2
        assert extra["optimizer_bytes"] == [1_116_756] * 2
        assert record["model_state_bytes"] == [2_233_428] * 2
    assert extra["precision"] == "fp32" and record["mfu"] is None  # CPU: fp32, no MFU
    assert record["versions"]["torch"]


# A Mistral-style config whose states dwarf DeepSpeed's buckets and the gradients still waiting
# to be reduced: 12.3M parameters, of which embeddings and head are 0.3M.
DIAL_CONFIG = dict(
    model_type="mistral", architectures=["MistralForCausalLM"], vocab_size=256, hidden_size=512,
    intermediate_size=1536, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
    max_position_embeddings=256, sliding_window=None, tie_word_embeddings=False,
)


def test_sharding_dial_orders_what_each_rank_holds(tmp_path: Path, train_env, db_url):
    """ddp > zero1 > zero2 > zero3 ~ fsdp in model-state bytes per rank, and each stop sheds what
    its descriptor claims: ZeRO-1 the optimizer state, ZeRO-2 also gradients, ZeRO-3/FSDP also
    parameters."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(DIAL_CONFIG))
    held = {}
    for strategy in STRATEGIES:
        code, record, err = bench_train(
            "--model", str(config), "--strategy", strategy, "--nproc", "2", "--batch-size", "2", "--seq-len", "16",
            "--steps", "1", "--warmup-steps", "1", env=train_env, db=db_url,
        )
        assert code == 0 and record["status"] == "ok", err
        extra = record["extra"]
        held[strategy] = [
            dict(total=t, params=p, grads=g, optim=o)
            for t, p, g, o in zip(record["model_state_bytes"], extra["param_bytes"], extra["grad_bytes"], extra["optimizer_bytes"])
        ]
    for rank in range(2):
        at = {s: held[s][rank] for s in STRATEGIES}
        summary = {s: {k: round(v / MIB, 1) for k, v in at[s].items()} for s in STRATEGIES}
        # the dial, in total
        assert at["ddp"]["total"] > at["zero1"]["total"] > at["zero2"]["total"] > at["zero3"]["total"], summary
        assert at["fsdp"]["total"] < at["zero2"]["total"], summary
        assert 0.6 < at["zero3"]["total"] / at["fsdp"]["total"] < 1.5, summary  # same sharding, other bookkeeping
        full = at["ddp"]
        # each stop sheds what its descriptor says it shards (wirewise.registry.STRATEGIES), no more
        for strategy in STRATEGIES:
            shards, mine = registry.STRATEGIES[strategy].shards, at[strategy]
            if "params" in shards:  # 1/2 on two ranks, plus small unsharded ones
                assert mine["params"] < 0.55 * full["params"], (strategy, summary)
            else:
                assert mine["params"] == full["params"], (strategy, summary)
            if "grads" in shards:
                assert mine["grads"] < 0.6 * full["grads"], (strategy, summary)
            else:
                assert mine["grads"] >= full["grads"], (strategy, summary)
            if "optimizer" in shards:  # DeepSpeed adds an fp32 master partition
                assert mine["optim"] < 0.8 * full["optim"], (strategy, summary)
