"""The tables, as SQLAlchemy Core defines them: the one definition of the schema, which the
writes (Core statements), the migrations' check (alembic's autogenerate, tests/store) and the
ORM mapping of orm.py use. Schema changes go through alembic (db/versions).

The read path never imports this module (read.py says why): what it needs of the column types,
it names (store.results: JSON_COLUMNS and the others; tests/store checks them against these).
"""

from __future__ import annotations

from wirewise.clock import utcnow
from wirewise.orchestrator.store.cases import case_columns

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

METADATA = MetaData()
WHEN = DateTime(timezone=True)


def _id() -> Column:
    return Column("id", Integer, primary_key=True)


# A host, by name. Its wiring lives in TOPOLOGIES, linked through NODE_TOPOLOGIES.
NODES = Table(
    "nodes", METADATA,
    _id(),
    Column("name", String(255), nullable=False, unique=True),
    Column("created_at", WHEN, nullable=False, default=utcnow),
)

# One wiring. Same wiring on many nodes (or renumbered) = one row. `parsed` is the topology
# object of docs/contracts.md; per-node links and paths live in NODE_TOPOLOGIES.details.
TOPOLOGIES = Table(
    "topologies", METADATA,
    _id(),
    Column("fingerprint", String(64), nullable=False, unique=True),
    Column("fabric", String(32), nullable=False, index=True),
    Column("switched", Boolean),
    Column("gpu_count", Integer, nullable=False),
    Column("gpu_model", String(128)),
    Column("parsed", JSON, nullable=False),
    Column("raw_text", Text),  # `nvidia-smi topo -m` as read
    Column("created_at", WHEN, nullable=False, default=utcnow),
)

# A node seen with a topology; what is not part of the fingerprint lives here.
NODE_TOPOLOGIES = Table(
    "node_topologies", METADATA,
    _id(),
    Column("node_id", Integer, ForeignKey("nodes.id"), nullable=False),
    Column("topology_id", Integer, ForeignKey("topologies.id"), nullable=False),
    Column("details", JSON, nullable=False),  # UUIDs, PCI ids, CPU affinity, driver/CUDA/NCCL versions
    Column("first_seen", WHEN, nullable=False, default=utcnow),
    Column("last_seen", WHEN, nullable=False, default=utcnow),
    UniqueConstraint("node_id", "topology_id"),
)

CAMPAIGNS = Table(
    "campaigns", METADATA,
    _id(),
    Column("name", String(255), nullable=False, unique=True),
    Column("spec", JSON, nullable=False),
    Column("folder", String(4096)),  # spec, plan, task run folders, submitit logs
    Column("executor", String(16)),  # local | slurm
    Column("created_at", WHEN, nullable=False, default=utcnow),
)

# One task: a workload on exact GPUs. Campaign tasks are tracked through their array element;
# a `bench` run is a task without a campaign. `key` is the task id (wirewise.task.task_key).
TASKS = Table(
    "tasks", METADATA,
    _id(),
    Column("key", String(128), nullable=False, unique=True),
    Column("campaign_id", Integer, ForeignKey("campaigns.id"), index=True),
    Column("workload", String(32), nullable=False),
    Column("params", JSON, nullable=False),
    Column("gpus", JSON, nullable=False),
    Column("node", String(255)),
    Column("placement", String(64)),  # packed | spread | all | explicit | cpu
    Column("transport", String(16)),
    Column("repeat", Integer, nullable=False, default=0),
    Column("bundle", Integer),  # the array element (bundle) that runs it, in its submission
    Column("status", String(16), nullable=False, default="pending", index=True),
    Column("slurm_job_id", String(64)),  # the element as its executor names it; Slurm's ARRAY_INDEX names its array (db/versions/0008)
    Column("attempts", Integer, nullable=False, default=0),
    Column("created_at", WHEN, nullable=False, default=utcnow),
    Column("updated_at", WHEN, nullable=False, default=utcnow, onupdate=utcnow),
)

