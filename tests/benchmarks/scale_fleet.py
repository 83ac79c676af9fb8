"""The simulated fleets `make bench-scale` measures (tests/benchmarks/scale_bench.py), built once
and kept in WIREWISE_SCALE_DATA (default /work/scale-data, else $TMPDIR/wirewise-scale-data; one
scale's in WIREWISE_SCALE_DATA_<nodes> where that is set, data_folder):

- 1,250 nodes with 1,000,000 results and 12,500 nodes with 10,000,000 (10,000 and 100,000 GPUs;
  SCALES): three node types mixed along the rows (bench_fleet.py's: H200 NVL two-quad, H200
  NVSwitch, 4-GPU A100), the NVSwitch type in multi-node NVLink domains of 18 nodes (GPU fabric
  state completed, as an NVL72 rack's 18 trays report it); wirings stored as `topo save` stores
  them (one wiring row per type, one node row and one node-wiring row per node).
- The history: 20 fleet sweeps (campaigns sweep-01..20, 4.5 days apart), each of 40 results per
  node (3 collectives x 6 sizes x 2 GPU sets, 4 training runs), 2% failed or timed out; a node
  in 200 measures 30% low in the last sweep. One pair-test campaign (placement `pair`,
  two nodes each) of two rounds over the fleet. The health history: each node's check per
  sweep, two fleet actions each, an open finding on 1% of them.
- The each-node campaign bench_fleet.py plans, recorded as submitted (half its tasks done).

The same rows on SQLite and PostgreSQL (a server of its own, tests/pg/server.sh, its data in
the same folder so that it is kept too), built at the newest schema. Rows are written the fast
way: each case template's columns derived (wirewise.case.derive, as storing a record derives
them) and encoded for the database once (Encoding), a row a copy of its template with its own
dozen values set, streamed from the generator (never all in memory); the results' secondary
indexes dropped, the rows inserted in one transaction (sqlite3 executemany with no journal;
PostgreSQL COPY), the indexes made again after. Profiled on 201,250 rows (this machine, load
7): the rows took 18 us of Python each before (dicts, then a tuple through a per-value
conversion), 2.6 us now; SQLite's whole build 34 us of CPU a row, half the inserts and half
the 21 indexes. A kept fleet built by an older schema is upgraded by its migrations (what an
operator's database goes through); one built by an older version of this builder
(FIXTURE_VERSION) is built again.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOPO = ROOT / "tests" / "fixtures" / "topo"
FIXTURE_VERSION = 1  # raise when what a fleet holds changes: kept fleets are then built again
TYPES = {  # node type -> (its wiring file, its weight along the rows)
    "nvl": (TOPO / "synthetic-h200-nvl-8gpu-two-quads.txt", 5),
    "sxm": (TOPO / "synthetic-h200-sxm-8gpu-nvswitch.txt", 3),
    "a100": (TOPO / "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt", 2),
}
DOMAIN_TYPE, DOMAIN_NODES = "sxm", 18  # the type in multi-node NVLink domains, nodes per domain (NVL72: 18 trays)
PEAK = {"nvl": 320.0, "sxm": 460.0, "a100": 230.0}  # large-message all_reduce busbw, GB/s
OPS = ("all_reduce", "all_gather", "reduce_scatter")
SIZES = tuple(1 << s for s in range(20, 32, 2))  # 1 MiB .. 1 GiB, x4
MODELS = (("mistral-7b", "fsdp"), ("mistral-7b", "zero2"), ("mistral-1b", "ddp"), ("dinov2-large", "zero1"))
SWEEPS, SWEEP_GAP = 20, timedelta(hours=108)
FIRST_SWEEP = datetime(2026, 9, 1, tzinfo=timezone.utc)
# label -> (nodes, sweeps kept): both with all 20 sweeps, 1 and 10 million results, so that both
# the nodes and the rows grow 10x between them. WIREWISE_SCALE_SWEEPS keeps the newest fewer at
# 12,500 nodes (5: 2.5 million, what the first session of issue 33 measured when ten million did
# not fit its time; built at 20 in the second, docs/scale.md).
LARGE_SWEEPS = int(os.environ.get("WIREWISE_SCALE_SWEEPS", str(SWEEPS)))
SCALES = {"1250": (1_250, SWEEPS), "12500": (12_500, LARGE_SWEEPS)}
SLOW_EVERY = 200  # one node in this many measures 30% low in the last sweep


def data_folder(label: str) -> Path:
    """Where the fleets of the scale `label` are kept: WIREWISE_SCALE_DATA_<label> (e.g.
    WIREWISE_SCALE_DATA_12500) when set, else WIREWISE_SCALE_DATA, else the default; so one
    scale's fleets can live on their own (a disk of its own, or a fleet built anew beside kept
    ones)."""
    given = os.environ.get(f"WIREWISE_SCALE_DATA_{label}") or os.environ.get("WIREWISE_SCALE_DATA")
    if given:
        return Path(given)
    return Path("/work/scale-data") if Path("/work").is_dir() else Path(tempfile.gettempdir()) / "wirewise-scale-data"


def node_names(nodes: int) -> list[str]:
    return [f"gpu{i:05d}" for i in range(nodes)]


def node_types(nodes: int) -> dict[str, str]:
    """node name -> type, mixed along the rows by TYPES' weights (the same for a name at every scale)."""
    rng = random.Random(23)
    kinds = list(TYPES)
    weights = [weight for _, weight in TYPES.values()]
    return {name: rng.choices(kinds, weights)[0] for name in node_names(nodes)}


