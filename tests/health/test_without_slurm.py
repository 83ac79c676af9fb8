"""`fleet status` where Slurm cannot be asked (issue 31): the verdicts are the store's, so they
are printed, with one warning saying what Slurm was not asked; Slurm's own errors for a missing
controller become one line that says Slurm is unreachable. Real sinfo, on a machine it cannot
find a controller from: no SLURM_CONF, and no slurm.conf in /etc/slurm (then sinfo asks DNS for
an SRV record, which this machine has none of, as the issue's operator saw)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import wirewise

NO_SLURM_CONF = {"SLURM_CONF": None}  # the Slurm fixtures point it at their cluster for the whole session
pytestmark = pytest.mark.skipif(shutil.which("sinfo") is None or Path("/etc/slurm/slurm.conf").exists(),
                                reason="needs sinfo installed and no slurm.conf in /etc/slurm for it to find")


def test_fleet_status_reads_stored_verdicts_without_slurm(db_url):
    from wirewise.orchestrator.health.findings import Finding
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import record_check

    store = Store(db_url)
    record_check(store, "vm", "health-check", {"nvlink-inactive"}, [Finding(
        "vm", "nvlink-inactive", "GPU 1: NVLink 0 inactive", "reseat", metric="gpu1.nvlink", delta="-1", gpus=[1],
        key="nvlink-inactive|1")])
    record_check(store, "vm2", "health-check", {"nvlink-inactive"}, [])
    proc = wirewise("fleet", "status", "--node", "vm", "--db", db_url, "--json", env=NO_SLURM_CONF)
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)
    assert (row["node"], row["verdict"], row["state"], row["reason"]) == ("vm", "flagged", None, None)
    assert row["evidence"] == ["nvlink-inactive: GPU 1: NVLink 0 inactive"]
    [warning] = proc.stderr.strip().splitlines()
    assert warning.startswith("wirewise: warning: Slurm is unreachable: sinfo found no controller (this machine has no "
                              "slurm.conf, and DNS has no _slurmctld._tcp SRV record"), warning
    assert "the verdicts are the stored ones" in warning and "res_nsearch" not in warning
    every = wirewise("fleet", "status", "--partition", "gpu", "--db", db_url, "--json", env=NO_SLURM_CONF)
    assert [row["node"] for row in json.loads(every.stdout)] == ["vm", "vm2"]  # the nodes the store knows
    assert "not filtered by partition gpu" in every.stderr
    table = wirewise("fleet", "status", "--db", db_url, env=NO_SLURM_CONF)
    assert table.returncode == 0 and "vm2" in table.stdout and "healthy" in table.stdout


def test_a_command_that_needs_slurm_says_it_is_unreachable_in_one_line(db_url, tmp_path):
    proc = wirewise("fleet", "drain", "--db", db_url, env=NO_SLURM_CONF, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("wirewise: error: Slurm is unreachable: sinfo found no controller") and proc.stderr.count("\n") == 1
    assert "resolve_ctls_from_dns_srv" not in proc.stderr
