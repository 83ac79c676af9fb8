"""`make bench-scale`: every command an operator runs on the whole fleet, at 1,250 and 12,500
nodes (1 and 10 million stored results; tests/benchmarks/scale_fleet.py builds and keeps them),
on SQLite and PostgreSQL, as whole processes (issue 33). Not a timed test: it prints figures.

For each command: the time at both scales, the ratio between them beside the ratio of the work
(the rows or nodes the question needs), the target where the issue gives one, and what 100
million results (125,000 nodes) would cost if the command grows from 10 to 100 million as it
grew from 1 to 10 (time x the measured ratio again). Each run's figures are kept with the
fleet they were measured on (its size and where it is kept), and the table's work ratios are
those fleets' own. Lookups are timed beside `wirewise --help`
(a help run before each run, so both meet the same load: this machine's speed varies about 3x
between days, and four other jobs share its 2 cores) and judged by their ratio to it;
fleet-wide work is judged in seconds. Each figure is the median of RUNS runs (one for the
fleet-wide commands at 12,500 nodes); the CPU seconds beside the wall ones say how much of a
wall time was waiting for a core.

Slurm is a stand-in on PATH (bench_fleet.py's sinfo, sacct and scontrol, printing the fleet);
NVML is the fake of tests/report/fake_nvml (an H200 NVL quad) for the health check; the
prolog's collective runs on two gloo ranks (no GPU here). `doctor` records a check per node on
each run, the prolog its results: the kept fleets grow by those rows, which no figure here
depends on.

Run: `make bench-scale` (SCALE=1250 or DATABASES=sqlite to run part of it).
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the checkout's tests/ package

from tests.benchmarks import scale_fleet  # noqa: E402
from tests.benchmarks.bench_fleet import SPEC as FLEET_SPEC, pair_tests_to_name, sinfo_lines, STUB  # noqa: E402

WIREWISE = str(Path(sys.executable).with_name("wirewise"))
FAKE_NVML = ROOT / "tests" / "report" / "fake_nvml"
RUNS = int(os.environ.get("WIREWISE_SCALE_RUNS", "3"))
LIMIT_S = float(os.environ.get("WIREWISE_SCALE_LIMIT_S", "300"))  # a command still running then is stopped: "> LIMIT"
# Each command's heap (RLIMIT_DATA; SQLite's read-only file map is not counted): the machine's
# 24 GiB are shared, and a command that reads the whole history into Python fails here with a
# MemoryError instead of taking the others' memory. The failure is a figure too.
MEMORY_BYTES = int(float(os.environ.get("WIREWISE_SCALE_MEMORY_GIB", "6")) * 2**30)
CAMPAIGN = "fleet-each-node"
CHECKED = "gpu00001"  # the node the health check and the prolog run as (an H200 NVL node, as the fake NVML is)
PROLOG_RULES = {"include_cpu": True, "prolog": {"min_bytes": "4M", "max_bytes": "4M", "iters": 5, "warmup": 1,
                                                "backend": "gloo", "time_limit_s": 50}}


@dataclass
class Figure:
    """One command at one scale: wall and CPU seconds of each run, and --help's beside them."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    helps: list[float] = field(default_factory=list)
    stopped: bool = False
    failed: str | None = None  # why a run did not answer (out of memory), where one did not
    work: float | None = None  # the rows (or nodes) the question needs, where the command tells

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)

    @property
    def help_ratio(self) -> float | None:
        return self.wall / statistics.median(self.helps) if self.helps else None


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_BYTES, MEMORY_BYTES))


