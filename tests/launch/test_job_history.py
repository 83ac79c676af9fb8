"""Real jobs feed the history: the record a job writes of itself (source job), its result file
stored by `wirewise collect` or by the job itself, and `place`, `estimate` and the advice then
using it as measured history, naming the source.

A GPU job cannot run here: its record is built by the recorder's own code (job_record) from
the figures a GPU job's ranks would gather, on a saved H200 NVL wiring; everything after that
(the result file, collect, the store, place, estimate, the advice) is the real path. The custom
loop runs for real, on the CPU."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import wirewise
from tests.conftest import wirewise as run_wirewise, wirewise_json
from tests.launch.conftest import no_slurm
from tests.topology.common import NVL_QUADS
from wirewise.jobs.history import RankFigures, _strategy, job_record, write_result
from wirewise.launch_file import LaunchFile
from wirewise.topology import topology_from_text

NAMES = "".join(f"GPU {i}: NVIDIA H200 NVL (UUID: GPU-{i:08d})\n" for i in range(8))


@pytest.fixture
def named_quads(tmp_path: Path) -> Path:
    """The two-quad wiring with its GPUs named (as the GPU scripts save it): memory and peak known."""
    path = tmp_path / "nvl-quads.txt"
    path.write_text(NAMES + NVL_QUADS.read_text())
    return path


def gpu_job_result(tmp_path: Path, topo_file: Path, tokens_per_s: float, peak_gb: float) -> Path:
    """The result file of a 2-GPU job on GPUs 0,1, launched with ddp, as its rank 0 writes it."""
    topo = topology_from_text(topo_file.read_text())
    launch = LaunchFile(
        model="mistral-7b", batch_size=1, seq_len=2048, strategy="ddp", chosen_by="advice", advised="ddp",
        device="cuda", processes_per_node=2, nodes=["nvl1"], gpus=[0, 1], placement="packed",
        predicted_busbw_gbs=120.0, busbw_basis="model", topology=topo.model_dump(mode="json"),
        accelerate_config_file=str(tmp_path / "accelerate.yaml"), script=["train.py"],
    )
    step_s = 2 * 2048 / tokens_per_s
    ranks = [RankFigures([step_s] * 4, 2048, 1, int(peak_gb * 1e9), "cuda", "nvl1", [gpu]) for gpu in (0, 1)]
    ran = {"distributed_type": "DistributedType.MULTI_GPU", "backend": "nccl", "mixed_precision": "bf16"}
    record, topo = job_record(ranks, launch, micro_batch=1, seq_len=2048, ran=ran)
    assert (record.source, record.gpus, record.gpu_count, record.strategy) == ("job", [0, 1], 2, "ddp")
    assert record.fingerprint == topo.fingerprint and record.params["placement"] == "packed"
    assert record.tokens_per_s == pytest.approx(tokens_per_s) and record.peak_mem_bytes == [int(peak_gb * 1e9)] * 2
    return write_result(tmp_path / "run", record, topo)


def test_a_gpu_jobs_figures_become_measured_history_with_their_source(tmp_path, named_quads, db_url):
    result = gpu_job_result(tmp_path, named_quads, tokens_per_s=30_000, peak_gb=100)
    stored = wirewise_json("collect", str(result.parent), "--db", db_url)
    assert (stored["files"], stored["new_records"]) == (1, 1)
    listed = wirewise_json("results", "--source", "job", "--db", db_url)
    assert [(row["source"], row["model"], row["strategy"], row["ranks"]) for row in listed] == [("job", "mistral-7b", "ddp", 2)]

    placed = wirewise_json("place", "--gpus", "2", "--free", "0,1,4", "--topology-file", str(named_quads),
                           "--model", "mistral-7b", "--seq-len", "2048", "--db", db_url)
    rows = {row["strategy"]: row for row in placed["advice"]["strategies"]}
    assert placed["gpus"] == [0, 1]
    assert (rows["ddp"]["basis"], rows["ddp"]["results"], rows["ddp"]["sources"]) == ("measured", 1, ["job"])
    assert rows["ddp"]["predicted_tokens_per_s"] == 30_000
    assert rows["fsdp"]["basis"] == "fitted"  # the step model fitted to the job's one ddp run
    assert placed["strategy"] == "ddp"
    assert "ddp measured fastest on this wiring and set shape (30000 tokens/s over 1 result(s) of job)" in " ".join(placed["reasons"])

    estimated = wirewise_json("estimate", "--model", "mistral-7b", "--gpus", "2", "--seq-len", "2048", "--db", db_url)
    ddp = next(row for row in estimated["strategies"] if row["strategy"] == "ddp")
    assert ddp["calibration"]["sources"] == ["job"] and ddp["calibration"]["measured_peak_gb"] == 100.0

    advice = wirewise.advice(model="mistral-7b", seq_len=2048, gpus=2, topology_file=named_quads, db=db_url,
                             env=no_slurm(CUDA_VISIBLE_DEVICES="0,1"), cpu=True)
    row = advice.row("ddp")
    assert (row.tokens_basis, row.sources, row.tokens_per_s) == ("measured", ["job"], 30_000)
    assert (row.memory_basis, row.memory_sources) == ("measured", ["job"])
    assert advice.advised == "ddp"


def test_a_custom_loop_records_itself_and_a_database_out_of_reach_leaves_the_file(tmp_path, db_url):
    """record_job at the end of a plain torch loop (one process): unreachable database first
    (a warning, the file stays), then the real one; `wirewise collect` stores the first later."""
    code = f"""
