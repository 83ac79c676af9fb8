"""`wirewise topo slurm --blocks` on the three-node Slurm 25.11 cluster: each node's fake NVML
reports its NVLink fabric (tests/slurm/fake_node/pynvml.py: wwn1 and wwn2 in one domain, wwn3 in
another), `topo save` on each node stores it, and the cluster loads what `topo slurm --blocks`
wrote, as topology.conf and as topology.yaml: `scontrol show topology` lists the blocks, and a
2-node job asking `--segment=2` gets the two nodes of the domain. Placement across nodes and a
2-node campaign task keep to the domain, and a segment Slurm did not keep is said."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time

import pytest
import yaml

from tests.conftest import FIXTURES, WIREWISE, wirewise, wirewise_json
from tests.slurm.fixture import sbatch
from wirewise.orchestrator.executor.slurm import SlurmExecutor
from wirewise.orchestrator.slurm.blocks import blocks_from

pytestmark = pytest.mark.multinode


def rows(db_url: str, sql: str) -> list[tuple]:
    return sqlite3.connect(db_url.removeprefix("sqlite:///")).execute(sql).fetchall()


def save_every_node(cluster, db: str) -> None:
    for node in cluster.nodes:  # each node's wiring and fabric, as its own NVML reports them
        cluster.exec(node, WIREWISE, "topo", "save", "--db", db)


def job_nodes_and_segment(partition: str, folder, *args: str) -> tuple[str, str]:
    out = folder / "segment.out"
    job = sbatch("-p", partition, *args, "-o", str(out), "--wrap", "echo $SLURM_JOB_NODELIST $SLURM_JOB_SEGMENT_SIZE")
    deadline = time.monotonic() + 60
    while not out.exists() or not out.read_text().strip():
        assert time.monotonic() < deadline, f"job {job} wrote nothing"
        time.sleep(0.2)
    nodes, _, segment = out.read_text().strip().partition(" ")
    return nodes, segment


@pytest.mark.parametrize("form", ["conf", "yaml"])
def test_the_cluster_loads_the_blocks_and_a_segment_lands_inside_the_domain(multinode, tmp_path, db_url, form):
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    save_every_node(multinode, db)
    plan = wirewise_json("topo", "slurm", "--blocks", "--db", db)
    assert [(b["nodes"], b["clique_id"]) for b in plan["blocks"]] == [(["wwn1", "wwn2"], 1), (["wwn3"], 1)]
    assert plan["block_sizes"] == [2, 4]
    written = wirewise("topo", "slurm", "--blocks", "--format", form, "--db", db, check=True).stdout
    topology = tmp_path / f"topology.{form}"
    topology.write_text(written)
    multinode.use_topology(topology)
    try:
        shown = subprocess.run(["scontrol", "show", "topology"], capture_output=True, text=True, check=True).stdout
        print(shown)
        names = [b["name"] for b in plan["blocks"]]
        assert blocks_from(shown) == {names[0]: ["wwn1", "wwn2"], names[1]: ["wwn3"]}
        assert f"AggregatedBlock={names[0]},{names[1]} " in shown
        assert job_nodes_and_segment(multinode.partition, tmp_path, "-N2", "--segment=2") == ("wwn[1-2]", "2")
    finally:
        multinode.use_topology(None)
    assert subprocess.run(["scontrol", "show", "topology"], capture_output=True, text=True).stdout.strip() == ""


A100 = FIXTURES / "topo" / "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt"
QUICK = {"ops": ["all_reduce"], "min_bytes": "4K", "max_bytes": "8K", "iters": 2, "warmup": 1, "check": True}


def test_placement_and_a_two_node_campaign_task_stay_inside_the_domain(multinode, tmp_path, db_url):
    """`place --across-nodes` picks the two nodes of one NVLink domain and says so; a 2-node
    campaign task on the cluster running blocks asks Slurm `--segment=2`, runs on wwn[1-2], and
    its status finds nothing wrong with where Slurm put it."""
    save_every_node(multinode, db_url)
    placed = wirewise_json("place", "--across-nodes", "--gpus", "8", "--db", db_url)
    assert [n["node"] for n in placed["nodes"]] == ["wwn1", "wwn2"] and placed["nvlink_domain"]["clique_id"] == 1
    assert any(r.startswith("inside one NVLink domain") for r in placed["reasons"])
    topology = tmp_path / "topology.conf"
    topology.write_text(wirewise("topo", "slurm", "--blocks", "--db", db_url, check=True).stdout)
    multinode.use_topology(topology)
    try:
        spec = tmp_path / "spec.yaml"
        spec.write_text(yaml.safe_dump({
            "name": "in-domain", "workloads": [{"collectives": QUICK}], "axes": {"gpus": [1]},
            "target": {"executor": "slurm", "partition": multinode.partition, "nodes": 2, "backend": "gloo",
                       "time": "00:10:00", "folder": str(tmp_path / "campaign"), "timeout_s": 120}}))
        report = wirewise_json("campaign", "submit", str(spec), "--topology-file", str(A100), "--db", db_url, cwd=tmp_path)
        assert report["parameters"]["slurm_additional_parameters"]["segment"] == 2
        done = wirewise_json("campaign", "status", "in-domain", "--watch", "--interval", "1", "--db", db_url, timeout=300)
        assert done["counts"] == {"ok": 1} and "warnings" not in done
        [script] = (tmp_path / "campaign" / "submitit").glob("*_submission.sh")
        assert "#SBATCH --segment=2" in script.read_text()
        stored = {tuple(json.loads(nodes)) for (nodes,) in rows(db_url, "SELECT nodes FROM results")}
        assert stored == {("wwn1", "wwn2")}
    finally:
        multinode.use_topology(None)


def test_a_job_that_names_nodes_of_two_blocks_asks_one_node_segments(multinode, tmp_path, db_url):
    """Under blocks, Slurm 25.11 refuses a 2-node job naming wwn2 and wwn3 (two blocks: a pair
    test across NVLink domains) outright; the Slurm executor asks `--segment=1` for it, and the
    job runs on both nodes. A node list inside one block asks nothing (Slurm takes it)."""
    from wirewise.orchestrator.executor.core import JobRequest

    save_every_node(multinode, db_url)
    topology = tmp_path / "topology.conf"
    topology.write_text(wirewise("topo", "slurm", "--blocks", "--db", db_url, check=True).stdout)
    multinode.use_topology(topology)
    try:
        refused = subprocess.run(["sbatch", "-p", multinode.partition, "-N2", "-w", "wwn2,wwn3", "--wrap", "true"],
                                 capture_output=True, text=True)
        assert refused.returncode != 0 and "not available" in refused.stderr, refused
        across = JobRequest(tmp_path, "pair", 5, nodes=2, partition=multinode.partition, nodelist="wwn[2-3]")
        inside = JobRequest(tmp_path, "pair", 5, nodes=2, partition=multinode.partition, nodelist="wwn1,wwn2")
        assert (SlurmExecutor.segment(across), SlurmExecutor.segment(inside)) == (1, None)
        nodes, segment = job_nodes_and_segment(multinode.partition, tmp_path, "-N2", "-w", "wwn2,wwn3", "--segment=1")
        assert (nodes, segment) == ("wwn[2-3]", "1")
    finally:
        multinode.use_topology(None)


def test_a_segment_slurm_did_not_keep_is_said(multinode, tmp_path):
    """On the cluster without blocks (Slurm's flat default) 25.11 takes `--segment=2` and places
    the job anyway (SegmentSize=2 in `scontrol show job`): the check says the nodes are not kept
    in one domain; a job that asked no segment says nothing."""
    asked = sbatch("-p", multinode.partition, "-N2", "--segment=2", "-o", str(tmp_path / "a.out"), "--wrap", "sleep 60")
    plain = sbatch("-p", multinode.partition, "-N1", "-o", str(tmp_path / "b.out"), "--wrap", "sleep 60")
    try:
        deadline = time.monotonic() + 60
        while (problems := SlurmExecutor().allocation_problems([asked, plain])) == {}:
            assert time.monotonic() < deadline, "the segmented job never started"
            time.sleep(0.3)
        assert list(problems) == [asked]
        assert problems[asked].startswith(f"job {asked} asked --segment=2, but the cluster runs no block topology: its nodes ")
    finally:
        subprocess.run(["scancel", asked, plain], check=False)


def test_each_nodes_nvidia_smi_and_nvml_tell_the_same_fabric(multinode, tmp_path):
    """The fake tools stand in for a GB200-like node's: `nvidia-smi -q` (its Fabric section),
    the fabric `--query-gpu` CSV and NVML (what `topo save` stores) name the same domain per
    node, and a degraded health mask planted on wwn3's GPU 2 shows in both."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.topology import node_wirings

    faults = multinode.state_dir / "nodes" / "wwn3" / "nvml-faults.json"
    faults.write_text(json.dumps({"fabric_health": {"2": 1}}))
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    try:
        save_every_node(multinode, db)
        queried = {node: multinode.exec(node, "nvidia-smi", "-q").stdout for node in multinode.nodes}
        csv = multinode.exec("wwn1", "nvidia-smi", "--query-gpu=index,fabric.clusterUuid,fabric.cliqueId,fabric.state,"
                             "fabric.status", "--format=csv,noheader").stdout.splitlines()
    finally:
        faults.unlink()
    stored = {w.node: w for w in node_wirings(Store(db))}
    assert stored["wwn1"].domain == stored["wwn2"].domain != stored["wwn3"].domain
    uuid, clique = stored["wwn1"].domain
    assert csv == [f"{i}, {uuid}, {clique}, Completed, Success" for i in range(4)]
    for node, text in queried.items():
        assert text.count(f"ClusterUUID                       : {stored[node].domain[0]}") == stored[node].gpu_count
    assert [gpu["fabric"]["health_mask"] for gpu in stored["wwn3"].details["gpus"]] == [0, 0, 1]
    assert queried["wwn3"].split("GPU 00000000:")[3].count("Bandwidth                     : Degraded") == 1
    assert "Degraded" not in queried["wwn1"] + queried["wwn2"]


def test_the_survey_shows_the_domains(multinode, tmp_path):
    """topo survey of the three nodes: wwn1 and wwn2 in one domain, wwn3 in another, degraded by
    the health mask planted on its GPU 2 (NVML's degraded bandwidth), in --json and as text."""
    from tests.conftest import wirewise, wirewise_json

    faults = multinode.state_dir / "nodes" / "wwn3" / "nvml-faults.json"
    faults.write_text(json.dumps({"fabric_health": {"2": 1}}))
    db = f"sqlite:///{tmp_path / 'survey.db'}"
    try:
        found = wirewise_json("topo", "survey", "--partition", multinode.partition, "--db", db)["nvlink"]
    finally:
        faults.unlink()
    shape = sorted((tuple(d["nodes"]), d["gpus"], d["state"]) for d in found["domains"])
    assert shape == [(("wwn1", "wwn2"), 8, "completed"), (("wwn3",), 3, "degraded")]
    assert found["degraded"] == [{"node": "wwn3", "problems": ["GPU 2: bandwidth degraded"]}] and found["outside"] == []
    listed = wirewise("topo", "list", "--db", db, env={"COLUMNS": "120"}, check=True).stdout
    print(listed)
    assert "wwn1, wwn2" in listed and "fabric degraded: wwn3: GPU 2: bandwidth degraded" in listed


def test_run_across_nodes_stays_inside_the_domain_and_checks_what_slurm_gave(multinode, tmp_path, db_url):
    """`wirewise run --nodes 2`: placed by `place --across-nodes`' code on wwn1 and wwn2 (one
    NVLink domain); on the flat cluster asked by name, on the cluster running blocks asked
    `--segment=2`; either way the nodes Slurm gave are read back and found as asked. Three
    nodes of one wiring do not exist here: said in one line, exit 2, nothing submitted. A
    `--segment` Slurm did not keep (the flat cluster takes it and places the job anyway) is
    what the check says."""
    save_every_node(multinode, db_url)
    common = ["--nodes", "2", "--gpus", "1", "-p", multinode.partition, "-t", "5", "--folder", str(tmp_path / "jobs"),
              "--db", db_url, "--", "sleep", "30"]
    proc = wirewise("run", "--json", *common, cwd=tmp_path)  # --json before `--`: after it, it is the command's
    assert proc.returncode == 0, proc.stderr
    named = json.loads(proc.stdout)
    print(json.dumps(named, indent=1))
    try:
        assert named["nodes"] == ["wwn1", "wwn2"] and named["nvlink_domain"]["clique_id"] == 1
        assert (named["asked"], named["given_nodes"], named["allocation"]) == ("--nodelist=wwn[1-2]", ["wwn1", "wwn2"], "as asked")
        assert named["warnings"] == []
    finally:
        subprocess.run(["scancel", named["job_id"]], check=False)
    topology = tmp_path / "topology.conf"
    topology.write_text(wirewise("topo", "slurm", "--blocks", "--db", db_url, check=True).stdout)
    multinode.use_topology(topology)
    try:
        shown = wirewise("run", *common, cwd=tmp_path)
        print(shown.stdout)
        assert shown.returncode == 0, shown.stderr
        job = shown.stdout.split()[2]
        subprocess.run(["scancel", job], check=False)
        assert "asked --segment=2" in shown.stdout and "Slurm gave wwn1, wwn2: as asked" in shown.stdout
        scripts = [p.read_text() for p in (tmp_path / "jobs").rglob(f"{job}_submission.sh")]
        assert scripts and "#SBATCH --segment=2" in scripts[0]
    finally:
        multinode.use_topology(None)
    three = wirewise("run", *common[:1], "3", *common[2:], cwd=tmp_path)
    assert three.returncode == 2 and "3 node(s) x 1 GPU(s) cannot be placed" in three.stderr
    assert len(three.stderr.strip().splitlines()) == 1


def test_run_across_nodes_says_a_segment_slurm_did_not_keep(multinode, tmp_path):
    """The check `wirewise run --nodes` makes, on a job that asked `--segment=2` of the flat
    cluster (no blocks): Slurm placed it anyway, and the check says so."""
    from wirewise.orchestrator.run import allocation_check

    job = sbatch("-p", multinode.partition, "-N2", "--segment=2", "-o", str(tmp_path / "a.out"), "--wrap", "sleep 60")
    try:
        domain = {"cluster_uuid": "2f601e1b-277b-527f-a0a0-5537c7b08b89", "clique_id": 1}
        given, problems = allocation_check(job, ["wwn1", "wwn2"], 2, domain, {}, 60)
        assert len(given) == 2 and problems[0].startswith(f"job {job} asked --segment=2, but the cluster runs no block topology")
        assert "outside the NVLink domain" in problems[1]  # no stored node sits in it here
    finally:
        subprocess.run(["scancel", job], check=False)
