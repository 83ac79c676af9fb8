"""The file each supervisor of a multi-node task keeps (wirewise.jobs.peers), as real files
and the real beat thread: while it runs, the beat rewrites only who the node is (not its
wiring, every second); the end report, the one node 0 reads, carries the wiring."""

from __future__ import annotations

import json
import time

from tests.topology.common import NVL_QUADS_NAMED
from wirewise.jobs.peers import HEARTBEAT_S, Peers
from wirewise.topology import Topology, read_topology


def test_the_wiring_is_written_once_in_the_end_report(tmp_path):
    topo = read_topology(NVL_QUADS_NAMED)
    node1 = Peers(tmp_path, 1, 2, ("n0", "n1"))
    node1.describe(node="n1", fingerprint=topo.fingerprint)
    time.sleep(HEARTBEAT_S * 2.5)
    beat = json.loads(node1.path.read_text())
    assert beat["beat"] >= 1 and (beat["node"], beat["fingerprint"], beat["state"]) == ("n1", topo.fingerprint, "running")
    assert "topology" not in beat and node1.path.stat().st_size < 400
    node1.end({"status": "ok", "error": None, "topology": topo.model_dump(mode="json")})
    node0 = Peers(tmp_path, 0, 2, ("n0", "n1"))
    [report] = node0.wait_for_ends(5.0, lambda: False).values()
    node0.end({"status": "ok", "error": None})
    assert (report["state"], report["status"], report["node"]) == ("ended", "ok", "n1")
    assert Topology.model_validate(report["topology"]).fingerprint == topo.fingerprint
