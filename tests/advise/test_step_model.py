"""The training step model against measurements, through `wirewise place --model` as a process.

The seed article (Mistral-7B fine-tune on 4 H200, Part 2): across NVL quads training is 3 to 5x
slower than inside one, FSDP losing most and DDP least; on either fast fabric (a quad, NVSwitch)
every strategy runs nearly the same and DDP and FSDP are even (repeat runs: a few percent);
ZeRO-1/2 lose ~20% there with accelerate's default DeepSpeed config (their collectives not
overlapped: the descriptors say so). The 2x H200 measured here (tests/fixtures/measured-2xh200):
mistral-1b, 4 x 2048 tokens per rank, ddp 97.8k, zero2 101.2k, fsdp 106.2k tokens/s: ZeRO-2
level with DDP, so measured results, once stored, must win over the article's fixed 20%."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, wirewise, wirewise_json
from tests.topology.common import NVL_QUADS_NAMED, NVSWITCH_NAMED

MEASURED = FIXTURES / "measured-2xh200"
FEW_PERCENT = 0.05


def tokens(*args: str) -> dict[str, float]:
    out = wirewise_json("place", "--model", "mistral-7b", "--gpus", "4", *args)
    return {row["strategy"]: row["predicted_tokens_per_s"] for row in out["advice"]["strategies"]}


@pytest.fixture(scope="module")
def article_setting() -> dict[str, dict[str, float]]:
    return {
        "quad": tokens("-f", str(NVL_QUADS_NAMED)),
        "across": tokens("-f", str(NVL_QUADS_NAMED), "--policy", "spread"),
        "nvswitch": tokens("-f", str(NVSWITCH_NAMED)),
    }


def test_across_quads_3_to_5x_slower_fsdp_losing_most_ddp_least(article_setting) -> None:
    quad, across = article_setting["quad"], article_setting["across"]
    slowdown = {s: quad[s] / across[s] for s in quad}
    assert 3 <= slowdown["ddp"] <= 5 and 3 <= slowdown["fsdp"] <= 5
    # fsdp loses most (zero3, the same algorithm, as much), ddp the least of those that overlap
    # their traffic; zero1/zero2, slow already on the fast wire, lose less in ratio.
    assert slowdown["fsdp"] >= (1 - FEW_PERCENT) * max(slowdown.values())
    assert all(slowdown["fsdp"] > slowdown[s] for s in ("ddp", "zero1", "zero2"))
    assert slowdown["ddp"] < min(slowdown["zero3"], slowdown["fsdp"])
    assert across["ddp"] == max(across.values()) and across["fsdp"] == min(across.values())


def test_on_a_fast_wire_fsdp_is_within_a_few_percent_of_ddp(article_setting) -> None:
    for fabric in ("quad", "nvswitch"):
        rates = article_setting[fabric]
        assert abs(rates["fsdp"] / rates["ddp"] - 1) <= FEW_PERCENT
        assert rates["fsdp"] != rates["ddp"]  # each strategy has a cost of its own


def test_the_quad_and_nvswitch_rank_every_strategy_alike(article_setting) -> None:
    """The article: nearly identical for every strategy on both fast fabrics. Relative to ddp,
    as the SXM card's datasheet peak (989 TFLOP/s) is above the NVL card's (835)."""
    quad, nvswitch = article_setting["quad"], article_setting["nvswitch"]
    assert all(abs((nvswitch[s] / nvswitch["ddp"]) / (quad[s] / quad["ddp"]) - 1) <= FEW_PERCENT for s in quad)


def test_zero_1_2_pay_for_collectives_they_do_not_overlap(article_setting) -> None:
    """The article: ~20% below DDP on the fast wire with accelerate's default DeepSpeed config."""
    quad = article_setting["quad"]
    assert all(0.7 <= quad[s] / quad["ddp"] <= 0.9 for s in ("zero1", "zero2"))


