"""Fleets on the real multi-node Slurm (tests/slurm/multinode.sh: wwn1 and wwn2 with 4 GPUs, NV4
all-to-all; wwn3 with 3, an NV6 pair and one on PCIe; each slurmd in its own namespaces):

- `topo survey` probes every node through one job each and stores its wiring; a fleet campaign
  (target.scope each-node) probes what is missing, plans each node type on its own wiring,
  pins one element to each node and reports progress node by node;
- `fleet pairs` names wwn2 behind a link slowed with tc (80 mbit/s) and not the healthy nodes,
  stores the tests as a campaign, and placement and `wirewise run` then keep off wwn2;
- a node lost under its element leaves its task `missing`, `campaign resume` runs it on
  another node and keeps what finished; a drained node gets no new elements;
- bad input (unknown nodes, a feature no node has, one node for pair tests, a plan for more
  GPUs than the partition's nodes have) is one line, exit 2, nothing recorded.

The ranks run gloo on CPU: the GPUs are character devices and NVML a stand-in on each node
(tests/slurm/fake_node/), since no GPU exists here.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, wirewise, wirewise_json
from tests.slurm.fixture import cancel_jobs_under

pytestmark = pytest.mark.multinode
A100 = FIXTURES / "topo" / "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt"
NVL_8 = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
QUICK = {"ops": ["all_reduce"], "min_bytes": "4K", "max_bytes": "8K", "iters": 2, "warmup": 1}
# 4M all_reduce on two gloo ranks takes about 8 ms here: some 8 s of sweeping, long enough to
# lose its node under it, short enough to run again.
SLOW = {"ops": ["all_reduce"], "min_bytes": "4M", "max_bytes": "4M", "iters": 1000, "warmup": 1}
PAIR_TEST = ["--bytes", "2M", "--iters", "3", "--warmup", "1", "--backend", "gloo", "--timeout", "120"]
SLOW_LINK = ["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "80mbit", "burst", "64kbit", "latency", "400ms"]


@pytest.fixture(autouse=True)
def runs_here(tmp_path, monkeypatch):
    monkeypatch.setenv("WIREWISE_RUNS", str(tmp_path / "runs"))
    yield
    cancel_jobs_under(tmp_path)


def spec_file(tmp_path: Path, name: str, workloads: list, axes: dict | None = None, **target) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "workloads": workloads, "axes": axes or {"gpus": [2]},
        "target": {"executor": "slurm", "backend": "gloo", "time": "00:10:00", "timeout_s": 120, **target},
    }))
    return str(path)


def watch(name: str, db_url: str, limit_s: float = 300) -> dict:
    return wirewise_json("campaign", "status", name, "--watch", "--interval", "1", "--db", db_url, timeout=limit_s)


def rows(db_url: str, sql: str) -> list[tuple]:
    return sqlite3.connect(db_url.removeprefix("sqlite:///")).execute(sql).fetchall()


def test_survey_then_one_spec_on_every_node_of_two_types(multinode, tmp_path, db_url):
    """The survey stores wwn1 and wwn3; the fleet campaign over the partition probes wwn2 before
    planning (its wiring was not stored), plans the 4-GPU type and the 3-GPU type each on its own
    wiring (2 GPUs packed: 0-1 on NV4, 1-2 the NV6 pair on wwn3), runs one element pinned to each
    node, and `campaign status` counts each node's tasks. Then wwn3 is drained: a fleet plan
    leaves it out unless --include-down, and `campaign resume --include-oom` runs the other
    nodes' `oom` tasks again while wwn3's wait for their node, said so."""
    surveyed = wirewise_json("topo", "survey", "--nodelist", "wwn1,wwn3", "--db", db_url)
    assert sorted((t["gpus"], t["fabric"], tuple(t["nodes"]), t["count"]) for t in surveyed["types"]) == [
        (3, "nvlink-groups", ("wwn3",), 1), (4, "nvlink-all-to-all", ("wwn1",), 1)]
    # per node: a 2-GPU and a 3-GPU task that succeed, and one whose rank asks for a petabyte (oom)
    workloads = [{"collectives": QUICK}, {"collectives": {**QUICK, "oom_rank": 0}, "axes": {"gpus": [2]}}]
    spec = spec_file(tmp_path, "fleet", workloads, {"gpus": [2, 3]}, scope="each-node", partition=multinode.partition)
    planned = wirewise_json("campaign", "plan", spec, "--db", db_url)
    assert planned["left_out"] == [{"node": "wwn2", "reason": "its wiring is not stored yet: a submission probes it "
                                                            "first (or `wirewise topo survey --nodelist wwn2`)"}]
    submitted = wirewise_json("campaign", "submit", spec, "--db", db_url)
    assert (submitted["tasks"], submitted["pinned"], "left_out" in submitted) == (9, 3, False)
    plan = json.loads((tmp_path / "runs" / "campaigns" / "fleet" / "plan.json").read_text())
    assert sorted((g["gpus"], g["count"], tuple(g["nodes"]), g["tasks_per_node"]) for g in plan["groups"]) == [
        (3, 1, ("wwn3",), 3), (4, 2, ("wwn1", "wwn2"), 3)]

    done = watch("fleet", db_url)
    assert done["counts"] == {"ok": 6, "oom": 3} and done["nodes"] == {n: {"ok": 2, "oom": 1} for n in ("wwn1", "wwn2", "wwn3")}
    by_node = {}
    for node, fingerprint, extra in rows(db_url, "SELECT node, fingerprint, extra FROM results WHERE status = 'ok'"):
        by_node.setdefault(node, set()).add((fingerprint, tuple(json.loads(extra)["assigned_gpus"])))
    assert {n: sorted(g for _, g in v) for n, v in by_node.items()} == {  # each on its own wiring's GPUs
        "wwn1": [(0, 1), (0, 1, 2)], "wwn2": [(0, 1), (0, 1, 2)], "wwn3": [(0, 1, 2), (1, 2)]}
    fingerprint = {n: {f for f, _ in v} for n, v in by_node.items()}
    assert fingerprint["wwn1"] == fingerprint["wwn2"] != fingerprint["wwn3"] and len(fingerprint["wwn3"]) == 1
    assert "per node" in wirewise("campaign", "status", "fleet", "--nodes", "--db", db_url, check=True).stdout

    subprocess.run(["scontrol", "update", "NodeName=wwn3", "State=DRAIN", "Reason=wirewise test"], check=True)
    try:
        planned = wirewise_json("campaign", "plan", spec, "--db", db_url)
        assert [(r["node"], r["reason"].split(" (")[0]) for r in planned["left_out"]] == [("wwn3", "drained")]
        assert len(wirewise_json("campaign", "plan", spec, "--include-down", "--db", db_url)["tasks"]) == 9
        resumed = wirewise_json("campaign", "resume", "fleet", "--include-oom", "--db", db_url)
        assert resumed["resubmitted"] == 2
        assert resumed["left_out"] == [{"node": "wwn3", "reason": "drained (Slurm): its tasks wait for it"}]
        again = watch("fleet", db_url)
        oom = {t["node"]: t["attempt"] for t in again["tasks"] if t["status"] == "oom"}
        assert oom == {"wwn1": 2, "wwn2": 2, "wwn3": 1}
    finally:
        subprocess.run(["scontrol", "update", "NodeName=wwn3", "State=RESUME"], check=True)


def test_pair_tests_name_the_node_behind_a_slow_link(multinode, tmp_path, db_url):
    """Two healthy nodes: one test, exit 0. wwn2's link cut to 80 mbit/s with tc: on 3 nodes
    every pair is tested (the third pair tells the slow node apart), wwn2 is named with its
    evidence and wwn1, wwn3 are not; exit 1; the tests are a campaign. Then `place
    --across-nodes`, which put 8 GPUs on wwn1 + wwn2 before, keeps off wwn2, and `wirewise run`
    excludes it."""
    wirewise_json("topo", "survey", "--partition", multinode.partition, "--db", db_url)
    before = wirewise_json("place", "--gpus", "8", "--across-nodes", "--db", db_url)
    assert [n["node"] for n in before["nodes"]] == ["wwn1", "wwn2"]

    healthy = wirewise("fleet", "pairs", "--nodelist", "wwn1,wwn3", *PAIR_TEST, "--json", "--db", db_url)
    assert healthy.returncode == 0, healthy.stderr
    assert {k: json.loads(healthy.stdout)[k] for k in ("tests", "bad_nodes", "bad_pairs")} == {"tests": 1, "bad_nodes": [], "bad_pairs": []}

    multinode.exec("wwn2", *SLOW_LINK)
    try:
        proc = wirewise("fleet", "pairs", "--partition", multinode.partition, *PAIR_TEST, "--name", "pairs-slow",
                        "--junit", str(tmp_path / "pairs.xml"), "--json", "--db", db_url)
    finally:
        multinode.exec("wwn2", "tc", "qdisc", "del", "dev", "eth0", "root")
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(proc.stdout)
    assert (verdict["bad_nodes"], verdict["bad_pairs"], verdict["tests"], verdict["campaign"]) == (["wwn2"], [], 3, "pairs-slow")
    assert sorted(verdict["known_good"]) == ["wwn1", "wwn3"]
    evidence = verdict["evidence"]["nodes"]["wwn2"]
    assert evidence["ratio"] < 0.2 and sorted(p["with"] for p in evidence["pairs"]) == ["wwn1", "wwn3"]
    assert evidence["reference_gbs"] > 5 * evidence["busbw_gbs"]
    _check_pairs_junit(tmp_path / "pairs.xml")
    status = wirewise_json("campaign", "status", "pairs-slow", "--db", db_url)
    assert status["counts"] == {"ok": 3} and set(status["nodes"]) == {"wwn1,wwn2", "wwn1,wwn3", "wwn2,wwn3"}
    assert json.loads((tmp_path / "runs" / "campaigns" / "pairs-slow" / "verdict.json").read_text())["bad_nodes"] == ["wwn2"]
    assert len(rows(db_url, "SELECT id FROM results WHERE campaign = 'pairs-slow' AND node_count = 2")) >= 3
    # wwn1 and wwn2 share an NVLink domain (their fake NVML says so), wwn3 sits in another: the
    # pair inside is its own case and its own scope, never the network pairs' reference
    scopes = {tuple(json.loads(nodes)): scope for nodes, scope in
              rows(db_url, "SELECT nodes, scope FROM results WHERE campaign = 'pairs-slow'")}
    assert scopes == {("wwn1", "wwn2"): "nvlink-domain", ("wwn1", "wwn3"): "network", ("wwn2", "wwn3"): "network"}
    assert set(verdict["scopes"]) == {"nvlink-domain", "network"} and verdict["reference_gbs"] is None
    assert verdict["evidence"]["nodes"]["wwn2"]["scope"] == "network"
    assert verdict["evidence"]["nodes"]["wwn2"]["partners"] == ["wwn3"]  # the repeat pairs it over the network
    print(json.dumps(verdict))

    refused = wirewise("place", "--gpus", "8", "--across-nodes", "--db", db_url)
    assert refused.returncode == 2 and "left out wwn2: pair test pairs-slow: best pair" in refused.stderr, refused.stderr
    ran = json.loads(wirewise("run", "--json", "--whole-node", "--gpus", "2", "--topology-file", str(A100), "-p",
                              multinode.partition, "-t", "5", "--folder", str(tmp_path / "run"), "--db", db_url, "--",
                              "hostname", check=True).stdout)
    assert ran["excluded"] == ["wwn2"]
    shown = subprocess.run(["scontrol", "show", "job", ran["job_id"]], capture_output=True, text=True).stdout
    assert "ExcNodeList=wwn2" in shown, shown


def _check_pairs_junit(path) -> None:
    """--junit read by junitparser as a CI job would: wwn2's slow pair over the network failed,
    naming it. wwn1-wwn2 is the one pair inside their NVLink domain: a scope of one test is its
    own reference (as a fleet of two nodes is), so it passes in its scope; wwn2 is named by the
    network's pairs."""
    from junitparser import Failure, JUnitXml

    [suite] = list(JUnitXml.fromfile(str(path)))
    cases = {case.name: case for case in suite}
    assert set(cases) == {"wwn1-wwn2", "wwn1-wwn3", "wwn2-wwn3"} and (suite.tests, suite.failures) == (3, 1)
    assert cases["wwn1-wwn3"].is_passed and cases["wwn1-wwn2"].is_passed and {case.classname for case in suite} == {"pairs-slow"}
    [failure] = cases["wwn2-wwn3"].result
    assert isinstance(failure, Failure) and failure.message.startswith("slow: ") and "bad node wwn2" in failure.text
    assert "(network)" in failure.message


