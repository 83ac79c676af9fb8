"""Stores made by older revisions, upgraded for real: alembic builds the old schema, rows go in
as the wirewise of that revision wrote them, and the first command that opens the store (a
`wirewise` process) migrates it. On SQLite and on the real PostgreSQL."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import sqlalchemy as sa

from wirewise.db import HEAD
from wirewise.orchestrator.record.nccl_tests import read_log_file
from wirewise.orchestrator.store import Store
from wirewise.record import ResultRecord
from tests.conftest import FIXTURES, wirewise_json

LOGS = FIXTURES / "nccl-tests"
# The keys of `extra` that the importer added at 0005 (with extra.node_count, which 0006 made a column).
ADDED_AT_0005 = ("ranks_exact", "ranks_from", "log_line", "identified_by")
ID_STEP = 97  # ids spread over more than one of the fill's batches (db/versions/0008: BATCH)
WHEN = datetime(2026, 12, 1, 10, tzinfo=timezone.utc)



def _migrate(url: str, revision: str, down: bool = False) -> None:
    from alembic import command

    config = Store(url, migrate=False)._alembic_config()
    (command.downgrade if down else command.upgrade)(config, revision)


def _insert(url: str, table: str, rows: list[dict]) -> None:
    """Rows into the table as the store of that revision has it (SQLAlchemy's JSON, as wirewise wrote)."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.insert(sa.Table(table, sa.MetaData(), autoload_with=conn)), rows)
    engine.dispose()


def _as_stored_before_0006(record: ResultRecord, revision: str) -> dict:
    """A record as the importer of `revision` stored it: no node columns; the hosts (and, at
    0005, the node count) in extra; before 0005 without the keys 0005 added."""
    row = record.model_dump(exclude={"node_count", "nodes", "node_fingerprints"})
    if revision == "0005":
        row["extra"] = {**row["extra"], "node_count": record.node_count}
    else:
        row["extra"] = {k: v for k, v in row["extra"].items() if k not in ADDED_AT_0005}
    return row


def test_nccl_tests_rows_stored_before_0006_get_their_node_count_and_nodes(url):
    """Logs imported before 0006 read back, once migrated, with the node count and nodes a
    fresh import of the same log gives: the 2- and 10-node logs with their hosts in rank
    order; an excerpt that shows only the last rank with its host and the count unknown; a
    log without rank lines with neither. A wirewise run of that time keeps node_count 1."""
    _migrate(url, "0005")
    by_revision = {
        "0004": ["moc-h100-2node-8gpu-sendrecv_roce_4gpu.log", "cnode3-h100-10node-1gpu-five-collectives-2.17.8.log",
                 "li-plus-a100-8gpu-sendrecv-no-rank-lines.md"],
        "0005": ["cnode2-h100-2node-8gpu-failed-alltoall-then-sendrecv-2.17.6.log",
                 "coreweave-readme-gb200-last-rank-only-and-no-rank-lines.md"],
    }
    imported = [(revision, r) for revision, names in by_revision.items() for name in names
                for r in read_log_file(LOGS / name).records]
    rows = [_as_stored_before_0006(record, revision) for revision, record in imported]
    native = ResultRecord(workload="collective", op="all_reduce", bytes=1024, gpus=[0, 1], gpu_count=2,
                          node="h100-a", time_us=9.0, algbw_gbs=1.0, busbw_gbs=1.0, wrong=0)
    rows.append(native.model_dump(exclude={"node_count", "nodes", "node_fingerprints"}))
    _insert(url, "results", [{**row, "id": 1 + i * ID_STEP} for i, row in enumerate(rows)])

    shown = wirewise_json("results", "--group-by", "source,op,node_count,nodes", "--include-cpu", "--db", url)

    found = {(r["source"], r["op"], r["node_count"], tuple(r["nodes"]), r["status"]): r["count"] for r in shown}
    expected: dict[tuple, int] = {("wirewise", "all_reduce", 1, (), "ok"): 1}
    for _, record in imported:
        key = ("nccl-tests", record.op, record.node_count, tuple(record.nodes), record.status)
        expected[key] = expected.get(key, 0) + 1
    assert found == expected
    tens = [f"cnode3-{n:03d}" for n in range(2, 12)]
    assert found[("nccl-tests", "all_reduce", 10, tuple(tens), "ok")] == 20
    assert found[("nccl-tests", "sendrecv", 2, ("MOC-R4PCC04U37", "MOC-R4PCC04U35"), "ok")] == 26
    assert found[("nccl-tests", "all_reduce", None, ("slurm-gb200-218-073",), "ok")] > 0  # only `Rank 1439` shown
    assert found[("nccl-tests", "sendrecv", None, (), "ok")] == 8
    assert Store(url).current_revision() == HEAD


def test_rows_imported_since_0006_keep_their_nodes(url):
    """The fill reads extra only where the node columns hold nothing: a row that has its
    nodes keeps its own count, whatever its extra says."""
    _migrate(url, "0007")
    record = read_log_file(LOGS / "moc-h100-2node-8gpu-sendrecv_roce_4gpu.log").records[0]
    row = record.model_dump()
    row.update(node_count=None, extra={**row["extra"], "node_count": 5})
    _insert(url, "results", [row])
    [shown] = wirewise_json("results", "--group-by", "node_count,nodes", "--db", url)
    assert (shown["node_count"], shown["nodes"]) == (None, ["MOC-R4PCC04U37", "MOC-R4PCC04U35"])


def test_array_ids_dropped_and_restored_by_the_downgrade(url):
    """0008 drops campaigns.slurm_arrays and tasks.slurm_array_id (nothing read them); its
    downgrade brings them back filled from the elements: each Slurm task's array, each Slurm
    campaign's arrays in job id order; a local campaign's none."""
    _migrate(url, "0007")
    _insert(url, "campaigns", [
        {"id": 1, "name": "on-slurm", "spec": {}, "folder": "/c1", "executor": "slurm", "slurm_arrays": ["977", "1002"],
         "created_at": WHEN},
        {"id": 2, "name": "here", "spec": {}, "folder": "/c2", "executor": "local", "slurm_arrays": [],
         "created_at": WHEN},
    ])
    tasks = [("a", 1, "1002_0", "1002"), ("b", 1, "977_1", "977"), ("c", 1, "1002_1", "1002"), ("d", 1, None, None),
             ("e", 2, "local:41:123:ab", None)]
    _insert(url, "tasks", [
        {"key": key, "campaign_id": campaign, "workload": "collective", "params": {}, "gpus": [0], "status": "pending",
         "slurm_job_id": element, "slurm_array_id": array, "attempts": 1, "repeat": 0,
         "created_at": WHEN, "updated_at": WHEN}
        for key, campaign, element, array in tasks
    ])
    store = Store(url)  # migrates to HEAD in-process, as every command does
    columns = {table: {c["name"] for c in sa.inspect(store.engine).get_columns(table)} for table in ("campaigns", "tasks")}
    assert "slurm_arrays" not in columns["campaigns"] and "slurm_array_id" not in columns["tasks"]
    store.engine.dispose()

    _migrate(url, "0007", down=True)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        arrays = dict(conn.execute(sa.text("SELECT name, slurm_arrays FROM campaigns")).all())
        array_ids = dict(conn.execute(sa.text("SELECT key, slurm_array_id FROM tasks")).all())
    engine.dispose()
    decoded = {name: value if isinstance(value, list) else json.loads(value) for name, value in arrays.items()}
    assert decoded == {"on-slurm": ["977", "1002"], "here": []}
    assert array_ids == {key: array for key, _, _, array in tasks}


def test_an_imported_baselines_robust_deviation_is_renamed_scaled_mad_and_back(url, tmp_path):
    """0014 renames baselines.spread (1.4826 x MAD in the metric's unit, beside `results`' and
    `compare`'s relative `spread`) to scaled_mad, values kept: a row stored at 0013 is exported
    with its scaled_mad (and, by 0015, its case's scope); the downgrade names it spread again
    and takes the scope back out."""
    from tests.cli.hostile_pass import BASELINE

    _migrate(url, "0013")
    case = {k: v for k, v in BASELINE["case"].items() if k != "scope"}  # as stored before 0015
    _insert(url, "baselines", [{
        "fingerprint": BASELINE["fingerprint"], "workload": "collective", "case_key": json.dumps(case, sort_keys=True),
        "case": case, "metric": "busbw_gbs", "median": 10.0, "spread": 0.75, "results": 4, "nodes": 2,
        "sources": {"wirewise": 4}, "origin": "old.json", "imported_at": WHEN}])
    out = tmp_path / "out.json"
    wirewise_json("baseline", "export", "--out", str(out), "--json", "--db", url)
    [exported] = json.loads(out.read_text())["baselines"]
    assert exported["scaled_mad"] == 0.75 and "spread" not in exported
    assert exported["case"] == {**case, "scope": "node"}  # 0015: a one-node case's scope
    _migrate(url, "0013", down=True)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        spread, stored = conn.execute(sa.text('SELECT spread, "case" FROM baselines')).one()
    engine.dispose()
    assert spread == 0.75 and (json.loads(stored) if isinstance(stored, str) else stored) == case