def run_once(args: list[str], env: dict, ok: tuple[int, ...] = (0,)) -> tuple[float, float, subprocess.CompletedProcess | None]:
    """(wall s, CPU s, the run; None when it ran past LIMIT_S and was stopped). A run that exits
    otherwise than `ok` is returned with its exit status (its caller says why)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        proc = subprocess.run([WIREWISE, *args], capture_output=True, text=True, env=env, timeout=LIMIT_S,
                              preexec_fn=_bounded)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, math.nan, None
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc


def measure(args: list[str], env: dict, runs: int, beside_help: bool = False, ok: tuple[int, ...] = (0,)) -> tuple[Figure, str]:
    """The command `runs` times (each after a --help run when `beside_help`); its last output."""
    figure, out = Figure(), ""
    for _ in range(runs):
        if beside_help:
            figure.helps.append(run_once(["--help"], env)[0])
        wall, cpu, proc = run_once(args, env, ok)
        figure.walls.append(wall)
        figure.cpus.append(cpu)
        if proc is None:
            figure.stopped = True
            break
        if proc.returncode not in ok or "Traceback" in proc.stderr:  # a crash exits 1 too, which doctor's answers share
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            figure.failed = f"out of its {MEMORY_BYTES / 2**30:g} GiB" if "MemoryError" in proc.stderr else f"exit {proc.returncode}: {last[:200]}"
            break
        out = proc.stdout
    return figure, out


# -- the fleet's surroundings: Slurm's stand-ins, the campaign, this machine as a node -----------
def slurm_env(folder: Path, url: str, size: scale_fleet.Scale) -> dict:
    """sinfo, sacct, squeue and scontrol stand-ins printing the fleet (bench_fleet.py's), the fake
    NVML first on PYTHONPATH, the database and the runs folder as settings."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for command in ("sinfo", "sacct", "squeue", "scontrol"):
        path = bin_dir / command
        path.write_text(STUB.format(calls=folder / "calls.txt", folder=folder))
        path.chmod(0o755)
    types = scale_fleet.node_types(size.nodes)
    (folder / "sinfo.txt").write_text("".join(sinfo_lines(i, n, t) for i, (n, t) in enumerate(types.items())))
    if not (folder / "sacct.txt").exists():
        (folder / "sacct.txt").write_text("")
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "WIREWISE_DB": url, "WIREWISE_RUNS": str(folder / "runs"),
            "PYTHONPATH": os.pathsep.join([str(FAKE_NVML), str(ROOT)]), "WIREWISE_FAKE_NVML": "{}",
            "SLURMD_NODENAME": CHECKED}


def campaign_spec(folder: Path) -> Path:
    spec = folder / "fleet.yaml"
    spec.write_text(yaml.safe_dump({**FLEET_SPEC, "name": CAMPAIGN}))
    return spec


def record_campaign(folder: Path, env: dict) -> int:
    """The each-node campaign recorded as submitted, half its tasks done (bench_fleet.py's
    record_submitted), once per kept fleet; returns its tasks."""
    from tests.benchmarks.bench_fleet import record_submitted

    marker = folder / "campaign-recorded"
    if marker.exists():
        name_outcomes(folder)
        return int(marker.read_text())
    forget_campaign(env["WIREWISE_DB"], folder)  # one a stopped run left half recorded
    tasks = record_submitted(campaign_spec(folder), folder, env)
    marker.write_text(str(tasks))
    return tasks


def name_outcomes(folder: Path) -> None:
    """A campaign recorded before finished runs were named in the folder's outcomes/ gets them
    named, as `campaign submit` and each finished run now write them (CampaignFolder.name_outcome):
    `campaign status` then reads that one listing, as it would for a campaign submitted today."""
    from wirewise.orchestrator.campaign.folder import OUTCOMES, CampaignFolder

    root = folder / "runs" / "campaigns" / CAMPAIGN
    if not (root / "tasks").is_dir() or (root / OUTCOMES).is_dir():
        return
    (root / OUTCOMES).mkdir()
    campaign = CampaignFolder(root)
    for task_id in os.listdir(root / "tasks"):
        if (outcome := campaign.outcome(task_id)) is not None:
            campaign.name_outcome(task_id, outcome["status"], outcome["attempt"])


def forget_campaign(url: str, folder: Path) -> None:
    """The each-node campaign's rows and folder removed, where a stopped run left them."""
    import shutil

    from wirewise.orchestrator.store import Store

    store = Store(url)
    with store.session() as session:
        from sqlalchemy import text

        session.execute(text("DELETE FROM tasks WHERE campaign_id IN (SELECT id FROM campaigns WHERE name = :name)"),
                        {"name": CAMPAIGN})
        session.execute(text("DELETE FROM campaigns WHERE name = :name"), {"name": CAMPAIGN})
    shutil.rmtree(folder / "runs", ignore_errors=True)