def test_a_lost_node_leaves_its_task_missing_and_resume_runs_it_on_another(multinode, tmp_path, db_url):
    """Two elements on the two 4-GPU nodes; the node under the slow one is crashed (slurmd, the
    job, its ranks). Once Slurm has it down its task is `missing` (the element is not requeued
    behind the lost node), a fleet plan leaves that node out, and `campaign resume` runs the task
    on the other node as attempt 2, keeping the finished one's results as they were."""
    spec = spec_file(tmp_path, "lost", [{"collectives": QUICK}, {"collectives": SLOW}], partition=multinode.partition,
                     constraint="a100x4", tasks_per_element=1, timeout_s=300)
    wirewise_json("campaign", "submit", spec, "--topology-file", str(A100), "--db", db_url)
    plan = json.loads((tmp_path / "runs" / "campaigns" / "lost" / "plan.json").read_text())
    quick, slow = (t["task_id"] for t in plan["tasks"])
    element = {t["task_id"]: t["element"] for t in wirewise_json("campaign", "status", "lost", "--db", db_url)["tasks"]}
    victim = _node_once_running(element[slow], tmp_path / "runs" / "campaigns" / "lost" / "tasks" / slow / "attempt1")
    multinode.crash(victim)
    survivor = ({"wwn1", "wwn2"} - {victim}).pop()

    state = _wait_until(lambda: wirewise_json("campaign", "status", "lost", "--db", db_url), lambda s: s["done"], 150)
    assert {t["task_id"]: t["status"] for t in state["tasks"]} == {quick: "ok", slow: "missing"}
    fleet = spec_file(tmp_path, "after", [{"collectives": QUICK}], scope="each-node", constraint="a100x4")
    left = {row["node"]: row["reason"] for row in wirewise_json("campaign", "plan", fleet, "--db", db_url)["left_out"]}
    assert victim in left and ("down" in left[victim] or "not responding" in left[victim]), left
    wirewise_json("campaign", "collect", "lost", "--db", db_url)
    kept = rows(db_url, f"SELECT record_id, node, extra FROM results WHERE task_id = '{quick}'")
    assert kept and {json.loads(extra)["attempt"] for _, _, extra in kept} == {1}

    resumed = wirewise_json("campaign", "resume", "lost", "--db", db_url)
    assert resumed["resubmitted"] == 1 and victim in resumed["excluded"].split(",")
    done = watch("lost", db_url)
    assert done["counts"] == {"ok": 2}
    assert rows(db_url, f"SELECT record_id, node, extra FROM results WHERE task_id = '{quick}'") == kept
    again = rows(db_url, f"SELECT node, extra FROM results WHERE task_id = '{slow}'")
    assert again and {(node, json.loads(extra)["attempt"]) for node, extra in again} == {(survivor, 2)}


