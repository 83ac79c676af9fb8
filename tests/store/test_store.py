"""The store on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import subprocess
from datetime import datetime, timezone

import pytest
from sqlalchemy import func, inspect, select

from wirewise.db import HEAD
from wirewise.orchestrator.record.ingest import store_records
from wirewise.record import ResultRecord
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.orm import Base, ResultRow
from tests.conftest import FIXTURES, wirewise

WRITERS, ROWS_EACH = 16, 150  # 2,400 one-row transactions from 16 processes at once: SQLite busy all along


def _record(i: int, writer: int = 0) -> ResultRecord:
    return ResultRecord(
        workload="collective", op="all_reduce", bytes=2**20 * (i % 8 + 1), dtype="float32", gpus=[0, 1],
        gpu_count=2, fingerprint="f" * 64, fabric="nvlink-groups", time_us=10.0 + i, algbw_gbs=1.0,
        busbw_gbs=1.0, wrong=0, node=f"writer{writer}",
    )


def _write_rows(url: str, writer: int, barrier) -> None:
    store = Store(url)
    barrier.wait()  # all 16 start inserting at the same moment
    for i in range(ROWS_EACH):
        store_records(store, [_record(i, writer)])  # one transaction per row: the worst case for locking


def test_sixteen_processes_write_at_once_without_lock_errors(tmp_path):
    url = f"sqlite:///{tmp_path / 'wirewise.db'}"
    Store(url)  # create the schema once, as the first command would
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_write_rows, args=(url, w, barrier)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    with Store(url).session() as s:
        assert s.execute(select(func.count()).select_from(ResultRow)).scalar_one() == WRITERS * ROWS_EACH


def test_sqlite_is_in_wal_mode(tmp_path):
    path = tmp_path / "wirewise.db"
    Store(f"sqlite:///{path}")
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_ingest_is_idempotent(db_url):
    store = Store(db_url)
    records = [_record(i) for i in range(5)]
    assert store_records(store, records) == 5
    assert store_records(store, records) == 0
    assert store.row_counts()["results"] == 5


def test_record_round_trips_every_field(db_url):
    store = Store(db_url)
    rec = ResultRecord(
        workload="train", model="tiny-mistral", strategy="zero2", world_size=2, micro_batch=4, seq_len=32,
        step_time_s=0.5, samples_per_s=16.0, tokens_per_s=512.0, peak_mem_bytes=[1, 2], model_state_bytes=[3, 4],
        mfu=None, status="oom", error="CUDA out of memory", extra={"losses": [3.0, 2.5]},
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc), versions={"torch": "2.13.0"}, env={"NCCL_P2P_DISABLE": "1"},
    )
    store_records(store, [rec])
    with store.session() as s:
        row = s.execute(select(ResultRow)).scalar_one()
        stored = {name: getattr(row, name) for name in ResultRecord.model_fields}
    back = ResultRecord.model_validate(stored)
    assert back.model_dump(exclude={"started_at", "ended_at"}) == rec.model_dump(exclude={"started_at", "ended_at"})
    assert back.started_at.replace(tzinfo=timezone.utc) == rec.started_at


def test_results_table_matches_the_record_contract():
    """Every ResultRecord field is a column, and so is each field the store derives for the case
    (wirewise.case.FIELDS) and the case's key; nothing else is."""
    from wirewise.case import FIELDS

    columns = set(Base.metadata.tables["results"].columns.keys()) - {"id"}
    assert columns == set(ResultRecord.model_fields) | set(FIELDS) | {"case_key"}
    assert not set(FIELDS) & set(ResultRecord.model_fields)