# -- the commands ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    name: str
    args: list[str]
    kind: str  # lookup: judged as a ratio to --help; fleet: in seconds
    work: str  # what the question needs, in words
    grows: str  # what that work grows with: "nodes", "rows" (every result), or "none" (one node's)
    target: float | None = None  # the ratio to --help (lookup) or the seconds (fleet) at 12,500 nodes
    ok: tuple[int, ...] = (0,)
    env: tuple[tuple[str, str], ...] = ()  # what the command's environment adds (the prolog's job)


def commands(folder: Path) -> list[Command]:
    nvl = scale_fleet.wirings()["nvl"].fingerprint[:12]
    spec = str(folder / "fleet.yaml")
    return [
        Command("results --node N --since D --op all_reduce", ["results", "--node", CHECKED, "--since", "2026-11-01",
                "--op", "all_reduce", "--json"], "lookup", "the node's rows since D", "none", 3.0),
        Command("results --fingerprint F --op --bytes --gpus", ["results", "--fingerprint", nvl, "--op", "reduce_scatter",
                "--bytes", "1G", "--gpus", "8", "--since", "2026-11-20", "--json"], "lookup",
                "one case on one node type since D", "nodes", 3.0),
        Command("results --campaign C --model --strategy", ["results", "--campaign", "sweep-20", "--model", "mistral-7b",
                "--strategy", "fsdp", "--json"], "lookup", "one sweep's runs of one model", "nodes", 3.0),
        Command("results wide (--op all_gather)", ["results", "--op", "all_gather", "--json"], "lookup",
                "every all_gather result", "rows", None),
        Command("doctor --health-check (one node)", ["doctor", "--health-check", "--report-only", "--json"], "lookup",
                "the node's wiring and findings", "none", None, (0, 1, 3)),
        Command("doctor --prolog (one node, 2 gloo ranks)", ["doctor", "--prolog", "--rules", str(folder / "prolog.yaml"),
                "--json"], "lookup", "its case's newest results", "none", None, (0, 1),
                (("SLURM_JOB_ID", "7"), ("SLURM_JOB_GPUS", "0,1"))),
        Command("campaign plan + submit --dry-run", ["campaign", "plan", spec, "--json"], "fleet", "the nodes' tasks", "nodes", 30.0),
        Command("campaign status", ["campaign", "status", CAMPAIGN, "--json"], "fleet", "the campaign's tasks", "nodes", 5.0),
        Command("fleet status", ["fleet", "status", "--json"], "fleet", "each node's latest check, findings, 20 actions",
                "nodes", 5.0),
        Command("fleet drain (dry run)", ["fleet", "drain", "--json"], "fleet", "the nodes and their open findings", "nodes",
                None, (0, 1)),
        Command("doctor (every node)", ["doctor", "--json"], "fleet", "every result", "rows", 60.0, (0, 1, 3)),
        Command("baseline export", ["baseline", "export", "--out", str(folder / "baselines.json"), "--json"], "fleet",
                "every ok result, by case", "rows", 60.0),
        Command("compare sweep-19 sweep-20", ["compare", "campaign:sweep-19", "campaign:sweep-20", "--json"], "fleet",
                "two sweeps' results", "nodes", None, (0, 1)),
        Command("report of one sweep", ["report", "--campaign", "sweep-20", "--out", str(folder / "report")], "fleet",
                "one sweep's results", "nodes", None),
        Command("place --across-nodes (512 nodes)", ["place", "--across-nodes", "--gpus", "4096", "--json"], "fleet",
                "the stored nodes, pair tests, findings", "nodes", None, (0, 1)),
    ] + [Command(f"fleet pairs scheduling, {k} bad", [], "fleet", "the pair tests' rounds", "nodes", 1.0) for k in (1, 20, 200)]


