"""The loop with Slurm on the real 3-node test cluster (tests/slurm/multinode.sh): findings,
drain with a reason, re-test inside a reservation, resume; slurmd's own HealthCheckProgram and
Prolog running `wirewise doctor`; the guardrails; a node drained by hand left alone.

Faults are planted for real where they can be: a rate limit (tc tbf) on a node's eth0 slows
every pair test with it (tests/fleet/test_cluster.py), one on its loopback the gloo ranks of
its single-node collectives about 40x (the ranks of one node talk through its own namespace's
lo). GPUs, drivers and NVML cannot exist here: a node's NVML is the
stand-in of tests/slurm/fake_node/pynvml.py, and an NVML fault (an inactive NVLink) is planted
in its nvml-faults.json. Slurm, the jobs, the reservations, the drains and the database are real.

CPU ranks on this shared 2-core machine vary by up to 8x between runs (other work takes the
cores), in a way no spread of three runs predicts, so the rules for these tests (RULES) flag a
drop of more than 90% whatever the spread, and a pair test below 10% of the fleet's median: the
planted limits (about 40x on lo, 90x on eth0) are far past them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.campaign.test_slurm import wait_for
from tests.conftest import WIREWISE, wirewise, wirewise_json
from tests.slurm.fixture import cancel_jobs_under, sbatch

pytestmark = pytest.mark.multinode
# A node's own loopback (its single-node gloo ranks) or its link to the others (pair tests).
SLOW = {"lo": ("tbf", "rate", "200mbit", "burst", "1mbit", "latency", "100ms"),
        "eth0": ("tbf", "rate", "80mbit", "burst", "64kbit", "latency", "400ms")}
PAIR_TEST = ["--bytes", "2M", "--iters", "3", "--warmup", "1", "--backend", "gloo", "--timeout", "120"]
RULES = {  # one repeat per measurement (a task each) keeps the suite short
    "include_cpu": True, "repeats": 1,
    "rules": {"busbw-below-baseline": {"min_bytes": "4M", "max_drop": 0.9, "sigmas": 0}, "slower-than-peers": {"enabled": False},
              "pair-below-fleet": {"tolerance": 0.9}},  # the 80 mbit/s limit cuts a pair test about 90x
    "prolog": {"min_bytes": "4M", "max_bytes": "4M", "iters": 10, "warmup": 2, "backend": "gloo", "time_limit_s": 30},
}
NVLINK_DOWN = {"inactive": {"1": [0]}}  # GPU 1's first NVLink


class Fleet:
    """The cluster, a database and a rules file for one test; what it plants is undone after."""

    def __init__(self, cluster, folder: Path, db: str) -> None:
        from wirewise.orchestrator.store import Store

        self.cluster, self.folder, self.db = cluster, folder, db
        Store(db)  # made by the site first: the health check and the prolog never create one
        self.rules = folder / "rules.yaml"
        self.rules.write_text(yaml.safe_dump(RULES))
        self.hooks = cluster.state_dir / "hooks"
        self.slowed: list[tuple[str, str]] = []

    def ww(self, *args: str, **kw):
        return wirewise(*args, "--db", self.db, **kw)

    def json(self, *args: str, **kw):
        return wirewise_json(*args, "--db", self.db, **kw)

    def save_wirings(self) -> None:
        for node in self.cluster.nodes:  # each node's wiring, as its own NVML reports it
            self.cluster.exec(node, WIREWISE, "topo", "save", "--db", self.db)

    def slow(self, node: str, dev: str = "lo") -> None:
        self.cluster.exec(node, "tc", "qdisc", "replace", "dev", dev, "root", *SLOW[dev])
        self.slowed.append((node, dev))

    def unslow(self, node: str) -> None:
        for slowed in [s for s in self.slowed if s[0] == node]:
            self.cluster.exec(node, "tc", "qdisc", "del", "dev", slowed[1], "root")
            self.slowed.remove(slowed)

    def fault(self, node: str, faults: dict | None) -> None:
        path = self.cluster.state_dir / "nodes" / node / "nvml-faults.json"
        if faults is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(json.dumps(faults))

    def hook(self, name: str, args: list[str], db: str | None = None, rules: Path | None = None) -> Path:
        """slurmd's HealthCheckProgram or Prolog (multinode.sh runs STATE/hooks/NAME): a wrapper as a
        site writes one (README), since slurmd gives it no PATH and no arguments. Its output
        goes to a log per node."""
        self.hooks.mkdir(exist_ok=True)
        log = self.folder / f"{name}.log"
        script = self.hooks / name
        script.write_text(
            "#!/bin/sh\n"
            f"export PATH={self.cluster.slurm_bin}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin\n"
            f"export SLURM_CONF={self.cluster.conf} PYTHONPATH={self.cluster.state_dir / 'node' / 'python'}\n"
            f"exec {WIREWISE} doctor --{name} --db {db or self.db} --rules {rules or self.rules} {' '.join(args)} "
            f">>{log}.$SLURMD_NODENAME 2>&1\n"
        )
        script.chmod(0o755)
        return log

    def undo(self) -> None:
        for name in ("health-check", "prolog"):
            (self.hooks / name).unlink(missing_ok=True)
        for node in self.cluster.nodes:
            self.fault(node, None)
        for node, _ in list(self.slowed):
            self.unslow(node)
        shown = subprocess.run(["scontrol", "show", "reservation"], capture_output=True, text=True).stdout
        for line in shown.splitlines():
            if line.startswith("ReservationName=wirewise-"):
                subprocess.run(["scontrol", "delete", line.split()[0]], check=False)
        cancel_jobs_under(self.folder)
        for node, (state, _) in states().items():
            if state != "idle":
                subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], check=False)


def states() -> dict[str, tuple[str, str | None]]:
    """node -> (sinfo's state without its flag, reason or None)."""
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N|%T|%E"], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        node, state, reason = line.split("|", 2)
        found[node] = (state.rstrip("*~#!%$@^-"), None if reason == "none" else reason)
    return found


def settled_drained(node: str, reason: str | None = None) -> None:
    """The node drained (with `reason`, when given) and takes no job; while the pair test's job
    is still completing on it, Slurm shows it draining first: both say drain, only one is settled."""
    state, why = states()[node]
    assert state in ("drained", "draining") and (reason is None or why == reason), (state, why)
    wait_for(lambda: states()[node][0] == "drained", 30, f"{node} drained once its job has left")


@pytest.fixture
def fleet(multinode, tmp_path, monkeypatch):
    monkeypatch.setenv("WIREWISE_RUNS", str(tmp_path / "runs"))
    fleet = Fleet(multinode, tmp_path, f"sqlite:///{tmp_path / 'wirewise.db'}")
    try:
        yield fleet
    finally:
        fleet.undo()


def test_a_slow_link_named_by_pair_tests_is_drained_retested_and_resumed(fleet):
    """wwn2's link cut to 80 mbit/s with tc (as tests/fleet/test_cluster.py does): `fleet
    pairs` names it and opens its finding. drain: a dry run changes nothing; --apply repeats
    the pair test against a known-good node (slow again) and drains with the reason in `sinfo
    -R`. retest (the pair test again, inside a reservation of wwn2 that lets the partner stay in
    service) fails while the limit stays and passes once it is gone; the node is drained again
    after each. resume returns it to idle. Every step is in the audit trail, with who asked."""
    fleet.slow("wwn2", "eth0")
    flagged = fleet.ww("fleet", "pairs", "--partition", fleet.cluster.partition, *PAIR_TEST, "--rules", str(fleet.rules),
                       "--json", timeout=400)
    assert flagged.returncode == 1, flagged.stderr
    verdict = json.loads(flagged.stdout)
    assert verdict["bad_nodes"] == ["wwn2"] and sorted(verdict["known_good"]) == ["wwn1", "wwn3"]
    [finding] = verdict["findings"]
    assert finding["node"] == "wwn2" and finding["reason"].startswith("wirewise:pair-below-fleet:all_reduce.busbw:-9")
    status = {row["node"]: row for row in fleet.json("fleet", "status")}
    assert {n: status[n]["verdict"] for n in status} == {"wwn1": "healthy", "wwn2": "flagged", "wwn3": "healthy"}

    dry = fleet.json("fleet", "drain", "--rules", str(fleet.rules))
    assert [item["node"] for item in dry["would_drain"]] == ["wwn2"] and states()["wwn2"] == ("idle", None)
    assert "against a known-good node (wwn1, wwn3)" in dry["would_drain"][0]["confirm_by"][0]

    drained = fleet.json("fleet", "drain", "--apply", "--rules", str(fleet.rules), timeout=400)
    assert [item["node"] for item in drained["drained"]] == ["wwn2"], drained
    settled_drained("wwn2", finding["reason"])

    failed = fleet.json("fleet", "retest", "--apply", "--rules", str(fleet.rules), timeout=400)
    assert [item["node"] for item in failed["failed"]] == ["wwn2"], failed
    assert "below the floor" in failed["failed"][0]["retest"]
    settled_drained("wwn2", finding["reason"])
    assert fleet.json("fleet", "resume", "--apply")["resumed"] == []

    fleet.unslow("wwn2")
    passed = fleet.json("fleet", "retest", "--apply", "--rules", str(fleet.rules), timeout=400)
    assert [item["node"] for item in passed["passed"]] == ["wwn2"], passed
    settled_drained("wwn2")
    resumed = fleet.json("fleet", "resume", "--apply")
    assert [item["node"] for item in resumed["resumed"]] == ["wwn2"]
    wait_for(lambda: states()["wwn2"] == ("idle", None), 30, "wwn2 idle again")

    [row] = fleet.json("fleet", "status", "--node", "wwn2")
    assert row["verdict"] == "healthy"
    trail = [(a["action"], a["outcome"]) for a in row["actions"]]
    assert trail == [("drain", "drained"), ("retest", "failed"), ("retest", "passed"), ("resume", "resumed")]
    assert all(a["asked_by"].startswith("root@") for a in row["actions"])
    assert row["actions"][1]["campaign"].startswith("wirewise-retest-wwn2-") and row["actions"][1]["campaign"].endswith("-pairs")


def test_slurmds_health_check_drains_a_faulty_node_in_time_and_leaves_healthy_ones(fleet):
    """slurmd runs `doctor --health-check` as its HealthCheckProgram every 5 s on every node (a
    wrapper, as the README shows). wwn3's NVML reports an NVLink down: it is drained with the
    reason within a few seconds, its check well under the 10 s limit; wwn1 and wwn2 are checked
    too (their verdicts are recorded) and nothing about them changes."""
    fleet.save_wirings()
    fleet.fault("wwn3", NVLINK_DOWN)
    log = fleet.hook("health-check", ["--json"])
    reason = wait_for(lambda: states()["wwn3"][1], 30, "wwn3 drained by its health check")
    assert reason == "wirewise:nvlink-inactive:gpu1.nvlink:-1"
    assert states()["wwn3"][0] in ("drained", "draining")
    ran = wait_for(lambda: all(Path(f"{log}.{n}").exists() for n in ("wwn1", "wwn2")), 30, "the health check on wwn1 and wwn2")
    assert ran
    outcome = json.loads(Path(f"{log}.wwn3").read_text().split("\n}\n")[0] + "\n}")
    assert outcome["drained"] and outcome["seconds"] < 10
    assert (states()["wwn1"], states()["wwn2"]) == (("idle", None), ("idle", None))
    status = {row["node"]: row for row in fleet.json("fleet", "status")}
    assert {n: status[n]["verdict"] for n in status} == {"wwn1": "healthy", "wwn2": "healthy", "wwn3": "confirmed"}
    assert status["wwn3"]["actions"][0]["asked_by"] == "slurmd health check on wwn3"


def test_a_degraded_nvlink_fabric_is_a_finding_for_doctor_the_health_check_and_fleet_status(fleet):
    """wwn3's NVML reports GPU 2's fabric bandwidth degraded (health mask bits 0-1 = 1, as
    nvml.h defines it): doctor on the node and its health check find fabric-degraded on that
    GPU, fleet status shows the stored finding; wwn1 in the same kind of domain stays healthy."""
    fleet.save_wirings()
    fleet.fault("wwn3", {"fabric_health": {"2": 1}})
    doctor = fleet.cluster.exec("wwn3", WIREWISE, "doctor", "--node", "wwn3", "--json", "--db", fleet.db, check=False)
    found = json.loads(doctor.stdout)
    assert doctor.returncode == 1 and [(f["check"], f["gpus"]) for f in found["findings"]] == [("fabric-degraded", [2])]
    assert "NVLink fabric bandwidth degraded (cluster " in found["findings"][0]["evidence"]
    for node in ("wwn1", "wwn3"):
        fleet.cluster.exec(node, WIREWISE, "doctor", "--health-check", "--report-only", "--db", fleet.db, check=False)
    status = {row["node"]: row for row in fleet.json("fleet", "status")}
    assert [f["reason"] for f in status["wwn3"]["findings"]] == ["wirewise:fabric-degraded:gpu2.fabric:degraded"]
    assert (status["wwn1"]["verdict"], status["wwn1"]["findings"]) == ("healthy", [])


def test_the_guardrails_stop_a_fault_on_every_node_and_say_why(fleet):
    """An NVLink down on every node, and the health checks run on all three at once: one node
    of the 3-node partition is drained (max_share 0.1, at least one), the others are held with
    the guardrail's reason. `fleet drain --apply` drains no more and says why it stopped; a
    second confirmation (--beyond-guardrails 1) drains one more, after a repeat confirms it."""
    fleet.save_wirings()
    for node in fleet.cluster.nodes:
        fleet.fault(node, NVLINK_DOWN)
    checks = [subprocess.Popen([str(fleet.cluster.script), "exec", node, WIREWISE, "doctor", "--health-check", "--json",
                                "--db", fleet.db], env={**os.environ, **fleet.cluster.env}, stdout=subprocess.PIPE, text=True)
              for node in fleet.cluster.nodes]
    outcomes = [json.loads(p.communicate(timeout=120)[0]) for p in checks]
    assert sorted(o["drained"] for o in outcomes) == [False, False, True]
    held = [o["held"] for o in outcomes if not o["drained"]]
    assert all(h.startswith("guardrail max_share: partition debug has 1 of 3 node(s) unavailable and allows 1") for h in held), held
    assert sum(1 for state, _ in states().values() if state.startswith("drain")) == 1

    dry = fleet.json("fleet", "drain")
    assert len(dry["held"]) == 2 and "--beyond-guardrails 2" in dry["stopped"]
    stopped = fleet.ww("fleet", "drain", "--apply")
    assert stopped.returncode == 0 and "stopped: 2 node(s) held by the guardrails: guardrail max_share" in stopped.stdout
    assert sum(1 for state, _ in states().values() if state.startswith("drain")) == 1

    beyond = fleet.json("fleet", "drain", "--apply", "--beyond-guardrails", "1", timeout=300)
    assert len(beyond["drained"]) == 1 and len(beyond["held"]) == 1, beyond
    assert sum(1 for state, _ in states().values() if state.startswith("drain")) == 2


def test_a_node_drained_by_someone_else_is_left_alone(fleet):
    """wwn1 drained by hand for maintenance, wwn3 with a reason in wirewise's form that wirewise
    never set: retest and resume leave both as they are, saying why; drain skips a drained node."""
    fleet.save_wirings()
    subprocess.run(["scontrol", "update", "NodeName=wwn1", "State=DRAIN", "Reason=PSU swap, ticket 4711"], check=True)
    subprocess.run(["scontrol", "update", "NodeName=wwn3", "State=DRAIN", "Reason=wirewise:nvlink-inactive:gpu1.nvlink:-1"], check=True)
    fleet.fault("wwn1", NVLINK_DOWN)
    fleet.cluster.exec("wwn1", WIREWISE, "doctor", "--health-check", "--report-only", "--db", fleet.db, check=False)
    retest = fleet.json("fleet", "retest", "--apply")
    resume = fleet.json("fleet", "resume", "--apply")
    for report in (retest, resume):
        why = {item["node"]: item["why"] for item in report["skipped"]}
        assert why["wwn1"].startswith("drained by someone else (PSU swap, ticket 4711, set by root(0))")
        assert "no such drain of wirewise's is in the trail" in why["wwn3"]
    drain = fleet.json("fleet", "drain", "--apply")
    assert drain["skipped"] == [{"node": "wwn1", "why": "already drained (PSU swap, ticket 4711)"}] and not drain["drained"]
    assert states()["wwn1"] == ("drained", "PSU swap, ticket 4711")
    assert states()["wwn3"] == ("drained", "wirewise:nvlink-inactive:gpu1.nvlink:-1")


def test_slurms_prolog_drains_a_slow_node_and_the_job_is_requeued(fleet):
    """slurmd runs `doctor --prolog` before each job: a short all_reduce on the job's GPUs (gloo
    ranks here). A job on wwn1 makes the baseline; with wwn2's loopback limited,
    the next job's prolog finds busbw far below it, drains wwn2 with the reason, exits 1, and
    Slurm requeues the job (held) instead of running it there."""
    fleet.rules.write_text(yaml.safe_dump({**RULES, "min_results": 1}))  # one healthy job is the baseline here
    fleet.hook("prolog", [])
    done = subprocess.run(["srun", "-w", "wwn1", "--gpus=2", "true"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    fleet.slow("wwn2")
    job = subprocess.run(["sbatch", "--parsable", "-w", "wwn2", "--gpus=2", "-o", str(fleet.folder / "job.out"),
                          "--wrap", "true"], capture_output=True, text=True, check=True).stdout.strip()
    reason = wait_for(lambda: states()["wwn2"][1], 60, "wwn2 drained by the prolog")
    assert reason.startswith("wirewise:busbw-below-baseline:all_reduce.busbw:-9"), reason
    # The prolog drains wwn2 itself before it exits 1: until Slurm has seen that exit the job is RUNNING.
    def requeued() -> str | None:
        state = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T %r"], capture_output=True, text=True).stdout.strip()
        return state if state.startswith("PENDING") else None

    wait_for(requeued, 30, "the job back in the queue")


def trail(fleet, node: str) -> list[tuple[str, str]]:
    [row] = fleet.json("fleet", "status", "--node", node)
    return [(a["action"], a["outcome"]) for a in row["actions"]]


def plant_pair_finding(fleet, node: str, partners: list[str]) -> None:
    """The finding `fleet pairs` opens for a bad node (wirewise.orchestrator.fleet.pair_findings), stored
    as it stores it: what its repeat runs is the pair test against one of `partners`."""
    from wirewise.orchestrator.health.findings import Finding
    from wirewise.orchestrator.fleet.pair_findings import RULE
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import record_check

    test = {"op": "all_reduce", "size": 2 * 1024**2, "iters": 3, "warmup": 1, "backend": "gloo", "gpus": 1, "timeout_s": 120}
    found = Finding(node, RULE, "pair test pairs-x: best pair 0.01 GB/s busbw, 1% of the fleet's 0.86 GB/s", "check the link",
                    metric="all_reduce.busbw", delta="-98.9%", key=f"{RULE}|all_reduce|{test['size']}|gloo",
                    measurement={"workload": "pairs", "partners": partners, "test": test},
                    reference={"workload": "pairs", "metric": "busbw_gbs", "reference_gbs": 0.86, "floor": 0.086,
                               "tolerance": 0.9, "campaign": "pairs-x"})
    record_check(Store(fleet.db), node, "pairs", {RULE}, [found])


def test_the_prolog_and_health_check_never_drain_a_node_for_their_own_errors(fleet):
    """The issue's set-up, as slurmd runs it: a prolog whose rules file asks for min_bytes above
    max_bytes, a health check whose wrapper names a database that does not exist. Every node
    went `drained / Prolog error` and every job `launch failed requeued held`. Now each says
    `not judged` in its log and exits 0: the job runs, every node stays idle."""
    bad = fleet.folder / "bad-rules.yaml"
    bad.write_text(yaml.safe_dump({**RULES, "prolog": {**RULES["prolog"], "min_bytes": "512M"}}))
    prolog = fleet.hook("prolog", [], rules=bad)
    checks = fleet.hook("health-check", [], db=f"sqlite:///{fleet.folder / 'no-such-folder' / 'wirewise.db'}")
    done = subprocess.run(["srun", "-w", "wwn2", "--gpus=2", "true"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "not judged: " in Path(f"{prolog}.wwn2").read_text()
    said = lambda node: Path(f"{checks}.{node}").read_text() if Path(f"{checks}.{node}").exists() else ""
    wait_for(lambda: all("wirewise: note: " in said(n) for n in fleet.cluster.nodes), 30, "a health check on every node")
    for node in fleet.cluster.nodes:
        assert f"{node}: not judged: no database at" in said(node)
    assert all(state == ("idle", None) for state in states().values()), states()
    assert not (fleet.folder / "no-such-folder").exists()


def test_a_misspelt_partition_is_an_error_not_an_empty_fleet(fleet):
    for verb in ("status", "drain", "retest", "resume"):
        done = fleet.ww("fleet", verb, "--partition", "debgu")
        assert done.returncode == 2 and done.stderr.strip().splitlines() == [
            "wirewise: error: --partition 'debgu': Slurm has no such partition with nodes (its partitions: debug)"], done.stderr


def test_a_confirming_repeat_that_never_ran_does_not_drain(fleet):
    """wwn2's pair finding, and its known-good partners busy with users' jobs: the repeat against
    one of them waits in the queue until --timeout and ends cancelled without a result. That is
    no failed repeat (docs/fleet.md: only a repeat that fails again drains): wwn2 stays in
    service, its claim resolved as not measured, its finding open."""
    plant_pair_finding(fleet, "wwn2", ["wwn1", "wwn3"])
    for node in ("wwn1", "wwn3"):
        sbatch("-w", node, "--exclusive", "-o", "/dev/null", "--wrap", "sleep 600", cwd=fleet.folder)
    wait_for(lambda: states()["wwn1"][0] == "allocated" and states()["wwn3"][0] == "allocated", 30, "the users' jobs running")
    report = fleet.json("fleet", "drain", "--apply", "--rules", str(fleet.rules), "--timeout", "30", timeout=300)
    assert report["drained"] == [] and [item["node"] for item in report["not_measured"]] == ["wwn2"], report
    assert "the repeat did not run" in report["not_measured"][0]["repeat"]
    assert states()["wwn2"] == ("idle", None)
    assert trail(fleet, "wwn2") == [("drain", "not-measured")]
    [row] = fleet.json("fleet", "status", "--node", "wwn2")
    assert row["verdict"] == "flagged"


def test_drains_at_once_and_stops_leave_slurm_and_the_trail_agreeing(fleet):
    """An NVLink down on wwn3, its finding open. A --timeout that is no number of seconds is
    refused before anything is claimed. Two `fleet drain --apply` at once: one claims, repeats
    and drains wwn3; the other skips it with why; one drain in the trail, no claim left open.
    Then `fleet retest --apply` stopped by SIGTERM, SIGHUP and SIGINT while wwn3 is resumed in
    its reservation: each time wwn3 is drained again with its reason, the reservation is gone,
    the trail says `interrupted`, and `fleet status` shows what Slurm shows. A `fleet drain
    --apply` stopped while its repeat runs releases its claim and drains nothing."""
    fleet.save_wirings()
    fleet.fault("wwn3", NVLINK_DOWN)
    fleet.cluster.exec("wwn3", WIREWISE, "doctor", "--health-check", "--report-only", "--db", fleet.db, check=False)
    for timeout in ("nan", "inf", "1e300", "-5"):
        refused = fleet.ww("fleet", "drain", "--apply", "--timeout", timeout)
        assert refused.returncode == 2 and refused.stderr.startswith(f"wirewise: error: --timeout "), refused.stderr
    assert trail(fleet, "wwn3") == []

    drains = [subprocess.Popen([WIREWISE, "fleet", "drain", "--apply", "--json", "--timeout", "60", "--db", fleet.db],
                               stdout=subprocess.PIPE, text=True) for _ in range(2)]
    reports = [json.loads(p.communicate(timeout=300)[0]) for p in drains]
    assert sorted(len(r["drained"]) for r in reports) == [0, 1], reports
    [skipped] = [r["skipped"] for r in reports if not r["drained"]][0]
    assert skipped["node"] == "wwn3" and ("claimed by" in skipped["why"] or "already drain" in skipped["why"]), skipped
    reason = "wirewise:nvlink-inactive:gpu1.nvlink:-1"
    settled_drained("wwn3", reason)
    assert trail(fleet, "wwn3") == [("drain", "drained")]

    for stop in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        retest = subprocess.Popen([WIREWISE, "fleet", "retest", "--apply", "--timeout", "120", "--db", fleet.db],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: states()["wwn3"][0] not in ("drained", "draining"), 60, "wwn3 resumed inside its reservation")
        retest.send_signal(stop)
        said = retest.communicate(timeout=120)[1]
        assert retest.returncode == 128 + stop, (stop, retest.returncode, said)
        settled_drained("wwn3", reason)
        shown = subprocess.run(["scontrol", "show", "reservation"], capture_output=True, text=True).stdout
        assert "wirewise-retest" not in shown, shown
        [row] = fleet.json("fleet", "status", "--node", "wwn3")
        assert (row["state"], row["reason"], row["verdict"]) == ("drained", reason, "confirmed"), row
        last = row["actions"][-1]
        assert (last["action"], last["outcome"]) == ("retest", "interrupted") and f"stopped by {stop.name}" in last["detail"]
    assert trail(fleet, "wwn3") == [("drain", "drained")] + [("retest", "interrupted")] * 3

    fleet.fault("wwn1", NVLINK_DOWN)
    fleet.cluster.exec("wwn1", WIREWISE, "doctor", "--health-check", "--report-only", "--db", fleet.db, check=False)
    # A user's job holds wwn1, so the drain's re-check waits in the queue (on an idle node it is
    # done within the second the stop below waits, and the drain ends before it is stopped).
    user = sbatch("-w", "wwn1", "--exclusive", "-o", "/dev/null", "--wrap", "sleep 600", cwd=fleet.folder)
    wait_for(lambda: states()["wwn1"][0] == "allocated", 30, "the user's job running on wwn1")
    drain = subprocess.Popen([WIREWISE, "fleet", "drain", "--apply", "--beyond-guardrails", "1", "--timeout", "60",
                              "--db", fleet.db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: trail(fleet, "wwn1") == [("drain", "claimed")], 60, "wwn1's drain claimed")
    time.sleep(1)  # its repeat submitted
    drain.send_signal(signal.SIGTERM)
    said = drain.communicate(timeout=120)
    assert drain.returncode == 128 + signal.SIGTERM, (drain.returncode, said)
    subprocess.run(["scancel", user], check=True)
    wait_for(lambda: states()["wwn1"][0] == "idle", 30, "wwn1 idle once the user's job ended")
    assert trail(fleet, "wwn1") == [("drain", "interrupted")] and states()["wwn1"] == ("idle", None)
