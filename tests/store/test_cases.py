"""The case (wirewise.case), computed once when a record is stored and kept as columns and a key;
filled by db/versions/0010 into rows stored before; and complete: every record field and every
parameter a run stores is in a case or declared outside of it."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa

from wirewise.case import ALL_CASE_FIELDS, CASE_FIELDS, FIELDS, NOT_CASE, case_key, case_of, geometry_of
from wirewise.orchestrator.record.ingest import store_measurement
from wirewise.orchestrator.record.nccl_tests import read_log_file
from wirewise.orchestrator.store import Store
from wirewise.record import ResultRecord
from wirewise.topology import topology_from_text
from wirewise.workloads.collective import CollectiveParams
from wirewise.workloads.train import TrainParams
from tests.conftest import FIXTURES

QUADS = topology_from_text((FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt").read_text(), "quads")
WHEN = datetime(2026, 12, 1, 10, tzinfo=timezone.utc)
STORED = [*FIELDS, "case_key"]



def _collective(**fields) -> ResultRecord:
    base = dict(workload="collective", op="all_reduce", bytes=2**30, dtype="float32", in_place=False, gpus=[0, 1],
                gpu_count=2, world_size=2, node="quad-a", fingerprint=QUADS.fingerprint, fabric=QUADS.fabric,
                time_us=9.0, algbw_gbs=1.0, busbw_gbs=1.0, params={"transport": "default"},
                extra={"redop": "sum", "root": -1}, started_at=WHEN, ended_at=WHEN)
    return ResultRecord(**{**base, **fields})


def _train(**fields) -> ResultRecord:
    base = dict(workload="train", model="mistral-1b", strategy="ddp", micro_batch=8, seq_len=1024, gpus=[0],
                gpu_count=1, world_size=1, node="quad-a", fingerprint=QUADS.fingerprint, fabric=QUADS.fabric,
                tokens_per_s=55_000.0, params={"engine": "native", "precision": "auto", "compile": False},
                extra={"precision": "bf16-mixed"}, started_at=WHEN, ended_at=WHEN)
    return ResultRecord(**{**base, **fields})


# Records that differ from the first of their workload in one setting each: every one another case.
PLANTED = {
    "collective": [
        _collective(), _collective(dtype="bfloat16"), _collective(in_place=True), _collective(bytes=2**20),
        _collective(params={"transport": "pcie"}), _collective(params={"transport": "default", "cuda_graph": True}),
        _collective(gpus=[0, 4]), _collective(gpus=[0, 1, 2, 3], gpu_count=4, world_size=4),
        _collective(gpus=[0, 1], gpu_count=4, world_size=4, node_count=2, nodes=["quad-a", "quad-b"]),
        _collective(op="all_gather", extra={"redop": "none", "root": -1}), _collective(source="nccl-tests"),
        _collective(gpus=[], gpu_count=0),
    ],
    "train": [
        _train(), _train(params={"precision": "bf16"}, extra={"precision": "bf16"}),
        _train(params={"precision": "auto", "compile": True}), _train(micro_batch=4), _train(seq_len=2048),
        _train(params={"engine": "accelerate"}), _train(params={"transport": "pcie"}), _train(strategy="fsdp"),
        _train(source="job", params={"engine": "custom"}),
        _train(gpus=[0, 1], gpu_count=4, world_size=4, node_count=2, nodes=["quad-a", "quad-b"]),
        _train(gpus=[0, 1], gpu_count=2, world_size=2),
    ],
}


def _stored(url: str) -> dict[str, dict]:
    """Each stored result's case columns, by record_id."""
    with Store(url).read() as db:
        rows = db.rows(f"SELECT record_id, {', '.join(STORED)} FROM results")
    flags = {name for name, field in FIELDS.items() if field.kind == "flag"}  # SQLite reads them as 0 and 1
    return {row[0]: {name: bool(v) if name in flags and v is not None else v for name, v in zip(STORED, row[1:])}
            for row in rows}


