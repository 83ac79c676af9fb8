"""`wirewise results` over 1,000,000 stored results and `wirewise report` over 100,000, as whole
processes on the SQLite default.

This machine's speed varies about 3x from one day to the next, so the targets of `results` are
ratios to `wirewise --help` measured in the same loop (a help run beside each query run, so
both see the same load): at most 3x for the selective filter sets, 7x for the wide one that
matches 34,000 rows (issue 21, item 10). The report's target is 10 s.

The rows are synthetic but shaped like a cluster's history: 16 nodes on four wirings (the
fixture topologies, stored as `topo save` stores them), collective sweeps (3 ops, 1 MiB..16 GiB,
2/4/8 GPUs, packed/spread, 10% forced PCIe, 10% imported from nccl-tests) and training runs
(3 models x 5 strategies), 20 campaigns over 90 days, 2% timeouts and failures. The database
files are kept in $TMPDIR between runs (built again when the schema changes).
"""

from __future__ import annotations

import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The command as an argument list: the console script beside this Python, or $WIREWISE
# (e.g. "python3 -m wirewise.orchestrator" where wirewise is importable but not installed).
WIREWISE = os.environ.get("WIREWISE", str(Path(sys.executable).with_name("wirewise"))).split()
TOPO = ROOT / "tests" / "fixtures" / "topo"
WIRINGS = {  # file -> (nodes, large-message all_reduce busbw in GB/s, roughly the article's)
    "synthetic-h200-sxm-8gpu-nvswitch.txt": (range(0, 4), 460.0),
    "synthetic-h200-nvl-8gpu-two-quads.txt": (range(4, 8), 320.0),
    "rtx4090-8gpu-pcie-sys-2nic.txt": (range(8, 12), 28.0),
    "v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt": (range(12, 16), 130.0),
}
OPS = ("all_reduce", "all_gather", "reduce_scatter")
MODELS = ("mistral-7b", "mistral-1b", "dinov2-large")
STRATEGIES = ("ddp", "zero1", "zero2", "zero3", "fsdp")
SELECTIVE_RATIO, WIDE_RATIO, REPORT_TARGET_S = 3.0, 7.0, 10.0
RUNS = 7
WIDE = ("--fabric", "nvlink-all", "--op", "all_gather", "--placement", "packed", "--transport", "default")
QUERIES = [
    ("--fabric", "nvlink-groups", "--op", "all_reduce", "--bytes", "1G", "--gpus", "4"),
    WIDE,
    ("--node", "n05", "--since", "2026-11-24", "--workload", "collective"),
    ("--campaign", "c07", "--workload", "train", "--model", "mistral-7b"),
    ("--fingerprint", "<nvl>", "--op", "reduce_scatter", "--bytes", "256M", "--source", "nccl-tests"),
]


def build(path: Path, rows: int) -> dict[str, str]:
    """A database of `rows` results at `path` (kept when it already holds them); returns the
    fingerprint of each wiring file."""
    from sqlalchemy import func, select

    from wirewise.case import derive
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow
    from wirewise.orchestrator.store.topology import save_topology
    from wirewise.topology import topology_from_text

    store = Store(f"sqlite:///{path}")
    wirings = {name: topology_from_text((TOPO / name).read_text(), name) for name in WIRINGS}
    with store.session() as session:
        stored = session.scalar(select(func.count()).select_from(ResultRow))
    if stored == rows:
        return {name: topo.fingerprint for name, topo in wirings.items()}
    started = time.perf_counter()
    for name, topo in wirings.items():
        for n in WIRINGS[name][0]:
            save_topology(store, topo, f"n{n:02d}")
    rng = random.Random(0)
    empty = {column.name: None for column in ResultRow.__table__.columns if column.name != "id" and column.nullable}
    groups = {topo.fingerprint: topo.groups for topo in wirings.values()}  # each wiring's, for the case's geometry
    batch = 20_000
    for first in range(0, rows, batch):
        made = [{**empty, **_row(rng, first + i, wirings)} for i in range(min(batch, rows - first))]
        values = [{**row, **derive(row, groups[row["fingerprint"]])} for row in made]  # as storing a record does
        with store.session() as session:
            session.execute(ResultRow.__table__.insert(), values)
    print(f"  built {path.name}: {rows:,} rows in {time.perf_counter() - started:.0f} s", flush=True)
    return {name: topo.fingerprint for name, topo in wirings.items()}


def _row(rng: random.Random, i: int, wirings) -> dict:
    name = rng.choice(list(WIRINGS))
    nodes, peak = WIRINGS[name]
    topo = wirings[name]
    node = f"n{rng.choice(nodes):02d}"
    gpus = rng.choice((2, 4, 8))
    placement = rng.choice(("packed", "spread"))
    transport = "pcie" if rng.random() < 0.1 else "default"
    status = rng.choices(("ok", "timeout", "failed"), (98, 1, 1))[0]
    when = datetime(2026, 12, 1, tzinfo=timezone.utc) - timedelta(minutes=rng.randrange(90 * 24 * 60))
    row = dict(
        record_id=f"bench-{i}", task_id=f"t{i // 60}", campaign=f"c{rng.randrange(20):02d}", node=node,
        gpus=list(range(gpus)), gpu_count=gpus, fingerprint=topo.fingerprint, fabric=topo.fabric, status=status,
        error=None if status == "ok" else status, started_at=when, ended_at=when + timedelta(seconds=30),
        versions={"nccl": "2.28.9"}, env={}, params={"transport": transport, "placement": placement}, extra={},
        world_size=gpus, source="wirewise",
    )
    if rng.random() < 0.9:
        size = 2 ** rng.randrange(20, 35)
        bandwidth = peak * (1 - math.exp(-size / 2**27)) * rng.uniform(0.95, 1.05) * (0.1 if transport == "pcie" else 1)
        row.update(workload="collective", op=rng.choice(OPS), bytes=size, count=size // 4, dtype="float32",
                   in_place=False, busbw_gbs=bandwidth, algbw_gbs=bandwidth / 1.75, time_us=size / bandwidth / 1e3,
                   source="nccl-tests" if rng.random() < 0.1 else "wirewise")
    else:
        tokens = rng.uniform(20_000, 100_000)
        row.update(workload="train", model=rng.choice(MODELS), strategy=rng.choice(STRATEGIES), micro_batch=4,
                   seq_len=2048, tokens_per_s=tokens, samples_per_s=tokens / 2048, step_time_s=4 * 2048 * gpus / tokens,
                   peak_mem_bytes=[rng.randrange(20, 90) * 2**30] * gpus, mfu=rng.uniform(0.2, 0.5))
    return row


