"""The strategy descriptors (wirewise.registry.STRATEGIES) against their sources: the ZeRO paper's
model-state bytes and traffic (arXiv 1910.02054, sections 5 and 7), the seed article's dial and
accounting, and the engine templates they name. What each strategy really holds is measured
against the same descriptors in test_strategies.py."""

from __future__ import annotations

import pytest

from wirewise import registry
from wirewise.configs import TEMPLATES, deepspeed_config
from wirewise.strategy import ACCOUNTINGS, COMPUTE_DTYPE, Traffic

STRATEGIES = registry.STRATEGIES.built_in
PSI = 7_241_732_096  # Mistral-7B


@pytest.mark.parametrize("ranks", [1, 2, 4, 8, 64])
def test_model_state_bytes_per_parameter_are_the_zero_papers(ranks):
    n = ranks
    zero = {name: spec.bytes_per_param(n) for name, spec in STRATEGIES.items()}
    assert zero == pytest.approx({"ddp": 16, "zero1": 4 + 12 / n, "zero2": 2 + 14 / n, "zero3": 16 / n, "fsdp": 16 / n})
    article = {name: spec.bytes_per_param(n, ACCOUNTINGS["article"]) for name, spec in STRATEGIES.items()}
    assert article == pytest.approx({"ddp": 12, "zero1": 4 + 8 / n, "zero2": 2 + 10 / n, "zero3": 12 / n, "fsdp": 12 / n})


def test_the_article_accounting_gives_its_87_gb():
    states = STRATEGIES["ddp"].state_bytes(PSI, 4, ACCOUNTINGS["article"])
    assert sum(states.values()) / 1e9 == pytest.approx(87, abs=0.5)  # 14 + 14 + ~58 GB in the article
    assert sum(STRATEGIES["fsdp"].state_bytes(PSI, 4, ACCOUNTINGS["article"]).values()) / 1e9 == pytest.approx(22, abs=0.5)


def test_traffic_per_step_is_the_zero_papers():
    """Per rank at large N: DDP 2 Psi, ZeRO-1/2 2 Psi (reduce-scatter + all-gather), ZeRO-3 and
    FSDP 3 Psi; at N ranks x (N-1)/N, and 0 on one rank."""
    volume = {name: spec.bus_bytes(PSI, 10**6, "bf16") / (2 * PSI) for name, spec in STRATEGIES.items()}
    assert volume == pytest.approx({"ddp": 2, "zero1": 2, "zero2": 2, "zero3": 3, "fsdp": 3}, rel=1e-5)
    assert STRATEGIES["fsdp"].bus_bytes(PSI, 4, "bf16") == pytest.approx(3 * 2 * PSI * 3 / 4)
    assert all(spec.bus_bytes(PSI, 1, "bf16") == 0 for spec in STRATEGIES.values())
    ops = {name: [t.op for t in spec.traffic] for name, spec in STRATEGIES.items()}
    assert ops == {"ddp": ["all_reduce"], "zero1": ["reduce_scatter", "all_gather"], "zero2": ["reduce_scatter", "all_gather"],
                   "zero3": ["all_gather", "all_gather", "reduce_scatter"], "fsdp": ["all_gather", "all_gather", "reduce_scatter"]}


def test_wire_bytes_follow_each_implementations_precision():
    """Under bf16-mixed DDP all-reduces its fp32 weights' gradients, FSDP gathers bf16 parameters
    and reduces fp32 gradients (its MixedPrecisionPolicy), DeepSpeed sends bf16 (its bf16 mode)."""
    per = {name: [t.wire_bytes["bf16-mixed"] for t in spec.traffic] for name, spec in STRATEGIES.items()}
    assert per == {"ddp": [4], "zero1": [2, 2], "zero2": [2, 2], "zero3": [2, 2, 2], "fsdp": [2, 2, 4]}
    assert all(t.wire_bytes["fp32"] == 4 and t.wire_bytes["bf16"] == 2 for s in STRATEGIES.values() for t in s.traffic)


def test_the_dial_and_its_labels():
    assert [(s.name, s.label, s.zero_stage) for s in registry.STRATEGIES.by_dial()] == [
        ("ddp", "DDP", 0), ("zero1", "ZeRO-1", 1), ("zero2", "ZeRO-2", 2), ("zero3", "ZeRO-3", 3), ("fsdp", "FSDP", 3)]
    assert STRATEGIES["zero3"].shards == STRATEGIES["fsdp"].shards == ("optimizer", "grads", "params")


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_descriptor_names_templates_that_render(name):
    spec = STRATEGIES[name]
    assert (TEMPLATES / "accelerate" / f"{spec.accelerate}.yaml").is_file()
    if spec.on_deepspeed:
        config = deepspeed_config(spec, micro_batch=2, world_size=4, bf16=True, hidden_size=64)
        assert config["zero_optimization"]["stage"] == spec.zero_stage


def test_deepspeed_overrides_merge_over_the_template_and_leave_the_descriptor_alone():
    overrides = {"zero_optimization": {"overlap_comm": True, "reduce_bucket_size": "auto"}, "wall_clock_breakdown": True}
    variant = STRATEGIES["zero2"].variant(name="zero2-x", deepspeed_overrides=overrides)
    config = deepspeed_config(variant, micro_batch=1, world_size=2, bf16=False, hidden_size=8)
    assert config["zero_optimization"] == {"stage": 2, "reduce_bucket_size": 64, "overlap_comm": True}
    assert config["wall_clock_breakdown"] is True and overrides["zero_optimization"]["reduce_bucket_size"] == "auto"
    wrong_stage = STRATEGIES["zero2"].variant(name="zero2-y", deepspeed_overrides={"zero_optimization": {"stage": 3}})
    with pytest.raises(ValueError, match="runs ZeRO stage 3; its descriptor says 2"):
        deepspeed_config(wrong_stage, 1, 2, False, 8)
    with pytest.raises(ValueError, match="ddp does not run on DeepSpeed"):
        deepspeed_config(STRATEGIES["ddp"], 1, 2, False, 8)


@pytest.mark.parametrize(("changes", "message"), [
    ({"name": "ZeRO 2"}, "lower-case letters, digits, - and _"),
    ({"zero_stage": 4}, "zero_stage must be 0, 1, 2 or 3"),
    ({"zero_stage": 0}, "a DeepSpeed strategy has a ZeRO stage of 1 to 3"),
    ({"accelerate": "ddp"}, "accelerate runs a DeepSpeed config through its 'deepspeed' template"),
    ({"deepspeed": None, "accelerate": None}, "deepspeed_overrides without a deepspeed template"),
    ({"traffic": ()}, "moves something every step"),
    ({"impl": "no_attribute"}, "impl must be 'module:attribute'"),
])
def test_an_inconsistent_descriptor_is_refused(changes, message):
    base = STRATEGIES["zero2"].variant(deepspeed_overrides={"zero_optimization": {"overlap_comm": True}})
    with pytest.raises(ValueError, match=message):
        base.variant(**changes)


def test_traffic_names_only_what_a_step_model_can_price():
    with pytest.raises(ValueError, match="traffic op 'broadcast'"):
        Traffic("broadcast", "params", "forward", True, "layer", COMPUTE_DTYPE)
    with pytest.raises(ValueError, match="one value for each of fp32, bf16-mixed, bf16"):
        Traffic("all_gather", "params", "forward", True, "layer", {"bf16": 2})