def test_each_setting_makes_its_own_case_and_the_key_is_stored(url):
    """Stored with the wiring of two NVLink quads: one key per planted setting, the derived
    columns as the definition reads them (geometry from the quads: 0,1 packed, 0,4 spread)."""
    store = Store(url)
    records = [record for workload in PLANTED.values() for record in workload]
    store_measurement(store, records, QUADS, node="quad-a")
    stored = _stored(url)
    keys = [stored[r.record_id]["case_key"] for r in records]
    assert len(set(keys)) == len(records)
    first = stored[PLANTED["collective"][0].record_id]
    assert (first["redop"], first["root"], first["cuda_graph"], first["transport"], first["device"], first["ranks"],
            first["ranks_per_node"], first["geometry"]) == ("sum", None, False, "default", "gpu", 2, 2, "packed")
    assert stored[PLANTED["collective"][6].record_id]["geometry"] == "spread"
    assert stored[PLANTED["collective"][9].record_id]["redop"] is None  # all_gather takes no reduction
    assert stored[PLANTED["collective"][11].record_id]["device"] == "cpu"
    two_nodes = stored[PLANTED["collective"][8].record_id]
    assert (two_nodes["ranks"], two_nodes["ranks_per_node"]) == (4, 2)
    train = stored[PLANTED["train"][0].record_id]
    assert (train["precision"], train["engine"], train["compile"], train["geometry"]) == ("bf16-mixed", "native", False, None)
    assert stored[PLANTED["train"][8].record_id]["compile"] is None  # a job's record does not say
    for record in records:
        assert stored[record.record_id]["case_key"] == case_key(record.workload, case_of(record.model_dump(), QUADS.groups))


def test_repeats_share_a_case_whatever_else_differs():
    """Where and when a run ran, its figures and its outcome are not its case."""
    one = _collective()
    other = _collective(node="quad-b", campaign="c2", busbw_gbs=300.0, time_us=1.0, status="failed", task_id="t2",
                        started_at=datetime(2026, 12, 2, tzinfo=timezone.utc), env={"NCCL_DEBUG": "INFO"})
    assert case_of(one.model_dump(), QUADS.groups) == case_of(other.model_dump(), QUADS.groups)


def test_geometry_needs_two_gpus_and_disjoint_groups():
    assert geometry_of([0, 1], QUADS.groups) == "packed"
    assert geometry_of([3, 4], QUADS.groups) == "spread"
    assert geometry_of([0], QUADS.groups) is None
    assert geometry_of([0, 1], None) is None


def _params_seen() -> dict[str, set[str]]:
    """Every parameter name a stored record can carry, per source: the workloads' parameter
    models, the planners' labels, a job's record and the nccl-tests logs of the fixtures."""
    from wirewise.jobs.history import RankFigures, job_record

    seen = {"wirewise": set(CollectiveParams.model_fields) | set(TrainParams.model_fields) | {"placement", "transport"}}
    ranks = [RankFigures(step_times_s=[0.1, 0.1], tokens_per_step=100, samples_per_step=2, peak_mem_bytes=1, device="cpu",
                         node="node1", gpus=[])]
    record, _ = job_record(ranks, None, model="mistral-1b", strategy="ddp", micro_batch=2, seq_len=50, precision="fp32")
    seen["job"] = set(record.params)
    seen["nccl-tests"] = {name for log in sorted((FIXTURES / "nccl-tests").iterdir()) if log.is_file()
                          for r in _records_of(log) for name in r.params}
    return seen


def _records_of(log: Path) -> list[ResultRecord]:
    from wirewise.errors import UserError

    try:
        return read_log_file(log).records
    except UserError:  # the fixtures hold logs that store nothing on purpose
        return []


def test_every_record_field_and_parameter_is_in_a_case_or_declared_outside():
    """A new record field or setting fails here until it is placed: in a case (wirewise.case)
    or in NOT_CASE with the reason. A name in both would be two answers."""
    placed = set(ALL_CASE_FIELDS) | set(FIELDS) | set(NOT_CASE)
    assert set(ResultRecord.model_fields) - placed == set()
    for source, names in _params_seen().items():
        assert names - placed == set(), source
    assert set(ALL_CASE_FIELDS) & set(NOT_CASE) == set()
    assert set(CASE_FIELDS) == {"collective", "train"}


def _as_stored_at_0009(record: ResultRecord) -> dict:
    return record.model_dump()


