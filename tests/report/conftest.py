"""One results database for the report tests, built once per session from real runs, copied
per test (a test may add to its copy).

What it holds:
- CPU runs (gloo, 2 ranks, fingerprinted with the synthetic H200 NVL wiring): collectives
  1K..16K twice in campaign camp-a and twice in camp-b (campaign set on the run's result
  file before the real ingest, as a campaign task's spec sets it), one run with
  --transport pcie, one run stopped by its timeout; tiny-mistral training with ddp and fsdp.
- The H100 nccl-tests log imported for four nodes h100-a..d of the same wiring, each copy's
  numbers scaled as by run-to-run noise: x1.00, x0.99, x1.01, x1.005 (NOISE).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, wirewise

NVL = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
H100_TOPO = FIXTURES / "topo" / "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt"
H100_LOG = FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
NOISE = {"h100-a": 1.0, "h100-b": 0.99, "h100-c": 1.01, "h100-d": 1.005}
CPU_SWEEP = ("--backend", "gloo", "--nproc", "2", "-b", "1K", "-e", "16K", "-f", "4", "--iters", "3", "--warmup", "1")


def node_log(node: str, factor: float, source: Path = H100_LOG) -> str:
    """The H100 log as if run on `node` with bandwidths x factor (times / factor)."""
    lines = []
    for line in source.read_text().replace("on cnode3-002", f"on {node}").splitlines():
        fields = line.split()
        if len(fields) == 13 and fields[0].isdigit():
            for time_at, bw_at in ((5, (6, 7)), (9, (10, 11))):
                fields[time_at] = f"{float(fields[time_at]) / factor:.2f}"
                for k in bw_at:
                    fields[k] = f"{float(fields[k]) * factor:.2f}"
            line = "  ".join(fields)
        lines.append(line)
    return "\n".join(lines) + "\n"


def import_log(folder: Path, url: str, node: str, factor: float) -> None:
    log = folder / f"{node}-{factor}-all_reduce.txt"
    log.write_text(node_log(node, factor))
    wirewise("import", "nccl-tests", str(log), "--topology-file", str(H100_TOPO), "--db", url, check=True)


def _campaign_run(folder: Path, url: str, campaign: str, repeat: int) -> None:
    """A CPU sweep run into a scratch database; its result file, tagged with the campaign,
    then goes through the real ingest into `url`."""
    from wirewise.orchestrator.record.ingest import ingest_result_file
    from wirewise.orchestrator.store import Store

    runs = folder / f"runs-{campaign}-{repeat}"
    scratch = f"sqlite:///{folder / 'scratch.db'}"
    wirewise("bench", "collectives", *CPU_SWEEP, "--topology-file", str(NVL), "--db", scratch,
             env={"WIREWISE_RUNS": str(runs)}, check=True)
    [result] = runs.rglob("result.json")
    doc = json.loads(result.read_text())
    for record in doc["records"]:
        record["campaign"] = campaign
    result.write_text(json.dumps(doc))
    ingest_result_file(Store(url), result)


@pytest.fixture(scope="session")
def report_template(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("report-db")
    path = folder / "template.db"
    url = f"sqlite:///{path}"
    env = {"WIREWISE_RUNS": str(folder / "runs")}
    for campaign in ("camp-a", "camp-b"):
        for repeat in range(2):
            _campaign_run(folder, url, campaign, repeat)
    wirewise("bench", "collectives", *CPU_SWEEP, "--transport", "pcie", "--topology-file", str(NVL), "--db", url, env=env, check=True)
    stopped = wirewise("bench", "collectives", "--backend", "gloo", "--nproc", "2", "-b", "256M", "-e", "1G", "--ops", "all_reduce",
                       "--timeout", "2", "--topology-file", str(NVL), "--db", url, env=env)
    assert stopped.returncode == 1 and "timeout" in stopped.stderr, stopped.stderr
    for strategy in ("ddp", "fsdp"):
        wirewise("bench", "train", "--model", "tiny-mistral", "--strategy", strategy, "--nproc", "2", "--steps", "2",
                 "--topology-file", str(NVL), "--db", url, env=env, check=True)
    for node, factor in NOISE.items():
        import_log(folder, url, node, factor)
    return path


def copy_of(template: Path, copy: Path) -> str:
    """A copy of a session's database for one test (a test may add to it): its URL. SQLite's
    backup copies what the WAL holds too (a plain file copy could miss it)."""
    with sqlite3.connect(template) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return f"sqlite:///{copy}"


@pytest.fixture
def report_db(report_template: Path, tmp_path: Path) -> str:
    return copy_of(report_template, tmp_path / "wirewise.db")


@pytest.fixture(scope="session")
def image_run(tmp_path_factory) -> Path:
    """The result file of a real training run of an image model (tiny-dinov2) on two CPU
    ranks: it counts samples, not tokens, and CPU ranks have no MFU, so the record holds
    tokens_per_s and mfu as null."""
    folder = tmp_path_factory.mktemp("image-run")
    wirewise("bench", "train", "--model", "tiny-dinov2", "--strategy", "ddp", "--nproc", "2", "--steps", "2",
             "--batch-size", "2", "--db", f"sqlite:///{folder / 'scratch.db'}", env={"WIREWISE_RUNS": str(folder / "runs")},
             check=True)
    [result] = (folder / "runs").rglob("result.json")
    return result


def collect_as_campaign(result: Path, folder: Path, url: str, campaign: str) -> None:
    """`wirewise collect` of the run's result file as if `campaign` had run it (new record ids:
    another run of the same task)."""
    doc = json.loads(result.read_text())
    for record in doc["records"]:
        record["campaign"] = campaign
        record["record_id"] = f"{campaign}-{record['record_id']}"[:64]
    copy = folder / campaign / "result.json"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(json.dumps(doc))
    wirewise("collect", str(copy), "--db", url, check=True)



MEASURED = FIXTURES / "measured-2xh200"


@pytest.fixture(scope="session")
def measured_template(tmp_path_factory) -> Path:
    """The 2x H200 measurements (tests/fixtures/measured-2xh200) stored as a user stores them:
    the node's wiring saved from its topo file, wirewise's own result records collected, and the
    six nccl-tests logs imported with their transport (NVLink, forced PCIe)."""
    path = tmp_path_factory.mktemp("measured-db") / "measured.db"
    url = f"sqlite:///{path}"
    wirewise("db", "upgrade", "--db", url, check=True)
    wirewise("topo", "save", "-f", str(MEASURED / "topo.txt"), "--node", "vm", "--db", url, check=True)
    wirewise("collect", str(MEASURED / "wirewise-results.jsonl"), "--db", url, check=True)
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        for transport in ("default", "pcie"):
            wirewise("import", "nccl-tests", str(MEASURED / f"nccl-tests-{op}-{transport}.txt"), "--transport", transport,
                     "--env", "NCCL_NVLS_ENABLE=0", "--env", "NCCL_VERSION=2.28.3-1", "--topology-file",
                     str(MEASURED / "topo.txt"), "--db", url, check=True)
    return path


@pytest.fixture
def measured_db(measured_template: Path, tmp_path: Path) -> str:
    return copy_of(measured_template, tmp_path / "measured.db")


def check_numbers(numbers: list[dict], rows: list[dict]) -> None:
    """Every number of a summary (report --json's, or the page's spans) is its results row's
    metric (the row named by its identity fields in `results --json`), or the ratio of two such
    numbers, and its text shows it rounded."""
    for number in numbers:
        shown, decimals = _shown(number["text"])
        assert abs(shown - number["value"]) <= 0.5 * 10 ** -decimals + 1e-9, number
        _traced(number, rows)


def _shown(text: str) -> tuple[float, int]:
    """The number a text shows ('323.1 GB/s', '106,210', '72%', '11.6x', '0.0733 GB/s') and its decimals."""
    found = re.search(r"-?[\d,]+(?:\.(\d+))?", text)
    assert found, text
    value = float(found.group(0).replace(",", ""))
    percent = text.strip().endswith("%")
    return (value / 100 if percent else value), len(found.group(1) or "") + (2 if percent else 0)


def _traced(number: dict, rows: list[dict]) -> None:
    if number.get("row") is not None:
        [row] = [r for r in rows if all(r.get(k) == v for k, v in number["row"].items())]
        assert number["value"] == pytest.approx(row[number["metric"]] / number["scale"])
    if number.get("of"):
        a, b = number["of"]
        _traced(a, rows)
        _traced(b, rows)
        assert number["value"] == pytest.approx(a["value"] / b["value"])