# One measurement; columns are the fields of wirewise.record.ResultRecord, then its case: the
# fields the store derives once from the record (wirewise.case.FIELDS, store/cases.py; db/versions/0010)
# and the case's key.
RESULTS = Table(
    "results", METADATA,
    _id(),
    Column("record_id", String(64), nullable=False, unique=True),
    Column("task_id", String(128), index=True),
    Column("campaign", String(255), index=True),
    Column("workload", String(16), nullable=False, index=True),
    Column("source", String(16), nullable=False, default="wirewise"),
    Column("params", JSON, nullable=False),
    Column("node", String(255)),
    Column("node_count", Integer, default=1),  # a multi-node task's nodes, in node-rank order (db/versions/0006):
    Column("nodes", JSON, nullable=False, default=list),
    Column("node_fingerprints", JSON, nullable=False, default=list),
    Column("gpus", JSON, nullable=False),
    Column("gpu_count", Integer, index=True),  # NULL: unknown (db/versions/0005)
    Column("fingerprint", String(64), index=True),
    Column("fabric", String(32), index=True),
    Column("status", String(16), nullable=False, index=True),
    Column("error", Text),
    Column("started_at", WHEN, nullable=False),
    Column("ended_at", WHEN, nullable=False, index=True),
    Column("versions", JSON, nullable=False),
    Column("env", JSON, nullable=False),
    Column("transport_carried", String(128)),  # db/versions/0013
    Column("op", String(32), index=True),
    Column("bytes", BigInteger),
    Column("count", BigInteger),
    Column("dtype", String(16)),
    Column("in_place", Boolean),
    Column("time_us", Double),
    Column("algbw_gbs", Double),
    Column("busbw_gbs", Double),
    Column("wrong", BigInteger),
    Column("model", String(255), index=True),
    Column("strategy", String(32), index=True),
    Column("world_size", Integer),
    Column("micro_batch", Integer),
    Column("seq_len", Integer),
    Column("step_time_s", Double),
    Column("samples_per_s", Double),
    Column("tokens_per_s", Double),
    Column("peak_mem_bytes", JSON),
    Column("model_state_bytes", JSON),
    Column("mfu", Double),
    Column("extra", JSON, nullable=False),
    *case_columns(),
    Index("ix_results_collective", "fingerprint", "op", "bytes", "started_at"),  # one case since a date (0016)
    Index("ix_results_train", "fingerprint", "model", "strategy", "gpu_count"),
    # `wirewise results` / `report` / `doctor` filters (db/versions/0004)
    Index("ix_results_fabric_case", "fabric", "op", "bytes"),
    Index("ix_results_node_started", "node", "started_at"),
    Index("ix_results_started_at", "started_at"),
    Index("ix_results_campaign_case", "campaign", "workload", "model"),
    Index("ix_results_source", "source"),
    # every reader groups by the case (db/versions/0010): results and compare by it alone, the
    # baselines by a wiring and a case, the prolog by a wiring and a case, newest first (0012)
    Index("ix_results_case", "case_key"),
    Index("ix_results_fingerprint_case_started", "fingerprint", "case_key", "started_at"),
    Index("ix_results_placement", "placement"),
)

# A user's own command submitted by `wirewise run`, with the placement it got: the GPUs it
# runs on (chosen and pinned, or given by Slurm), their predicted busbw next to the best free
# set's, and the strategy exported to it.
PLACED_JOBS = Table(
    "placed_jobs", METADATA,
    _id(),
    Column("slurm_job_id", String(64), nullable=False, index=True),
    Column("mode", String(16), nullable=False),  # whole-node (pinned) or shared (Slurm picks)
    Column("command", JSON, nullable=False),  # the argument list, exactly as given
    Column("node", String(255)),
    Column("requested_gpus", Integer, nullable=False),
    Column("gpus", JSON),  # None until Slurm says which (shared)
    Column("fingerprint", String(64), index=True),
    Column("fabric", String(32)),
    Column("constraint", String(255)),
    Column("predicted_busbw_gbs", Double),
    Column("basis", String(16)),
    Column("best_free_gpus", JSON),
    Column("best_free_busbw_gbs", Double),
    Column("model", String(255)),
    Column("strategy", String(32)),
    Column("warnings", JSON, nullable=False),
    Column("folder", Text, nullable=False),  # submitit's folder: the job's logs
    Column("submitted_at", WHEN, nullable=False, default=utcnow, index=True),
)

