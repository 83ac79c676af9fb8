"""Tasks across nodes on the real multi-node Slurm cluster (tests/slurm/multinode.sh): two node
types with their own fake GPUs and wiring, a 2-node campaign task as one Slurm step whose gloo
ranks rendezvous over the nodes' network, and a failure on the second node (a rank killed, an
allocation that fails, the node lost) ending the task on every node with that node's error.

The ranks run gloo on CPU: the GPUs are character devices and NVML a stand-in (no GPU exists here).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, WIREWISE, wirewise_json
from tests.slurm.fixture import cancel_jobs_under
from wirewise.jobs.peers import PEER_SILENCE_S

pytestmark = pytest.mark.multinode
A100 = FIXTURES / "topo" / "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt"
QUICK = {"ops": ["all_reduce"], "min_bytes": "4K", "max_bytes": "8K", "iters": 2, "warmup": 1, "check": True}
SLOW = {**QUICK, "iters": 10_000_000}
TIMEOUT_S = 120  # each task's; the failures below must end their task long before it
SLURMD_TIMEOUT_S = 30  # the test cluster's (tests/slurm/multinode.sh)


@pytest.fixture(autouse=True)
def cancel_leftovers(tmp_path):
    yield
    cancel_jobs_under(tmp_path)


def rows(db_url: str, sql: str) -> list[tuple]:
    return sqlite3.connect(db_url.removeprefix("sqlite:///")).execute(sql).fetchall()


def submit_two_node_task(tmp_path: Path, cluster, db_url: str, sweep: dict, name: str) -> str:
    """`wirewise campaign submit` of one collective task on 2 nodes, 1 rank each; its task id."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": name,
        "workloads": [{"collectives": sweep}],
        "axes": {"gpus": [1]},
        "target": {"executor": "slurm", "partition": cluster.partition, "nodes": 2, "backend": "gloo",
                   "time": "00:10:00", "folder": str(tmp_path / "campaign"), "timeout_s": TIMEOUT_S},
    }))
    # Planned on the 4-GPU wiring: the element asks for 4 GPUs per node, which only wwn1 and wwn2 have.
    report = wirewise_json("campaign", "submit", str(spec), "--topology-file", str(A100), "--db", db_url, cwd=tmp_path)
    assert report["tasks"] == 1 and report["parameters"]["nodes"] == 2
    return json.loads((tmp_path / "campaign" / "plan.json").read_text())["tasks"][0]["task_id"]


def watch(name: str, db_url: str, limit_s: float = 300) -> dict:
    return wirewise_json("campaign", "status", name, "--watch", "--interval", "1", "--db", db_url, timeout=limit_s)