import time, torch
from wirewise.jobs.history import record_job
model = torch.nn.Linear(32, 32)
optimizer = torch.optim.AdamW(model.parameters())
times = []
for step in range(6):
    start = time.perf_counter()
    loss = model(torch.randn(8, 32)).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    times.append(time.perf_counter() - start)
kept = record_job(times, tokens_per_step=8 * 16, samples_per_step=8, model="tiny-mistral", strategy="ddp",
                  micro_batch=8, seq_len=16, run_dir={str(tmp_path / 'loop')!r}, db="postgresql+psycopg://nobody@127.0.0.1:9/none")
stored = record_job(times, tokens_per_step=8 * 16, samples_per_step=8, model="tiny-mistral", strategy="ddp",
                    micro_batch=8, seq_len=16, run_dir={str(tmp_path / 'loop')!r}, db={db_url!r})
print(kept, stored)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**no_slurm(), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    kept, stored = map(Path, proc.stdout.split())
    assert (kept.name, stored.name) == ("result.json", "result-2.json")
    assert f"wirewise: warning: could not store {kept}" in proc.stderr and f"wirewise collect {kept}" in proc.stderr
    assert "wirewise: job figures stored: 1 result file(s) (ok 1): 1 new record(s)" in proc.stderr
    record = json.loads(stored.read_text())["records"][0]
    assert (record["source"], record["workload"], record["gpus"], record["extra"]["device"]) == ("job", "train", [], "cpu")
    assert record["params"]["engine"] == "custom" and len(record["extra"]["step_times_s"]) == 4  # 2 warm-up steps left out
    assert record["tokens_per_s"] == pytest.approx(128 / record["step_time_s"])

    listed = wirewise_json("results", "--source", "job", "--include-cpu", "--db", db_url)
    assert [row["count"] for row in listed if row["status"] == "ok"] == [1]
    assert wirewise_json("collect", str(tmp_path / "loop"), "--db", db_url)["new_records"] == 1  # the one left behind
    assert not run_wirewise("results", "--source", "job", "--db", db_url).stdout.count("tiny-mistral")  # CPU: not by default