def test_the_migration_fills_the_cases_of_rows_stored_before(url):
    """Rows stored at 0009 (no case columns) with the quads' wiring stored beside them: once a
    wirewise process opens the store, each row's case columns are what the definition derives
    for the record (what storing it today writes: the first test)."""
    from alembic import command
    from sqlalchemy.orm import Session

    from wirewise.orchestrator.store.topology import add_topology

    command.upgrade(Store(url, migrate=False)._alembic_config(), "0009")
    records = [record for workload in PLANTED.values() for record in workload]
    engine = sa.create_engine(url)
    with Session(engine) as session:
        add_topology(session, QUADS, "quad-a")
        session.commit()
    with engine.begin() as conn:
        table = sa.Table("results", sa.MetaData(), autoload_with=conn)
        conn.execute(sa.insert(table), [{**_as_stored_at_0009(r), "id": 1 + i * 3001} for i, r in enumerate(records)])
    engine.dispose()
    Store(url)  # migrates
    migrated = _stored(url)

    from wirewise.case import derive

    assert migrated == {r.record_id: derive(r.model_dump(), QUADS.groups) for r in records}


def test_a_result_stored_before_its_nodes_wiring_gets_its_geometry_when_the_wiring_is_saved(url, tmp_path):
    """Results stored with no wiring for their node (an imported record file, a job's record)
    have no geometry; `topo save` of the node's wiring fills it in: quad-a's 0,1 packed and 0,4
    spread, and quad-b's result of the same wiring (its own wiring never saved) too, from the
    wiring as first stored. Saving the same wiring again refills nothing (the rows keep their
    values; a wiring seen again is no change)."""
    from tests.conftest import wirewise

    store = Store(url)
    records = [_collective(), _collective(gpus=[0, 4]), _collective(node="quad-b")]
    store_measurement(store, records)
    assert {row["geometry"] for row in _stored(url).values()} == {None}
    before = {r.record_id: _stored(url)[r.record_id]["case_key"] for r in records}
    quads = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
    wirewise("topo", "save", "--from-file", str(quads), "--node", "quad-a", "--db", url, check=True)
    stored = _stored(url)
    assert [stored[r.record_id]["geometry"] for r in records] == ["packed", "spread", "packed"]
    assert all(stored[r.record_id]["case_key"] != before[r.record_id] for r in records)
    assert all(stored[r.record_id] == derive_of(r) for r in records)
    wirewise("topo", "save", "--from-file", str(quads), "--node", "quad-a", "--db", url, check=True)
    assert _stored(url) == stored


def derive_of(record: ResultRecord) -> dict:
    from wirewise.case import derive

    return derive(record.model_dump(), QUADS.groups)


def test_the_scope_is_the_fabric_between_the_nodes_and_filled_when_their_wiring_is_saved(url, tmp_path):
    """Two-node results stored before any wiring have no scope (one node: `node`). Once each
    node's fabric is saved (`topo save --from-file` of GB200 trays' fabric CSV: rack-a1 and
    rack-a2 in one NVLink domain, rack-b1 in another), a pair inside the domain is
    `nvlink-domain`, one across domains `network`, each its own case; a pair with a node never
    saved still has none. `results --scope` finds each."""
    from tests.conftest import wirewise, wirewise_json

    fabric = FIXTURES / "smi" / "gb200-built-fabric.csv"
    other = tmp_path / "other-rack.csv"
    other.write_text(fabric.read_text().replace("9c6f5af3", "1111aaaa"))
    pair = dict(gpus=[0, 1], gpu_count=4, world_size=4, node_count=2, node="rack-a1")
    records = {"inside": _collective(**pair, nodes=["rack-a1", "rack-a2"]),
               "across": _collective(**pair, nodes=["rack-a1", "rack-b1"]),
               "unsaved": _collective(**pair, nodes=["rack-a1", "rack-zz"]),
               "one node": _collective(node="rack-a1")}
    store_measurement(Store(url), list(records.values()))

    def scopes() -> dict[str, str | None]:
        stored = _stored(url)
        return {name: stored[r.record_id]["scope"] for name, r in records.items()}

    assert scopes() == {"inside": None, "across": None, "unsaved": None, "one node": "node"}
    for node, path in (("rack-a1", fabric), ("rack-a2", fabric), ("rack-b1", other)):
        wirewise("topo", "save", "--from-file", str(path), "--node", node, "--db", url, check=True)
    assert scopes() == {"inside": "nvlink-domain", "across": "network", "unsaved": None, "one node": "node"}
    stored = _stored(url)
    assert stored[records["inside"].record_id]["case_key"] != stored[records["across"].record_id]["case_key"]
    assert [row["scope"] for row in wirewise_json("results", "--scope", "network", "--db", url)] == ["network"]
    assert {row["scope"] for row in wirewise_json("results", "--db", url)} == {"nvlink-domain", "network", None, "node"}