# Fleet health (wirewise.orchestrator.health, db/versions/0007; store/health.py reads and writes them).
# An imported baseline (`wirewise baseline import`): what a node type is expected to measure in
# one case, with what it rests on. The history's own baselines are computed from the results.
BASELINES = Table(
    "baselines", METADATA,
    _id(),
    Column("fingerprint", String(64), nullable=False, index=True),
    Column("workload", String(16), nullable=False),
    Column("case_key", Text, nullable=False),  # the case as sorted JSON: one row per case and file
    Column("case", JSON, nullable=False),
    Column("metric", String(32), nullable=False),
    Column("median", Double, nullable=False),
    Column("scaled_mad", Double, nullable=False),  # 1.4826 x MAD, in the metric's unit (db/versions/0014)
    Column("results", Integer, nullable=False),
    Column("nodes", Integer, nullable=False),
    Column("sources", JSON, nullable=False),
    Column("origin", String(4096), nullable=False),  # the file it was imported from
    Column("imported_at", WHEN, nullable=False, default=utcnow),
    UniqueConstraint("fingerprint", "workload", "case_key", "origin"),
)

# One judgement of one node (doctor, a health check, a prolog, a confirmation, a re-test): which
# rules judged it and whether it was healthy. A node's verdict is its open findings.
NODE_CHECKS = Table(
    "node_checks", METADATA,
    _id(),
    Column("node", String(255), nullable=False),
    Column("source", String(32), nullable=False),
    Column("rules", JSON, nullable=False),
    Column("healthy", Boolean, nullable=False),
    Column("findings", Integer, nullable=False),
    Column("checked_at", WHEN, nullable=False, default=utcnow, index=True),
    Index("ix_node_checks_node_checked_at", "node", "checked_at"),  # each node's latest (store/health.py)
)

# A rule that fired on a node (wirewise.orchestrator.health.findings.Finding), open until a later
# judgement of the same rule finds it no more or a re-test passes.
FINDINGS = Table(
    "findings", METADATA,
    _id(),
    Column("node", String(255), nullable=False),
    Column("rule", String(64), nullable=False),
    Column("key", Text, nullable=False),  # the case: a later judgement of the same one replaces it
    Column("metric", String(255), nullable=False),
    Column("delta", String(64), nullable=False),
    Column("evidence", Text, nullable=False),
    Column("advice", Text, nullable=False),
    Column("gpus", JSON),
    Column("measurement", JSON),
    Column("reference", JSON, nullable=False),
    Column("source", String(32), nullable=False),
    Column("status", String(16), nullable=False, default="open"),  # open | cleared
    Column("confirmed", Boolean, nullable=False, default=False),  # a repeat of its measurement showed it again
    Column("opened_at", WHEN, nullable=False, default=utcnow),
    Column("updated_at", WHEN, nullable=False, default=utcnow),
    Column("cleared_at", WHEN),
    Column("cleared_by", Text),
    Index("ix_findings_node_status", "node", "status"),
)

# The audit trail: every drain, re-test and resume wirewise did or refused, with its evidence and
# who asked.
FLEET_ACTIONS = Table(
    "fleet_actions", METADATA,
    _id(),
    Column("node", String(255), nullable=False),
    Column("action", String(16), nullable=False),  # drain | health-check | prolog | retest | resume
    Column("outcome", String(32), nullable=False),  # claimed, drained, held, failed, passed, resumed, ...
    Column("reason", Text),  # the Slurm reason set or found
    Column("detail", Text),  # one line: why, or what Slurm said
    Column("evidence", JSON, nullable=False),  # the findings and measurements it rests on
    Column("asked_by", String(255), nullable=False),
    Column("campaign", String(255)),  # the confirmation or re-test run
    Column("at", WHEN, nullable=False, default=utcnow, index=True),
    Index("ix_fleet_actions_node_at", "node", "at"),  # each node's trail, newest first (store/health.py)
)