def test_a_job_stores_where_the_settings_say_as_every_command_does(tmp_path):
    """No db= and no WIREWISE_DB: the job's figures go to the database of the configuration
    files (the site's, then the user's over it), and with no file to the default one in the
    user's data folder: where `wirewise results` reads with the same settings. A configuration
    file that cannot be read leaves the file and a warning; the job still ends 0."""
    site, user, data = tmp_path / "site.toml", tmp_path / "config" / "wirewise" / "config.toml", tmp_path / "data"
    user.parent.mkdir(parents=True)
    code = f"""
import os
from pathlib import Path
from wirewise.jobs.history import record_job
def job(name):
    print(record_job([0.1] * 4, tokens_per_step=64, samples_per_step=4, model="tiny-mistral", strategy="ddp",
                     run_dir={str(tmp_path)!r} + "/" + name))
job("default")
Path({str(site)!r}).write_text('db = "sqlite:///site.db"\\n')
job("site")
Path({str(user)!r}).write_text('db = "sqlite:///user.db"\\n')
job("user")
Path({str(user)!r}).write_text('db = 3\\n')
job("unreadable")
"""
    env = {**no_slurm(), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(data), "WIREWISE_SITE_CONFIG": str(site)}
    env.pop("WIREWISE_DB", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("wirewise: job figures stored: 1 result file(s) (ok 1): 1 new record(s)") == 3, proc.stderr
    unreadable = tmp_path / "unreadable" / "result.json"
    assert f"warning: could not store {unreadable} ({user}: db: 3: give a URL" in proc.stderr
    assert f"later: wirewise collect {unreadable}" in proc.stderr
    for where, database in (("default", data / "wirewise" / "wirewise.db"), ("site", tmp_path / "site.db"), ("user", user.parent / "user.db")):
        listed = wirewise_json("results", "--source", "job", "--include-cpu", "--db", f"sqlite:///{database}")
        assert [row["count"] for row in listed if row["status"] == "ok"] == [1], where
    user.unlink()
    env["PATH"] = os.environ["PATH"]
    shown = run_wirewise("results", "--source", "job", "--include-cpu", "--json", env={**env, "WIREWISE_DB": None}, cwd=tmp_path)
    assert [row["count"] for row in json.loads(shown.stdout)] == [1], shown.stderr  # the site's file, as the job read it


JOB = """
import sys
from wirewise.jobs.history import record_job
print(record_job([0.1] * 4, tokens_per_step=64, samples_per_step=4, model="tiny-mistral", strategy="ddp",
                 run_dir=sys.argv[1], db=sys.argv[2]))
"""


def test_a_job_waits_for_a_busy_database_and_never_fails_over_it(tmp_path, db_url):
    """Another process holds SQLite's write lock: a job whose patience (the setting db_wait_s,
    2 s here) runs out says where its file is and ends 0; a job with the default patience
    (60 s) waits, still running while the lock is held, and stores once it is let go.
    `wirewise collect` stores the first file later. Real processes, a real database."""
    run_wirewise("db", "upgrade", "--db", db_url, check=True)
    env = {**no_slurm(), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    lock = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None, timeout=30)
    lock.execute("BEGIN IMMEDIATE")
    try:
        impatient = subprocess.run([sys.executable, "-c", JOB, str(tmp_path / "impatient"), db_url], capture_output=True,
                                   text=True, timeout=300, env={**env, "WIREWISE_DB_WAIT_S": "2"})
        patient = subprocess.Popen([sys.executable, "-c", JOB, str(tmp_path / "patient"), db_url], text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        waited = wait_for(tmp_path / "patient" / "result.json", patient)
        time.sleep(3)  # longer than the impatient job waited: this one is still waiting
        assert patient.poll() is None, patient.communicate()
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert impatient.returncode == 0, impatient.stderr
    kept = Path(impatient.stdout.strip())
    assert f"wirewise: warning: could not store {kept} (the database stayed busy for 2 s" in impatient.stderr
    out, err = patient.communicate(timeout=300)
    assert patient.returncode == 0 and Path(out.strip()) == waited, err
    assert "job figures stored: 1 result file(s) (ok 1): 1 new record(s)" in err and "warning" not in err, err
    assert wirewise_json("collect", str(kept), "--db", db_url)["new_records"] == 1
    listed = wirewise_json("results", "--source", "job", "--include-cpu", "--db", db_url)
    assert [row["count"] for row in listed if row["status"] == "ok"] == [2]


def wait_for(path: Path, proc: subprocess.Popen) -> Path:
    """`path` once the process has written it (it writes its result file, then stores it)."""
    deadline = time.monotonic() + 240
    while not path.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    return path


@pytest.mark.parametrize("named, ran, recorded, noted", [
    ("ddp", {"distributed_type": "DistributedType.MULTI_CPU"}, "ddp", False),
    ("fsdp", {"distributed_type": "DistributedType.MULTI_CPU"}, "ddp", True),  # accelerate's FSDP plugin on CPU
    ("zero2", {"distributed_type": "DistributedType.DEEPSPEED", "zero_stage": 2}, "zero2", False),
    ("zero2", {"distributed_type": "DistributedType.DEEPSPEED", "zero_stage": 3}, "zero3", True),
    (None, {"distributed_type": "DistributedType.FSDP"}, "fsdp", False),
    ("fsdp", {}, "fsdp", False),  # a custom loop: what it says it ran
])
def test_the_strategy_recorded_is_what_ran(named, ran, recorded, noted):
    name, note = _strategy(named, ran)
    assert name == recorded and bool(note) == noted
