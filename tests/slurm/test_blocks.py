"""`wirewise topo slurm --blocks` on the three-node Slurm 25.11 cluster: each node's fake NVML
reports its NVLink fabric (tests/slurm/fake_node/pynvml.py: wwn1 and wwn2 in one domain, wwn3 in
another), `topo save` on each node stores it, and the cluster loads what `topo slurm --blocks`
wrote, as topology.conf and as topology.yaml: `scontrol show topology` lists the blocks, and a
2-node job asking `--segment=2` gets the two nodes of the domain."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.conftest import WIREWISE, wirewise, wirewise_json
from tests.slurm.fixture import sbatch
from wirewise.orchestrator.slurm.blocks import blocks_from

pytestmark = pytest.mark.multinode


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