def wirings():
    """type -> its Topology (the fixture file as `topo save` reads it)."""
    from wirewise.topology import read_topology

    return {kind: read_topology(path) for kind, (path, _) in TYPES.items()}


def domain_of_nodes(types: dict[str, str]) -> dict[str, int | None]:
    """node name -> the index of its NVLink domain in the fleet (None: its type has none): the
    domain type's nodes in order, DOMAIN_NODES to a domain."""
    found, placed = {}, 0
    for name, kind in types.items():
        found[name] = placed // DOMAIN_NODES if kind == DOMAIN_TYPE else None
        placed += kind == DOMAIN_TYPE
    return found


def domain_uuid(index: int) -> str:
    return f"{index + 1:08x}-5ca1-4e00-8000-{index + 1:012x}"


def domain_details(topo, index: int) -> dict:
    """A node of the domain type's GPU fabric as the probe stores it: domain `index` of the fleet."""
    fabric = {"cluster_uuid": domain_uuid(index), "clique_id": 1, "state": "completed", "status": 0, "health_mask": 0}
    return {**topo.details, "gpus": [{"index": gpu, "fabric": fabric} for gpu in range(topo.gpus)]}


PER_NODE_SWEEP = len(OPS) * len(SIZES) * 2 + len(MODELS)  # results of one node in one sweep


@dataclass(frozen=True)
class Scale:
    label: str
    nodes: int
    sweeps: int = SWEEPS  # the newest this many of the SWEEPS

    @property
    def results(self) -> int:
        """The sweeps' results (the pair tests' one a node come on top)."""
        return self.nodes * self.sweeps * PER_NODE_SWEEP


def scale(label: str) -> Scale:
    return Scale(label, *SCALES[label])


