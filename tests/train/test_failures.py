"""Out-of-memory is a result, not a crash: caught on every rank, stored as `oom` with memory figures."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from wirewise.orchestrator.store.orm import ResultRow
from tests.train.conftest import QUICK, bench_train

pytestmark = pytest.mark.slow


def test_memory_error_on_every_rank_is_stored_as_oom(train_env, db_url):
    # The test hook raises MemoryError inside the training step of both ranks; the real path
    # (wirewise.jobs.worker catches, wirewise.jobs.supervise records, the CLI stores) does the rest.
    code, record, err = bench_train(
        "--model", "tiny-mistral", "--strategy", "ddp", *QUICK, "--inject-memory-error-at-step", "1",
        env=train_env, db=db_url,
    )
    assert code == 1, err  # printed, then a non-zero exit for a run that did not succeed
    assert record["status"] == "oom"
    assert "MemoryError" in record["error"] and "injected at step 1" in record["error"]

    with Session(create_engine(db_url)) as session:
        row = session.scalars(select(ResultRow).where(ResultRow.record_id == record["record_id"])).one()
    assert row.status == "oom" and row.workload == "train"
    assert (row.model, row.strategy, row.micro_batch, row.seq_len) == ("tiny-mistral", "ddp", 4, 32)
    assert len(row.peak_mem_bytes) == 2 and all(v > 0 for v in row.peak_mem_bytes)
    memory = row.extra["memory_at_failure"]
    assert set(memory) == {"0", "1"} and all(m["host_peak_rss_bytes"] > 0 for m in memory.values())
    notes = row.extra["notes"]["0"]
    assert notes["phase"] == "timed" and notes["step"] == 1  # how far the run got
    assert notes["model_state_bytes"] > 0  # the accounting step (step 0) had run


def test_other_exception_is_stored_as_failed_with_an_excerpt(tmp_path, train_env, db_url):
    # A config transformers reads but the benchmark cannot train: the rank raises ValueError.
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "t5"}')  # an encoder-decoder
    code, record, err = bench_train("--model", str(config), "--strategy", "fsdp", *QUICK, env=train_env, db=db_url)
    assert code == 1, err
    assert record["status"] == "failed" and record["strategy"] == "fsdp"
    assert "ValueError" in record["error"] and "neither a causal LM nor an image classifier" in record["error"]
    assert record["extra"]["notes"]["0"]["phase"] == "setup"


def test_a_failed_run_names_its_rank_logs_and_a_markup_path_stays_text(tmp_path, train_env, db_url):
    """Issue 10 items 8 and 12: a --model path holding `[/x]` crashed the table (rich read it as
    markup); a failed bench train did not say where its rank logs were."""
    from tests.conftest import wirewise

    folder = tmp_path / "[" / "x]"  # the path reads ".../[/x]/config.json"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "t5"}')  # read, but not trainable: fails at setup
    proc = wirewise("bench", "train", "--model", str(folder / "config.json"), "--strategy", "ddp", *QUICK,
                    "--db", db_url, env=train_env)
    assert proc.returncode == 1 and "Traceback (most recent call last)" not in proc.stderr, proc.stderr
    assert "[/x]" in proc.stdout and "failed" in proc.stdout
    [run_dir] = (tmp_path / "runs").iterdir()
    assert f"wirewise: rank logs in {run_dir}" in proc.stderr
    assert f"stored 1 record(s) in {db_url}; result file {run_dir / 'result.json'}" in proc.stderr