def test_migrations_match_the_models(db_url):
    """alembic's autogenerate finds nothing to add: db/versions is complete."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    store = Store(db_url)
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


@pytest.mark.postgres
def test_same_schema_on_postgresql(pg_url):
    store = Store(pg_url)
    assert store.current_revision() == HEAD
    assert set(inspect(store.engine).get_table_names()) >= set(Base.metadata.tables)
    records = [_record(i) for i in range(20)]
    assert store_records(store, records) == 20
    assert store_records(store, records) == 0  # ON CONFLICT DO NOTHING in PostgreSQL's dialect
    with store.session() as s:
        assert s.execute(select(func.count()).select_from(ResultRow).where(ResultRow.op == "all_reduce")).scalar_one() == 20


def test_head_constant_names_alembic_head(db_url):
    """db.HEAD (the fast path of Store.upgrade) must follow db/versions."""
    from alembic.script import ScriptDirectory

    store = Store(db_url, migrate=False)
    assert ScriptDirectory.from_config(store._alembic_config()).get_current_head() == HEAD


def test_a_query_in_progress_does_not_hold_writers_back(tmp_path):
    """Store.read begins deferred: while a report's transaction is open, another process stores
    an nccl-tests log at once. A reader that took the write lock (BEGIN IMMEDIATE, as writers
    do) would keep it waiting out its whole patience, 2 s here, and fail."""
    url = f"sqlite:///{tmp_path / 'wirewise.db'}"
    store = Store(url)
    log = FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
    with store.read() as db:
        assert db.scalar("SELECT count(*) FROM results") == 0  # the read has begun
        stored = wirewise("import", "nccl-tests", str(log), "--node", "h100", "--db", url,
                          env={"WIREWISE_DB_WAIT_S": "2"}, timeout=60)
        assert stored.returncode == 0, stored.stderr
        assert db.scalar("SELECT count(*) FROM results") == 0  # its snapshot holds
    with store.read() as db:
        assert db.scalar("SELECT count(*) FROM results") > 0


def test_the_read_path_knows_the_column_types():
    """The reader decodes by name what SQLite keeps as text or integers (store.results): its
    sets follow the table's types."""
    from sqlalchemy import JSON, Boolean, Double

    from wirewise.orchestrator.store.results import FLAG_COLUMNS, JSON_COLUMNS, NUMBER_COLUMNS
    from wirewise.orchestrator.store.schema import RESULTS

    def of(kind):
        return {c.name for c in RESULTS.columns if isinstance(c.type, kind)}

    assert (JSON_COLUMNS, FLAG_COLUMNS, NUMBER_COLUMNS) == (of(JSON), of(Boolean), of(Double))


def test_the_health_read_path_knows_its_tables():
    """store.health reads the fleet-health tables by name: each column it names exists, and it
    decodes as JSON, flag or time exactly the columns of those types."""
    from sqlalchemy import JSON, Boolean, DateTime

    from wirewise.orchestrator.store import health, schema

    kinds = {JSON: "json", Boolean: "flag", DateTime: "when"}
    for table, columns in ((schema.BASELINES, health.BASELINE_COLUMNS), (schema.NODE_CHECKS, health.CHECK_COLUMNS),
                           (schema.FINDINGS, health.FINDING_COLUMNS), (schema.FLEET_ACTIONS, health.ACTION_COLUMNS)):
        types = {c.name: next((k for t, k in kinds.items() if isinstance(c.type, t)), None) for c in table.columns}
        assert {name: types.get(name, "missing") for name in columns} == columns, table.name


def test_a_query_imports_neither_sqlalchemy_nor_pydantic(tmp_path):
    """`wirewise results` on an up-to-date SQLite store reads through sqlite3 alone: SQLAlchemy
    (about 100 ms) and pydantic (about 57 ms) stay unloaded (tests/benchmarks/bench_results.py
    times it). A fresh store is migrated first, which does load them."""
    import sys
    from pathlib import Path

    url = f"sqlite:///{tmp_path / 'wirewise.db'}"
    Store(url)
    script = Path(sys.executable).with_name("wirewise")
    store_records(Store(url), [_record(0).model_copy(update={"campaign": "c", "fabric": "nvlink-all-to-all"})])
    for args in (["results", "--json"], ["results", "--fabric", "nvlink-all-to-all", "--since", "7d", "--campaign", "c"],
                 ["campaign", "list"], ["topo", "list"]):
        out = subprocess.run([sys.executable, "-X", "importtime", str(script), *args, "--db", url],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, (args, out.stderr[-2000:])  # a run that stopped early imports nothing
        loaded = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
        assert {"sqlalchemy", "pydantic"} & loaded == set(), (args, out.stderr[-2000:])
