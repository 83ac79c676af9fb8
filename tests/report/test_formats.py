"""The formats other tools read (issue 31): `fleet status --format prometheus` parsed by
prometheus_client's own parser (as a node_exporter textfile collector's scrape would read it),
and `--junit` reports read by junitparser, on real runs against a real database.

The history is the four H100 nodes of the report database (conftest.py); a slow run is planted
on h100-a by importing its log with the bandwidths halved, and doctor judges it. Slurm is not
asked here (no SLURM_CONF: sinfo finds no controller), so the drain series is left out, as it is
wherever Slurm cannot be asked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import wirewise
from tests.report.conftest import import_log

NO_SLURM_CONF = {"SLURM_CONF": None}  # the Slurm fixtures point it at their cluster for the whole session
no_slurm_here = pytest.mark.skipif(shutil.which("sinfo") is not None and Path("/etc/slurm/slurm.conf").exists(),
                                   reason="needs a machine where sinfo finds no controller")


def samples(text: str) -> dict[str, list]:
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


@no_slurm_here
def test_fleet_status_as_prometheus_metrics(report_db, tmp_path):
    out = tmp_path / "h100.json"
    wirewise("baseline", "export", "--out", str(out), "--db", report_db, check=True)
    wirewise("baseline", "import", str(out), "--db", report_db, check=True)
    import_log(tmp_path, report_db, "h100-a", 0.5)
    assert wirewise("doctor", "--db", report_db).returncode == 1
    prom = tmp_path / "textfile" / "wirewise.prom"
    prom.parent.mkdir()
    proc = wirewise("fleet", "status", "--format", "prometheus", "--out", str(prom), "--db", report_db, env=NO_SLURM_CONF)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert "Slurm is unreachable" in proc.stderr
    assert [p.name for p in prom.parent.iterdir()] == ["wirewise.prom"]  # no temporary file left beside it
    found = samples(prom.read_text())
    verdicts = {(s.labels["node"], s.labels["verdict"]) for s in found["wirewise_node_verdict"]
                if s.value == 1 and s.labels["node"].startswith("h100")}  # beside any other node with a stored wiring
    assert verdicts == {("h100-a", "flagged"), ("h100-b", "healthy"), ("h100-c", "healthy"), ("h100-d", "healthy")}
    [rule] = found["wirewise_node_open_findings"]
    assert (rule.labels, rule.value) == ({"node": "h100-a", "rule": "busbw-below-baseline"}, 1.0)
    assert found["wirewise_node_drained"] == []  # Slurm was not asked: no drain state, rather than a false 0
    assert {s.labels["node"] for s in found["wirewise_node_last_check_timestamp_seconds"]} == {"h100-a", "h100-b", "h100-c", "h100-d"}
    big = {"op": "all_reduce", "bytes": str(1 << 30), "in_place": "false"}
    latest = {s.labels["node"]: s.value for s in found["wirewise_node_busbw_gbs"] if big.items() <= s.labels.items()}
    baseline = {s.labels["node"]: s.value for s in found["wirewise_node_busbw_baseline_gbs"] if big.items() <= s.labels.items()}
    # the halved log's 1 GiB out of place (469.67 / 2 = 234.84) against the exported median of the four: 470.845
    assert round(latest["h100-a"], 2) == 234.84 and round(baseline["h100-a"], 3) == 470.845
    assert set(latest) == set(baseline) == {"h100-a", "h100-b", "h100-c", "h100-d"}
    stdout = wirewise("fleet", "status", "--format", "prometheus", "--db", report_db, env=NO_SLURM_CONF)
    assert samples(stdout.stdout).keys() == found.keys()


def test_prometheus_label_values_are_escaped():
    from wirewise.orchestrator.fleet.prometheus import exposition

    odd = 'gpu"7\\b\nx'
    row = {"node": odd, "verdict": "flagged", "state": "drained", "drained": True, "checked_at": None,
           "findings": [{"rule": 'a"rule'}, {"rule": 'a"rule'}]}
    found = samples(exposition([row], []))
    [rule] = found["wirewise_node_open_findings"]
    assert (rule.labels, rule.value) == ({"node": odd, "rule": 'a"rule'}, 2.0)
    [drained] = found["wirewise_node_drained"]
    assert drained.labels["node"] == odd and drained.value == 1.0


def test_prometheus_goes_with_its_options(report_db):
    proc = wirewise("fleet", "status", "--out", "x.prom", "--db", report_db, env=NO_SLURM_CONF)
    assert proc.returncode == 2 and proc.stderr.strip() == "wirewise: error: --out goes with --format prometheus"
    proc = wirewise("fleet", "status", "--format", "csv", "--db", report_db, env=NO_SLURM_CONF)
    assert proc.returncode == 2 and "--format 'csv': choose table or prometheus" in proc.stderr


def junit_cases(path: Path) -> dict[tuple[str, str], object]:
    from junitparser import JUnitXml

    return {(case.classname, case.name): case for suite in JUnitXml.fromfile(str(path)) for case in suite}


def test_doctor_junit_a_case_per_rule_per_node(report_db, tmp_path):
    from junitparser import Failure, Skipped

    import_log(tmp_path, report_db, "h100-a", 0.5)
    report = tmp_path / "doctor.xml"
    proc = wirewise("doctor", "--junit", str(report), "--db", report_db)
    assert proc.returncode == 1, proc.stderr
    cases = junit_cases(report)
    [failure] = cases["h100-a", "busbw-below-baseline"].result
    assert isinstance(failure, Failure) and "1G: 352.3 GB/s vs 472 (floor 457.9, -25.4%)" in failure.text
    assert failure.message.startswith("all_reduce on 8 GPU(s)")
    assert cases["h100-b", "busbw-below-baseline"].is_passed
    [skipped] = cases["h100-b", "tokens-below-baseline"].result  # no training results: not judged
    assert isinstance(skipped, Skipped) and "not judged" in skipped.message
    assert {rule for node, rule in cases if node == "h100-c"} == {"busbw-below-baseline", "tokens-below-baseline", "slower-than-peers", "task-failed", "transport-off-nvlink"}
    on_node = tmp_path / "health-check.xml"  # the health check refuses it as a note: as slurmd runs it, it exits 0
    proc = wirewise("doctor", "--health-check", "--junit", str(on_node), "--db", report_db)
    assert "--junit goes with doctor on the history" in proc.stderr and not on_node.exists()