def rank_pid(cluster, node: str, rank: int, folder: Path, limit_s: float = 120) -> int:
    """The pid of a running rank of a task under `folder`, once it runs inside `node`."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        for pid in cluster.pids(node):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"wirewise.jobs.worker" in argv and any(str(folder).encode() in a for a in argv) and f"RANK={rank}".encode() in environ:
                progress = [p for p in folder.rglob("progress.jsonl")]
                if progress:  # into the sweep: the rendezvous over the nodes' network is done
                    return pid
        time.sleep(0.2)
    raise AssertionError(f"rank {rank} never ran on {node}")


def test_nodes_differ_and_each_reports_its_own_wiring(multinode, tmp_path):
    """Two node types in one partition: GRES and features as Slurm sees them, and the wiring a
    job on each node probes (its fake NVML and `nvidia-smi topo -m`); `exec` reaches a node's
    own network, where a slow link can be planted."""
    shown = subprocess.run(["sinfo", "-h", "-N", "-p", multinode.partition, "-o", "%N %G %f"],
                           capture_output=True, text=True, check=True).stdout.split("\n")
    assert sorted(filter(None, shown)) == ["wwn1 gpu:4 a100x4", "wwn2 gpu:4 a100x4", "wwn3 gpu:3 v100x3"]

    out = tmp_path / "topo"
    out.mkdir()
    subprocess.run(["srun", "-N3", "--gpus-per-node=1", "-o", f"{out}/%N.json", "-e", f"{out}/%N.err", WIREWISE, "topo", "show", "--json"],
                   check=True, timeout=120)
    wiring = {f.stem: json.loads(f.read_text()) for f in out.glob("*.json")}
    assert {n: (w["gpus"], w["fabric"]) for n, w in wiring.items()} == {
        "wwn1": (4, "nvlink-all-to-all"), "wwn2": (4, "nvlink-all-to-all"), "wwn3": (3, "nvlink-groups")}
    assert wiring["wwn1"]["fingerprint"] == wiring["wwn2"]["fingerprint"] != wiring["wwn3"]["fingerprint"]
    # where each sits (its fake NVML's fabric): wwn1 and wwn2 in one NVLink domain, wwn3 in another
    assert wiring["wwn1"]["nvlink_domain"] == wiring["wwn2"]["nvlink_domain"] != wiring["wwn3"]["nvlink_domain"]
    assert wiring["wwn1"]["nvlink_domain"]["clique_id"] == 1 and wiring["wwn3"]["nvlink_domain"] is not None
    assert wiring["wwn3"]["links"][1][2] == "NV6"

    assert multinode.exec("wwn2", "hostname").stdout.strip() == "wwn2"
    address = multinode.exec("wwn2", "ip", "-4", "-o", "addr", "show", "dev", "eth0").stdout
    assert f"{multinode.env['WIREWISE_MULTINODE_NET']}.12/24" in address
    multinode.exec("wwn2", "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "80mbit", "burst", "64kbit", "latency", "400ms")
    try:
        assert "tbf" in multinode.exec("wwn2", "tc", "qdisc", "show", "dev", "eth0").stdout
    finally:
        multinode.exec("wwn2", "tc", "qdisc", "del", "dev", "eth0", "root")
    assert "tbf" not in subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout  # never the host's


def test_a_two_node_campaign_task_is_one_record_naming_both_nodes(multinode, tmp_path, db_url):
    """`wirewise campaign submit` (submitit's sbatch, one step over wwn1 and wwn2): the two gloo
    ranks can meet only over the bridge (each node's 127.0.0.1 is its own), form one world of 2,
    and the nodes share one attempt (they chose different ones before: a first run stored as
    attempt 2, under the first node's name only)."""
    task = submit_two_node_task(tmp_path, multinode, db_url, QUICK, "two-nodes")
    done = watch("two-nodes", db_url)
    assert done["counts"] == {"ok": 1} and done["tasks"][0]["attempt"] == 1
    stored = rows(db_url, "SELECT status, node, node_count, nodes, node_fingerprints, world_size, wrong, extra FROM results")
    assert stored  # one record per measured size, all of the one task
    fingerprints = set()
    for status, node, count, nodes, node_fingerprints, world, wrong, extra in stored:
        assert (status, node, count, json.loads(nodes), world, wrong) == ("ok", "wwn1", 2, ["wwn1", "wwn2"], 2, 0)
        assert json.loads(extra)["attempt"] == 1
        fingerprints.add(tuple(json.loads(node_fingerprints)))
    (pair,) = fingerprints
    assert pair[0] is not None and pair[0] == pair[1]  # both nodes probed the same wiring
    # Both nodes of the step ran in one attempt folder, and both wirings are stored.
    folder = tmp_path / "campaign" / "tasks" / task
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("attempt")) == ["attempt1", "attempt1.claim"]
    assert sorted(p.name for p in (folder / "attempt1").glob("rank*.json")) == ["rank0.json", "rank1.json"]
    stored_nodes = {t["node"]: t["fingerprint"] for t in wirewise_json("topo", "list", "--db", db_url)}
    assert stored_nodes["wwn1"] == stored_nodes["wwn2"] == pair[0]


def test_a_rank_killed_on_the_second_node_fails_the_task_with_its_error(multinode, tmp_path, db_url):
    submit_two_node_task(tmp_path, multinode, db_url, SLOW, "killed-rank")
    os.kill(rank_pid(multinode, "wwn2", 1, tmp_path / "campaign"), signal.SIGKILL)
    killed = time.monotonic()
    done = watch("killed-rank", db_url)
    assert time.monotonic() - killed < TIMEOUT_S / 2  # every node stopped: nobody waited out the timeout
    assert done["counts"] == {"failed": 1}
    (status, nodes, error), = rows(db_url, "SELECT status, nodes, error FROM results")
    assert status == "failed" and json.loads(nodes) == ["wwn1", "wwn2"]
    assert error.startswith("rank 1 on wwn2 ended with signal 9"), error


def test_out_of_memory_on_the_second_node_is_the_tasks_status_and_every_node_exits_1(multinode, tmp_path):
    """The third caller of the entry point, `srun python -m wirewise.jobs.supervise RUN_DIR`: rank 1
    (on wwn2) fails to allocate (the oom_rank hook asks for a petabyte); the task is `oom` with
    wwn2's error, and each node's supervisor exits 1, the first one included."""
    from wirewise.task import TaskSpec

    spec = TaskSpec(workload="collective", params={**QUICK, "oom_rank": 1}, nnodes=2, backend="gloo", timeout_s=TIMEOUT_S)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "spec.json").write_text(spec.model_dump_json())
    step = subprocess.run(
        ["srun", "-N2", "-w", "wwn1,wwn2", "--ntasks-per-node=1", "bash", "-c",
         '"$0" -P -m wirewise.jobs.supervise "$1"; rc=$?; echo "$(hostname) exit $rc"', sys.executable, str(run_dir)],
        capture_output=True, text=True, timeout=300,
    )
    exits = sorted(line for line in step.stdout.splitlines() if " exit " in line)
    assert exits == ["wwn1 exit 1", "wwn2 exit 1"], step.stdout + step.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "oom"
    (record,) = result["records"]
    assert record["error"].startswith("rank 1 on wwn2: RuntimeError") and "can't allocate memory" in record["error"]
    assert (record["nodes"], record["node_count"]) == (["wwn1", "wwn2"], 2)
    assert "1" in record["extra"]["memory_at_failure"]  # wwn2's rank file came back through its node's report


def test_the_second_node_lost_ends_the_task_within_its_timeout(multinode, tmp_path, db_url):
    submit_two_node_task(tmp_path, multinode, db_url, SLOW, "lost-node")
    rank_pid(multinode, "wwn2", 1, tmp_path / "campaign")
    multinode.crash("wwn2")  # slurmd, the job step and the ranks, all at once
    lost = time.monotonic()
    done = watch("lost-node", db_url)
    assert time.monotonic() - lost < TIMEOUT_S  # PEER_SILENCE_S (20 s) after the node's last word
    assert done["counts"] == {"failed": 1}
    (status, nodes, error), = rows(db_url, "SELECT status, nodes, error FROM results")
    assert status == "failed" and json.loads(nodes) == ["wwn1", "wwn2"]
    assert "node 1 (wwn2) lost" in error, error
    # Told by the supervisors themselves, not by Slurm: the silence they saw is PEER_SILENCE_S,
    # under the test cluster's SlurmdTimeout (30 s), after which Slurm would have ended the step.
    silence = float(re.search(r"no word from its supervisor for (\d+) s", error).group(1))
    assert PEER_SILENCE_S <= silence < SLURMD_TIMEOUT_S, error


def _host_state(cluster) -> dict:
    """What the cluster must leave as it found it: links, mounts, names, resolver, sockets. Links
    and mounts of other multi-node clusters (another worktree's tests, started or stopped
    meanwhile) are left out: only this cluster's own must go, and nothing else may change."""
    bridge, folder = cluster.env["WIREWISE_MULTINODE_BRIDGE"], str(cluster.state_dir)

    def others(name: str) -> bool:
        return ("wwmn" in name and bridge not in name) or ("ww-multinode-" in name and folder not in name)

    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return {
        "links": sorted(n for n in (line.split(":")[1].strip().split("@")[0] for line in links.splitlines()) if not others(n)),
        "mounts": sorted(m for m in mounts if not others(m)),
        "files": [Path(f).read_bytes() for f in ("/etc/hosts", "/etc/resolv.conf")],
        "hostname": Path("/proc/sys/kernel/hostname").read_text(),
    }


def test_the_script_restarts_a_lost_node_alone_and_stops_leaving_the_machine_as_it_was(multinode):
    # Last in this file: it takes the cluster down and brings it back for whatever runs next.
    if multinode.used_by_other_sessions():
        pytest.skip("another pytest session is using the multi-node cluster; not stopping it under its feet")
    again = multinode.run_script("start")
    assert "already running" in again.stderr
    pids = {node: multinode.pids(node) for node in multinode.nodes}
    lost = multinode.namespaces("wwn3")
    multinode.crash("wwn3")
    assert multinode.pids("wwn3", lost) == []
    assert multinode.run_script("status", check=False).returncode == 1
    restarted = multinode.run_script("start")
    assert "nodes wwn3 launched" in restarted.stderr, restarted.stderr
    assert {n: multinode.pids(n)[:1] for n in ("wwn1", "wwn2")} == {n: pids[n][:1] for n in ("wwn1", "wwn2")}  # untouched

    bridge = multinode.env["WIREWISE_MULTINODE_BRIDGE"]
    namespaces = {node: multinode.namespaces(node) for node in multinode.nodes}
    running = _host_state(multinode)
    assert bridge in running["links"]
    try:
        multinode.run_script("stop", timeout=120)
        assert not any(multinode.pids(node, namespaces[node]) for node in multinode.nodes)
        assert multinode.run_script("status", check=False).returncode == 3
        stopped = _host_state(multinode)
        assert stopped["links"] == sorted(set(running["links"]) - {bridge} - {f"{bridge}v{i}" for i in (1, 2, 3)})
        assert {k: v for k, v in stopped.items() if k != "links"} == {k: v for k, v in running.items() if k != "links"}
        for port in range(int(multinode.env["WIREWISE_MULTINODE_PORT"]), int(multinode.env["WIREWISE_MULTINODE_PORT"]) + 4):
            assert subprocess.run(["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}"], capture_output=True).returncode != 0
    finally:
        multinode.start()
    back = subprocess.run(["srun", "-N3", "hostname"], capture_output=True, text=True, check=True, timeout=60)
    assert sorted(back.stdout.split()) == ["wwn1", "wwn2", "wwn3"]