def run_scale(database: str, size: scale_fleet.Scale) -> tuple[Fleet, dict[str, Figure]]:
    url = scale_fleet.ensure(size, database)
    fleet = Fleet(size.nodes, size.results, where(url))
    folder = scale_fleet.data_folder(size.label) / f"bench-{database}-{size.label}"
    folder.mkdir(parents=True, exist_ok=True)
    env = slurm_env(folder, url, size)
    (folder / "prolog.yaml").write_text(yaml.safe_dump(PROLOG_RULES))
    campaign_spec(folder)
    record_campaign(folder, env)
    subprocess.run([WIREWISE, "topo", "save", "--node", CHECKED], env=env, capture_output=True)  # the fake NVML's wiring, as the checks read it
    print(f"== {database}, {fleet}", flush=True)
    print(f"   {bytes_per_result(url)}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    found: dict[str, Figure] = {}
    large = size.nodes > 2_000
    for command in commands(folder):
        if not command.args:
            continue  # the pair scheduling: a pure function, below
        runs = 1 if command.kind == "fleet" and large else RUNS
        figure, out = measure(command.args, {**env, **dict(command.env)}, runs, beside_help=command.kind == "lookup", ok=command.ok)
        if command.env and '"judged": true' not in out:
            figure.failed = f"not judged: {out.strip()[-200:]}"
        if command.name.startswith("campaign plan"):
            dry, _ = measure(["campaign", "submit", command.args[2], "--dry-run", "--json"], env, runs)
            figure.walls = [a + b for a, b in zip(figure.walls, dry.walls)]
            figure.cpus = [a + b for a, b in zip(figure.cpus, dry.cpus)]
            figure.stopped |= dry.stopped
        figure.work = rows_of(out) if command.name.startswith("results") else None
        found[command.name] = figure
        print(f"   {command.name}: {shown(figure)}", flush=True)
    for k in (1, 20, 200):
        start = time.process_time()
        tests, rounds, named, seconds = pair_tests_to_name(size.nodes, k)
        figure = Figure([seconds], [time.process_time() - start])
        found[f"fleet pairs scheduling, {k} bad"] = figure
        print(f"   fleet pairs scheduling, {k} bad of {size.nodes:,}: {tests:,} tests in {rounds} rounds, "
              f"{'all named' if named else 'NOT all named'}; {seconds:.2f} s", flush=True)
    return fleet, found


@dataclass(frozen=True)
class Fleet:
    """The fleet a run measured: its size, and where it is kept (a figure says which fleet it is of)."""

    nodes: int
    results: int  # the sweeps' results (the pair tests' one a node come on top)
    at: str  # the SQLite file, or the PostgreSQL server and database

    def __str__(self) -> str:
        return f"{self.nodes:,} nodes, {self.results:,} results ({self.at})"


def where(url: str) -> str:
    return url.removeprefix("sqlite:///") if url.startswith("sqlite") else url.split("@")[-1]


def rows_of(out: str) -> float | None:
    """The rows a `results --json` answer rests on (its groups' counts)."""
    try:
        doc = json.loads(out)
    except ValueError:
        return None
    groups = doc if isinstance(doc, list) else doc.get("groups") or doc.get("results") or []
    return float(sum(g.get("count", 0) for g in groups if isinstance(g, dict))) or None


def shown(f: Figure) -> str:
    said = f"> {LIMIT_S:.0f} s (stopped)" if f.stopped else f"{f.wall:.2f} s (CPU {f.cpu:.2f} s)"
    if f.failed:
        return f"FAILED after {f.wall:.0f} s: {f.failed}"
    if f.help_ratio is not None and not f.stopped:
        said += f", {f.help_ratio:.1f}x --help ({statistics.median(f.helps):.2f} s)"
    if f.work is not None:
        said += f", {f.work:,.0f} rows"
    return said


def bytes_per_result(url: str) -> str:
    """The results table with its indexes, per stored result."""
    from wirewise.orchestrator.store import Store

    store = Store(url, migrate=False)
    with store.read() as db:
        rows = db.scalar("SELECT count(*) FROM results")
        if db.dialect.sqlite:
            names = db.column("SELECT name FROM sqlite_master WHERE tbl_name = 'results'")
            p = db.params()
            size = db.scalar(f"SELECT sum(pgsize) FROM dbstat WHERE {p.among('name', names)}", p)
            whole = Path(url.removeprefix("sqlite:///")).stat().st_size
        else:
            size = db.scalar("SELECT pg_total_relation_size('results')")
            whole = db.scalar("SELECT pg_database_size(current_database())")
    return (f"{rows:,} results: {size / rows:,.0f} bytes per result with its indexes "
            f"({size / 2**30:.2f} GiB; the whole database {whole / 2**30:.2f} GiB)")


# -- the table -------------------------------------------------------------------------------------
HUNDRED_MILLION, NODES_AT_100M = 100_000_000, 125_000  # 20 sweeps of 40 results a node, as the smaller fleet's


def growth(grows: str, small: Fleet, large: Fleet) -> tuple[float, float]:
    """(the work's ratio from the smaller fleet to the larger, from the larger to 100 million
    results on 125,000 nodes)."""
    return {"nodes": (large.nodes / small.nodes, NODES_AT_100M / large.nodes),
            "rows": (large.results / small.results, HUNDRED_MILLION / large.results), "none": (1.0, 1.0)}[grows]


def projected(seconds: float, measured: float, work: float, ahead: float) -> float:
    """The time at 100 million results if the command grows ahead as it grew between the fleets:
    its exponent log(time ratio) / log(work ratio) (1: linear) carried over; with no growth of
    work between the fleets, the time ratio again."""
    if work <= 1.0:
        return seconds * max(measured, 1.0)
    return seconds * ahead ** (math.log(max(measured, 1e-9)) / math.log(work))


def verdict(command: Command, large: Figure, small: Figure | None) -> str:
    if large.stopped or large.failed:
        return "MISSED (stopped)" if large.stopped else f"MISSED ({large.failed})"
    if command.kind == "lookup" and command.grows == "none" and command.target is None:  # one node's checks: unchanged
        if small is None or small.failed or small.stopped:
            return "-"
        grew = large.cpu / small.cpu  # its own cost: --help's time moves with the load between the runs
        return f"{'ok' if grew <= 1.5 else 'MISSED'} (CPU {grew:.2f}x the smaller fleet's)"
    if command.target is None:
        return "-"
    if command.kind == "lookup":
        return "ok" if large.help_ratio <= command.target else f"MISSED by {large.help_ratio / command.target:.1f}x"
    if large.wall <= command.target:
        return "ok"
    if large.cpu <= command.target:  # the command's own cost is within it: the rest was waiting for a core
        return f"ok by CPU ({large.cpu:.1f} s; wall {large.wall:.0f} s at this load)"
    return f"MISSED by {large.cpu / command.target:.1f}x (CPU)"


def table(figures: dict[tuple[str, str], tuple[Fleet, dict[str, Figure]]], databases: list[str]) -> None:
    """The figures of both scales side by side; each database's ratios of work from the fleets its
    figures were measured on (their sizes are in the lines above the table)."""
    sizes = {label: {fleet.results for (_, at), (fleet, _) in figures.items() if at == label} for label in scale_fleet.SCALES}
    small_scale, large_scale = (scale_fleet.scale(label) for label in scale_fleet.SCALES)
    print()
    print(f"{'command':44} | db | {column(small_scale, sizes)} | {column(large_scale, sizes)} | time ratio | work ratio | "
          f"target | at {large_scale.nodes:,} | 100M results by the growth")
    for command in commands(Path(".")):
        for database in databases:
            small_fleet, small_found = figures.get((database, small_scale.label), (None, {}))
            large_fleet, large_found = figures.get((database, large_scale.label), (None, {}))
            small, large = small_found.get(command.name), large_found.get(command.name)
            if small is None and large is None:
                continue
            work, ahead = growth(command.grows, small_fleet or Fleet(small_scale.nodes, small_scale.results, ""),
                                 large_fleet or Fleet(large_scale.nodes, large_scale.results, ""))
            if small and large and small.work and large.work:
                work = large.work / small.work
            ratio = hundred = "-"
            if small and large and not (small.stopped or large.stopped or small.failed or large.failed):
                measured = large.wall / small.wall
                ratio = f"{measured:.1f}x (CPU {large.cpu / small.cpu:.1f}x)"
                seconds = projected(large.cpu if command.kind == "fleet" else large.wall, large.cpu / small.cpu, work, ahead)
                hundred = f"{seconds:.1f} s CPU" if command.kind == "fleet" else f"{seconds / statistics.median(large.helps):.1f}x --help"
            target = "-" if command.target is None else (f"{command.target:g}x --help" if command.kind == "lookup" else f"{command.target:g} s")
            if command.kind == "lookup" and command.grows == "none" and command.target is None:
                target = "unchanged"
            judged = verdict(command, large, small) if large else "-"
            print(f"{command.name:44} | {database[:6]} | {cell(small, command.kind)} | {cell(large, command.kind)} | {ratio} | "
                  f"{work:.1f}x ({command.work}) | {target} | {judged} | {hundred}")


def column(size: scale_fleet.Scale, sizes: dict[str, set[int]]) -> str:
    """A scale's column heading: its nodes, and its results where every database's fleet holds as many."""
    held = sizes.get(size.label, set())
    return f"{size.nodes:,} nodes, {next(iter(held)) / 1e6:g}M" if len(held) == 1 else f"{size.nodes:,} nodes"


def cell(f: Figure | None, kind: str) -> str:
    if f is None:
        return "-"
    if f.stopped:
        return f"> {LIMIT_S:.0f} s"
    if f.failed:
        return f"failed after {f.wall:.0f} s"
    said = f"{f.wall:.2f} s, CPU {f.cpu:.2f} s"
    if kind == "lookup" and f.help_ratio is not None:
        said += f" ({f.help_ratio:.1f}x --help)"
    return said


def saved(database: str, label: str) -> Path:
    return scale_fleet.data_folder(label) / f"figures-{database}-{label}.json"


def save(database: str, label: str, fleet: Fleet, figures: dict[str, Figure]) -> None:
    """A run's figures kept beside the fleets, with the fleet they were measured on: the table
    shows the latest of each database and size, so `SCALE=12500 DATABASES=postgresql` runs one
    part and prints all of it."""
    doc = {"measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": os.getloadavg()[0],
           "fleet": asdict(fleet), "figures": {name: asdict(figure) for name, figure in figures.items()}}
    saved(database, label).write_text(json.dumps(doc, indent=1))


def load(database: str, label: str) -> tuple[Fleet, dict[str, Figure]] | None:
    try:
        doc = json.loads(saved(database, label).read_text())
    except (OSError, ValueError):
        return None
    if "fleet" in doc:
        fleet = Fleet(**doc["fleet"])
    else:  # saved before figures named their fleet: the fleet kept there now, by its manifest
        kept = scale_fleet.read_manifest(saved(database, label).parent).get(f"{database}-{label}", {})
        fleet = Fleet(kept.get("nodes", 0), kept.get("results", 0), f"kept in {saved(database, label).parent}, by its manifest")
    print(f"   {database}, {label} nodes: measured {doc['measured_at']} at load {doc['load']:.1f} on {fleet}")
    return fleet, {name: Figure(**fields) for name, fields in doc["figures"].items()}


def main() -> int:
    databases = os.environ.get("DATABASES", "sqlite postgresql").split()
    labels = os.environ.get("SCALE", "1250 12500").split()
    for database in databases:
        for label in labels:
            save(database, label, *run_scale(database, scale_fleet.scale(label)))
    print("\nthe figures of each database and size, latest run:")
    figures = {(database, label): found for database in ("sqlite", "postgresql") for label in scale_fleet.SCALES
               if (found := load(database, label)) is not None}
    table(figures, sorted({database for database, _ in figures}, reverse=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
