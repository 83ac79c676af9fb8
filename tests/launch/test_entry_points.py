"""The one entry point (wirewise.jobs.supervise) from its other two callers: a multi-node Slurm step and
a submitit task on the real local Slurm. The local commands are covered by tests/collectives
and tests/train."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from wirewise.jobs.supervise import run_task
from wirewise.task import TaskSpec

ROOT = Path(__file__).resolve().parents[2]
SWEEP = {"ops": ["all_reduce", "all_gather"], "min_bytes": "4K", "max_bytes": "8K", "iters": 2, "warmup": 1, "check": True}


def test_two_node_step_joins_one_world(tmp_path):
    """What `srun --nodes=2 --ntasks-per-node=1 python -m wirewise.jobs.supervise RUN_DIR` does, with both
    "nodes" on this host (the real thing runs on the multi-node cluster: tests/slurm/test_multinode.py):
    each supervisor reads its node rank from SLURM_NODEID and the master address from
    SLURM_JOB_NODELIST (expanded by submitit, no Slurm command run), starts its rank, and the
    two ranks form one gloo world of 2. Only node 0 writes the result; both exit 0."""
    spec = TaskSpec(workload="collective", params=SWEEP, nnodes=2, nproc_per_node=1, backend="gloo", timeout_s=120)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "spec.json").write_text(spec.model_dump_json())
    slurm = {"SLURM_JOB_NODELIST": "localhost,localhost", "SLURM_NNODES": "2", "SLURM_JOB_ID": str(os.getpid() % 10000)}
    supervisors = [
        subprocess.Popen(
            [sys.executable, "-m", "wirewise.jobs.supervise", str(run_dir)], cwd=ROOT,
            env={**os.environ, **slurm, "SLURM_NODEID": str(node)},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for node in (0, 1)
    ]
    outputs = [p.communicate(timeout=180)[0] for p in supervisors]
    assert [p.returncode for p in supervisors] == [0, 0], outputs
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "ok"
    assert {r["world_size"] for r in result["records"]} == {2}
    assert all(r["wrong"] == 0 for r in result["records"])
    assert sorted(p.name for p in run_dir.glob("rank*.json")) == ["rank0.json", "rank1.json"]
    host = socket.gethostname().split(".")[0]  # each node's own name, as its supervisor knows it
    assert {(r["node_count"], tuple(r["nodes"])) for r in result["records"]} == {(2, (host, host))}


@pytest.mark.slurm
def test_submitit_task_runs_the_same_entry_point(slurm_cluster, tmp_path):
    """A submitit task on the real Slurm calls run_task (pickled): the result file appears
    with records from the job's node, and the task's result is its path."""
    import submitit

    spec = TaskSpec(workload="collective", params=SWEEP, nproc_per_node=2, backend="gloo", timeout_s=120)
    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    executor.update_parameters(slurm_partition=slurm_cluster.partition, timeout_min=5, cpus_per_task=2)
    job = executor.submit(run_task, spec, tmp_path / "run")
    result_path = Path(job.result())
    result = json.loads(result_path.read_text())
    assert result["status"] == "ok"
    assert {r["task_id"] for r in result["records"]} == {spec.task_id}
    assert {r["node"] for r in result["records"]} == {slurm_cluster.node}
    assert all(r["wrong"] == 0 and r["busbw_gbs"] > 0 for r in result["records"])


def test_a_failed_topology_probe_is_recorded_not_lost(tmp_path):
    """The run goes on without a fingerprint, and every record says why (extra.topology_error)."""
    broken = tmp_path / "topo.txt"
    broken.write_text("this is not nvidia-smi output\n")
    spec = TaskSpec(workload="collective", params=SWEEP, nproc_per_node=2, backend="gloo", timeout_s=120,
                    topology_file=str(broken))
    result = json.loads(run_task(spec, tmp_path / "run").read_text())
    assert result["status"] == "ok" and result["topology"] is None
    assert result["records"]
    for record in result["records"]:
        assert record["fingerprint"] is None and record["extra"]["backend"] == "gloo"
        assert "no `nvidia-smi topo -m` matrix found" in record["extra"]["topology_error"]


HIJACK = 'open(__import__("os").path.join({folder!r}, "HIJACKED"), "a").write(__name__ + "\\n")\n'


def _hostile_folder(root: Path) -> Path:
    """A folder holding a `jobs` package, a `wirewise` package and modules named as wirewise's own
    that each leave a HIJACKED file when imported (issue 10 item 7's reproduction)."""
    folder = root / "d"
    for package in ("jobs", "wirewise", "wirewise/jobs", "orchestrator", "contract"):
        (folder / package).mkdir(parents=True, exist_ok=True)
        (folder / package / "__init__.py").write_text(HIJACK.format(folder=str(folder)))
    for module in ("jobs/worker.py", "wirewise/jobs/worker.py", "wirewise/jobs/supervise.py", "typer.py", "torch.py"):
        (folder / module).write_text(HIJACK.format(folder=str(folder)))
    return folder


def test_code_in_the_current_folder_is_never_imported(tmp_path):
    """Ranks started as `python -m jobs.worker` imported a jobs/ package from the folder the
    user ran wirewise in. Neither the CLI nor its ranks may import anything from there."""
    from tests.conftest import wirewise

    folder = _hostile_folder(tmp_path)
    proc = wirewise("bench", "collectives", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce", "-b", "1K", "-e", "1K",
                    "--db", f"sqlite:///{tmp_path / 'w.db'}", cwd=folder, env={"WIREWISE_RUNS": str(tmp_path / "runs")})
    assert proc.returncode == 0, proc.stderr
    assert not (folder / "HIJACKED").exists(), (folder / "HIJACKED").read_text()


def test_ranks_ignore_relative_pythonpath_entries(tmp_path, monkeypatch):
    """PYTHONPATH=. (or '') names the current folder too: the ranks drop relative entries."""
    folder = _hostile_folder(tmp_path)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([".", "", "jobs"]))
    spec = TaskSpec(workload="collective", params={**SWEEP, "ops": ["all_reduce"]}, nproc_per_node=2, backend="gloo", timeout_s=120)
    result = json.loads(run_task(spec, tmp_path / "run").read_text())
    assert result["status"] == "ok"
    assert not (folder / "HIJACKED").exists(), (folder / "HIJACKED").read_text()