@pytest.mark.parametrize("case", ["unknown node", "no such feature", "one node", "unknown pair node", "too many GPUs"])
def test_bad_input_is_one_line_and_records_nothing(multinode, tmp_path, db_url, case):
    fleet = {"unknown node": {"nodelist": "wwn1,wwn9"}, "no such feature": {"constraint": "h100"}}
    if case in fleet:
        spec = spec_file(tmp_path, "bad", [{"collectives": QUICK}], scope="each-node", **fleet[case])
        args = ["campaign", "submit", spec]
        said = {"unknown node": "target.nodelist wwn1,wwn9: Slurm knows no node wwn9 (`sinfo -N` lists them)",
                "no such feature": "target.constraint h100: no node has it (their features: a100x4, v100x3)"}[case]
    elif case == "too many GPUs":
        spec = spec_file(tmp_path, "bad", [{"collectives": QUICK}], partition=multinode.partition)
        args = ["campaign", "submit", spec, "--topology-file", str(NVL_8)]
        said = (f"the plan needs 8 GPUs per node, but no node of partition {multinode.partition} has that many "
                "(GPUs per node: wwn1 4, wwn2 4, wwn3 3); plan on the wiring of its nodes (--topology-file, --node, "
                "or target.scope each-node)")
    else:
        args = ["fleet", "pairs", "--nodelist", "wwn1" if case == "one node" else "wwn1,wwn9", *PAIR_TEST]
        said = ("pair tests need at least 2 nodes that take work; nodelist wwn1 has 1: wwn1 (up)" if case == "one node"
                else "--nodelist wwn1,wwn9: Slurm knows no node wwn9 (`sinfo -N` lists them)")
    proc = wirewise(*args, "--db", db_url, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"wirewise: error: {said}\n")
    assert not (tmp_path / "runs").exists()
    assert not (tmp_path / "wirewise.db").exists() or wirewise_json("campaign", "list", "--db", db_url) == []


def test_pair_tests_on_a_partition_of_one_node_are_refused(slurm_cluster, tmp_path, db_url):
    proc = wirewise("fleet", "pairs", "--partition", slurm_cluster.partition, *PAIR_TEST, "--db", db_url, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"wirewise: error: pair tests need at least 2 nodes that take work; partition "
                                  f"{slurm_cluster.partition} has 1: {slurm_cluster.node}")


def _node_once_running(element: str, attempt: Path, limit_s: float = 180) -> str:
    """The node an element runs on, once its task's ranks have started there."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        node = subprocess.run(["squeue", "-h", "-j", element, "-o", "%N"], capture_output=True, text=True).stdout.strip()
        if node and (attempt / "rank0.log").exists():
            return node
        time.sleep(0.3)
    raise AssertionError(f"element {element} never ran its task")


def _wait_until(poll, done, limit_s: float):
    deadline = time.monotonic() + limit_s
    while True:
        value = poll()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(2)