def timed(args: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system) of each run. On a machine shared with other
    work the wall time includes waiting for a core; the CPU time is what the command costs."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = _once(args)
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus


@dataclass
class Beside:
    """Runs of a command, each right after a run of `wirewise --help`, so that both meet the
    same load: wall and CPU seconds of each."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    help_walls: list[float] = field(default_factory=list)
    help_cpus: list[float] = field(default_factory=list)

    def ratios(self) -> tuple[float, float]:
        """(median wall / median wall of --help, the same of CPU time). The target is on the
        first; the second says how much of it is the command's own work on a busy machine."""
        median = statistics.median
        return median(self.walls) / median(self.help_walls), median(self.cpus) / median(self.help_cpus)

    def text(self) -> str:
        median = statistics.median
        wall, cpu = self.ratios()
        return (f"--help beside it {median(self.help_walls) * 1000:.0f} ms (CPU {median(self.help_cpus) * 1000:.0f} ms): "
                f"{wall:.1f}x wall, {cpu:.1f}x CPU")


def beside_help(args: list[str], runs: int) -> Beside:
    found = Beside()
    for _ in range(runs):
        for walls, cpus, command in ((found.help_walls, found.help_cpus, ["--help"]), (found.walls, found.cpus, args)):
            wall, cpu = _once(command)
            walls.append(wall)
            cpus.append(cpu)
    return found


def _once(args: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([*WIREWISE, *args], capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def in_process(path: Path, args: list[str]) -> float:
    """Median seconds of the query and aggregation alone (no process start, imports, output)."""
    from wirewise.orchestrator.report.aggregate import aggregate
    from wirewise.orchestrator.results.filters import parse_filters, resolve
    from wirewise.orchestrator.store import Store

    names = {"--campaign": "campaigns", "--bytes": "bytes"}
    options = {names.get(flag, flag[2:]): value for flag, value in zip(args[::2], args[1::2])}
    options = {k: ([v] if k == "campaigns" else int(v) if k == "gpus" else v) for k, v in options.items()}
    store = Store(f"sqlite:///{path}")
    times = []
    for _ in range(5):
        start = time.perf_counter()
        aggregate(store, resolve(store, parse_filters(**options)))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    folder = Path(os.environ.get("TMPDIR", tempfile.gettempdir()))
    big, small = folder / "wirewise-bench-results-1m.db", folder / "wirewise-bench-results-100k.db"
    fingerprints = build(big, 1_000_000)
    build(small, 100_000)
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    # What every command pays whatever the store holds: Python, typer, SQLAlchemy and the exit.
    empty = folder / "wirewise-bench-results-empty.db"
    empty.unlink(missing_ok=True)
    build(empty, 0)
    _once(["--help"])  # the page cache warm for both
    empty_runs = beside_help(["results", "--json", "--db", f"sqlite:///{empty}"], RUNS)
    print(f"wirewise results on an empty store (start-up, imports, exit): median {statistics.median(empty_runs.walls) * 1000:.0f} ms; "
          f"{empty_runs.text()}", flush=True)
    missed = False
    for query in QUERIES:
        args = [a.replace("<nvl>", fingerprints["synthetic-h200-nvl-8gpu-two-quads.txt"][:8]) for a in query]
        out = subprocess.run([*WIREWISE, "results", *args, "--json", "--db", f"sqlite:///{big}"], capture_output=True, text=True, check=True)
        groups = out.stdout.count('"workload"')
        runs = beside_help(["results", *args, "--json", "--db", f"sqlite:///{big}"], RUNS)
        inside = in_process(big, args)
        ratio, target = runs.ratios()[0], WIDE_RATIO if query == WIDE else SELECTIVE_RATIO
        missed |= ratio > target
        print(f"wirewise results {' '.join(args)}: median {statistics.median(runs.walls) * 1000:.0f} ms over {RUNS} runs "
              f"(min {min(runs.walls) * 1000:.0f}; CPU {statistics.median(runs.cpus) * 1000:.0f} ms; query and aggregation "
              f"alone, warm, {inside * 1000:.0f} ms), {groups} groups, 1,000,000 rows; {runs.text()}; "
              f"target {target:g}x wall: {'ok' if ratio <= target else 'MISSED'}", flush=True)
    with tempfile.TemporaryDirectory() as out:
        times, cpu = timed(["report", "--out", out, "--db", f"sqlite:///{small}"], 3)
        figures = len(list(Path(out).glob("*.png")))
    median = statistics.median(times)
    missed |= median > REPORT_TARGET_S
    print(f"wirewise report over 100,000 rows: median {median:.1f} s over 3 runs (min {min(times):.1f}; "
          f"CPU {statistics.median(cpu):.1f} s), {figures} figures; "
          f"target {REPORT_TARGET_S:.0f} s: {'ok' if median <= REPORT_TARGET_S else 'MISSED'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