# -- what the rows hold ------------------------------------------------------------------------
def templates(topos) -> dict[str, list[dict]]:
    """type -> its per-sweep cases, each a row's fixed columns with the case derived once."""
    from wirewise.case import derive

    found = {}
    for kind, topo in topos.items():
        groups = topo.groups
        gpu_sets = ([list(range(topo.gpus))], [list(range(topo.gpus // 2))])
        rows = []
        for op in OPS:
            for size in SIZES:
                for (gpus,) in gpu_sets:
                    rows.append(dict(workload="collective", op=op, bytes=size, count=size // 4, dtype="float32",
                                     in_place=False, gpus=gpus, gpu_count=len(gpus), world_size=len(gpus),
                                     params={"placement": "packed", "transport": "default"}))
        for model, strategy in MODELS:
            gpus = list(range(topo.gpus))
            rows.append(dict(workload="train", model=model, strategy=strategy, micro_batch=4, seq_len=2048, gpus=gpus,
                             gpu_count=len(gpus), world_size=len(gpus), params={"placement": "packed", "precision": "bf16-mixed"}))
        for row in rows:
            base = {"extra": {}, "node": "x", "fingerprint": topo.fingerprint, "node_count": 1, **row}
            row.update(derive(base, groups))
        found[kind] = rows
    return found


def result_columns() -> list[str]:
    from wirewise.orchestrator.store.schema import RESULTS

    return [column.name for column in RESULTS.columns if column.name != "id"]


JSON_COLUMNS = frozenset({"params", "nodes", "node_fingerprints", "gpus", "versions", "env", "peak_mem_bytes",
                          "model_state_bytes", "extra"})
VERSIONS = {"nccl": "2.28.9", "torch": "2.13.0"}


class Encoding:
    """A row's values as one database takes them, in result_columns() order: JSON columns as
    their text, a time as SQLAlchemy stores it (SQLite: its UTC wall time as text; PostgreSQL:
    ISO text with its zone, for COPY), a flag as SQLite's 0 or 1. A case's fixed values are
    encoded once (row), a row's own few per row (time: cached, as a sweep's rows share seconds)."""

    def __init__(self, postgresql: bool):
        self.columns = result_columns()
        self.index = {name: i for i, name in enumerate(self.columns)}
        self.postgresql = postgresql
        self._times: dict[int, str] = {}

    def row(self, values: dict) -> list:
        row = [None] * len(self.columns)
        for name, value in values.items():
            if name in self.index:
                row[self.index[name]] = self.value(name, value)
        return row

    def value(self, name: str, value):
        if value is None:
            return None
        if name in JSON_COLUMNS:
            return json.dumps(value)
        if isinstance(value, datetime):
            return value.isoformat() if self.postgresql else value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
        if isinstance(value, bool) and not self.postgresql:
            return int(value)
        return value

    def time(self, seconds: int) -> str:
        """The time `seconds` after FIRST_SWEEP."""
        text = self._times.get(seconds)
        if text is None:
            if len(self._times) > 200_000:  # a sweep's rows span a day: older seconds are not asked again
                self._times.clear()
            text = self._times[seconds] = self.value("started_at", FIRST_SWEEP + timedelta(seconds=seconds))
        return text


def result_rows(size: Scale, topos, encoding: Encoding):
    """The fleet's results, sweep by sweep, as lists in encoding.columns' order."""
    types = node_types(size.nodes)
    at = encoding.index
    record, task, campaign_at, node_at, nodes_at, status_at, error_at, started, ended = (at[name] for name in (
        "record_id", "task_id", "campaign", "node", "nodes", "status", "error", "started_at", "ended_at"))
    busbw_at, algbw_at, time_at, tokens_at, samples_at, step_at, mem_at, mfu_at = (at[name] for name in (
        "busbw_gbs", "algbw_gbs", "time_us", "tokens_per_s", "samples_per_s", "step_time_s", "peak_mem_bytes", "mfu"))
    cases = {kind: [(case, encoding.row({**case, "source": "wirewise", "node_count": 1, "node_fingerprints": [topos[kind].fingerprint],
                                         "fingerprint": topos[kind].fingerprint, "fabric": topos[kind].fabric,
                                         "versions": VERSIONS, "env": {}, "extra": {}}))
                    for case in rows] for kind, rows in templates(topos).items()}
    peak_mem = {kind: json.dumps([60 << 30] * topo.gpus) for kind, topo in topos.items()}
    gap = int(SWEEP_GAP.total_seconds())
    rng = random.Random(size.nodes)
    for sweep in range(SWEEPS - size.sweeps, SWEEPS):
        campaign = f"sweep-{sweep + 1:02d}"
        for i, (node, kind) in enumerate(types.items()):
            topo = topos[kind]
            slow = 0.7 if sweep == SWEEPS - 1 and i % SLOW_EVERY == 7 else 1.0
            when = sweep * gap + i * 3 % 86_400
            nodes = json.dumps([node])
            for j, (case, template) in enumerate(cases[kind]):
                row = template.copy()
                status = "ok" if rng.random() >= 0.02 else rng.choice(("failed", "timeout"))
                row[record], row[task] = f"{campaign}-{node}-{j}", f"{campaign}-{node}-t{j // 6}"
                row[campaign_at], row[node_at], row[nodes_at], row[status_at] = campaign, node, nodes, status
                row[started], row[ended] = encoding.time(when + 20 * j), encoding.time(when + 20 * j + 15)
                if status != "ok":
                    row[error_at] = f"{status} in the sweep"
                elif case["workload"] == "collective":
                    peak = PEAK[kind] * (1 if case["gpu_count"] == topo.gpus else 0.8)
                    busbw = peak * (1 - math.exp(-case["bytes"] / 2**27)) * rng.uniform(0.97, 1.03) * slow
                    row[busbw_at], row[algbw_at], row[time_at] = busbw, busbw / 1.75, case["bytes"] / busbw / 1e3
                else:
                    tokens = 30_000.0 * case["gpu_count"] / 8 * rng.uniform(0.97, 1.03) * slow
                    row[tokens_at], row[samples_at] = tokens, tokens / 2048
                    row[step_at], row[mem_at], row[mfu_at] = 4 * 2048 * case["gpu_count"] / tokens, peak_mem[kind], 0.4 * slow
                yield row
    yield from pair_rows(size, topos, types, encoding)


def pair_rows(size: Scale, topos, types: dict[str, str], encoding: Encoding):
    """The pair tests of one campaign: two rounds, each node paired once a round; a pair's scope
    from its nodes' NVLink domains, as storing it derives it."""
    names = list(types)
    domains = {name: (domain_uuid(index), 1) if index is not None else None for name, index in domain_of_nodes(types).items()}
    from wirewise.case import derive

    rng = random.Random(7)
    when = FIRST_SWEEP + SWEEPS * SWEEP_GAP
    for round_ in range(2):
        order = names[:] if round_ == 0 else rng.sample(names, len(names))
        for k in range(0, len(order) - 1, 2):
            a, b = order[k], order[k + 1]
            topo = topos[types[a]]
            busbw = 40.0 * rng.uniform(0.97, 1.03)
            row = dict(workload="collective", op="all_reduce", bytes=1 << 30, count=1 << 28, dtype="float32", in_place=False,
                       gpus=list(range(topo.gpus)), gpu_count=topo.gpus * 2, world_size=topo.gpus * 2,
                       params={"placement": "pair", "transport": "default"}, record_id=f"pairs-{round_}-{a}-{b}",
                       task_id=f"pairs-{round_}-{a}-{b}", campaign="pairs-01", source="wirewise", node=a, node_count=2,
                       nodes=[a, b], node_fingerprints=[topo.fingerprint, topos[types[b]].fingerprint],
                       fingerprint=topo.fingerprint, fabric=topo.fabric, status="ok", error=None,
                       started_at=when + timedelta(minutes=round_ * 30), ended_at=when + timedelta(minutes=round_ * 30 + 1),
                       versions={"nccl": "2.28.9"}, env={}, extra={}, busbw_gbs=busbw, algbw_gbs=busbw / 1.75,
                       time_us=(1 << 30) / busbw / 1e3)
            row.update(derive(row, topo.groups, {a: domains[a], b: domains[b]}))
            yield encoding.row(row)


# -- writing them ------------------------------------------------------------------------------
class Writer:
    """Bulk writes to one database: the results' secondary indexes dropped while rows go in, made
    again after, all in one transaction."""

    def __init__(self, url: str):
        self.url = url
        self.postgresql = url.startswith("postgresql")

    def connect(self):
        if self.postgresql:
            import psycopg
            from sqlalchemy.engine import make_url

            parsed = make_url(self.url)
            # autocommit: transaction() below is then the transaction itself (on a connection that
            # began one implicitly it is a savepoint, and closing it rolled every row back)
            return psycopg.connect(host=parsed.host, port=parsed.port, user=parsed.username, dbname=parsed.database,
                                   autocommit=True)
        import sqlite3

        conn = sqlite3.connect(self.url.removeprefix("sqlite:///"), isolation_level=None)
        # No journal while it writes: the file is new, and a build that stops is built again
        # (ensure); a rollback journal or WAL would hold a copy of the pages it changes. Back to
        # WAL after (results()).
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-524288")  # 512 MiB: index builds sort in memory
        return conn

    def indexes(self, conn) -> list[tuple[str, str]]:
        """(name, CREATE statement) of the results table's secondary indexes."""
        if self.postgresql:
            rows = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'results' AND indexname LIKE 'ix_%'")
        else:
            rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'results' "
                                "AND name LIKE 'ix_%'")
        return list(rows)

    def results(self, rows, columns: list[str]) -> int:
        """Insert `rows` (sequences in `columns`' order) into results, in one transaction;
        returns how many. Prints how long the rows and the indexes took."""
        conn = self.connect()
        counted = _Counted(rows)
        try:
            dropped = self.indexes(conn)
            started, cpu = time.perf_counter(), time.process_time()
            if self.postgresql:
                with conn.transaction():
                    conn.execute("SET LOCAL maintenance_work_mem = '512MB'")  # each index sorted in memory, not in runs on disk
                    for name, _ in dropped:
                        conn.execute(f'DROP INDEX "{name}"')
                    with conn.cursor().copy(f"COPY results ({', '.join(columns)}) FROM STDIN") as copy:
                        for row in counted:
                            copy.write_row(row)
                    inserted, inserted_cpu = time.perf_counter(), time.process_time()
                    for _, sql in dropped:
                        conn.execute(sql)
                conn.execute("ANALYZE results")  # outside the transaction: the planner's figures of the new rows
            else:
                conn.execute("BEGIN")
                for name, _ in dropped:
                    conn.execute(f'DROP INDEX "{name}"')
                conn.executemany(f"INSERT INTO results ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", counted)
                inserted, inserted_cpu = time.perf_counter(), time.process_time()
                for _, sql in dropped:
                    conn.execute(sql)
                conn.execute("COMMIT")
                conn.execute("ANALYZE")
                conn.execute("PRAGMA journal_mode=WAL")
            print(f"  {counted.count:,} rows in {inserted - started:.0f} s ({inserted_cpu - cpu:.0f} s of this process's CPU), "
                  f"{len(dropped)} indexes made and analysed in {time.perf_counter() - inserted:.0f} s "
                  f"({time.process_time() - inserted_cpu:.0f} s)", flush=True)
        finally:
            conn.close()
        return counted.count


class _Counted:
    """An iterable that counts what it hands out: the rows go straight from their generator to the
    database (memory bounded whatever the total), and the build checks the count stored."""

    def __init__(self, rows):
        self.rows, self.count = rows, 0

    def __iter__(self):
        for row in self.rows:
            self.count += 1
            yield row


def store_fleet(store, size: Scale, topos) -> None:
    """The nodes' wirings, the health history and the recorded each-node campaign: the tables
    beside results, through SQLAlchemy Core (tens of thousands of rows at most)."""
    from sqlalchemy import insert, select

    from wirewise.orchestrator.store.schema import FINDINGS, FLEET_ACTIONS, NODE_CHECKS, NODE_TOPOLOGIES, NODES, TOPOLOGIES

    types = node_types(size.nodes)
    seen = FIRST_SWEEP + SWEEPS * SWEEP_GAP

    def work(session) -> None:
        ids = {}
        for kind, topo in topos.items():
            ids[kind] = session.execute(insert(TOPOLOGIES).values(
                fingerprint=topo.fingerprint, fabric=topo.fabric, switched=topo.switched, gpu_count=topo.gpus,
                gpu_model=topo.gpu_model, parsed=topo.contract(), raw_text=topo.raw_text)).inserted_primary_key[0]
        session.execute(insert(NODES), [{"name": name, "created_at": FIRST_SWEEP} for name in types])
        node_ids = dict(session.execute(select(NODES.c.name, NODES.c.id)).all())
        fields = {kind: topo.model_dump(include={"links", "gpu_names", "cpu_affinity", "numa", "pcie_ancestors", "switch_seen"})
                  for kind, topo in topos.items()}
        domains = domain_of_nodes(types)
        rows = []
        for name, kind in types.items():
            details = {**topos[kind].details, **fields[kind]}
            if domains[name] is not None:
                details = {**domain_details(topos[kind], domains[name]), **fields[kind]}
            rows.append(dict(node_id=node_ids[name], topology_id=ids[kind], details=details, first_seen=FIRST_SWEEP, last_seen=seen))
        session.execute(insert(NODE_TOPOLOGIES), rows)
        rng = random.Random(3)
        checks = [dict(node=name, source="doctor", rules=["busbw-below-baseline", "slower-than-peers"], healthy=True,
                       findings=0, checked_at=FIRST_SWEEP + sweep * SWEEP_GAP + timedelta(hours=2))
                  for sweep in range(SWEEPS - size.sweeps, SWEEPS) for name in types]
        session.execute(insert(NODE_CHECKS), checks)
        actions = [dict(node=name, action=action, outcome=outcome, reason="wirewise:busbw-below-baseline:all_reduce.busbw:-31%",
                        detail="bench", evidence={"findings": [{"id": 1, "evidence": "all_reduce 1G: 220 vs 320 GB/s"}]},
                        asked_by="bench", at=seen - timedelta(days=rng.randrange(1, 60)))
                   for name in types for action, outcome in (("health-check", "passed"), ("prolog", "passed"))]
        session.execute(insert(FLEET_ACTIONS), actions)
        flagged = [name for i, name in enumerate(types) if i % 100 == 7]
        session.execute(insert(FINDINGS), [dict(
            node=name, rule="busbw-below-baseline", key=f"busbw-below-baseline|{name}", metric="all_reduce.busbw", delta="-31%",
            evidence="all_reduce 1G: 220 vs 320 GB/s", advice="re-run", gpus=None, measurement=None, reference={},
            source="doctor", status="open", confirmed=False, opened_at=seen, updated_at=seen) for name in flagged])

    store.write(work)


def build(url: str, size: Scale) -> float:
    """The fleet of `size` at `url` (a new, empty database): seconds taken."""
    from wirewise.orchestrator.store import Store

    started, cpu = time.perf_counter(), time.process_time()
    store = Store(url)  # the newest schema: rows are written with every column it has
    topos = wirings()
    store_fleet(store, size, topos)
    let_go(store)
    writer = Writer(url)
    encoding = Encoding(writer.postgresql)
    written = writer.results(result_rows(size, topos, encoding), encoding.columns)
    seconds = time.perf_counter() - started
    with store.read() as db:
        stored = db.scalar("SELECT count(*) FROM results")
    if stored != written:
        raise SystemExit(f"{store.safe_url}: {written:,} results written, {stored:,} stored")
    print(f"  built {size.label} ({size.nodes:,} nodes, {written:,} results) at {store.safe_url}: {seconds:.0f} s "
          f"({time.process_time() - cpu:.0f} s of this process's CPU), {written / seconds:,.0f} rows/s", flush=True)
    return seconds


def let_go(store) -> None:
    """Every connection the store holds closed: SQLite's writer below must be alone on the file
    to leave WAL mode while it writes."""
    store.engine.dispose()
    for conn in store._readers.values():
        conn.close()
    store._readers.clear()


# -- kept fleets -------------------------------------------------------------------------------
def manifest_path(folder: Path) -> Path:
    return folder / "manifest.json"


def read_manifest(folder: Path) -> dict:
    try:
        return json.loads(manifest_path(folder).read_text())
    except (OSError, ValueError):
        return {}


def write_manifest(folder: Path, manifest: dict) -> None:
    path = manifest_path(folder)
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True))


def sqlite_url(folder: Path, size: Scale) -> str:
    return f"sqlite:///{folder / f'fleet-{size.label}.db'}"


def pg_server(folder: Path) -> str:
    """The URL of the scale server's maintenance database (started when it is not running)."""
    env = {**os.environ, "WIREWISE_PG_DIR": str(folder / "pg"), "WIREWISE_PG_PORT": os.environ.get("WIREWISE_SCALE_PG_PORT", "15532")}
    folder.chmod(0o755)  # the server runs as postgres, its folder inside this one
    out = subprocess.run([str(ROOT / "tests" / "pg" / "server.sh"), "start"], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def pg_url(server: str, size: Scale, fresh: bool) -> str:
    """The fleet's database on the scale server (made new when `fresh`)."""
    import psycopg
    from sqlalchemy.engine import make_url

    parsed = make_url(server)
    name = f"fleet_{size.label}"
    if fresh:
        with psycopg.connect(host=parsed.host, port=parsed.port, user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    return parsed.set(database=name).render_as_string(hide_password=False)


def ensure(size: Scale, database: str) -> str:
    """The URL of the kept fleet of `size` on `database` (sqlite or postgresql): built when it is
    missing or was built by another FIXTURE_VERSION, migrated when its schema is older."""
    from wirewise.orchestrator.store import Store

    folder = data_folder(size.label)
    folder.mkdir(parents=True, exist_ok=True)
    key = f"{database}-{size.label}"
    manifest = read_manifest(folder)
    kept = manifest.get(key, {})
    server = pg_server(folder) if database == "postgresql" else None
    fresh = kept.get("fixture") != FIXTURE_VERSION or kept.get("results") != size.results
    if database == "sqlite":
        url = sqlite_url(folder, size)
        if fresh:
            Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)
    else:
        url = pg_url(server, size, fresh)
    if fresh:
        manifest.pop(key, None)
        write_manifest(folder, manifest)
        seconds = build(url, size)
        manifest = read_manifest(folder)
        manifest[key] = {"fixture": FIXTURE_VERSION, "nodes": size.nodes, "results": size.results, "build_s": round(seconds, 1),
                         "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        write_manifest(folder, manifest)
    else:
        store = Store(url, migrate=False)
        before = store.current_revision()
        started = time.perf_counter()
        store.upgrade()
        if store.current_revision() != before:
            print(f"  {key}: migrated from {before} in {time.perf_counter() - started:.0f} s", flush=True)
    return url


def main(argv: list[str]) -> int:
    """`python tests/benchmarks/scale_fleet.py [1250|12500 ...] [sqlite|postgresql ...]`: build what is missing."""
    labels = [a for a in argv if a in SCALES] or list(SCALES)
    databases = [a for a in argv if a in ("sqlite", "postgresql")] or ["sqlite", "postgresql"]
    for database in databases:
        for label in labels:
            print(ensure(scale(label), database), flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