# -- the 2x H200 measurements in a real store ----------------------------------------------
def measured_runs() -> list[dict]:
    rows = [json.loads(line) for line in (MEASURED / "wirewise-results.jsonl").read_text().splitlines()]
    return [r for r in rows if r["workload"] == "train" and r["status"] == "ok" and r["gpu_count"] == 2]


def store_2xh200(db_url: str, leave_out: str | None = None) -> None:
    from wirewise.orchestrator.record.ingest import store_records
    from wirewise.orchestrator.store import Store
    from wirewise.record import ResultRecord

    rows = [json.loads(line) for line in (MEASURED / "wirewise-results.jsonl").read_text().splitlines()]
    kept = [r for r in rows if r["workload"] != "train" or r.get("strategy") != leave_out]
    # The wiring first, as a run stores it with its records: their case's geometry is read from it.
    wirewise("topo", "save", "-f", str(MEASURED / "topo.txt"), "--node", "vm", "--db", db_url, check=True)
    store_records(Store(db_url), [ResultRecord.model_validate(r) for r in kept])


def advised(db_url: str, model: str, batch: int) -> dict[str, dict]:
    out = wirewise_json("place", "--gpus", "2", "--node", "vm", "--db", db_url, "--model", model, "--batch-size", str(batch))
    return {row["strategy"]: row for row in out["advice"]["strategies"]}


def test_measured_runs_are_the_prediction_where_they_match(db_url: str) -> None:
    store_2xh200(db_url)
    rows = advised(db_url, "mistral-1b", 4)
    for run in measured_runs():
        row = rows[run["strategy"]]
        assert row["basis"] == "measured" and row["predicted_tokens_per_s"] == pytest.approx(run["tokens_per_s"], abs=0.1)


def test_stored_runs_fit_the_model_and_zero2_stays_level_with_ddp(db_url: str) -> None:
    """Mistral-7B at the measured runs' 4 x 2048 tokens per rank: fitted, not assumed."""
    store_2xh200(db_url)
    rows = advised(db_url, "mistral-7b", 4)
    assert {row["basis"] for row in rows.values()} == {"fitted"}
    assert "mistral-1b zero2 x2, 8192 tokens per rank" in rows["zero2"]["source"]
    assert "every strategy's 3 training result(s)" in rows["zero1"]["source"]  # zero1 has none of its own
    # Measured: zero2 101.2k vs ddp 97.8k on this wiring; the article's ~20% loss is not imposed.
    assert rows["zero2"]["predicted_tokens_per_s"] >= (1 - FEW_PERCENT) * rows["ddp"]["predicted_tokens_per_s"]


@pytest.mark.parametrize("held_out", ["fsdp", "zero2"])
def test_a_strategy_left_out_is_predicted_from_the_others(db_url: str, held_out: str) -> None:
    """Its run removed from the store, the MFU fitted to the other strategies' runs predicts it
    within 10% of what it measured."""
    store_2xh200(db_url, leave_out=held_out)
    row = advised(db_url, "mistral-1b", 4)[held_out]
    [run] = [r for r in measured_runs() if r["strategy"] == held_out]
    assert row["basis"] == "fitted"
    assert abs(row["predicted_tokens_per_s"] / run["tokens_per_s"] - 1) <= 0.10


def test_repeats_of_one_configuration_fit_as_their_median(db_url: str) -> None:
    """A second zero2 run, 10% slower: the fit takes the median of the two, not both."""
    from wirewise.orchestrator.record.ingest import store_records
    from wirewise.orchestrator.store import Store
    from wirewise.record import ResultRecord

    store_2xh200(db_url)
    [run] = [r for r in measured_runs() if r["strategy"] == "zero2"]
    again = {**run, "record_id": "zero2-again", "step_time_s": run["step_time_s"] * 1.1, "tokens_per_s": run["tokens_per_s"] / 1.1}
    store_records(Store(db_url), [ResultRecord.model_validate(again)])
    row = advised(db_url, "mistral-7b", 4)["zero2"]
    assert "its own 2 training result(s) on this wiring (mistral-1b zero2 x2, 8192 tokens per rank, median of 2)" in row["source"]
