"""Every strategy trains a Mistral-style model and the image model; the sharding dial shows in
what each rank holds.

Each run is two real rank processes (gloo), and each pays ~5 s of CPU importing torch and
transformers: the Mistral-style runs are made once per module (mistral_run) and read by both
the falling-loss and the dial test. The image model trains with ddp, zero3 and fsdp, the
strategies whose wrapping depends on the model (ZeRO-3 gathers parameters module by module,
FSDP wraps its layer class); ZeRO-1/2 shard optimizer state and gradients the same way for
any model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirewise import registry
from tests.train.conftest import QUICK, bench_train, train_environment

pytestmark = pytest.mark.slow

MIB = 2**20
STRATEGIES = tuple(registry.STRATEGIES.built_in)
IMAGE_STRATEGIES = ("ddp", "zero3", "fsdp")

# A Mistral-style config whose states dwarf DeepSpeed's buckets and the gradients still waiting
# to be reduced, so the dial shows: 12.3M parameters, of which embeddings and head are 0.3M.
DIAL_CONFIG = dict(
    model_type="mistral", architectures=["MistralForCausalLM"], vocab_size=256, hidden_size=512,
    intermediate_size=1536, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
    max_position_embeddings=256, sliding_window=None, tie_word_embeddings=False,
)


class MistralRuns:
    """strategy -> (exit code, record, stderr) of QUICK training of DIAL_CONFIG, each run once."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.config = folder, str(folder / "config.json")
        Path(self.config).write_text(json.dumps(DIAL_CONFIG))
        self.runs: dict[str, tuple] = {}

    def __call__(self, strategy: str) -> tuple:
        if strategy not in self.runs:
            self.runs[strategy] = bench_train("--model", self.config, "--strategy", strategy, *QUICK,
                                              env=train_environment(self.folder), db=f"sqlite:///{self.folder / 'wirewise.db'}")
        return self.runs[strategy]


@pytest.fixture(scope="module")
def mistral_run(tmp_path_factory) -> MistralRuns:
    return MistralRuns(tmp_path_factory.mktemp("strategies"))


def check_trained(code, record, err, model: str, strategy: str) -> None:
    assert code == 0 and record, err
    assert record["status"] == "ok", record["error"]
    assert (record["model"], record["strategy"], record["world_size"]) == (model, strategy, 2)
    losses = record["extra"]["losses"]
    assert len(losses) == 3 and losses[-1] < losses[0], losses
    assert record["step_time_s"] > 0 and record["samples_per_s"] == pytest.approx(8 / record["step_time_s"])
    for key in ("peak_mem_bytes", "model_state_bytes"):
        assert len(record[key]) == 2 and all(v > 0 for v in record[key]), key
    assert record["extra"]["precision"] == "fp32" and record["mfu"] is None  # CPU: fp32, no MFU
    assert record["versions"]["torch"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_strategy_trains_a_language_model_with_falling_loss(strategy, mistral_run):
    code, record, err = mistral_run(strategy)
    check_trained(code, record, err, mistral_run.config, strategy)
    assert record["tokens_per_s"] == pytest.approx(8 * 32 / record["step_time_s"])
    if strategy == "ddp":
        # Counted by hand from DIAL_CONFIG (vocab 256, hidden 512, MLP 1536, 4 layers, 8 heads of
        # 64, 2 KV heads, untied head): per layer q 262,144 + k 65,536 + v 65,536 + o 262,144 +
        # gate/up/down 3 x 786,432 + 2 norms 1,024 = 3,015,680; x 4 + embeddings 131,072 + head
        # 131,072 + norm 512 = 12,325,376 parameters. fp32 on CPU: 49,301,504 B of weights, as
        # many of gradients, and twice that of Adam moments on every rank, plus Adam's step
        # counter, one fp32 scalar per parameter tensor (39: 9 per layer, embeddings, head, norm), 156 B.
        extra = record["extra"]
        assert extra["n_params"] == 12_325_376
        assert extra["param_bytes"] == [49_301_504] * 2 and extra["grad_bytes"] == [49_301_504] * 2
        assert extra["optimizer_bytes"] == [98_603_164] * 2
        assert record["model_state_bytes"] == [197_206_172] * 2


@pytest.mark.parametrize("strategy", IMAGE_STRATEGIES)
def test_strategy_trains_the_image_model_with_falling_loss(strategy, train_env, db_url):
    code, record, err = bench_train("--model", "tiny-dinov2", "--strategy", strategy, *QUICK, env=train_env, db=db_url)
    check_trained(code, record, err, "tiny-dinov2", strategy)
    assert record["tokens_per_s"] is None  # a classifier reports samples/s only


def test_sharding_dial_orders_what_each_rank_holds(mistral_run):
    """ddp > zero1 > zero2 > zero3 ~ fsdp in model-state bytes per rank, and each stop sheds what
    its descriptor claims: ZeRO-1 the optimizer state, ZeRO-2 also gradients, ZeRO-3/FSDP also
    parameters."""
    held = {}
    for strategy in STRATEGIES:
        code, record, err = mistral_run(strategy)
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
