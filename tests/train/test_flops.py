"""The peak FLOP/s behind MFU: the datasheet's by GPU name, the one basis of a record's `mfu`,
and a measured peak (WIREWISE_PEAK_TFLOPS) kept beside it, each said which."""

from __future__ import annotations

import pytest

from wirewise.jobs.train.flops import datasheet_flops, measured_flops, mfu, train_flops_per_token
from wirewise.record import ResultRecord
from wirewise.settings import PEAK_TFLOPS

PEAK_ENV = PEAK_TFLOPS.name


@pytest.mark.parametrize(
    ("name", "tflops"),
    [("NVIDIA H200", 989), ("NVIDIA H100 80GB HBM3", 989), ("NVIDIA H100 PCIe", 756), ("NVIDIA H200 NVL", 835),
     ("NVIDIA A100-SXM4-80GB", 312), ("NVIDIA GH200 480GB", 989), ("NVIDIA GB200", 2500)],
)
def test_datasheet_peak_by_device_name(name, tflops, monkeypatch):
    monkeypatch.setenv(PEAK_ENV, "789.2")  # a measured peak never stands in for the datasheet's
    peak, source = datasheet_flops(name)
    assert peak == tflops * 1e12 and "datasheet" in source


def test_measured_peak_and_unknown_gpu(monkeypatch):
    monkeypatch.delenv(PEAK_ENV, raising=False)
    assert measured_flops() == (None, None)
    for unknown in ("NVIDIA Tesla T4", "NVIDIA RTX A1000"):  # whole model names: an A1000 is no A100
        peak, source = datasheet_flops(unknown)
        assert peak is None and "no datasheet peak known" in source, unknown
    monkeypatch.setenv(PEAK_ENV, "789.2")
    peak, source = measured_flops()
    assert peak == pytest.approx(789.2e12) and source == f"{PEAK_ENV}=789.2"


def old_record(extra: dict) -> ResultRecord:
    return ResultRecord(workload="train", model="mistral-1b", strategy="ddp", step_time_s=1.0, mfu=0.441, extra=extra)


def test_an_mfu_taken_against_a_measured_peak_is_stored_on_the_datasheets_basis():
    """README's H200 run before the basis was recorded: 44.1% against a measured 786 TFLOP/s,
    35.0% against the datasheet's 989. Its record becomes mfu 0.350 (datasheet), the measured
    one kept under its own name; a record already on the datasheet stays as it is."""
    measured = old_record({"device_name": "NVIDIA H200", "peak_tflops": 786.0, "peak_source": f"{PEAK_ENV}=786",
                           "mfu_datasheet": 0.3504, "mfu_with_attention": 0.48})
    assert measured.mfu == 0.3504
    assert {k: measured.extra[k] for k in ("mfu_basis", "peak_tflops", "mfu_measured_peak", "measured_peak_tflops")} == {
        "mfu_basis": "datasheet", "peak_tflops": 989.0, "mfu_measured_peak": 0.441, "measured_peak_tflops": 786.0}
    assert measured.extra["peak_source"].startswith("datasheet dense bf16 for H200")
    assert measured.extra["mfu_with_attention"] == pytest.approx(0.48 * 0.3504 / 0.441) and "mfu_datasheet" not in measured.extra
    on_datasheet = {"device_name": "NVIDIA H200", "peak_tflops": 989.0, "peak_source": "datasheet dense bf16 for H200: 989 TFLOP/s",
                    "mfu_datasheet": 0.441}
    assert (old_record(on_datasheet).mfu, old_record(on_datasheet).extra) == (0.441, on_datasheet)
    again = ResultRecord.model_validate(measured.model_dump())
    assert (again.mfu, again.extra) == (measured.mfu, measured.extra)  # read back: the same


def test_mfu_of_a_published_plain_loop():
    """Figures (docs/facts.md) for a plain PyTorch loop on the 1.04B Mistral-style model (hidden 2048,
    16 layers, 16 heads, 8 KV heads, MLP 7168, vocab 32000): 56.5k tokens/s on one H200 is 43.5%
    MFU by 6N against a measured 808 TFLOP/s. Its parameters, counted by hand: embeddings and
    head 2 x 65,536,000, 16 layers x 56,627,200, final norm 2,048 = 1,037,109,248."""
    dense, _ = train_flops_per_token(n_params=1_037_109_248, n_layers=16, hidden=2048, context=2048)
    assert round(mfu(dense * 56_500, 1.0, 808e12, 1), 3) == 0.435
    assert mfu(dense * 56_500, 1.0, None, 1) is None  # no peak known: no MFU, not a guess


def test_attention_term_follows_palm():
    """PaLM (arXiv 2204.02311, appendix B) counts 6N + 12 L H Q T FLOPs per token (L layers, H
    heads of size Q, sequence T): for the 1.04B model at 2048 the attention part is
    12 x 16 x 16 x 128 x 2048 = 805,306,368."""
    dense, with_attention = train_flops_per_token(n_params=1_037_109_248, n_layers=16, hidden=2048, context=2048)
    assert with_attention - dense == 805_306_368


def test_the_migration_puts_stored_mfus_on_the_datasheets_basis(tmp_path):
    """A row stored at 0010 with an MFU against WIREWISE_PEAK_TFLOPS (as records were written
    before) reads back, once a wirewise process opens the store, as a record written today."""
    import sqlalchemy as sa
    from alembic import command

    from wirewise.orchestrator.store import Store

    url = f"sqlite:///{tmp_path / 'old.db'}"
    command.upgrade(Store(url, migrate=False)._alembic_config(), "0010")
    extra = {"device_name": "NVIDIA H200", "peak_tflops": 786.0, "peak_source": f"{PEAK_ENV}=786", "mfu_datasheet": 0.3504}
    stored = {**ResultRecord(workload="train", model="mistral-1b", strategy="ddp").model_dump(), "mfu": 0.441, "extra": extra}
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.insert(sa.Table("results", sa.MetaData(), autoload_with=conn)), [stored])
    Store(url)  # migrates
    with engine.begin() as conn:
        mfu, kept = conn.execute(sa.text("SELECT mfu, extra FROM results")).one()
    engine.dispose()
    import json

    kept = json.loads(kept)
    assert (mfu, kept["mfu_basis"], kept["mfu_measured_peak"], kept["peak_tflops"]) == (0.3504, "datasheet", 0.441, 989.0)


def test_the_train_table_shows_mfu_on_its_basis_and_the_measured_one_beside_it():
    from rich.console import Console

    from wirewise.orchestrator.report.train import summary_table

    record = old_record({"device_name": "NVIDIA H200", "peak_tflops": 786.0, "peak_source": f"{PEAK_ENV}=786",
                         "mfu_datasheet": 0.3504, "losses": [2.0, 1.5]})
    record = record.model_copy(update={"world_size": 1, "micro_batch": 8, "seq_len": 2048, "samples_per_s": 8.0,
                                       "tokens_per_s": 16384.0, "peak_mem_bytes": [10**9], "model_state_bytes": [10**9]})
    console = Console(width=160, record=True, file=open("/dev/null", "w"))
    console.print(summary_table(record))
    assert "35.0% (peak: datasheet dense bf16 for H200: 989 TFLOP/s); 44.1% against WIREWISE_PEAK_TFLOPS=786" in console.export_text()
